/* unw-join [SECONDS]: a deep, steady call chain (main -> deep x 40 -> bottom -> sel -> mid
 * -> spin, and a second thread at depth 25) where sel calls mid from two call sites in
 * turn (a few ms each): mid's frame is the same (stack depth, registers, where it calls
 * spin) under two return addresses.  A walk made while recording that joins its thread's
 * last walk at mid's frame must notice that the return address above it changed and not
 * take the other call site's frames (t1008: report --check-unwind against each stack
 * unwound anew). */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;
static double seconds = 2;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void spin(long n)
{
	double x = 1.0;

	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) void mid(long n)
{
	spin(n);
	__asm__ volatile("" ::: "memory");	/* (no tail call) */
}

__attribute__((noinline)) void sel(int which, long n)
{
	if (which) {
		mid(n);
		sink += 1;
	} else {
		mid(n);
		sink += 2;
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void bottom(void)
{
	double end = now() + seconds;

	for (unsigned k = 0; now() < end; k++)
		sel(k & 1, 2000000);
}

__attribute__((noinline)) void deep(int d)
{
	if (d > 0)
		deep(d - 1);
	else
		bottom();
	sink += d;	/* (no tail call) */
}

static void *other(void *arg)
{
	(void)arg;
	deep(25);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		seconds = atof(argv[1]);
	if (pthread_create(&t, NULL, other, NULL))
		return 1;
	deep(40);
	pthread_join(t, NULL);
	return 0;
}
