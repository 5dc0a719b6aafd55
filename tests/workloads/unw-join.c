/* unw-join [SECONDS]: a deep, steady call chain (main -> deep x 40 -> bottom -> sel -> mid
 * -> spin, and a second thread at depth 25) where sel calls mid from two call sites in
 * turn (a few ms each): mid's frame is the same (stack depth, registers, where it calls
 * spin) under two return addresses.  A walk made while recording that joins its thread's
 * last walk at mid's frame must notice that the return address above it changed and not
 * take the other call site's frames (t1008: report --check-unwind against each stack
 * unwound anew).
 *
 * unw-join SECONDS jit: mid calls spin and a loop in anonymous executable memory (no
 * CFI: a walk from it finds mid's frame by a stack scan) in turn, each for a fraction of
 * a millisecond, so that a thread's walks begin in either: frames above mid are the same
 * with a scan behind them or none. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static volatile double sink;
static double seconds = 2;
static long per_call = 2000000;
static void (*jit)(long);	/* NULL: spin only */

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
	static __thread unsigned calls;

	if (jit && (calls++ & 1))
		jit(n * 4);
	else
		spin(n);
	__asm__ volatile("" ::: "memory");	/* (no tail call) */
}

/* dec %rdi; jne .-3; ret */
static const unsigned char loop_code[] = { 0x48, 0xff, 0xcf, 0x75, 0xfb, 0xc3 };

static int make_jit(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	memcpy(p, loop_code, sizeof(loop_code));
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC))
		return -1;
	jit = (void (*)(long))p;
	per_call = 100000;
	return 0;
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
		sel(k & 1, per_call);
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
	if (argc > 2 && !strcmp(argv[2], "jit") && make_jit())
		return 1;
	if (pthread_create(&t, NULL, other, NULL))
		return 1;
	deep(40);
	pthread_join(t, NULL);
	return 0;
}
