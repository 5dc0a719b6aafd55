/* isa-main.c - links the isa-* kernels into one executable for check-isa --functions;
 * runs each kernel the CPU can run. */
#include <stdio.h>

void isa_zmm_axpy(float *restrict y, const float *restrict x, float a, int n);
void isa_avx2_axpy(float *restrict y, const float *restrict x, float a, int n);
void isa_sse2_axpy(float *restrict y, const float *restrict x, float a, int n);
unsigned long isa_scalar_hash(const unsigned char *p, unsigned long n);

static float x[4096], y[4096];

int main(int argc, char **argv)
{
	int i;

	(void)argv;
	for (i = 0; i < 4096; i++)
		x[i] = (float)i;
	isa_sse2_axpy(y, x, 2.0f, 4096);
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		isa_avx2_axpy(y, x, 2.0f, 4096);
	if (argc > 1 && __builtin_cpu_supports("avx512f"))
		isa_zmm_axpy(y, x, 2.0f, 4096);
	printf("%lu %g\n", isa_scalar_hash((const unsigned char *)x, sizeof(x)), (double)y[100]);
	return 0;
}
