/* fold.c - dlprof fold: folded stacks ("root;...;leaf COUNT") for flamegraph.pl; and
 * dlprof flamegraph: the same stacks drawn by dlprof (flamegraph.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attr-stream.h"
#include "calltree.h"
#include "cmds.h"
#include "family.h"
#include "filter.h"
#include "flamegraph.h"
#include "memprof.h"
#include "parse-options.h"
#include "process.h"
#include "profile.h"
#include "rephash.h"
#include "util.h"

static const char *const flamegraph_usage[] = {
	"dlprof flamegraph [-i FILE] [-o flame.svg | -o -] [--title TEXT] [--width PX] [--off-cpu | --wall] [--no-kernel] [--family[=GLOB]] [--op[=GLOB]] [FILTERS]",
	"dlprof flamegraph --diff [OPTIONS] BASE.data NEW.data",
	"dlprof flamegraph [OPTIONS] [--by-input] FILE...   (several recordings, e.g. one per rank, in one graph)",
	NULL
};

static const char *const fold_usage[] = {
	"dlprof fold [-i FILE] [--inline] [--off-cpu | --wall] [--raw-irqs] [--no-kernel] [--no-comm] [--family[=GLOB]] [--op[=GLOB]] [--families FILE] [FILTERS]",
	"dlprof fold [OPTIONS] [--by-input] FILE...   (several recordings, e.g. one per rank, as one)",
	NULL
};

struct fold_ctx {
	struct fold *fold;
	int by_family, by_op;
	int colour;		/* flamegraph: the family first, to colour by (not a frame) */
	int off_cpu;		/* weights: microseconds off the CPU */
};

/* The operator family and/or framework operator at the root of the stack. */
static size_t dl_roots(struct fold_ctx *fc, const char *family, const char *op, const char **roots)
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

/* --family[=GLOB], --op[=GLOB]: the root frame, and with a value the filter too */
static int by_family, by_op;
/* --memory alloc|peak|live: the heap's stacks by bytes (record --memory) */
static const char *memory;
enum { MEM_ALLOC = 1, MEM_PEAK, MEM_LIVE };
static int mem_mode;
static struct filter_args fa;

static int opt_family(const struct option *o, const char *arg)
{
	by_family = 1;
	if (arg)
		fa.family = arg;
	return 0;
}

static int opt_op(const struct option *o, const char *arg)
{
	by_op = 1;
	if (arg)
		fa.op = arg;
	return 0;
}

static void print_line(void *ctx, const char *stack, uint64_t count)
{
	printf("%s %llu\n", stack, (unsigned long long)count);
}

/* Several recordings: each one's stacks into one fold, under the recording's name with
 * --by-input */
static int by_input;
static const char *symfs;

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

static int write_svg(struct flamegraph *fg, const char *output, const char *title, int off_cpu,
		     int width, int ret)
{
	struct flamegraph_opts o = { title, mem_mode ? "bytes" : off_cpu ? "us" : "samples", width };
	int to_stdout = !strcmp(output, "-");
	FILE *out = to_stdout ? stdout : fopen(output, "w");
	long n;

	if (!out) {
		error("cannot write '%s': %m", output);
		return -1;
	}
	n = flamegraph_write(fg, out, &o);
	if ((to_stdout ? fflush(out) : fclose(out)) != 0 || n < 0) {
		error("cannot write '%s': %m", output);
		return -1;
	}
	if (!to_stdout)
		fprintf(stderr, "dlprof: wrote %s: %ld frames\n", output, n);
	return ret;
}

static void add_svg(void *ctx, const char *stack, uint64_t count)
{
	flamegraph_add(ctx, stack, count);
}

/* Both commands' options; flamegraph adds -o, --title and --width. */
#define FOLD_OPTIONS \
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"), \
		OPT_BOOL(0, "off-cpu", &off_cpu, "where threads waited (record --off-cpu): each stack weighted by microseconds off the CPU"), \
		OPT_BOOL(0, "wall", &wall, "on- and off-CPU stacks together (record --off-cpu), weighted by microseconds"), \
		OPT_BOOL(0, "raw-irqs", &raw_irqs, "keep samples taken where interrupts came back on as taken"), \
		OPT_BOOL(0, "reunwind", &reunwind, "unwind the kept stack copies (record --keep-stacks) instead of using the stacks unwound while recording"), \
		OPT_BOOL(0, "inline", &inl, "include inlined functions as frames (DWARF)"), \
		OPT_BOOL(0, "no-kernel", &no_kernel, "leave kernel frames out"), \
		OPT_BOOL(0, "no-comm", &no_comm, "do not start each stack with the thread name"), \
		OPT_CALLBACK(0, "family", NULL, "GLOB,...", "start each stack with its operator family (=GLOB: only those families)", opt_family, PARSE_OPT_NOARG | PARSE_OPT_OPTARG), \
		OPT_CALLBACK(0, "op", NULL, "GLOB,...", "start each stack with its framework operator, after the family (=GLOB: only those operators)", opt_op, PARSE_OPT_NOARG | PARSE_OPT_OPTARG), \
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"), \
		OPT_STRING('e', "event", &event, "NAME", "the samples of this event (default the first recorded)"), \
		OPT_STRING(0, "memory", &memory, "alloc|peak|live", "the heap (record --memory) by bytes: allocated, live at the peak, or live at exit"), \
		OPT_STRING(0, "symfs", &symfs, "DIR", "read the recorded files under DIR (a copy of the recording machine's files; default $DLPROF_SYMFS)"), \
		OPT_BOOL(0, "by-input", &by_input, "several recordings (FILE...): start each stack with the recording it came from"), \
		OPT_FILTERS_NO_DL(fa)

/* What one recording's fold needs, and its result. */
struct fold_run {
	struct fold_ctx fc;
	struct profile_stats st;
	struct session_info sinfo;
	int ret;
};

/* --memory: the sampled allocations' stacks, weighed by the bytes they stand for */
static void fold_memory(const char *input, const struct fold_opts *fo, struct profile_opts *po,
			struct sample_filter *filt, struct family_rules *rules,
			struct fold_run *run)
{
	struct fold_ctx *fc = &run->fc;
	struct memprof *mp = memprof_new(rules, fo);
	const struct mem_alloc *al;
	size_t nr;

	run->ret = memprof_run(mp, input, po, filt, &run->st, &run->sinfo);
	nr = run->ret >= 0 ? memprof_allocs(mp, &al) : 0;
	for (size_t i = 0; i < nr; i++) {
		const char *roots[3];
		uint64_t w = mem_mode == MEM_ALLOC ? al[i].weight :
			     mem_mode == MEM_PEAK ? (al[i].at_peak ? al[i].weight : 0) :
			     (!al[i].free_time ? al[i].weight : 0);

		if (w)
			fold_add_text(fc->fold, roots, dl_roots(fc, al[i].family, al[i].op, roots),
				      memprof_text(mp, al[i].stack), w);
	}
	memprof_free(mp);
}

/* Fold INPUT into run->fc (deferred workers' stacks included).  run->ret: profile's. */
static void fold_one(const char *input, const struct fold_opts *fo, struct profile_opts *po,
		     struct sample_filter *filt, struct family_rules *rules, int svg,
		     struct fold_run *run)
{
	struct fold_ctx *fc = &run->fc;
	struct attr_view v = { .sample = fold_sample, .ctx = fc };

	memset(run, 0, sizeof(*run));
	fc->fold = fold_new(fo);
	fc->by_family = by_family;
	fc->by_op = by_op;
	fc->colour = svg;
	v.plain = !svg && !by_family && !by_op;
	fc->off_cpu = po->off_cpu || po->wall;
	if (mem_mode) {
		fold_memory(input, fo, po, filt, rules, run);
		return;
	}
	run->ret = attr_stream_run(input, po, filt, rules, &v, &run->st, &run->sinfo);
}

static void fold_run_release(struct fold_run *run)
{
	fold_free(run->fc.fold);
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

static int fold_main(int argc, const char **argv, int svg)
{
	const char *input = NULL, *families = NULL, *event = NULL;
	const char *output = "flame.svg", *title = NULL;
	const char **inputs;
	int nr_inputs;
	int inl = 0, no_kernel = 0, no_comm = 0, raw_irqs = 0, off_cpu = 0, wall = 0, width = 1200;
	int reunwind = 0, diff = 0;
	struct family_rules *rules = NULL;
	struct sample_filter filt;
	const struct option svg_options[] = {
		FOLD_OPTIONS,
		OPT_STRING('o', "output", &output, "FILE", "SVG to write (default flame.svg; - for stdout)"),
		OPT_STRING(0, "title", &title, "TEXT", "the graph's title (default: the command recorded)"),
		OPT_INT(0, "width", &width, "PX", "width in pixels (default 1200)"),
		OPT_BOOL(0, "diff", &diff, "a differential flame graph of two recordings, BASE NEW: widths from NEW, red where NEW took more time, blue less"),
		OPT_END(),
	};
	const struct option fold_options[] = {
		FOLD_OPTIONS,
		OPT_END(),
	};
	struct flamegraph *fg = NULL;
	struct profile_opts po;
	struct fold_opts fo;
	struct fold_run run, base;
	int ret;

	argc = parse_options(argc, argv, svg ? svg_options : fold_options,
			     svg ? flamegraph_usage : fold_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (diff && (argc != 2 || input || by_input)) {
		error("--diff takes two recordings, BASE NEW (see 'dlprof flamegraph -h')");
		return EXIT_USAGE;
	}
	if (diff) {	/* BASE NEW: its two recordings, checked below */
		nr_inputs = 0;
		inputs = argv;
		if (symfs)
			dso_set_symfs(symfs);
	} else {
		nr_inputs = reader_inputs(argc, argv, &input, symfs, &inputs);
		if (nr_inputs < 0)
			return nr_inputs == -1 ? EXIT_USAGE : EXIT_FATAL;
	}
	if (off_cpu && wall) {
		error("--off-cpu or --wall, not both");
		return EXIT_USAGE;
	}
	if (memory) {
		mem_mode = !strcmp(memory, "alloc") ? MEM_ALLOC : !strcmp(memory, "peak") ? MEM_PEAK :
			   !strcmp(memory, "live") ? MEM_LIVE : 0;
		if (!mem_mode) {
			error("unknown --memory view '%s' (alloc, peak or live)", memory);
			return EXIT_USAGE;
		}
		if (off_cpu || wall || event || reunwind || fa.family || fa.op) {
			error("--memory takes no --off-cpu, --wall, -e, --reunwind, --family=GLOB or --op=GLOB");
			return EXIT_USAGE;
		}
	}
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	for (int i = 0; diff && i < 2; i++) {
		if (access(argv[i], R_OK)) {
			error("cannot read '%s': %m", argv[i]);
			filter_release(&filt);
			return EXIT_FATAL;
		}
	}
	memset(&fo, 0, sizeof(fo));
	fo.no_kernel = no_kernel;
	fo.comm_root = !no_comm;
	if (svg || by_family || by_op || fa.family || fa.op || fa.sym) {
		rules = family_rules_load(families);
		if (!rules) {
			filter_release(&filt);
			return EXIT_FATAL;
		}
	}
	memset(&po, 0, sizeof(po));
	po.inline_frames = inl;
	po.raw_irqs = raw_irqs;
	po.reunwind = reunwind;
	po.off_cpu = off_cpu;
	po.wall = wall;
	po.event = event;

	if (diff) {
		struct diff_add d;

		fold_one(argv[0], &fo, &po, &filt, rules, 1, &base);
		fold_one(argv[1], &fo, &po, &filt, rules, 1, &run);
		ret = base.ret < 0 || run.ret < 0 ? -1 : base.ret > run.ret ? base.ret : run.ret;
		if (ret >= 0) {
			fg = flamegraph_new(1);
			d.fg = fg;
			d.base = 1;
			d.us_per_unit = off_cpu || wall ? 1.0 : base.st.sample_period_ns / 1000.0;
			fold_each(base.fc.fold, add_diff, &d);
			d.base = 0;
			d.us_per_unit = off_cpu || wall ? 1.0 : run.st.sample_period_ns / 1000.0;
			fold_each(run.fc.fold, add_diff, &d);
			if (!title) {
				char *t = xasprintf("%s against %s", argv[1], argv[0]);

				ret = write_svg(fg, output, t, 1, width, ret);
				free(t);
			} else {
				ret = write_svg(fg, output, title, 1, width, ret);
			}
			flamegraph_free(fg);
		}
		if (base.sinfo.bad_records)
			run.sinfo.bad_records += base.sinfo.bad_records;
		fold_run_release(&base);
	} else {
		fold_one(inputs[0], &fo, &po, &filt, rules, svg, &run);
		ret = run.ret;
		if (ret >= 0 && (nr_inputs > 1 || by_input)) {
			/* each recording folded on its own (its attribution, its pids), then one
			 * fold of them all */
			struct fold *all = fold_new(&fo);
			struct merge mg = { all, by_input ? inputs[0] : NULL, svg };

			fold_each(run.fc.fold, merge_line, &mg);
			for (int k = 1; k < nr_inputs && ret >= 0; k++) {
				struct fold_run more;

				fold_one(inputs[k], &fo, &po, &filt, rules, svg, &more);
				if (more.ret < 0 || more.ret > ret)
					ret = more.ret;
				mg.label = by_input ? inputs[k] : NULL;
				if (more.ret >= 0)
					fold_each(more.fc.fold, merge_line, &mg);
				run.st.samples += more.st.samples;
				run.st.filtered_out += more.st.filtered_out;
				run.sinfo.bad_records += more.sinfo.bad_records;
				fold_run_release(&more);
			}
			fold_free(run.fc.fold);
			run.fc.fold = all;
		}
		if (ret >= 0) {
			if (svg) {
				fg = flamegraph_new(1);
				fold_each(run.fc.fold, add_svg, fg);
				ret = write_svg(fg, output, title ? title : inputs[0], off_cpu || wall, width, ret);
				flamegraph_free(fg);
			} else {
				fold_each(run.fc.fold, print_line, NULL);
			}
			if (filter_active(&filt))
				info("fold: %s: %llu of %llu samples kept", filt.desc,
				     (unsigned long long)run.st.samples,
				     (unsigned long long)(run.st.samples + run.st.filtered_out));
		}
	}
	fflush(stdout);
	fold_run_release(&run);
	filter_release(&filt);
	family_rules_free(rules);
	if (ret < 0)
		return EXIT_FATAL;
	/* partial: cut short, or malformed records skipped (session warned with the count) */
	return ret == 1 || run.sinfo.bad_records ? EXIT_PARTIAL : EXIT_OK;
}

int cmd_fold(int argc, const char **argv)
{
	return fold_main(argc, argv, 0);
}

int cmd_flamegraph(int argc, const char **argv)
{
	return fold_main(argc, argv, 1);
}
