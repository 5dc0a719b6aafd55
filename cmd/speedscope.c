/* speedscope.c - dlprof speedscope: the profile in speedscope's file format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "cmds.h"
#include "filter.h"
#include "parse-options.h"
#include "profile.h"
#include "speedscope.h"
#include "util.h"

static const char *const speedscope_usage[] = {
	"dlprof speedscope [-i FILE] [-o OUT.speedscope.json | -o -] [--inline] [--no-kernel] [FILTERS]",
	NULL
};

struct ss_ctx {
	struct speedscope *ss;
	int no_kernel;
	uint64_t period;	/* ns per sample of a clock event, else 0 (weight 1) */
	struct frame *buf;
	size_t alloc_buf;
	char *cmdline;
};

static int ss_sample(void *ctx, const struct attributed *as)
{
	struct ss_ctx *c = ctx;
	const struct dlp_sample *s = as->s;
	const struct frame *frames = as->frames;
	size_t nr = as->nr;

	if (c->no_kernel) {
		size_t n = 0;

		ALLOC_GROW(c->buf, nr + 1, c->alloc_buf);
		for (size_t i = 0; i < nr; i++)
			if (!(frames[i].flags & FRAME_KERNEL))
				c->buf[n++] = frames[i];
		frames = c->buf;
		nr = n;
	}
	speedscope_add(c->ss, s->pid, s->tid, machine_comm_at(as->m, s->pid, s->tid, s->time),
		       frames, nr, s->period ? s->period : 1);
	return 0;
}

static int ss_meta(void *ctx, const char *key, const char *value)
{
	struct ss_ctx *c = ctx;

	if (!strcmp(key, "cmdline")) {
		free(c->cmdline);
		c->cmdline = xstrdup(value);
	}
	return 0;
}

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
	struct ss_ctx c;
	struct profile_opts po;
	struct profile_stats st;
	struct session_info sinfo;
	struct attr_view v = { .sample = ss_sample, .meta = ss_meta, .ctx = &c, .plain = 1 };
	FILE *out;

	argc = parse_options(argc, argv, options, speedscope_usage, PARSE_OPT_NO_ARGS);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	memset(&c, 0, sizeof(c));
	c.ss = speedscope_new();
	c.no_kernel = no_kernel;
	memset(&po, 0, sizeof(po));
	po.inline_frames = inl;
	po.event = event;
	po.raw_irqs = raw_irqs;
	memset(&sinfo, 0, sizeof(sinfo));
	ret = attr_stream_run(input, &po, &filt, NULL, &v, &st, &sinfo);
	if (ret >= 0) {
		int to_stdout = !strcmp(output, "-");

		out = to_stdout ? stdout : fopen(output, "w");
		if (!out) {
			error("cannot write '%s': %m", output);
			ret = -1;
		} else if ((speedscope_write(c.ss, out, c.cmdline ? c.cmdline : input,
					     st.sample_is_time) < 0) |
			   ((to_stdout ? fflush(out) : fclose(out)) != 0)) {
			error("cannot write '%s': %m", output);
			ret = -1;
		} else if (!to_stdout) {
			fprintf(stderr, "dlprof: wrote %s: %llu samples\n", output,
				(unsigned long long)st.samples);
		}
	}
	speedscope_free(c.ss);
	free(c.buf);
	free(c.cmdline);
	filter_release(&filt);
	if (ret < 0)
		return EXIT_FATAL;
	return ret == 1 || sinfo.bad_records ? EXIT_PARTIAL : EXIT_OK;
}
