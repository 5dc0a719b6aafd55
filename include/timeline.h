/* timeline.h - the recording in time, as a Chrome Trace Event file (JSON: Perfetto UI,
 * chrome://tracing).
 *
 * Per thread (pid/tid, named by its comm):
 *   the thread's own track: the oneDNN primitive intervals of its ITT tasks, as complete
 *	events ("X", category "dnnl", real begin and duration; args.call false for an
 *	OpenMP worker's share of a call another thread made)
 *   "[ops, sampled]": framework operators as slices built from consecutive samples of
 *	the thread with the same attribution (attr.h; category "op,sampled")
 *   "[python, sampled]": the innermost Python line, the same way
 *   "[sched]": the thread's off-CPU intervals from the context-switch records
 *   "[steps]": with timeline_set_steps(), the invocations of the step function
 *	(steps.h; category "step,sampled", "step N")
 * and per process a counter track "families": each family's share of the process's
 * samples per 10 ms, and with timeline_set_heap() a counter track "heap" (live bytes).
 * ts and dur are microseconds from the first event.
 *
 *	struct timeline *tl = timeline_new(rules);
 *	timeline_run(tl, path, &po, &filter, &st, &info);
 *	timeline_write(tl, out, &st);
 */
#ifndef DLPROF_TIMELINE_H
#define DLPROF_TIMELINE_H

#include <stdio.h>

#include "family.h"
#include "profile.h"

struct timeline;

struct timeline *timeline_new(const struct family_rules *rules);
void timeline_free(struct timeline *tl);
/* attr_stream_run_filtered() into the timeline; returns as profile_run() */
struct sample_filter;
int timeline_run(struct timeline *tl, const char *path, struct profile_opts *po,
		 struct sample_filter *filt, struct profile_stats *st, struct session_info *info);
/* Find training steps: the invocations of func (steps.h), on a track of their own. */
void timeline_set_steps(struct timeline *tl, const char *func);
/* record --memory: a counter track "heap" per process, its live bytes over time (the
 * sampled allocations of memprof.h, estimates unless every allocation was recorded). */
struct mem_alloc;
void timeline_set_heap(struct timeline *tl, const struct mem_alloc *al, size_t nr);
/* Write the trace; returns the number of events written, -1 on a write error. */
long timeline_write(struct timeline *tl, FILE *out, const struct profile_stats *st);

#define TIMELINE_BUCKET_NS 10000000ull	/* the family counter's interval */

#endif
