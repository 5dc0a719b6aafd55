/* fold-view.c - dlprof fold and flamegraph: the stacks of one recording or several,
 * folded, printed or drawn (fold-view.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "flamegraph.h"
#include "fold-view.h"
#include "memprof.h"
#include "readings.h"
#include "util.h"

/* One recording's fold */
struct fold_ctx {
	struct fold *fold;
	int by_family, by_op;
	int colour;		/* flamegraph: the family first, to colour by (not a frame) */
	int off_cpu;		/* weights: microseconds off the CPU */
	struct readings *rd;	/* the recordings read together */
};

/* The operator family and/or framework operator at the root of the stack. */
static size_t dl_roots(const struct fold_ctx *fc, const char *family, const char *op,
		       const char **roots)
{
	size_t n = 0;

	if (fc->colour)
		roots[n++] = family;
	if (fc->by_family)
		roots[n++] = family;
	if (fc->by_op)
		roots[n++] = op;
	return n;
}

static int fold_sample(void *ctx, const struct attributed *as)
{
	struct fold_ctx *fc = ctx;
	const struct dlp_sample *s = as->s;
	const char *roots[3], *comm = machine_comm_at(as->m, s->pid, s->tid, s->time);
	uint64_t w = fc->off_cpu ? (s->period + 500) / 1000 : 1;
	size_t n = as->a ? dl_roots(fc, as->a->family, attr_op_name(as->a->op, NULL), roots) : 0;

	fold_add(fc->fold, as->frames, as->nr, comm, roots, n, w);
	return 0;
}

/* The recording's host and clock anchors, to tell a process recorded twice */
static int fold_meta(void *ctx, const struct recmeta *m)
{
	struct fold_ctx *fc = ctx;

	readings_meta(fc->rd, m);
	return 0;
}

/* record --memory: the sampled allocations' stacks, weighed by the bytes they stand for */
static int fold_memory(const struct fold_view_opts *o, const char *input, struct fold_ctx *fc,
		       struct profile_opts *po, struct profile_stats *st,
		       struct session_info *info)
{
	struct memprof *mp = memprof_new(o->rules, &o->fo);
	const struct mem_alloc *al;
	size_t nr;
	int ret;

	ret = memprof_run(mp, input, po, o->filt, st, info);
	nr = ret >= 0 ? memprof_allocs(mp, &al) : 0;
	for (size_t i = 0; i < nr; i++) {
		const char *roots[3];
		uint64_t w = o->weight == FOLD_MEM_ALLOC ? al[i].weight :
			     o->weight == FOLD_MEM_PEAK ? (al[i].at_peak ? al[i].weight : 0) :
			     (!al[i].free_time ? al[i].weight : 0);

		if (w)
			fold_add_text(fc->fold, roots, dl_roots(fc, al[i].family, al[i].op, roots),
				      memprof_text(mp, al[i].stack), w);
	}
	memprof_free(mp);
	return ret;
}

/* Several recordings: each one's stacks into one fold, under the recording's name with
 * --by-input */
struct merge {
	struct fold *dst;
	const char *label;
	int colour;		/* flamegraph: the stack's first element is its family */
};

static void merge_line(void *ctx, const char *stack, uint64_t count)
{
	struct merge *mg = ctx;
	const char *roots[2];
	size_t n = 0;

	if (mg->colour && mg->label) {
		/* family;LABEL;the rest: the family stays first, for the colour */
		const char *semi = strchr(stack, ';');
		char *fam = xstrndup(stack, semi ? (size_t)(semi - stack) : strlen(stack));

		roots[n++] = fam;
		roots[n++] = mg->label;
		fold_add_text(mg->dst, roots, n, semi ? semi + 1 : "", count);
		free(fam);
		return;
	}
	if (mg->label)
		roots[n++] = mg->label;
	fold_add_text(mg->dst, roots, n, stack, count);
}

struct fold_reader {
	const struct fold_view_opts *o;
	struct fold **folds;	/* one per recording */
};

/* Fold recording k on its own (its attribution, its pids) */
static int fold_one(void *ctx, struct readings *rd, size_t k, struct profile_stats *st,
		    struct session_info *info)
{
	struct fold_reader *fr = ctx;
	const struct fold_view_opts *o = fr->o;
	struct profile_opts po = o->po;
	struct fold_ctx fc = {
		.fold = fold_new(&o->fo), .by_family = o->by_family, .by_op = o->by_op,
		.colour = o->svg, .off_cpu = o->po.off_cpu || o->po.wall, .rd = rd,
	};
	struct attr_view v = { .sample = fold_sample, .meta = fold_meta, .ctx = &fc,
			       .plain = !o->svg && !o->by_family && !o->by_op };

	fr->folds[k] = fc.fold;
	readings_opts(rd, &po);
	if (o->weight != FOLD_SAMPLES)
		return fold_memory(o, rd->in[k].file, &fc, &po, st, info);
	return attr_stream_run(rd->in[k].file, &po, o->filt, o->rules, &v, st, info);
}

static int write_svg(const struct fold_view_opts *o, struct flamegraph *fg, const char *title,
		     int in_us)
{
	struct flamegraph_opts fo = { title, o->weight != FOLD_SAMPLES ? "bytes" :
				      in_us ? "us" : "samples", o->width };
	FILE *out = out_open(o->output, "w");
	long n;

	if (!out)
		return -1;
	n = flamegraph_write(fg, out, &fo);
	if (out_close(out, o->output, n < 0) < 0)
		return -1;
	if (strcmp(o->output, "-"))
		fprintf(stderr, "dlprof: wrote %s: %ld frames\n", o->output, n);
	return 0;
}

/* flamegraph --diff: the stacks in microseconds (samples times the recording's time per
 * sample; off-CPU and wall weights are microseconds already) */
struct diff_add {
	struct flamegraph *fg;
	double us_per_unit;
	int base;
};

static void add_diff(void *ctx, const char *stack, uint64_t count)
{
	struct diff_add *d = ctx;
	uint64_t us = (uint64_t)(count * d->us_per_unit + 0.5);

	if (d->base)
		flamegraph_add_base(d->fg, stack, us);
	else
		flamegraph_add(d->fg, stack, us);
}

static int write_diff(const struct fold_view_opts *o, const struct readings *rd,
		      struct fold **folds)
{
	struct flamegraph *fg = flamegraph_new(1);
	int in_us = o->po.off_cpu || o->po.wall, ret;
	char *title = o->title ? xstrdup(o->title) :
		      xasprintf("%s against %s", rd->in[1].file, rd->in[0].file);

	for (int k = 0; k < 2; k++) {
		struct diff_add d = { fg, in_us ? 1.0 : rd->in[k].st.sample_period_ns / 1000.0,
				      k == 0 };

		fold_each(folds[k], add_diff, &d);
	}
	ret = write_svg(o, fg, title, 1);
	free(title);
	flamegraph_free(fg);
	return ret;
}

static void print_line(void *ctx, const char *stack, uint64_t count)
{
	printf("%s %llu\n", stack, (unsigned long long)count);
}

static void add_svg(void *ctx, const char *stack, uint64_t count)
{
	flamegraph_add(ctx, stack, count);
}

int fold_view_run(const struct fold_view_opts *o)
{
	struct fold_reader fr = { o, xcalloc(o->nr_inputs, sizeof(*fr.folds)) };
	struct readings rd;
	struct fold *all;
	int ret;

	memset(&rd, 0, sizeof(rd));
	ret = readings_run(&rd, o->inputs, o->nr_inputs, fold_one, &fr);
	if (ret >= 0 && o->diff) {
		if (write_diff(o, &rd, fr.folds) < 0)
			ret = DLP_FAILED;
	} else if (ret >= 0) {
		all = fr.folds[0];
		if (o->nr_inputs > 1 || o->by_input) {
			/* one fold of them all */
			struct merge mg = { fold_new(&o->fo), NULL, o->svg };

			for (size_t k = 0; k < o->nr_inputs; k++) {
				mg.label = o->by_input ? o->inputs[k] : NULL;
				fold_each(fr.folds[k], merge_line, &mg);
			}
			all = mg.dst;
		}
		if (o->svg) {
			struct flamegraph *fg = flamegraph_new(1);

			fold_each(all, add_svg, fg);
			if (write_svg(o, fg, o->title ? o->title : o->inputs[0],
				      o->po.off_cpu || o->po.wall) < 0)
				ret = DLP_FAILED;
			flamegraph_free(fg);
		} else {
			fold_each(all, print_line, NULL);
		}
		if (all != fr.folds[0])
			fold_free(all);
		if (ret >= 0 && filter_active(o->filt))
			info("%s: %s: %llu of %llu samples kept", o->svg ? "flamegraph" : "fold",
			     o->filt->desc, (unsigned long long)rd.st.samples,
			     (unsigned long long)(rd.st.samples + rd.st.filtered_out));
	}
	fflush(stdout);
	for (size_t k = 0; k < o->nr_inputs; k++)
		fold_free(fr.folds[k]);
	free(fr.folds);
	readings_release(&rd);
	return ret;
}
