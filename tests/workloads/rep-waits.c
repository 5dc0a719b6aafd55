/* rep-waits.c - waits of known length: the main thread waits 3 x 100 ms on a condition
 * variable in wait_for_batch() and 200 ms in read() of a pipe in read_pipe() (a helper
 * thread signals and writes after those times), spinning a little between.  Prints what
 * its own clock measured: "wait_for_batch NS" and "read_pipe NS". */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int batches;
static int pfd[2];

static uint64_t now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void *producer(void *arg)
{
	for (int i = 0; i < 3; i++) {
		sleep_ms(100);
		pthread_mutex_lock(&mu);
		batches++;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	sleep_ms(200);
	if (write(pfd[1], "x", 1) != 1)
		abort();
	return arg;
}

__attribute__((noinline)) static void wait_for_batch(int want)
{
	pthread_mutex_lock(&mu);
	while (batches < want)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
}

__attribute__((noinline)) static void read_pipe(void)
{
	char c;

	if (read(pfd[0], &c, 1) != 1)
		abort();
}

static volatile unsigned long sink;

__attribute__((noinline)) static void spin_ms(int ms)
{
	uint64_t end = now() + ms * 1000000ull;

	while (now() < end)
		sink++;
}

int main(void)
{
	pthread_t th;
	uint64_t t, batch_ns = 0, pipe_ns;

	if (pipe(pfd))
		return 1;
	pthread_create(&th, NULL, producer, NULL);
	for (int i = 1; i <= 3; i++) {
		t = now();
		wait_for_batch(i);
		batch_ns += now() - t;
		spin_ms(5);
	}
	t = now();
	read_pipe();
	pipe_ns = now() - t;
	pthread_join(th, NULL);
	printf("wait_for_batch %llu\nread_pipe %llu\n", (unsigned long long)batch_ns,
	       (unsigned long long)pipe_ns);
	return 0;
}
