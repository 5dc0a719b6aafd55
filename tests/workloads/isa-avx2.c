/* isa-avx2.c - built with -mavx2 -mfma: ymm (VEX) code */
void isa_avx2_axpy(float *restrict y, const float *restrict x, float a, int n);

void isa_avx2_axpy(float *restrict y, const float *restrict x, float a, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}
