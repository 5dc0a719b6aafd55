/* fuzz-read.h - what the recording harnesses do with a file once it is written: read it
 * the way report does (the session's two passes, the process model, the unwinder, the
 * symbolizer, each sample's attribution, PROC and MEMFREES records' parsers, the counters
 * of record --metrics by row, printed), then once more with the off-CPU view.  Included
 * by fuzz-recording.c and fuzz-perfdata.c. */
#ifndef DLPROF_FUZZ_READ_H
#define DLPROF_FUZZ_READ_H

#include <string.h>

#include "attr-stream.h"
#include "family-rules.h"
#include "memrec.h"
#include "metview.h"
#include "process.h"
#include "profile.h"
#include "recfile.h"
#include "session.h"

static int fuzz_on_sample(void *ctx, const struct attributed *as)
{
	/* a worker's sample comes back settled: its operator is known */
	if (as->a && !as->a->op)
		__builtin_trap();
	metview_sample(ctx, as);	/* (report --metrics: its counts, if it has any) */
	return 0;
}

static int fuzz_on_meta(void *ctx, const struct recmeta *m)
{
	metview_meta(ctx, m);
	return 0;
}

/* report --metrics's table of what the run gave mv, in each format, to nowhere */
static void fuzz_print_metrics(struct metview *mv)
{
	FILE *null = fopen("/dev/null", "w");

	if (!null)
		return;
	metview_print(mv, null, OUT_TEXT, 0, 0);
	metview_print(mv, null, OUT_JSON, 5, 0);
	metview_print(mv, null, OUT_CSV, 0, 1);
	fclose(null);
}

static int fuzz_on_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	if (type == DLP_REC_PROC) {	/* report --sort pid, pprof's labels, timeline's names */
		struct proc_table t = { 0 };

		proc_table_add(&t, data, len);
		proc_table_add(&t, data, len);	/* the same pid again: replaced */
		proc_table_release(&t);
	}
	if (type == DLP_REC_MEMFREES) {	/* report --memory's frees */
		struct memrec_dec d;
		struct memrec_free f;

		if (!memrec_free_begin(&d, data, len))
			while (memrec_free_next(&d, &f) > 0)
				;
	}
	return 0;
}

/* Read the recording (dlprof's or perf.data) at path as report would. */
static void fuzz_read(const char *path, const struct family_rules *rules)
{
	struct attr_view v = { .sample = fuzz_on_sample, .other = fuzz_on_other,
			       .meta = fuzz_on_meta };
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;

	if (session_process(path, NULL, NULL, &info) < 0)
		return;
	memset(&po, 0, sizeof(po));
	po.metric_samples = 1;	/* (a counter's own samples, as report reads them) */
	v.ctx = metview_new(DLVIEW_OP);
	attr_stream_run(path, &po, NULL, rules, &v, &st, &info);
	fuzz_print_metrics(v.ctx);
	metview_free(v.ctx);
	po.wall = 1;
	v.plain = 1;
	v.ctx = metview_new(-1);	/* (by symbol: no attribution in the plain view) */
	attr_stream_run(path, &po, NULL, rules, &v, &st, &info);
	fuzz_print_metrics(v.ctx);
	metview_free(v.ctx);
}

#endif
