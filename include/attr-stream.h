/* attr-stream.h - the attribution stage: resolved samples in, attributed samples out.
 *
 * Every view reads samples through this stage and nothing else creates an attribution
 * (attr.h).  It sits between profile_run() (or profile_live for dlprof top) and a view:
 * it reads the recording's ITT tasks, attributes each sample once, observes the samples
 * a filter leaves out (an OpenMP worker's operator comes from its master's samples), and
 * settles the workers' deferred operators.  A view is handed each sample with its final
 * attribution (op never NULL).  A worker's sample waits for its master's samples around
 * it: it is held (its sample fields, registers and frames copied) and handed on when
 * settled, once the samples are DLPROF_SETTLE_LAG ahead of it or at the end of the run,
 * so it may reach the view after samples taken later.
 */
#ifndef DLPROF_ATTR_STREAM_H
#define DLPROF_ATTR_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "attr.h"
#include "profile.h"

/* Held samples older than the newest by this much are settled: a file's samples are in
 * time order to well within it, so the master marks they need are in. */
#define DLPROF_SETTLE_LAG	2000000000ull

/* One sample and its attribution */
struct attributed {
	struct machine *m;
	const struct dlp_sample *s;
	const struct frame *frames;	/* leaf first */
	size_t nr;
	int complete;			/* the stack reaches the thread root */
	size_t leaf;			/* frames[leaf] is the frame attribution starts at:
					   0, or for an allocation the allocator's caller
					   (below dlprof's interposer and malloc & co.) */
	const struct sample_attr *a;	/* a->op is the final operator */
	const char *const *ops;		/* with attr_view.want_ops: every distinct operator
					   on the stack, innermost first (family_op_from_stack()
					   of each frame); else NULL */
	size_t nr_ops;
};

/* What a view wants to hear: sample for each kept sample; the others as
 * profile_consumer's (NULL members are skipped). */
struct attr_view {
	int (*sample)(void *ctx, const struct attributed *as);
	int (*context_switch)(void *ctx, struct machine *m, uint32_t pid, uint32_t tid,
			      uint32_t cpu, uint64_t time, int out, int preempt);
	int (*thread_exit)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time);
	int (*other)(void *ctx, uint32_t type, const void *data, size_t len);
	int (*meta)(void *ctx, const struct recmeta *m);
	int (*other_sample)(void *ctx, const struct dlp_sample *s);
	/* after the last sample was handed on (still inside profile_run: m is valid) */
	int (*end)(void *ctx, struct machine *m);
	void *ctx;
	int plain;	/* no attribution (attributed.a NULL): a view that shows none */
	int live;	/* the view settles the held samples (attr_stream_settle), none
			   are settled as the samples go by (dlprof top) */
	int want_ops;	/* fill attributed.ops (a scan of every frame's name) */
};

struct attr_stream;

/* A frame of dlprof's allocation sampler (record --memory's interposer) */
int attr_mem_library_frame(const struct frame *f);
/* Where an allocation's stack starts: past the kernel's frames (none for a uprobe) and
 * the interposer's, at its frame the workload called (attributed.leaf is below it, past
 * the allocation functions too) */
size_t attr_alloc_stack_start(const struct frame *frames, size_t nr);

struct attr_stream *attr_stream_new(const struct family_rules *rules,
				    const struct attr_view *view);
void attr_stream_free(struct attr_stream *as);
/* The consumer to hand profile_run() or profile_live_new(): it feeds the stream. */
void attr_stream_consumer(struct attr_stream *as, struct profile_consumer *c);
/* Live (dlprof top): settle the held samples older than BEFORE (ns, sample clock) now */
void attr_stream_settle(struct attr_stream *as, uint64_t before);
/* After the run: hand on the samples still held (profile_run's end does it; live use
 * calls it, m NULL: the process model of the last sample) */
void attr_stream_finish(struct attr_stream *as, struct machine *m);
/* The attribution behind it: the ITT tasks and the oneDNN calls (attr_calls) */
struct attr *attr_stream_attr(struct attr_stream *as);

/* profile_run() through the stream on the samples filt keeps (filter.h; NULL or an
 * inactive one: every sample).  For --family/--op/--sym it reads the recording once more
 * first, to find the samples whose attribution they keep.  Returns as profile_run(). */
int attr_stream_run_filtered(struct attr_stream *as, const char *path, struct profile_opts *po,
			     struct sample_filter *filt, struct profile_stats *st,
			     struct session_info *info);
/* The same through a stream made for the run and freed after it */
int attr_stream_run(const char *path, struct profile_opts *po, struct sample_filter *filt,
		    const struct family_rules *rules, const struct attr_view *view,
		    struct profile_stats *st, struct session_info *info);

#endif
