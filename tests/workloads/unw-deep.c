/* unw-deep [SECONDS]: a stack deeper than record's 32 KiB copy, with a known shape.
 *
 * descend() recurses, each frame holding a 600-byte buffer, to DEPTH (120: about 75 KiB
 * of stack), spending STEP_MS at each level on the way down, so every level is sampled;
 * at the bottom, bottom1() spins for SECONDS / 2.  Its stacks are main -> descend x 120 ->
 * bottom1: the copy holds only the inner ~50 frames, and the walk while recording must
 * take the outer ones from the thread's walks on the way down.
 *
 * Then main calls plunge(), which recurses to the same depth at once (no time spent on
 * the way) and spins in bottom2() for SECONDS / 2: no walk of this thread ever saw its
 * outer frames, so none of bottom2's stacks may reach main. */
#include <stdlib.h>
#include <time.h>

#define DEPTH	120
#define STEP_MS	3

static volatile double sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void burn(double seconds)
{
	double end = now() + seconds, x = 1.0;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) void bottom1(double seconds)
{
	burn(seconds);
	sink += 1;
}

__attribute__((noinline)) void bottom2(double seconds)
{
	burn(seconds);
	sink += 2;
}

__attribute__((noinline)) void descend(int level, double seconds)
{
	volatile char buf[600];

	buf[level % 600] = (char)level;
	burn(STEP_MS / 1e3);
	if (level + 1 < DEPTH)
		descend(level + 1, seconds);
	else
		bottom1(seconds);
	sink += buf[level % 600];
}

__attribute__((noinline)) void plunge(int level, double seconds)
{
	volatile char buf[600];

	buf[level % 600] = (char)(level + 1);
	if (level + 1 < DEPTH)
		plunge(level + 1, seconds);
	else
		bottom2(seconds);
	sink += buf[level % 600] * 2;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;

	descend(0, seconds / 2);
	plunge(0, seconds / 2);
	return 0;
}
