/* rec-tstack.c - record test workload: one pthread worker burns CPU for SECONDS (default
 * 0.5) in rec_tstack_outer() -> rec_tstack_middle() -> rec_tstack_spin() on a stack the
 * program maps itself, with a readable mapping right above it.  The kernel's user-stack
 * copy then runs past the thread's TCB (glibc puts it at the top of the stack) into that
 * mapping, as it does for torch worker threads when ASLR places a mapping there.  The
 * main thread only waits.  Prints "stack LOW-HIGH" (the thread's stack block). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define STACK (256 << 10)
#define ABOVE (64 << 10)

volatile unsigned long rec_sink;

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void rec_tstack_spin(double seconds)
{
	double end = thread_cpu() + seconds;
	unsigned long x = 3;

	while (thread_cpu() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 2862933555777941757ul + 3037000493ul;
	rec_sink += x;
}

__attribute__((noinline)) void rec_tstack_middle(double seconds)
{
	volatile char pad[512];

	memset((char *)pad, 1, sizeof(pad));
	rec_tstack_spin(seconds);
	rec_sink += pad[7];
}

__attribute__((noinline)) void rec_tstack_outer(double seconds)
{
	rec_tstack_middle(seconds);
	rec_sink++;
}

static double secs = 0.5;

static void *worker(void *arg)
{
	rec_tstack_outer(secs);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t t;
	char *mem;

	if (argc > 1)
		secs = atof(argv[1]);
	mem = mmap(NULL, STACK + ABOVE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memset(mem + STACK, 0x5a, ABOVE);	/* readable, non-zero bytes above the stack */
	if (mprotect(mem + STACK, ABOVE, PROT_READ))	/* a VMA of its own */
		return 1;
	printf("stack %p-%p\n", (void *)mem, (void *)(mem + STACK));
	fflush(stdout);
	if (pthread_attr_init(&attr) || pthread_attr_setstack(&attr, mem, STACK) ||
	    pthread_create(&t, &attr, worker, NULL))
		return 1;
	pthread_join(t, NULL);
	return 0;
}
