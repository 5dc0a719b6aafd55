/* mem-known.c - allocations of known sizes in known functions with known lifetimes, for
 * record --memory.  It keeps its own accounting (bytes asked for, by function; the live
 * bytes and their peak) and prints it at the end:
 *	alloc FUNCTION BYTES COUNT
 *	peak BYTES
 *	exit BYTES		(still allocated when main returns)
 *
 * mem-known [BATCH]	batch_small() makes BATCH 4 KiB allocations, freed at once
 *			(default 524288: 2 GiB), then the others:
 *   keep_cache()	128 x 2 MiB posix_memalign(64), freed at the end
 *   grow_buffer()	a realloc chain from 4 KiB doubling to 64 MiB, then freed
 *   leak_blocks()	15 x 4 MiB calloc, never freed
 *   thread_blocks()	16 x 4 MiB malloc in a thread of its own, freed by main
 *   map_region()	32 MiB of anonymous mmap, munmap'd
 * mem-known fork	the parent runs keep_cache(); a forked child runs child_work()
 *			(64 x 1 MiB, freed) and frees one of the parent's blocks
 * mem-known arena	300 MiB of its own arena through raw mmap system calls (not seen)
 * mem-known storm T N	forks, and then each process runs T threads of N small malloc/free
 *			pairs (64-319 bytes) in storm_thread(); prints "storm PID CALLS" for
 *			each process (no accounting lines)
 *
 * Built as a program and as libmemknown.so (no main) for tests/workloads/mem_py.py, which
 * also calls:
 *   one_block(n)	one malloc of n bytes, touched, freed at the next call
 *   spin_us(us)	us microseconds of CPU, no allocation
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, visibility("default")))

enum { F_BATCH, F_CACHE, F_GROW, F_LEAK, F_THREAD, F_MAP, F_CHILD, F_ONE, NR_F };
static const char *const fname[NR_F] = {
	"batch_small", "keep_cache", "grow_buffer", "leak_blocks", "thread_blocks",
	"map_region", "child_work", "one_block",
};
static uint64_t bytes[NR_F], count[NR_F];
static int64_t live, peak;

static void account(int f, size_t n)
{
	bytes[f] += n;
	count[f]++;
	live += (int64_t)n;
	if (live > peak)
		peak = live;
}

static void unaccount(size_t n)
{
	live -= (int64_t)n;
}

/* the compiler must not drop an allocation it can see is unused */
static void touch(void *p, size_t n)
{
	volatile char *c = p;

	for (size_t i = 0; i < n; i += 4096)
		c[i] = 1;
}

NOINLINE void batch_small(long n)
{
	for (long i = 0; i < n; i++) {
		void *p = malloc(4096);

		if (!p)
			abort();
		account(F_BATCH, 4096);
		((volatile char *)p)[0] = 1;
		free(p);
		unaccount(4096);
	}
}

static void *cache[128];

NOINLINE void keep_cache(void)
{
	for (int i = 0; i < 128; i++) {
		if (posix_memalign(&cache[i], 64, 2u << 20) || ((uintptr_t)cache[i] & 63))
			abort();
		account(F_CACHE, 2u << 20);
		touch(cache[i], 2u << 20);
	}
}

NOINLINE void drop_cache(int from)
{
	for (int i = from; i < 128; i++) {
		free(cache[i]);
		unaccount(2u << 20);
	}
}

NOINLINE void grow_buffer(void)
{
	size_t n = 4096;
	char *p = malloc(n);

	account(F_GROW, n);
	memset(p, 7, n);
	while (n < (64u << 20)) {
		char *q = realloc(p, 2 * n);

		if (!q || q[n - 1] != 7)
			abort();
		unaccount(n);
		n *= 2;
		account(F_GROW, n);
		memset(q + n / 2, 7, n / 2);
		p = q;
	}
	free(p);
	unaccount(n);
}

NOINLINE void leak_blocks(void)
{
	for (int i = 0; i < 15; i++) {
		char *p = calloc(1, 4u << 20);

		if (!p || p[12345])
			abort();
		account(F_LEAK, 4u << 20);
		touch(p, 4u << 20);
	}
}

static void *handed[16];

static void *thread_main(void *arg)
{
	for (int i = 0; i < 16; i++) {
		handed[i] = malloc(4u << 20);
		touch(handed[i], 4u << 20);
	}
	return arg;
}

NOINLINE void thread_blocks(void)
{
	pthread_t t;

	pthread_create(&t, NULL, thread_main, NULL);
	pthread_join(t, NULL);
	for (int i = 0; i < 16; i++)
		account(F_THREAD, 4u << 20);
	for (int i = 0; i < 16; i++) {
		free(handed[i]);	/* freed by another thread than the allocating one */
		unaccount(4u << 20);
	}
}

NOINLINE void map_region(void)
{
	void *p = mmap(NULL, 32u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort();
	account(F_MAP, 32u << 20);
	touch(p, 32u << 20);
	munmap(p, 32u << 20);
	unaccount(32u << 20);
}

NOINLINE void child_work(void)
{
	for (int i = 0; i < 64; i++) {
		void *p = malloc(1u << 20);

		touch(p, 1u << 20);
		account(F_CHILD, 1u << 20);
		free(p);
		unaccount(1u << 20);
	}
}

/* 300 MiB through the system call itself: no malloc, no mmap() to see */
NOINLINE void arena(void)
{
	size_t n = 300u << 20;
	char *p = (char *)syscall(SYS_mmap, NULL, n, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		abort();
	touch(p, n);
	printf("arena %zu\n", n);
}

static void *one;
static size_t one_n;

NOINLINE void one_block(long n)
{
	if (one) {
		free(one);
		unaccount(one_n);
	}
	one_n = (size_t)n;
	one = malloc(one_n);
	if (!one)
		abort();
	account(F_ONE, (size_t)n);
	touch(one, (size_t)n);
}

NOINLINE void spin_us(long us)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000 < us);
}

NOINLINE void print_accounting(void)
{
	for (int f = 0; f < NR_F; f++)
		if (count[f])
			printf("alloc %s %llu %llu\n", fname[f], (unsigned long long)bytes[f],
			       (unsigned long long)count[f]);
	printf("peak %lld\nexit %lld\n", (long long)peak, (long long)live);
	fflush(stdout);
}

#ifndef MEMKNOWN_LIB
static long storm_n;

NOINLINE void *storm_thread(void *arg)
{
	for (long i = 0; i < storm_n; i++) {
		void *p = malloc(64 + (size_t)(i & 255));

		if (!p)
			abort();
		((volatile char *)p)[0] = 1;
		free(p);
	}
	return arg;
}

static int storm(int threads, long n)
{
	pthread_t t[64];
	pid_t child;
	int st = 0;

	storm_n = n;
	if (threads > 64)
		threads = 64;
	child = fork();
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, storm_thread, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("storm %d %ld\n", (int)getpid(), threads * n);
	if (child == 0)
		_exit(0);
	waitpid(child, &st, 0);
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);	/* no stdio buffer in the accounting */
	if (argc > 3 && !strcmp(argv[1], "storm"))
		return storm(atoi(argv[2]), atol(argv[3]));
	if (argc > 1 && !strcmp(argv[1], "arena")) {
		arena();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid;
		int st;

		keep_cache();
		pid = fork();
		if (pid == 0) {
			child_work();
			free(cache[0]);		/* the parent's block, freed in the child */
			_exit(0);
		}
		waitpid(pid, &st, 0);
		drop_cache(0);
		print_accounting();
		return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : 1;
	}
	batch_small(argc > 1 ? atol(argv[1]) : 524288);
	keep_cache();
	grow_buffer();
	leak_blocks();
	thread_blocks();
	map_region();
	drop_cache(0);
	print_accounting();
	return 0;
}
#endif
