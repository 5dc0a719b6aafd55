/* fold.c - dlprof fold: folded stacks ("root;...;leaf COUNT") for flamegraph.pl. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "calltree.h"
#include "cmds.h"
#include "dlview.h"
#include "family.h"
#include "parse-options.h"
#include "profile.h"
#include "util.h"

static const char *const fold_usage[] = {
	"dlprof fold [-i FILE] [--inline] [--no-kernel] [--no-comm] [--family] [--op] [--families FILE]",
	NULL
};

struct fold_ctx {
	struct fold *fold;
	/* Hook for extra outermost frames (operator family, framework op): returns how many
	 * of roots[] it filled, outermost first. */
	size_t (*roots)(void *ctx, const struct frame *frames, size_t nr, const char **roots,
			size_t max);
	void *roots_ctx;
	struct dlview *view;
	int by_family, by_op;
	const struct dlp_sample *cur;	/* the sample being folded, for the roots hook */
};

/* Put the operator family and/or framework operator at the root of the stack. */
static size_t dl_roots(void *ctx, const struct frame *frames, size_t nr, const char **roots,
		       size_t max)
{
	struct fold_ctx *fc = ctx;
	const char *fam, *op;
	size_t n = 0;

	dlview_classify(fc->view, fc->cur, frames, nr, &fam, &op);
	if (fc->by_family && n < max)
		roots[n++] = fam;
	if (fc->by_op && n < max)
		roots[n++] = op;
	return n;
}

static int fold_stack(void *ctx, struct machine *m, const struct dlp_sample *s,
		      const struct frame *frames, size_t nr, int complete)
{
	struct fold_ctx *fc = ctx;
	const char *roots[4];
	size_t nroots = 0;

	fc->cur = s;
	if (fc->roots)
		nroots = fc->roots(fc->roots_ctx, frames, nr, roots, ARRAY_SIZE(roots));
	fold_add(fc->fold, frames, nr, machine_comm_at(m, s->pid, s->tid, s->time), roots, nroots, 1);
	return 0;
}

static int fold_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct fold_ctx *fc = ctx;

	return dlview_other(fc->view, type, data, len);
}

static void print_line(void *ctx, const char *stack, uint64_t count)
{
	printf("%s %llu\n", stack, (unsigned long long)count);
}

int cmd_fold(int argc, const char **argv)
{
	const char *input = "dlprof.data", *families = NULL, *event = NULL;
	int inl = 0, no_kernel = 0, no_comm = 0, by_family = 0, by_op = 0;
	struct family_rules *rules = NULL;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_BOOL(0, "inline", &inl, "include inlined functions as frames (DWARF)"),
		OPT_BOOL(0, "no-kernel", &no_kernel, "leave kernel frames out"),
		OPT_BOOL(0, "no-comm", &no_comm, "do not start each stack with the thread name"),
		OPT_BOOL(0, "family", &by_family, "start each stack with its operator family"),
		OPT_BOOL(0, "op", &by_op, "start each stack with its framework operator (after the family)"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "fold the samples of this event (default the first recorded)"),
		OPT_END(),
	};
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	struct profile_consumer cons;
	struct fold_opts fo;
	struct fold_ctx fc;
	int ret;

	argc = parse_options(argc, argv, options, fold_usage, PARSE_OPT_NO_ARGS);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (access(input, R_OK)) {
		error("cannot read '%s': %m", input);
		return EXIT_FATAL;
	}
	memset(&fo, 0, sizeof(fo));
	fo.no_kernel = no_kernel;
	fo.comm_root = !no_comm;
	memset(&fc, 0, sizeof(fc));
	fc.fold = fold_new(&fo);
	if (by_family || by_op) {
		rules = family_rules_load(families);
		if (!rules) {
			fold_free(fc.fold);
			return EXIT_FATAL;
		}
		fc.view = dlview_new(rules);
		fc.by_family = by_family;
		fc.by_op = by_op;
		fc.roots = dl_roots;
		fc.roots_ctx = &fc;
	}
	memset(&po, 0, sizeof(po));
	po.inline_frames = inl;
	po.event = event;
	memset(&cons, 0, sizeof(cons));
	cons.stack = fold_stack;
	if (fc.view)
		cons.other = fold_other;	/* ITT intervals name oneDNN primitives */
	cons.ctx = &fc;

	memset(&info, 0, sizeof(info));
	ret = profile_run(input, &po, &cons, &st, &info);
	if (ret >= 0)
		fold_each(fc.fold, print_line, NULL);
	fflush(stdout);
	fold_free(fc.fold);
	if (fc.view)
		dlview_free(fc.view);
	family_rules_free(rules);
	if (ret < 0)
		return EXIT_FATAL;
	/* partial: cut short, or malformed records skipped (session warned with the count) */
	return ret == 1 || info.bad_records ? EXIT_PARTIAL : EXIT_OK;
}
