/* pprof.c - dlprof pprof: the recording as a pprof profile (profile.proto, gzipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "family.h"
#include "filter.h"
#include "parse-options.h"
#include "pprof-view.h"

static const char *const pprof_usage[] = {
	"dlprof pprof [-i FILE] [-o OUT.pb.gz | -o -] [--inline] [--raw-irqs] [--no-kernel] [--families FILE]",
	"dlprof pprof [OPTIONS] FILE...   (several recordings, e.g. one per rank: one profile, labelled input, host, pid, rank)",
	"dlprof pprof --memory [-i FILE] [-o OUT.pb.gz]   (a heap profile: alloc_objects, alloc_space, inuse_objects, inuse_space)",
	NULL
};

int cmd_pprof(int argc, const char **argv)
{
	const char *input = NULL, *output = "dlprof.pb.gz", *families = NULL;
	const char *event = NULL, *symfs = NULL;
	int inl = 0, no_kernel = 0, raw_irqs = 0, memory = 0;
	struct filter_args fa = { 0 };
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('o', "output", &output, "FILE", "profile to write (default dlprof.pb.gz; - for stdout)"),
		OPT_BOOL(0, "raw-irqs", &raw_irqs, "keep samples taken where interrupts came back on as taken"),
		OPT_BOOL(0, "inline", &inl, "include inlined functions as frames (DWARF)"),
		OPT_BOOL(0, "no-kernel", &no_kernel, "leave kernel frames out"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "the samples of this event (default the first recorded)"),
		OPT_STRING(0, "symfs", &symfs, "DIR", "read the recorded files under DIR (a copy of the recording machine's files; default $DLPROF_SYMFS)"),
		OPT_BOOL(0, "memory", &memory, "a heap profile of a record --memory recording: alloc_objects, alloc_space, inuse_objects, inuse_space (in use: live at exit)"),
		OPT_FILTERS(fa),
		OPT_END(),
	};
	struct pprof_view_opts o;
	const char **inputs;
	int nr_inputs;
	struct family_rules *rules;
	struct sample_filter filt;
	int ret;

	argc = parse_options(argc, argv, options, pprof_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	nr_inputs = filter_reader_inputs(argc, argv, &input, &inputs);
	if (nr_inputs < 0)
		return exit_status(nr_inputs);
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	if (!strcmp(output, "-") && isatty(1)) {
		error("not writing a compressed profile to a terminal: give -o FILE");
		filter_release(&filt);
		return EXIT_USAGE;
	}
	if (memory && (event || fa.family || fa.op || nr_inputs > 1)) {
		error("--memory takes one recording, and no -e, --family or --op");
		filter_release(&filt);
		return EXIT_USAGE;
	}
	rules = family_rules_load(families);
	if (!rules) {
		filter_release(&filt);
		return EXIT_FATAL;
	}
	memset(&o, 0, sizeof(o));
	o.inputs = inputs;
	o.nr_inputs = (size_t)nr_inputs;
	o.output = output;
	o.no_kernel = no_kernel;
	o.memory = memory;
	o.po.inline_frames = inl;
	o.po.raw_irqs = raw_irqs;
	o.po.event = event;
	o.po.symfs = symfs;
	o.rules = rules;
	o.filt = &filt;
	ret = pprof_view_run(&o);
	family_rules_free(rules);
	filter_release(&filt);
	return exit_status(ret);
}
