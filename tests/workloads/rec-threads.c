/* rec-threads.c - record test workload: N pthread workers (default 2) each burn CPU in
 * rec_thread_work() for SECONDS (default 0.5); the main thread only waits. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

volatile unsigned long rec_sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void rec_thread_work(double seconds)
{
	double end = thread_cpu() + seconds;
	unsigned long x = 3;

	while (thread_cpu() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 2862933555777941757ul + 3037000493ul;
	rec_sink += x;
}

static double secs = 0.5;

static void *worker(void *arg)
{
	rec_thread_work(secs);
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	pthread_t t[4096];

	if (argc > 2)
		secs = atof(argv[2]);
	if (n < 1 || n > 4096)
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
