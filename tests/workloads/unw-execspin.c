/* unw-execspin.c - spin for 0.5 s of CPU time (so the samples it gets do not hang on
 * what else runs) in a function of its own, then exec argv[1...]
 * in the same process (no new pid): the unwinder must not unwind the new program with
 * the old one's modules, which sit at the same addresses when ASLR is off. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t unw_execspin_sink;

__attribute__((noinline)) static void unw_execspin_loop(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			unw_execspin_sink = unw_execspin_sink * 3 + (uint64_t)i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: unw-execspin PROGRAM [ARGS...]\n");
		return 64;
	}
	unw_execspin_loop(0.5);
	execv(argv[1], argv + 1);
	perror("execv");
	return 127;
}
