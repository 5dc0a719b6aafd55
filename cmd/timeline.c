/* timeline.c - dlprof timeline: the recording as a Chrome Trace Event file (timeline.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "filter.h"
#include "parse-options.h"
#include "timeline.h"

static const char *const timeline_usage[] = {
	"dlprof timeline [-i FILE] [-o trace.json | -o -] [--step FUNC] [--families FILE] [FILTERS]",
	"dlprof timeline [OPTIONS] FILE...   (several recordings, e.g. one per host, on one time axis)",
	NULL
};

int cmd_timeline(int argc, const char **argv)
{
	const char *input = NULL, *symfs = NULL, *output = "trace.json", *families = NULL, *event = NULL, *step = NULL;
	struct filter_args fa = { 0 };
	struct sample_filter filt;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('o', "output", &output, "FILE", "trace to write (default trace.json; - for stdout)"),
		OPT_STRING(0, "step", &step, "FUNC", "training steps: a track of the invocations of FUNC (a Python function or native symbol)"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "the samples of this event (default the first recorded)"),
		OPT_STRING(0, "symfs", &symfs, "DIR", "read the recorded files under DIR (a copy of the recording machine's files; default $DLPROF_SYMFS)"),
		OPT_FILTERS_NO_DL(fa),
		OPT_END(),
	};
	struct family_rules *rules;
	struct timeline_opts o;
	const char **inputs;
	int ret, nr_inputs;

	argc = parse_options(argc, argv, options, timeline_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	nr_inputs = filter_reader_inputs(argc, argv, &input, &inputs);
	if (nr_inputs < 0)
		return exit_status(nr_inputs);
	if (filter_init(&filt, &fa) < 0) {
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
	o.step = step;
	o.po.event = event;
	o.po.symfs = symfs;
	o.rules = rules;
	o.filt = &filt;
	ret = timeline_run(&o);
	family_rules_free(rules);
	filter_release(&filt);
	return exit_status(ret);
}
