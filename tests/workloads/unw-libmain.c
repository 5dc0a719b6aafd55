/* unw-libmain.c - main -> unw_libmain_loop -> unw_lib_spin (stripped library, no frame
 * pointers) -> its static inner loop, for one second of CPU time (a busy machine gives it
 * the same number of cpu-clock samples). */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

uint64_t unw_lib_spin(uint64_t n);

static volatile uint64_t unw_libmain_sink;

__attribute__((noinline)) static void unw_libmain_loop(double seconds)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		unw_libmain_sink += unw_lib_spin(200000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(void)
{
	unw_libmain_loop(1.0);
	printf("%llu\n", (unsigned long long)(unw_libmain_sink & 1));
	return 0;
}
