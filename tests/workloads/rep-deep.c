/* rep-deep: a known call chain main -> a -> b -> c; c burns the CPU. */
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) void c(long n)
{
	double x = 1.0;

	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) void b(long n)
{
	c(n);
	sink += 1;
}

__attribute__((noinline)) void a(long n)
{
	b(n);
	sink += 1;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 30;

	for (long r = 0; r < rounds; r++)
		a(10000000);
	return 0;
}
