/* readings.h - one or more recordings of one job (a rank each, a host each) read as one.
 *
 * Each recording is read on its own, through the view's own reader (its pids, threads
 * and clock are its own, so each gets a fresh attribution); what adds up across them is
 * summed here once: the statistics, the recording's facts from META (command, sampling,
 * what record said it lacks) and the duration, so every view builds its header and its
 * exit status the same way.
 */
#ifndef DLPROF_READINGS_H
#define DLPROF_READINGS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "session.h"

struct report_header;

/* One recording read */
struct reading {
	const char *file;
	char *host, *cmdline;		/* META hostname, cmdline; NULL: not recorded */
	struct profile_stats st;
	struct session_info info;
	uint64_t duration_ns;		/* from its statistics, else its samples' span */
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
void readings_meta(struct readings *r, const char *key, const char *value);
/* The header's facts about the recordings (file names, command, sampling, counts,
 * Python, warnings); the view fills in what is its own (key, filter, off_cpu, ...).
 * sampling: room for the "how sampled" line, which h points into. */
void readings_header(const struct readings *r, struct report_header *h, int off_cpu, int wall,
		     char *sampling, size_t size);
void readings_release(struct readings *r);

#endif
