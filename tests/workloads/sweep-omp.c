/* sweep-omp: a fixed amount of OpenMP work in many short parallel loops (each ends at a
 * barrier), so it scales with the cores and suffers when threads outnumber them.
 *
 *   sweep-omp [REGIONS [ITERS]]
 * Prints "time_ms=T" (its own clock over the loops) and "threads=N". */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	long regions = argc > 1 ? atol(argv[1]) : 1500;
	long iters = argc > 2 ? atol(argv[2]) : 4000;
	static double out[64];
	double t0, t;

	t0 = now_ms();
	for (long r = 0; r < regions; r++) {
#pragma omp parallel for schedule(static)
		for (long i = 0; i < iters; i++) {
			double x = (double)i;

			for (int k = 0; k < 100; k++)
				x = x * 0.999999 + 1e-3;
			out[omp_get_thread_num() & 63] += x;
		}
	}
	t = now_ms() - t0;
	printf("time_ms=%.3f\nthreads=%d\nchecksum=%g\n", t, omp_get_max_threads(), out[0]);
	return 0;
}
