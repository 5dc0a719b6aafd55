/* filter.h - which samples a reader counts: perf report's filters, for report, fold,
 * pprof and diff.
 *
 *	--pid PID,...  --tid TID,...  --comm GLOB,...  --time START,END
 *	--family GLOB,...  --op GLOB,...  --sym GLOB,...
 *
 * --time takes seconds from the first sample ("1.5,3", either end may be empty) or
 * percentages of the run ("10%,50%").  --sym keeps a sample whose stack has a frame
 * matching (so its callers and callees stay in the tables).  --family and --op keep the
 * samples the DL view attributes to them, OpenMP workers under their master's operator:
 * that attribution needs every sample, so the attribution stage reads the recording once
 * more (unwinding included) to find the kept samples before the reader's own pass
 * (attr_stream_run_filtered).  The thread and time filters are applied by profile_run()
 * before a sample is unwound.
 */
#ifndef DLPROF_FILTER_H
#define DLPROF_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "rephash.h"

struct filter_args {		/* the option strings, NULL when not given */
	const char *pid, *tid, *comm, *time, *family, *op, *sym;
};

struct sample_filter {
	uint32_t *pids, *tids;
	size_t nr_pids, nr_tids;
	char **comms, **families, **ops, **syms;
	size_t nr_comms, nr_families, nr_ops, nr_syms;
	double t_start, t_end;		/* seconds or percent; < 0: open */
	int t_pct;
	uint64_t first_time, last_time;	/* the recording's sample times (for --time) */
	int have_bounds;
	struct u64map kept;		/* --family/--op/--sym: the samples kept */
	int have_kept;
	char desc[256];			/* "--tid 12 --op aten::conv*" */
	uint64_t seen, passed;		/* in the reader's pass */
};

/* Parse the options; 0, or -1 with one line printed (a usage error). */
int filter_init(struct sample_filter *f, const struct filter_args *a);
void filter_release(struct sample_filter *f);
/* Any filter given? */
int filter_active(const struct sample_filter *f);
/* Before the reader's pass (attr_stream_run_filtered() does both): the time bounds of
 * the recording's samples, for --time (0, or -1 with the error printed), and the kept
 * set of --family/--op/--sym: the samples whose attribution filter_attr_match() keeps,
 * each added with filter_keep(). */
int filter_bounds(struct sample_filter *f, const char *path);
struct frame;
int filter_attr_match(const struct sample_filter *f, const char *family, const char *op,
		      const char *op_name, const struct frame *frames, size_t nr);
void filter_keep(struct sample_filter *f, uint32_t tid, uint64_t time);
/* The thread and time filters (profile_run calls it; comm may be NULL). */
int filter_thread(const struct sample_filter *f, uint32_t pid, uint32_t tid, const char *comm,
		  uint64_t time);
/* The prepared kept set (--family/--op/--sym). */
int filter_kept(const struct sample_filter *f, uint32_t tid, uint64_t time);

/*
 * The recordings a reader was asked for: FILE... (argc, argv after the options) or -i
 * FILE (*input, NULL when not given; default dlprof.data), not both, each readable.
 * *inputs points at argv or at *input.  Returns how many, or with one line said
 * DLP_USAGE (a usage error) or DLP_FAILED (a recording that cannot be read).
 */
int filter_reader_inputs(int argc, const char **argv, const char **input,
			 const char ***inputs);

#endif
