/* jit-chain.c - a JIT that keeps making code: in each of T threads, N kernels one
 * after the other, each written into fresh anonymous executable memory, its line
 * appended to /tmp/perf-PID.map (one write, as oneDNN publishes each kernel) just
 * before it runs for MS milliseconds.  usage: jit-chain N MS [T] (T: 1).  Nearly every
 * sample then falls in code published less than a millisecond before it, several a
 * millisecond with T > 1: a live reader that looks at the map again only now and then
 * leaves some of them unnamed, where report (the whole map, at the end) names every
 * one.  Prints "pid PID" and "kernels N*T" first.
 *
 * The kernel is SSE (every x86-64): two vectors, n rounds of addps/mulps.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "jit-sse.h"

typedef void (*kernel_fn)(float *, uint64_t);

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static volatile float sink;
static int nr, map_fd;
static double ms;

static void *chain(void *arg)
{
	int t = (int)(intptr_t)arg;
	float buf[8] __attribute__((aligned(16)));
	char line[96];

	for (int i = 0; i < nr; i++) {
		/* a page of its own, never reused: each kernel's address is its alone */
		void *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
		uint64_t t0;
		int len;

		if (code == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
		memcpy(code, sse_code, sizeof(sse_code));
		if (mprotect(code, 4096, PROT_READ | PROT_EXEC)) {
			perror("mprotect");
			exit(1);
		}
		len = snprintf(line, sizeof(line), "%lx %zx chain_kernel_%d_%04d\n",
			       (unsigned long)(uintptr_t)code, sizeof(sse_code), t, i);
		if (write(map_fd, line, (size_t)len) != len) {	/* (O_APPEND: whole lines) */
			perror("write");
			exit(1);
		}
		for (int k = 0; k < 8; k++)
			buf[k] = 1.0f / (float)(k + 1);
		t0 = mono_ns();
		do {
			((kernel_fn)code)(buf, 2000);
			buf[0] = buf[1] = 0.5f;
		} while (mono_ns() - t0 < (uint64_t)(ms * 1e6));
		sink = buf[3];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 3 ? atoi(argv[3]) : 1;
	pthread_t tids[64];
	char path[64];

	nr = argc > 1 ? atoi(argv[1]) : 200;
	ms = argc > 2 ? atof(argv[2]) : 1.0;
	if (nr <= 0 || ms <= 0 || threads <= 0 || threads > 64)
		return fprintf(stderr, "usage: jit-chain N MS [THREADS]\n"), 2;
	printf("pid %d\nkernels %d\n", (int)getpid(), nr * threads);
	fflush(stdout);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	map_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (map_fd < 0)
		return perror(path), 1;
	for (int t = 1; t < threads; t++)
		if (pthread_create(&tids[t], NULL, chain, (void *)(intptr_t)t))
			return fprintf(stderr, "jit-chain: no thread\n"), 1;
	chain((void *)0);
	for (int t = 1; t < threads; t++)
		pthread_join(tids[t], NULL);
	close(map_fd);
	return 0;
}
