/* rep-split [ROUNDS [HOT WARM]]: rep_hot takes ~70% of the CPU time, rep_warm ~30% (same
 * loop, 7:3 trips; HOT and WARM change the trips). */
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) void rep_spin(long n)
{
	double x = 1.0;

	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5;
	sink = x;
}

static long hot = 7, warm = 3;

__attribute__((noinline)) void rep_hot(long n)
{
	double x = 1.0;

	for (long i = 0; i < hot * n; i++)
		x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) void rep_warm(long n)
{
	double x = 1.0;

	for (long i = 0; i < warm * n; i++)
		x = x * 1.0000001 + 0.5;
	sink = x;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 40;

	if (argc > 3) {
		hot = atol(argv[2]);
		warm = atol(argv[3]);
	}
	for (long r = 0; r < rounds; r++) {
		rep_hot(1000000);
		rep_warm(1000000);
	}
	return 0;
}
