/* dl-blas.c - one BLAS library's sgemm_, called again and again for a fixed time: the
 * library named by its file, loaded with dlopen (so a test picks the reference netlib
 * BLAS or OpenBLAS, whatever libblas.so.3's alternative says).
 *
 *   dl-blas FILE [SECONDS] [N]
 *
 * Prints the truth a profile is checked against:
 *
 *   blas: FILE calls=C cpu_s=S gflops=G
 *
 * S is the process CPU time spent in sgemm_ (what cpu-clock samples count), G the rate.
 * Run with OMP_NUM_THREADS=1 / OPENBLAS_NUM_THREADS=1 for one thread.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void sgemm_fn(const char *ta, const char *tb, const int *m, const int *n, const int *k,
		      const float *alpha, const float *a, const int *lda, const float *b,
		      const int *ldb, const float *beta, float *c, const int *ldc);

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 2 ? atof(argv[2]) : 1.0, t0, spent = 0;
	int n = argc > 3 ? atoi(argv[3]) : 256;
	float alpha = 1, beta = 0, *a, *b, *c;
	long calls = 0;
	sgemm_fn *sgemm;
	void *h;

	if (argc < 2 || n <= 0) {
		fprintf(stderr, "usage: dl-blas FILE [SECONDS] [N]\n");
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h || !(sgemm = (sgemm_fn *)dlsym(h, "sgemm_"))) {
		fprintf(stderr, "dl-blas: %s: %s\n", argv[1], dlerror());
		return 1;
	}
	a = malloc(sizeof(float) * n * n);
	b = malloc(sizeof(float) * n * n);
	c = malloc(sizeof(float) * n * n);
	if (!a || !b || !c)
		return 1;
	for (int i = 0; i < n * n; i++) {
		a[i] = (float)(i % 7) / 7;
		b[i] = (float)(i % 5) / 5;
	}
	t0 = cpu_now();
	while (cpu_now() - t0 < secs) {
		double s = cpu_now();

		sgemm("N", "N", &n, &n, &n, &alpha, a, &n, b, &n, &beta, c, &n);
		spent += cpu_now() - s;
		calls++;
	}
	printf("blas: %s calls=%ld cpu_s=%.3f gflops=%.2f\n", argv[1], calls, spent,
	       spent > 0 ? 2.0 * n * n * n * calls / spent / 1e9 : 0.0);
	return c[0] < -1;	/* keep the result */
}
