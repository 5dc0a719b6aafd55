/* rep-inline.c - built -O2 -g: rep_inline_mix (always inlined) is the hot loop inside
 * rep_inline_outer (not inlined), called from main for about one second.  With DWARF
 * inline chains the folded stack reads main;rep_inline_outer;rep_inline_mix. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static volatile uint64_t rep_inline_sink;

static inline __attribute__((always_inline)) uint64_t rep_inline_mix(uint64_t x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL + (x >> 11);
	return x;
}

__attribute__((noinline)) static void rep_inline_outer(double seconds)
{
	struct timespec t0, t;
	uint64_t x = 1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		x = rep_inline_mix(x, 200000);
		rep_inline_sink = x;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
}

int main(void)
{
	rep_inline_outer(1.0);
	printf("%llu\n", (unsigned long long)(rep_inline_sink & 1));
	return 0;
}
