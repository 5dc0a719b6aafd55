/* rec-vdso.c - record test workload: vdso_caller() reads CLOCK_MONOTONIC in a loop for
 * SECONDS (default 1) of CPU time, so the samples land in the [vdso] (or, where the
 * clock source has no vDSO support, in the kernel below it). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long rec_vdso_sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void vdso_caller(double seconds)
{
	double end = cpu_seconds() + seconds;
	struct timespec ts;

	do {
		for (int i = 0; i < 65536; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			rec_vdso_sink += (unsigned long)ts.tv_nsec;
		}
	} while (cpu_seconds() < end);
}

int main(int argc, char **argv)
{
	vdso_caller(argc > 1 ? atof(argv[1]) : 1.0);
	return 0;
}
