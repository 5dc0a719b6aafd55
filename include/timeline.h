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
 * timeline_run() reads a recording and writes its trace (dlprof timeline).  Several
 * recordings (one job's hosts or ranks, readings.h) share one time axis, the wall clock
 * through each one's start anchor (META clock_start), ts 0 the earliest start; recording
 * k's pids are shown as pid + k * TIMELINE_PID_BLOCK (two hosts may have the same pid)
 * and its processes named "rank R (HOST) pid P COMMAND"; a process an earlier recording
 * has is left out; a recording without an anchor starts at ts 0 (one line says so).
 */
#ifndef DLPROF_TIMELINE_H
#define DLPROF_TIMELINE_H

#include <stdio.h>

#include "family.h"
#include "profile.h"

struct sample_filter;
struct timeline_opts {
	const char *const *inputs;	/* the recordings, nr_inputs of them */
	size_t nr_inputs;
	const char *output;		/* "-": stdout */
	const char *step;		/* training steps: the invocations of this function
					   (steps.h), on a track of their own; NULL: none */
	struct profile_opts po;
	const struct family_rules *rules;
	struct sample_filter *filt;
};

/* Read the recording and write its trace.  A record --memory recording gets a counter
 * track "heap" per process, its live bytes over time (the sampled allocations of
 * memprof.h, estimates unless every allocation was recorded).  enum dlp_result. */
int timeline_run(const struct timeline_opts *o);

#define TIMELINE_BUCKET_NS 10000000ull	/* the family counter's interval */
#define TIMELINE_PID_BLOCK 10000000ull	/* above any pid (pid_max is at most 2^22) */

#endif
