/* speedscope.c - dlprof speedscope: the profile in speedscope's file format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "filter.h"
#include "parse-options.h"
#include "speedscope.h"

static const char *const speedscope_usage[] = {
	"dlprof speedscope [-i FILE] [-o OUT.speedscope.json | -o -] [--inline] [--no-kernel] [FILTERS]",
	NULL
};

int cmd_speedscope(int argc, const char **argv)
{
	const char *input = "dlprof.data", *output = "dlprof.speedscope.json", *event = NULL;
	int inl = 0, no_kernel = 0, raw_irqs = 0, ret;
	struct filter_args fa = { 0 };
	struct sample_filter filt;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('o', "output", &output, "FILE", "file to write (default dlprof.speedscope.json; - for stdout)"),
		OPT_BOOL(0, "inline", &inl, "include inlined functions as frames (DWARF)"),
		OPT_BOOL(0, "raw-irqs", &raw_irqs, "keep samples taken where interrupts came back on as taken"),
		OPT_BOOL(0, "no-kernel", &no_kernel, "leave kernel frames out"),
		OPT_STRING('e', "event", &event, "NAME", "the samples of this event (default the first recorded)"),
		OPT_FILTERS_NO_DL(fa),
		OPT_END(),
	};
	struct speedscope_opts o;

	argc = parse_options(argc, argv, options, speedscope_usage, PARSE_OPT_NO_ARGS);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	memset(&o, 0, sizeof(o));
	o.input = input;
	o.output = output;
	o.no_kernel = no_kernel;
	o.po.inline_frames = inl;
	o.po.event = event;
	o.po.raw_irqs = raw_irqs;
	o.filt = &filt;
	ret = speedscope_run(&o);
	filter_release(&filt);
	return exit_status(ret);
}
