/* dlview.h - the DL view of a profile: samples by operator family, framework operator (with
 * the oneDNN primitives beneath it) and thread, context-switch times, and findings.
 *
 * Wiring (cmd/report.c):
 *	struct family_rules *r = family_rules_load(families_file);
 *	struct dlview *v = dlview_new(r);
 *	struct profile_consumer c = { 0 };
 *	dlview_consumer(v, &c);		// fills stack, context_switch, other, ctx
 *	ret = profile_run(path, &opts, &c, &stats, &info);
 *	dlview_set_stats(v, &stats);
 *	dlview_print(v, DLVIEW_FAMILY, stdout, DLVIEW_TABLE, limit);
 *	dlview_print_findings(v, stdout, DLVIEW_TABLE);
 *	dlview_free(v); family_rules_free(r);
 * A consumer that already has its own stack callback can call dlview_stack() from it.
 */
#ifndef DLPROF_DLVIEW_H
#define DLPROF_DLVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "family.h"
#include "profile.h"

enum dlview_kind {
	DLVIEW_FAMILY,		/* --sort family */
	DLVIEW_OP,		/* --sort op: PyTorch-profiler-like operator table */
	DLVIEW_THREAD,		/* --sort thread */
	DLVIEW_GROUP_FAMILY,	/* --group family: top symbols under each family */
	DLVIEW_LINE,		/* --sort line: Python source lines, with their operators */
	DLVIEW_PROCESS,		/* --sort pid: processes, their command lines and ranks */
};

enum dlview_format { DLVIEW_TABLE, DLVIEW_JSON, DLVIEW_CSV };

struct dlview;

struct dlview *dlview_new(const struct family_rules *rules);
void dlview_free(struct dlview *v);
/* Fill a profile_run consumer with the view's callbacks. */
void dlview_consumer(struct dlview *v, struct profile_consumer *c);
/* The callbacks themselves, for callers that chain consumers (ctx is the dlview). */
int dlview_stack(void *ctx, struct machine *m, const struct dlp_sample *s,
		 const struct frame *frames, size_t nr, int complete);
/* dlview_stack() for callers that also want the sample's family (NULL: not wanted):
 * each sample is classified once. */
int dlview_add(struct dlview *v, struct machine *m, const struct dlp_sample *s,
	       const struct frame *frames, size_t nr, const char **family);
/* profile_consumer.filtered: a sample a filter leaves out, for the operators of the
 * OpenMP workers it keeps (attr_observe). */
int dlview_filtered(void *ctx, struct machine *m, const struct dlp_sample *s,
		    const struct frame *frames, size_t nr, int complete);
int dlview_context_switch(void *ctx, struct machine *m, uint32_t pid, uint32_t tid,
			  uint32_t cpu, uint64_t time, int out, int preempt);
int dlview_other(void *ctx, uint32_t type, const void *data, size_t len);
/* A META key/value of the recording (profile_consumer.meta; call it from a chained meta
 * callback).  Uses "nr_cpus" (the recorded machine's CPU count, for the oversubscription
 * finding), "cpu_flags" (its /proc/cpuinfo flags) and "env.NAME" (the workload's
 * settings), for the fast-path findings (fastpath.h); without the flags the findings
 * fall back to the machine running report. */
int dlview_meta(struct dlview *v, const char *key, const char *value);
/* The fast-path facts the view gathered (fastpath.h), for check-isa -i. */
struct fastpath *dlview_fastpath(struct dlview *v);
/* Give the run's stats (time per sample, event name) before printing. */
void dlview_set_stats(struct dlview *v, const struct profile_stats *st);

/* Each sample's attribution comes from attr.h, computed once per sample by the view's
 * attr (dlview_add); the view counts it.  A reader that attributes the samples itself
 * (dlview_attr) hands its attribution in with dlview_count. */
struct attr *dlview_attr(struct dlview *v);
struct sample_attr;
void dlview_count(struct dlview *v, struct machine *m, const struct dlp_sample *s,
		  const struct frame *frames, size_t nr, const struct sample_attr *a);

/* The samples of each family (DLVIEW_FAMILY) or operator (DLVIEW_OP, OpenMP workers
 * counted under their master's operator, as the op table does), after profile_run.
 * Keys are interned; an operator's overloads come one call each under its name
 * (attr_op_name), so a key may come more than once: add them up. */
void dlview_each(struct dlview *v, enum dlview_kind kind,
		 void (*fn)(void *ctx, const char *key, uint64_t samples), void *ctx);

/* Print one table; limit 0 = all rows.  Returns 0 or -1. */
int dlview_print(struct dlview *v, enum dlview_kind kind, FILE *out,
		 enum dlview_format format, size_t limit);
/* Print the findings the data shows (nothing when none; JSON: an array).  Returns the
 * number of findings. */
int dlview_print_findings(struct dlview *v, FILE *out, enum dlview_format format);

/* Thresholds (percent of samples) for the findings. */
#define DLVIEW_SPIN_PCT		10.0
#define DLVIEW_PREEMPT_PCT	10.0	/* runnable time spent preempted: oversubscribed */
#define DLVIEW_REORDER_PCT	5.0
#define DLVIEW_FAULT_PCT	5.0

#endif
