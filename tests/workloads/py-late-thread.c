/* py-late-thread.c - libpy-late-thread.so, for py_late_thread.py through ctypes: a
 * native thread (as a C++ library's pool makes them) that spins in C for a while, then
 * calls into Python (a ctypes callback: its thread state is made then) and stays there.
 *   late_thread_start(native_seconds, callback): the thread's id, once it runs
 *   late_thread_join() */
#define _GNU_SOURCE
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

static pthread_t th;
static double native_secs;
static void (*late_cb)(void);
static volatile int tid_set;
static volatile long late_tid;
static volatile double sink;

static double thread_cpu(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void late_native_spin(double secs)
{
	double t0 = thread_cpu(), x = 1.0;

	while (thread_cpu() - t0 < secs)
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

static void *run(void *arg)
{
	(void)arg;
	late_tid = syscall(SYS_gettid);
	__atomic_store_n(&tid_set, 1, __ATOMIC_RELEASE);
	late_native_spin(native_secs);
	late_cb();	/* Python from here on */
	return NULL;
}

long late_thread_start(double native_seconds, void (*callback)(void))
{
	native_secs = native_seconds;
	late_cb = callback;
	if (pthread_create(&th, NULL, run, NULL))
		return -1;
	while (!__atomic_load_n(&tid_set, __ATOMIC_ACQUIRE))
		usleep(100);
	return late_tid;
}

void late_thread_join(void)
{
	pthread_join(th, NULL);
}
