/* dl-omp-imbalance.c - an OpenMP loop where thread 0 does 3x the work of the others.
 *
 * Each round every thread runs work_units(); thread 0 runs 3 units, the others 1, then
 * all meet at the implicit barrier.  With 2 threads and OMP_WAIT_POLICY=active the
 * second thread spins 2 units out of every 3: omp-spin ~ 2/6 = 33% of CPU samples.
 * On a busy machine the spinning share grows (the spinner burns CPU while thread 0 waits
 * for a core), so the program also measures it: the CPU time spent in work_units() by
 * every thread against the CPU time of the whole process; the rest is barrier waiting
 * and runtime.
 * Usage: dl-omp-imbalance [SECONDS]
 * prints "rounds N threads T spin-fraction F measured-work-fraction W"
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

__attribute__((noinline)) static void work_units(int units)
{
	double x = 1.0;

	for (long i = 0; i < units * 400000L; i++)
		x = x * 1.0000001 + 1e-7;
	sink = x;
}

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0, end = now() + secs;
	double work_cpu = 0, proc_cpu0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), proc_cpu;
	long rounds = 0;
	int nthreads = 1;

	while (now() < end) {
#pragma omp parallel
		{
			int t = omp_get_thread_num();
			double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);

			if (t == 0)
				nthreads = omp_get_num_threads();
			work_units(t == 0 ? 3 : 1);
			c0 = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
#pragma omp atomic
			work_cpu += c0;
		}
		rounds++;
	}
	proc_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - proc_cpu0;
	/* expected spin share on idle cores: (n-1) threads idle 2 of 3 units, of n * 3 units */
	printf("rounds %ld threads %d spin-fraction %.3f measured-work-fraction %.3f\n", rounds,
	       nthreads, nthreads > 1 ? 2.0 * (nthreads - 1) / (3.0 * nthreads) : 0.0,
	       proc_cpu > 0 ? work_cpu / proc_cpu : 0.0);
	return 0;
}
