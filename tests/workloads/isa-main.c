/* isa-main.c - links the isa-* kernels into one executable for check-isa.
 *
 *   isa-kernels            run each kernel the CPU can run once (a smoke test)
 *   isa-kernels run MS     spend about MS milliseconds in each of isa_zmm_axpy (when
 *                          AVX-512F is there), isa_avx2_axpy and isa_scalar_hash, so a
 *                          profile has known equal shares of zmm, AVX2 and scalar code
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void isa_zmm_axpy(float *restrict y, const float *restrict x, float a, int n);
void isa_avx2_axpy(float *restrict y, const float *restrict x, float a, int n);
void isa_sse2_axpy(float *restrict y, const float *restrict x, float a, int n);
unsigned long isa_scalar_hash(const unsigned char *p, unsigned long n);

static float x[4096], y[4096];

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	unsigned long h = 0;
	double ms, t;
	int i;

	for (i = 0; i < 4096; i++)
		x[i] = (float)i;
	if (argc < 3 || strcmp(argv[1], "run")) {
		isa_sse2_axpy(y, x, 2.0f, 4096);
		if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
			isa_avx2_axpy(y, x, 2.0f, 4096);
		if (__builtin_cpu_supports("avx512f"))
			isa_zmm_axpy(y, x, 2.0f, 4096);
		printf("%lu %g\n", isa_scalar_hash((const unsigned char *)x, sizeof(x)), (double)y[100]);
		return 0;
	}
	ms = atof(argv[2]);
	if (__builtin_cpu_supports("avx512f"))
		for (t = now_ms(); now_ms() - t < ms;)
			for (i = 0; i < 1000; i++)
				isa_zmm_axpy(y, x, 1e-6f, 4096);
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		for (t = now_ms(); now_ms() - t < ms;)
			for (i = 0; i < 1000; i++)
				isa_avx2_axpy(y, x, 1e-6f, 4096);
	for (t = now_ms(); now_ms() - t < ms;)
		for (i = 0; i < 20; i++)
			h += isa_scalar_hash((const unsigned char *)x, sizeof(x));
	printf("%lu %g\n", h, (double)y[100]);
	return 0;
}
