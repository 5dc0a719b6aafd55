/* report.c - dlprof report: where the time went, as a top-style table, JSON or CSV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "dlview.h"
#include "isa.h"
#include "memprof.h"
#include "parse-options.h"
#include "report.h"
#include "steps.h"

static const char *const report_usage[] = {
	"dlprof report [-i FILE] [--sort KEY] [--limit N] [--format table|json|csv] [--srcline] [--no-children] [--raw-irqs] [--off-cpu | --wall]",
	"dlprof report [-i FILE] --steps FUNC [--format table|json] [FILTERS]",
	"dlprof report [-i FILE] --sort family|op|prim|thread|line|pid [--families FILE]",
	"dlprof report [-i FILE] --group family",
	"dlprof report [-i FILE] --isa [--limit N] [--format table|json]   (= check-isa -i)",
	"dlprof report [-i FILE] --memory [--sort self|op|total|line|family|thread] [--limit N] [--format table|json|csv]",
	"dlprof report [OPTIONS] [--by-input] FILE...   (several recordings, e.g. one per rank: one table, or a row per recording)",
	NULL
};

/* --sort KEY: a symbol table's key and order, or a DL view (0: unknown) */
static int parse_sort(const char *sort, struct report_opts *o)
{
	static const struct {
		const char *name;
		enum ct_key key;
		enum ct_sort sort;
		int view;
	} keys[] = {
		{ "self", CT_KEY_SYM, CT_SORT_SELF, -1 },
		{ "total", CT_KEY_SYM, CT_SORT_TOTAL, -1 },
		{ "sym", CT_KEY_SYM, CT_SORT_NAME, -1 },
		{ "dso", CT_KEY_DSO, CT_SORT_SELF, -1 },
		{ "comm", CT_KEY_COMM, CT_SORT_SELF, -1 },
		{ "tid", CT_KEY_TID, CT_SORT_SELF, -1 },
		{ "family", CT_KEY_SYM, CT_SORT_SELF, DLVIEW_FAMILY },
		{ "op", CT_KEY_SYM, CT_SORT_SELF, DLVIEW_OP },
		{ "thread", CT_KEY_SYM, CT_SORT_SELF, DLVIEW_THREAD },
		{ "line", CT_KEY_SYM, CT_SORT_SELF, DLVIEW_LINE },
		{ "pid", CT_KEY_SYM, CT_SORT_SELF, DLVIEW_PROCESS },
		{ "rank", CT_KEY_SYM, CT_SORT_SELF, DLVIEW_RANK },
		{ "prim", CT_KEY_SYM, CT_SORT_SELF, DLVIEW_PRIM },
	};

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (!strcmp(keys[i].name, sort)) {
			o->key = keys[i].key;
			o->sort = keys[i].sort;
			o->view = keys[i].view;
			return 1;
		}
	return 0;
}

int cmd_report(int argc, const char **argv)
{
	const char *input = NULL, *sort = "self", *format = "table";
	const char **inputs;
	int nr_inputs, by_input = 0;
	const char *symfs = NULL;
	const char *group = NULL, *families = NULL, *event = NULL, *steps_func = NULL;
	struct filter_args fa = { 0 };
	struct sample_filter filt;
	int limit = -1, srcline = 0, no_children = 0, no_findings = 0, isa = 0, raw_irqs = 0;
	int off_cpu = 0, wall = 0, reunwind = 0, check_unwind = 0, memory = 0, metrics = 0;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('s', "sort", &sort, "KEY",
			   "self, total, sym, dso, comm, tid, pid, rank, family, op, prim, thread or line (default self)"),
		OPT_STRING(0, "group", &group, "family", "top symbols under each operator family"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "count the samples of this event (default the first recorded)"),
		OPT_BOOL(0, "no-findings", &no_findings, "do not print findings under the table"),
		OPT_INT('n', "limit", &limit, "N", "show at most N rows (table default 40, 0: all)"),
		OPT_STRING(0, "format", &format, "FMT", "table, json or csv"),
		OPT_BOOL(0, "srcline", &srcline, "resolve source file:line through DWARF (slower)"),
		OPT_BOOL(0, "no-children", &no_children, "count only the sampled function, hide Total"),
		OPT_BOOL(0, "wall", &wall, "on- and off-CPU time together (record --off-cpu): a thread's total is its wall time"),
		OPT_BOOL(0, "off-cpu", &off_cpu, "where threads waited (record --off-cpu): stacks weighted by time off the CPU"),
		OPT_BOOL(0, "raw-irqs", &raw_irqs, "keep samples taken where interrupts came back on as taken"),
		OPT_BOOL(0, "memory", &memory, "the heap (record --memory): bytes allocated, freed, live at the peak and at exit, by --sort self|op|total|line|family|thread (op, total: with the bytes of the operators each called)"),
		OPT_BOOL(0, "metrics", &metrics, "the counters record --metrics read with each sample, by the --sort rows (family, op, prim, line, thread, pid, self): counts, IPC, misses per 1000 instructions, FP operations by width, faults per CPU-second"),
		OPT_BOOL(0, "isa", &isa, "ISA class of the code the samples landed in (check-isa -i)"),
		OPT_STRING(0, "steps", &steps_func, "FUNC", "training steps: the invocations of FUNC (a Python function or native symbol), min/median/max, the slowest against the median by family"),
		OPT_BOOL(0, "reunwind", &reunwind, "unwind the kept stack copies (record --keep-stacks) instead of using the stacks unwound while recording"),
		OPT_STRING(0, "symfs", &symfs, "DIR", "read the recorded files under DIR (a copy of the recording machine's files; default $DLPROF_SYMFS)"),
		OPT_BOOL(0, "by-input", &by_input, "a row per recording (report FILE...: e.g. one per rank or host): samples against the median, top families, host, ranks"),
		OPT_BOOL(0, "check-unwind", &check_unwind, "unwind the kept stack copies (record --keep-stacks) and compare them with the stacks unwound while recording"),
		OPT_FILTERS(fa),
		OPT_END(),
	};
	struct report_opts o;
	struct family_rules *rules;
	int ret, mem_key = -1;

	argc = parse_options(argc, argv, options, report_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	nr_inputs = filter_reader_inputs(argc, argv, &input, &inputs);
	if (nr_inputs < 0)
		return exit_status(nr_inputs);
	memset(&o, 0, sizeof(o));
	o.view = -1;
	if (memory) {
		mem_key = memprof_key_parse(sort);
		if (mem_key < 0) {
			error("--memory: unknown sort key '%s' (self, op, line, family, thread, total)", sort);
			return EXIT_USAGE;
		}
	} else if (!parse_sort(sort, &o)) {
		error("unknown sort key '%s' (self, total, sym, dso, comm, tid, pid, family, op, prim, thread, line)", sort);
		return EXIT_USAGE;
	}
	if (group) {
		if (strcmp(group, "family")) {
			error("unknown group '%s' (family)", group);
			return EXIT_USAGE;
		}
		o.view = DLVIEW_GROUP_FAMILY;
	}
	if (out_format_parse(format, OUT_ALL, &o.format) < 0)
		return EXIT_USAGE;
	if (limit < -1) {
		error("--limit must not be negative");
		return EXIT_USAGE;
	}
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	ret = DLP_USAGE;
	if (off_cpu && wall) {
		error("--off-cpu or --wall, not both");
	} else if (o.view == DLVIEW_RANK && (off_cpu || wall || group || by_input || isa)) {
		error("--sort rank reads the CPU samples and the waits together itself: not with --off-cpu, --wall, --group, --by-input or --isa");
	} else if ((off_cpu || wall) && ((o.view >= 0 && o.view != DLVIEW_FAMILY) || isa || event)) {
		error("--off-cpu and --wall give the family, symbol, dso, comm and tid tables (the other DL views count samples, not waits)");
	} else if (isa) {
		/* the same view and exit status as check-isa -i */
		if (strcmp(sort, "self") || group || o.format == OUT_CSV || srcline ||
		    no_children || filter_active(&filt))
			error("--isa takes only -i, --limit and --format table|json");
		else
			ret = isaprof_run(input, symfs, o.format, limit >= 0 ? limit : 20, 0);
		filter_release(&filt);
		return ret < 0 ? exit_status(ret) : ret;	/* check-isa's verdict */
	} else if ((nr_inputs > 1 || by_input) && o.view != DLVIEW_RANK &&
		   ((o.view >= 0 && o.view != DLVIEW_FAMILY) || (o.view == DLVIEW_FAMILY && !by_input) ||
		    group || memory || steps_func || off_cpu || wall || reunwind || check_unwind)) {
		/* each recording keeps its own attribution; what adds up across them is the
		 * symbol, dso, comm and tid tables and the table of recordings */
		error("several recordings give the self, total, sym, dso, comm and tid tables and --by-input; read one at a time for the others");
	} else if (memory && (group || steps_func || off_cpu || wall || isa || event ||
			      no_children || reunwind || check_unwind)) {
		error("--memory takes -i, --sort, --limit, --format, --families, --srcline and the thread and time filters");
	} else if (memory && (filt.nr_families || filt.nr_ops)) {
		error("--memory: --family and --op filters pick CPU samples; use --sort family or op");
	} else if (metrics && (memory || steps_func || off_cpu || wall || isa || group || by_input ||
			       nr_inputs > 1 || o.view == DLVIEW_RANK ||
			       (o.view < 0 && (o.key != CT_KEY_SYM || o.sort == CT_SORT_TOTAL)))) {
		error("--metrics gives the family, op, prim, line, thread, pid and self tables of one recording");
	} else if (steps_func && (o.format == OUT_CSV || strcmp(sort, "self") || group ||
				  off_cpu || wall)) {
		error("--steps takes only -i, --limit, --format table|json, --families and filters");
	} else {
		ret = DLP_OK;
	}
	if (ret == DLP_USAGE) {
		filter_release(&filt);
		return EXIT_USAGE;
	}

	rules = family_rules_load(families);
	if (!rules) {
		filter_release(&filt);
		return EXIT_FATAL;
	}
	if (memory) {
		ret = memprof_report(input, symfs, (enum memprof_key)mem_key, o.format, limit, rules, &filt,
				     srcline);
	} else if (steps_func) {
		ret = steps_report(input, symfs, steps_func, rules, &filt, o.format, limit, stdout);
	} else {
		o.inputs = inputs;
		o.nr_inputs = (size_t)nr_inputs;
		o.by_input = by_input;
		o.limit = limit;
		o.no_findings = no_findings;
		o.metrics = metrics;
		o.po.srcline = srcline;
		o.po.event = event;
		o.po.symfs = symfs;
		o.po.no_children = no_children;
		o.po.raw_irqs = raw_irqs;
		o.po.off_cpu = off_cpu;
		o.po.wall = wall;
		o.po.reunwind = reunwind;
		o.po.check_unwind = check_unwind;
		o.rules = rules;
		o.filt = &filt;
		ret = report_run(&o);
	}
	family_rules_free(rules);
	filter_release(&filt);
	return exit_status(ret);
}
