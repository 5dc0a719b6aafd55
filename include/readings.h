/* readings.h - one or more recordings of one job (a rank each, a host each) read as one.
 *
 * Each recording is read on its own, through the view's own reader (its pids, threads
 * and clock are its own, so each gets a fresh attribution); what adds up across them is
 * summed here once: the statistics, the recording's facts from META (command, sampling,
 * what record said it lacks) and the duration, so every view builds its header and its
 * exit status the same way.
 *
 * One job, several recordings: each recording's times map to the wall clock through its
 * clock_start anchor (META: REALTIME - MONOTONIC), which is how the recordings line up
 * (readings_shift); how well is summed for the header (the anchors' read uncertainty,
 * each recording's drift from its start anchor to its end one; hosts' clocks are
 * assumed in sync).  A process is one (host, pid, start) (its PROC record's start, clock
 * ticks since boot, so a reused pid is another process): one in two recordings (a rank
 * inside its node's recording and its own) is counted from the first that has it, the
 * later ones' samples of it left out (profile_opts.skip_pids, readings_opts).  After
 * the last recording, processes of different jobs, and a rank held by two processes
 * of one job that no recording holds together, are warned of in one line each (stderr,
 * and the header's warnings).
 */
#ifndef DLPROF_READINGS_H
#define DLPROF_READINGS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "rephash.h"
#include "session.h"

struct report_header;

/* One recording read */
struct reading {
	const char *file;
	char *host, *cmdline;		/* META hostname, cmdline; NULL: not recorded */
	struct profile_stats st;
	struct session_info info;
	uint64_t duration_ns;		/* from its statistics, else its samples' span */
	/* META clock_start [0], clock_end [1] (ns): bit k of anchors set when read */
	int anchors;
	uint64_t mono[2], real[2], err[2];
	struct proc_table procs;	/* its processes (PROC records), once read */
	int have_procs;
	struct u64map skip;		/* pids an earlier recording counts */
};

/* A process in two recordings, counted from the first */
struct readings_dup {
	uint32_t pid;
	size_t first, again;		/* the recordings (first < again) */
};

struct readings {
	size_t nr;
	struct reading *in;
	struct profile_stats st;	/* summed; the first recording's event and period */
	struct session_info info;	/* the longest recording's; bad_records summed */
	uint64_t duration_ns;		/* the longest recording's */
	char *cmdline;			/* the first recording's */
	char sampling[64], callgraph[32];	/* META freq or period; callgraph */
	int perf_data;			/* META source=perf.data */
	int truncated;			/* one of them was cut short */
	char **warnings;		/* META warn.N of every recording, in order */
	size_t nr_warnings, alloc_warnings;
	size_t cur;			/* the recording being read */
	char *files;			/* "a, b (2 recordings)", for the header */
	struct readings_dup *dups;	/* processes recorded twice */
	size_t nr_dups, alloc_dups;
	/* the alignment (readings_run fills it): recordings with a start anchor, their
	 * hosts, the largest anchor read uncertainty and drift (ns) */
	size_t anchored, hosts;
	uint64_t anchor_err_ns, drift_ns;
	char *aligned;			/* the header's "aligned:" line, several recordings */
	char *twice;			/* the header's line on processes recorded twice */
};

/* Read one recording (k of r->nr) into the view: its statistics into st and info.
 * Returns as profile_run(): -1, 0, or 1 when cut short. */
typedef int reading_fn(void *ctx, struct readings *r, size_t k, struct profile_stats *st,
		       struct session_info *info);

/* Read INPUTS in order with fn, until one fails.  DLP_OK, DLP_PARTIAL (one was cut short
 * or had malformed records skipped) or DLP_FAILED. */
int readings_run(struct readings *r, const char *const *inputs, size_t nr, reading_fn *fn,
		 void *ctx);
/* A META record of the recording being read (a view's attr_view.meta hook passes it on) */
struct recmeta;
void readings_meta(struct readings *r, const struct recmeta *m);
/* Set po's skip_pids for the recording being read: a view's reading_fn calls it on the
 * profile_opts it reads with, so a process recorded twice is counted once */
void readings_opts(struct readings *r, struct profile_opts *po);
/* What to add to recording k's sample times (CLOCK_MONOTONIC of its host) to put them
 * on the common axis, the wall clock (ns); 0 and *anchored 0 when it has no anchor */
int64_t readings_shift(const struct readings *r, size_t k, int *anchored);
/* Whether recording k's samples of pid were left out (an earlier recording has them) */
int readings_skipped(const struct readings *r, size_t k, uint32_t pid);
/* The process's PROC entry in recording k, NULL when none */
const struct proc_entry *readings_proc(const struct readings *r, size_t k, uint32_t pid);
/* The header's facts about the recordings (file names, command, sampling, counts,
 * Python, warnings); the view fills in what is its own (key, filter, off_cpu, ...).
 * sampling: room for the "how sampled" line, which h points into. */
void readings_header(const struct readings *r, struct report_header *h, int off_cpu, int wall,
		     char *sampling, size_t size);
void readings_release(struct readings *r);

#endif
