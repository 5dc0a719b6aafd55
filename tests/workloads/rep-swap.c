/* rep-swap DIR SECS - librep-swapa.so from DIR dlopened, its swap_a_outer calling back
 * into swap_spin for SECS of CPU time, the library closed; then librep-swapb.so, whose
 * swap_b_outer does the same.  The second library usually lands where the first was:
 * the stacks of both halves are then the same addresses, named by different mappings.
 * Prints "same" or "moved" (the two bases). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

__attribute__((noinline)) static void swap_spin(double secs)
{
	struct timespec t0, t;
	double x = 1.0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.5;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	sink = x;
}

__attribute__((noinline)) static void *run(const char *dir, const char *lib, const char *fn, double secs)
{
	char path[4096];
	void (*outer)(void (*)(double), double);
	void *h, *base;
	Dl_info info;

	snprintf(path, sizeof(path), "%s/%s", dir, lib);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h || !(outer = (void (*)(void (*)(double), double))dlsym(h, fn)) ||
	    !dladdr((void *)outer, &info)) {
		fprintf(stderr, "rep-swap: %s: %s\n", path, dlerror());
		exit(1);
	}
	base = info.dli_fbase;
	outer(swap_spin, secs);
	dlclose(h);
	return base;
}

int main(int argc, char **argv)
{
	static const char *const libs[2][2] = {
		{ "librep-swapa.so", "swap_a_outer" }, { "librep-swapb.so", "swap_b_outer" },
	};
	double secs = argc > 2 ? atof(argv[2]) : 0.3;
	void *base[2];
	volatile int halves = 2;	/* (a loop not unrolled) */

	if (argc < 2) {
		fprintf(stderr, "usage: rep-swap DIR [SECS]\n");
		return 2;
	}
	/* (one call site: both halves' stacks are the same addresses in main too) */
	for (int i = 0; i < halves; i++)
		base[i] = run(argv[1], libs[i][0], libs[i][1], secs);
	printf("%s %p %p\n", base[0] == base[1] ? "same" : "moved", base[0], base[1]);
	return 0;
}
