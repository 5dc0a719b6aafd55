/* dl-gemm.c - OpenBLAS cblas_sgemm vs a plain C matrix multiply, timed separately.
 * Prints "gemm-seconds A own-seconds B" (process CPU seconds) so a test can compare the family split with the
 * measured one.  Run with OMP_NUM_THREADS=1 (the OpenMP build of OpenBLAS follows it).  Usage: dl-gemm [SECONDS] */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 256

static float a[N * N], b[N * N], c[N * N];

static double now(void)
{
	struct timespec ts;

	/* CPU time of the whole process: what cpu-clock samples count, even on a busy machine */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void own_matmul(const float *x, const float *y, float *z, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			float s = 0;

			for (int k = 0; k < n; k++)
				s += x[i * n + k] * y[k * n + j];
			z[i * n + j] = s;
		}
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0, half = secs / 2, t0, t_gemm = 0, t_own = 0;

	for (int i = 0; i < N * N; i++) {
		a[i] = (float)(i % 7) / 7;
		b[i] = (float)(i % 5) / 5;
	}
	while (t_gemm < half) {
		t0 = now();
		for (int r = 0; r < 20; r++)
			cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a, N, b, N,
				    0.0f, c, N);
		t_gemm += now() - t0;
	}
	while (t_own < half) {
		t0 = now();
		own_matmul(a, b, c, N);
		t_own += now() - t0;
	}
	printf("gemm-seconds %.3f own-seconds %.3f c0 %g\n", t_gemm, t_own, c[0]);
	return 0;
}
