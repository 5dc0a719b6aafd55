/* rep-tail.c - a thread whose last stretch on the CPU has no switch-out: it naps 20 x 10
 * ms (spinning 2 ms between), then spins 300 ms and exits, as SCHED_FIFO where it may
 * (root): nothing of the recorder's preempts it then, as nothing did t8008's zlib thread
 * once the others were done; the main thread sleeps in join() and 100 ms after it.  The
 * thread prints what its own clocks measured, from its first line to its last, and
 * whether it ran its last stretch as SCHED_FIFO: "tail TID WALL_NS CPU_NS FIFO" (t9002:
 * the thread table). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static volatile uint64_t sink;

static void spin_ms(int ms)
{
	uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000ull;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			sink += i;
}

static void *tail(void *arg)
{
	uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct timespec nap = { 0, 10 * 1000000L };
	struct sched_param rt = { .sched_priority = 1 };
	int fifo;

	(void)arg;
	for (int i = 0; i < 20; i++) {
		nanosleep(&nap, NULL);
		spin_ms(2);
	}
	fifo = !pthread_setschedparam(pthread_self(), SCHED_FIFO, &rt);
	spin_ms(300);
	printf("tail %d %llu %llu %d\n", gettid(),
	       (unsigned long long)(clock_ns(CLOCK_MONOTONIC) - w0),
	       (unsigned long long)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0), fifo);
	fflush(stdout);
	return NULL;
}

int main(void)
{
	pthread_t t;
	struct timespec after = { 0, 100 * 1000000L };

	if (pthread_create(&t, NULL, tail, NULL))
		return 1;
	pthread_join(t, NULL);
	nanosleep(&after, NULL);
	return 0;
}
