/* fold.c - dlprof fold: folded stacks ("root;...;leaf COUNT") for flamegraph.pl. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "calltree.h"
#include "cmds.h"
#include "parse-options.h"
#include "profile.h"
#include "util.h"

static const char *const fold_usage[] = {
	"dlprof fold [-i FILE] [--inline] [--no-kernel] [--no-comm]",
	NULL
};

struct fold_ctx {
	struct fold *fold;
	/* Hook for extra outermost frames (operator family, framework op): returns how many
	 * of roots[] it filled, outermost first. */
	size_t (*roots)(void *ctx, const struct frame *frames, size_t nr, const char **roots,
			size_t max);
	void *roots_ctx;
};

static int fold_stack(void *ctx, struct machine *m, const struct dlp_sample *s,
		      const struct frame *frames, size_t nr, int complete)
{
	struct fold_ctx *fc = ctx;
	const char *roots[4];
	size_t nroots = 0;

	if (fc->roots)
		nroots = fc->roots(fc->roots_ctx, frames, nr, roots, ARRAY_SIZE(roots));
	fold_add(fc->fold, frames, nr, machine_comm_at(m, s->pid, s->tid, s->time), roots, nroots, 1);
	return 0;
}

static void print_line(void *ctx, const char *stack, uint64_t count)
{
	printf("%s %llu\n", stack, (unsigned long long)count);
}

int cmd_fold(int argc, const char **argv)
{
	const char *input = "dlprof.data";
	int inl = 0, no_kernel = 0, no_comm = 0;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_BOOL(0, "inline", &inl, "include inlined functions as frames (DWARF)"),
		OPT_BOOL(0, "no-kernel", &no_kernel, "leave kernel frames out"),
		OPT_BOOL(0, "no-comm", &no_comm, "do not start each stack with the thread name"),
		OPT_END(),
	};
	struct profile_opts po;
	struct profile_stats st;
	struct profile_consumer cons;
	struct fold_opts fo;
	struct fold_ctx fc;
	int ret;

	argc = parse_options(argc, argv, options, fold_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (argc > 0) {
		error("unexpected argument '%s'", argv[0]);
		return EXIT_USAGE;
	}
	if (access(input, R_OK)) {
		error("cannot read '%s': %m", input);
		return EXIT_FATAL;
	}
	memset(&fo, 0, sizeof(fo));
	fo.no_kernel = no_kernel;
	fo.comm_root = !no_comm;
	memset(&fc, 0, sizeof(fc));
	fc.fold = fold_new(&fo);
	memset(&po, 0, sizeof(po));
	po.inline_frames = inl;
	memset(&cons, 0, sizeof(cons));
	cons.stack = fold_stack;
	cons.ctx = &fc;

	ret = profile_run(input, &po, &cons, &st, NULL);
	if (ret < 0) {
		fold_free(fc.fold);
		return EXIT_FATAL;
	}
	fold_each(fc.fold, print_line, NULL);
	fflush(stdout);
	fold_free(fc.fold);
	return ret == 1 ? EXIT_PARTIAL : EXIT_OK;
}
