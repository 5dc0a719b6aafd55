/* timeline.c - dlprof timeline: the recording as a Chrome Trace Event file (timeline.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "family.h"
#include "filter.h"
#include "parse-options.h"
#include "memprof.h"
#include "timeline.h"
#include "util.h"

static const char *const timeline_usage[] = {
	"dlprof timeline [-i FILE] [-o trace.json | -o -] [--step FUNC] [--families FILE] [FILTERS]",
	NULL
};

int cmd_timeline(int argc, const char **argv)
{
	const char *input = "dlprof.data", *output = "trace.json", *families = NULL, *event = NULL, *step = NULL;
	struct filter_args fa = { 0 };
	struct sample_filter filt;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('o', "output", &output, "FILE", "trace to write (default trace.json; - for stdout)"),
		OPT_STRING(0, "step", &step, "FUNC", "training steps: a track of the invocations of FUNC (a Python function or native symbol)"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "the samples of this event (default the first recorded)"),
		OPT_FILTERS_NO_DL(fa),
		OPT_END(),
	};
	struct family_rules *rules;
	struct timeline *tl;
	struct profile_opts po;
	struct profile_stats st;
	struct session_info sinfo;
	FILE *out;
	long n;
	int ret, to_stdout;

	argc = parse_options(argc, argv, options, timeline_usage, PARSE_OPT_NO_ARGS);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	rules = family_rules_load(families);
	if (!rules) {
		filter_release(&filt);
		return EXIT_FATAL;
	}
	tl = timeline_new(rules);
	if (step)
		timeline_set_steps(tl, step);
	memset(&po, 0, sizeof(po));
	po.event = event;
	memset(&sinfo, 0, sizeof(sinfo));
	ret = timeline_run(tl, input, &po, &filt, &st, &sinfo);
	if (ret >= 0 && strstr(st.other_events, "mem-alloc")) {
		/* record --memory: the heap's live bytes, a counter track per process */
		struct memprof *mp = memprof_new(rules, NULL);
		struct filter_args none = { 0 };
		struct sample_filter all;
		struct profile_opts mpo;
		struct profile_stats mst;
		struct session_info minfo;
		const struct mem_alloc *al;

		memset(&mpo, 0, sizeof(mpo));
		filter_init(&all, &none);
		if (memprof_run(mp, input, &mpo, &all, &mst, &minfo) >= 0) {
			size_t nr = memprof_allocs(mp, &al);

			timeline_set_heap(tl, al, nr);	/* copied */
		}
		filter_release(&all);
		memprof_free(mp);
	}
	if (ret >= 0) {
		to_stdout = !strcmp(output, "-");
		out = to_stdout ? stdout : fopen(output, "w");
		if (!out) {
			error("cannot write '%s': %m", output);
			ret = -1;
		} else {
			n = timeline_write(tl, out, &st);
			if ((to_stdout ? fflush(out) : fclose(out)) != 0 || n < 0) {
				error("cannot write '%s': %m", output);
				ret = -1;
			} else if (!to_stdout) {
				fprintf(stderr, "dlprof: wrote %s: %ld events from %llu samples\n", output,
					n, (unsigned long long)st.samples);
			}
		}
		if (ret >= 0 && filter_active(&filt))
			info("timeline: %s: %llu of %llu samples kept", filt.desc,
			     (unsigned long long)st.samples,
			     (unsigned long long)(st.samples + st.filtered_out));
	}
	timeline_free(tl);
	family_rules_free(rules);
	filter_release(&filt);
	if (ret < 0)
		return EXIT_FATAL;
	return ret == 1 || sinfo.bad_records ? EXIT_PARTIAL : EXIT_OK;
}
