/* dlview.h - the DL view of a profile: samples by operator family, framework operator (with
 * the oneDNN primitives beneath it) and thread, context-switch times, and findings.
 *
 * Wiring (cmd/report.c):
 *	struct family_rules *r = family_rules_load(families_file);
 *	struct dlview *v = dlview_new(r, NULL);
 *	ret = dlview_run(v, path, &opts, &filter, &stats, &info);
 *	dlview_set_stats(v, &stats);
 *	dlview_print(v, DLVIEW_FAMILY, stdout, OUT_TEXT, limit);
 *	dlview_print_findings(v, stdout, OUT_TEXT);
 *	dlview_free(v); family_rules_free(r);
 */
#ifndef DLPROF_DLVIEW_H
#define DLPROF_DLVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "family.h"
#include "attr-stream.h"
#include "profile.h"
#include "util.h"

enum dlview_kind {
	DLVIEW_FAMILY,		/* --sort family */
	DLVIEW_OP,		/* --sort op: PyTorch-profiler-like operator table */
	DLVIEW_THREAD,		/* --sort thread */
	DLVIEW_GROUP_FAMILY,	/* --group family: top symbols under each family */
	DLVIEW_LINE,		/* --sort line: Python source lines, with their operators */
	DLVIEW_PROCESS,		/* --sort pid: processes, their command lines and ranks */
	DLVIEW_RANK,		/* --sort rank: a distributed job's ranks (ranks.h) */
	DLVIEW_PRIM,		/* --sort prim: each distinct oneDNN primitive (dlview-prims.c) */
};


struct dlview;

/* A view of the attributed samples of its own attribution stream (attr-stream.h).
 * also: the reader's own view of the same samples (report's symbol table), each of its
 * callbacks called after the DL view's; NULL: none.  Of the recording's META it reads
 * "nr_cpus" (the recorded machine's CPU count, for the oversubscription finding),
 * "cpu_flags" (its /proc/cpuinfo flags) and "env.NAME" (the workload's settings), for
 * the fast-path findings (fastpath.h); without the flags the findings fall back to the
 * machine running report. */
struct dlview *dlview_new(const struct family_rules *rules, const struct attr_view *also);
void dlview_free(struct dlview *v);
/* The consumer feeding the view's stream, for profile_run() */
void dlview_consumer(struct dlview *v, struct profile_consumer *c);
/* attr_stream_run_filtered() into the view; returns as profile_run() */
struct sample_filter;
int dlview_run(struct dlview *v, const char *path, struct profile_opts *po,
	       struct sample_filter *filt, struct profile_stats *st, struct session_info *info);
/* Switch-outs in the stream (profile_opts.wall 2) are read for the threads' waits only
 * (the thread table's GIL waits, the gil-contention finding): not counted as samples,
 * passed to also only with pass_on (report --metrics: the counters they read).  Call
 * before dlview_run. */
void dlview_waits_apart(struct dlview *v, int pass_on);
/* The fast-path facts the view gathered (fastpath.h), for check-isa -i. */
struct fastpath *dlview_fastpath(struct dlview *v);
/* Give the run's stats (time per sample, event name) before printing. */
void dlview_set_stats(struct dlview *v, const struct profile_stats *st);

/* The samples of each family (DLVIEW_FAMILY) or operator (DLVIEW_OP, OpenMP workers
 * counted under their master's operator, as the op table does), after profile_run.
 * Keys are interned; an operator's overloads come one call each under its name
 * (attr_op_name), so a key may come more than once: add them up. */
void dlview_each(struct dlview *v, enum dlview_kind kind,
		 void (*fn)(void *ctx, const char *key, uint64_t samples), void *ctx);

/* The oneDNN implementations the run's described primitives used (report --sort prim's
 * rows by implementation string), most execution time first, for check-isa -i.  kinds:
 * the primitive kinds that used it, ", "-separated.  Returns how many (*out to free);
 * with none, *why (when not NULL) is the one line saying why there are no descriptions
 * where samples ran in oneDNN's tasks, else NULL. */
struct dlview_impl {
	const char *impl;
	char kinds[96];
	uint64_t prims, calls, ns, samples;
};
size_t dlview_impls(struct dlview *v, struct dlview_impl **out, const char **why);

/* Print one table; limit 0 = all rows.  Returns 0 or -1. */
int dlview_print(struct dlview *v, enum dlview_kind kind, FILE *out,
		 enum out_format format, size_t limit);
/* Print the findings the data shows (nothing when none; JSON: an array).  Returns the
 * number of findings. */
int dlview_print_findings(struct dlview *v, FILE *out, enum out_format format);

/* Thresholds (percent of samples) for the findings. */
#define DLVIEW_SPIN_PCT		10.0
#define DLVIEW_PREEMPT_PCT	10.0	/* runnable time spent preempted: oversubscribed */
#define DLVIEW_REORDER_PCT	5.0
#define DLVIEW_FAULT_PCT	5.0
#define DLVIEW_GIL_THREAD_PCT	5.0	/* a thread waiting this share of its time for the GIL */

#endif
