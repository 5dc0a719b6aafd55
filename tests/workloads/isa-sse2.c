/* isa-sse2.c - built with -msse2 -mno-avx: legacy SSE packed code */
void isa_sse2_axpy(float *restrict y, const float *restrict x, float a, int n);

void isa_sse2_axpy(float *restrict y, const float *restrict x, float a, int n)
{
	for (int i = 0; i < n; i++)
		y[i] += a * x[i];
}
