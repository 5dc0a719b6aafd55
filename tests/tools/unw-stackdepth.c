/* unw-stackdepth.c - measure the dwarf unwinder on a recording: per-sample unwind time,
 * share of complete stacks, and how that share depends on the copied stack size (each
 * sample is unwound again with its stack cut to 1, 2, 4, ... KiB).
 *
 * usage: unw-stackdepth FILE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "process.h"
#include "session.h"
#include "unwind.h"
#include "util.h"

#define MAXF 256
static const unsigned cuts[] = { 1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768, 65536 };
#define NCUTS (sizeof(cuts) / sizeof(cuts[0]))

struct ctx {
	struct machine *m;
	struct unwinder *u;
	uint64_t samples, complete, recovered, frames, ns, warm_ns;
	uint64_t cut_complete[NCUTS], max_size;
};

static int c_mmap(void *ctx, const struct dlp_mmap *mm)
{
	return machine_mmap(((struct ctx *)ctx)->m, mm);
}

static int c_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, int exec, uint64_t time)
{
	return machine_comm(((struct ctx *)ctx)->m, pid, tid, comm, exec, time);
}

static int c_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time)
{
	return machine_fork(((struct ctx *)ctx)->m, pid, ppid, tid, ptid, time);
}

static int c_exit(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time)
{
	return machine_exit(((struct ctx *)ctx)->m, pid, tid, time);
}

static int c_sample(void *ctx, const struct dlp_sample *s)
{
	struct ctx *c = ctx;
	uint64_t ips[MAXF];
	unsigned flags[MAXF];
	int complete;
	uint64_t t0;
	size_t n;

	if (!s->stack_size || !s->user_regs)
		return 0;
	if (!c->u && !(c->u = unwinder_new(c->m)))
		return -1;
	t0 = now_ns();
	n = unwind_sample(c->u, s, ips, flags, MAXF, &complete);
	c->ns += now_ns() - t0;
	c->samples++;
	c->complete += complete;
	c->frames += n;
	for (size_t i = 0; i < n; i++)
		if (flags[i] & FRAME_RECOVERED) {
			c->recovered++;
			break;
		}
	if (s->stack_size > c->max_size)
		c->max_size = s->stack_size;
	for (size_t k = 0; k < NCUTS; k++) {
		struct dlp_sample cut = *s;

		if (cut.stack_size > cuts[k])
			cut.stack_size = cuts[k];
		t0 = now_ns();
		unwind_sample(c->u, &cut, ips, flags, MAXF, &complete);
		if (k == NCUTS - 1)
			c->warm_ns += now_ns() - t0;
		c->cut_complete[k] += complete;
	}
	return 0;
}

static const struct session_ops ops = {
	.mmap = c_mmap,
	.comm = c_comm,
	.fork = c_fork,
	.exit = c_exit,
	.sample = c_sample,
};

int main(int argc, char **argv)
{
	struct ctx c;
	struct session_info info;

	if (argc != 2) {
		fprintf(stderr, "usage: unw-stackdepth FILE\n");
		return 64;
	}
	memset(&c, 0, sizeof(c));
	c.m = machine_new();
	if (session_process(argv[1], &ops, &c, &info) < 0)
		return 2;
	if (!c.samples) {
		printf("no samples with a user stack\n");
		return 1;
	}
	printf("samples with a user stack: %llu (largest copy %llu bytes)\n",
	       (unsigned long long)c.samples, (unsigned long long)c.max_size);
	printf("unwind time: %.1f us/sample first time (module loading included), %.1f us/sample "
	       "again, %.1f frames/sample\n", c.ns / 1e3 / c.samples, c.warm_ns / 1e3 / c.samples,
	       (double)c.frames / c.samples);
	printf("complete: %.1f%%, with a recovered (stack-scanned) frame: %.1f%%\n",
	       100.0 * c.complete / c.samples, 100.0 * c.recovered / c.samples);
	for (size_t k = 0; k < NCUTS; k++)
		printf("stack cut to %6u bytes: %.1f%% complete\n", cuts[k],
		       100.0 * c.cut_complete[k] / c.samples);
	unwinder_free(c.u);
	machine_free(c.m);
	return 0;
}
