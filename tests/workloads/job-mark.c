/* job-mark.c - a rank of a distributed job, for the tests that read several hosts'
 * recordings together (t9010): its own wall clock at a marker, to check where the
 * merged timeline puts it.
 *
 *   job-mark SPIN_MS SLEEP_MS SPIN_MS
 *
 * Burns SPIN_MS of CPU in job_spin(), sleeps SLEEP_MS, prints "mark PID REALTIME_NS"
 * (CLOCK_REALTIME read as the sleep ended: the end of the process's longest off-CPU
 * interval), then burns SPIN_MS more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long job_sink;

static long long now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

__attribute__((noinline)) void job_spin(long ms)
{
	long long end = now(CLOCK_MONOTONIC) + ms * 1000000ll;
	unsigned long x = 1;

	while (now(CLOCK_MONOTONIC) < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	job_sink = x;
}

int main(int argc, char **argv)
{
	struct timespec nap;
	long sleep_ms;

	if (argc != 4) {
		fprintf(stderr, "usage: job-mark SPIN_MS SLEEP_MS SPIN_MS\n");
		return 64;
	}
	job_spin(atol(argv[1]));
	sleep_ms = atol(argv[2]);
	nap.tv_sec = sleep_ms / 1000;
	nap.tv_nsec = sleep_ms % 1000 * 1000000;
	nanosleep(&nap, NULL);
	printf("mark %d %lld\n", (int)getpid(), now(CLOCK_REALTIME));
	fflush(stdout);
	job_spin(atol(argv[3]));
	return 0;
}
