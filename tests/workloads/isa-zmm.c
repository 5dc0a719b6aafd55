/* isa-zmm.c - built with -mavx512f -mprefer-vector-width=512: zmm (EVEX) code */
void isa_zmm_axpy(float *restrict y, const float *restrict x, float a, int n);

void isa_zmm_axpy(float *restrict y, const float *restrict x, float a, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}
