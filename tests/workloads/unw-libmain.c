/* unw-libmain.c - main -> unw_libmain_loop -> unw_lib_spin (stripped library, no frame
 * pointers) -> its static inner loop, for one second of CPU time (a busy machine gives it
 * the same number of cpu-clock samples).
 * "unw-libmain mprotect" first makes one page of libc's code writable and then not, as
 * UCX does to patch libc (torch 2.6 in Debian 13 loads it): the kernel tells a mapping
 * of that page alone, and the rest of libc's code stays mapped as it was. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

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

/* Re-protect the page of libc's code that holds getppid, and back */
static int reprotect_libc_page(void)
{
	long psz = sysconf(_SC_PAGESIZE);
	void *page = (void *)((uintptr_t)&getppid & ~(uintptr_t)(psz - 1));

	if (mprotect(page, (size_t)psz, PROT_READ | PROT_WRITE | PROT_EXEC) ||
	    mprotect(page, (size_t)psz, PROT_READ | PROT_EXEC)) {
		perror("unw-libmain: mprotect");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "mprotect") && reprotect_libc_page())
		return 1;
	unw_libmain_loop(1.0);
	printf("%llu\n", (unsigned long long)(unw_libmain_sink & 1));
	return 0;
}
