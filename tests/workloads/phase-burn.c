/* phase-burn.c - a library whose constructor spins BURN_S seconds of its thread's CPU
 * time inside dlopen, for the phase "(library init)" (tests/workloads/phases.py builds
 * and loads it; t1015 runs that in a container whose libc and ld.so have no symbols). */
#include <time.h>

#define BURN_S	0.5

static double thread_cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void burn_spin(double s);

__attribute__((noinline)) void burn_spin(double s)
{
	double end = thread_cpu() + s;
	volatile unsigned long x = 0;

	while (thread_cpu() < end)
		x++;
}

__attribute__((constructor)) static void burn_ctor(void)
{
	burn_spin(BURN_S);
}
