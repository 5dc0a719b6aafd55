/* fold.c - dlprof fold: folded stacks ("root;...;leaf COUNT") for flamegraph.pl; and
 * dlprof flamegraph: the same stacks drawn by dlprof (fold-view.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "family.h"
#include "filter.h"
#include "fold-view.h"
#include "parse-options.h"

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

/* --family[=GLOB], --op[=GLOB]: the root frame, and with a value the filter too */
static int by_family, by_op;
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

/* Both commands' options; flamegraph adds -o, --title, --width and --diff. */
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

static int fold_main(int argc, const char **argv, int svg)
{
	const char *input = NULL, *families = NULL, *event = NULL, *memory = NULL, *symfs = NULL;
	const char *output = "flame.svg", *title = NULL;
	const char **inputs;
	int nr_inputs, by_input = 0;
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
	struct fold_view_opts o;
	int ret;

	argc = parse_options(argc, argv, svg ? svg_options : fold_options,
			     svg ? flamegraph_usage : fold_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	memset(&o, 0, sizeof(o));
	if (diff && (argc != 2 || input || by_input)) {
		error("--diff takes two recordings, BASE NEW (see 'dlprof flamegraph -h')");
		return EXIT_USAGE;
	}
	nr_inputs = filter_reader_inputs(argc, argv, &input, &inputs);
	if (nr_inputs < 0)
		return exit_status(nr_inputs);
	if (off_cpu && wall) {
		error("--off-cpu or --wall, not both");
		return EXIT_USAGE;
	}
	if (memory) {
		o.weight = !strcmp(memory, "alloc") ? FOLD_MEM_ALLOC :
			   !strcmp(memory, "peak") ? FOLD_MEM_PEAK :
			   !strcmp(memory, "live") ? FOLD_MEM_LIVE : FOLD_SAMPLES;
		if (o.weight == FOLD_SAMPLES) {
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
	if (svg || by_family || by_op || fa.family || fa.op || fa.sym) {
		rules = family_rules_load(families);
		if (!rules) {
			filter_release(&filt);
			return EXIT_FATAL;
		}
	}
	o.inputs = inputs;
	o.nr_inputs = (size_t)nr_inputs;
	o.by_input = by_input;
	o.by_family = by_family;
	o.by_op = by_op;
	o.fo.no_kernel = no_kernel;
	o.fo.comm_root = !no_comm;
	o.po.inline_frames = inl;
	o.po.raw_irqs = raw_irqs;
	o.po.reunwind = reunwind;
	o.po.off_cpu = off_cpu;
	o.po.wall = wall;
	o.po.event = event;
	o.po.symfs = symfs;
	o.rules = rules;
	o.filt = &filt;
	o.svg = svg;
	o.diff = diff;
	o.output = output;
	o.title = title;
	o.width = width;
	ret = fold_view_run(&o);
	filter_release(&filt);
	family_rules_free(rules);
	return exit_status(ret);
}

int cmd_fold(int argc, const char **argv)
{
	return fold_main(argc, argv, 0);
}

int cmd_flamegraph(int argc, const char **argv)
{
	return fold_main(argc, argv, 1);
}
