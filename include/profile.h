/* profile.h - the report pipeline up to resolved stacks.
 *
 * profile_run() reads a recording (session.h), builds the process model (process.h),
 * unwinds (fp chain, or unwind.h for dwarf recordings), symbolizes (symbolize.h) and
 * calls on_stack once per sample with its resolved frames, leaf first.  Aggregation and
 * output (calltree.c, output-*.c, family.c) see only that.
 */
#ifndef DLPROF_PROFILE_H
#define DLPROF_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "process.h"
#include "session.h"

struct u64map;

struct profile_opts {
	int srcline;		/* resolve file:line (slower) */
	int inline_frames;	/* expand inline chains into extra frames */
	int no_children;	/* leaf only */
	size_t max_depth;	/* 0: no limit (capped at 512) */
	const char *event;	/* the event whose samples count; NULL: the first recorded */
	struct sample_filter *filter;	/* filter.h: samples left out before unwinding; NULL */
	int raw_irqs;		/* keep samples where interrupts came back on as taken */
	int no_python;		/* native stacks only: no Python frames (pystack.h) */
	int off_cpu;		/* the context-switches samples (record --off-cpu), each
				   delivered at the end with period = the ns until its thread
				   ran again */
	int wall;		/* the clock event's samples and the off_cpu ones: on- and
				   off-CPU time together (period: ns); 1: an error without
				   off_cpu ones, 2: with them if recorded */
	int waits_apart;	/* with wall: the switch-outs delivered, but left out of
				   the stats (a view reading them for its own tables) */
	int reunwind;		/* unwind the kept stack copies again (record --keep-stacks)
				   instead of taking the stacks unwound while recording */
	int check_unwind;	/* where a sample has both, unwind its copy and compare
				   (profile_stats.unwind_*) */
	const char *symfs;	/* read the recorded files under this root (--symfs DIR);
				   NULL: $DLPROF_SYMFS's, where set */
	int metric_samples;	/* record --metrics sampling each counter on its own: its
				   samples delivered (dlp_sample.counts_only, left out of
				   the stats) for the counts they carry; else they are
				   another event's.  In such a recording every sample of
				   the first event and every switch-out carries counts too
				   (its period, one switch), as a group's reads. */
	/* Several recordings read as one (readings.h): asked once the recording's
	 * side-band is read (machine_procs() known), before its first sample (at its end
	 * when it has none), which pids another recording counts already.  Their samples
	 * are left out, before any filter, and counted in profile_stats.duplicate.
	 * Returns a set of pids (u64map_has), or NULL: none. */
	const struct u64map *(*skip_pids)(void *ctx, struct machine *m);
	void *skip_ctx;
};

struct profile_stats {
	uint64_t samples;
	uint64_t off_samples;		/* of them, switch-outs (off_cpu, wall) */
	uint64_t complete_stacks;	/* stacks that reach the thread root */
	uint64_t named;			/* leaf resolved to a symbol, JIT name or FDE bounds */
	uint64_t recovered_stacks;	/* stacks with a FRAME_RECOVERED frame (stack scan) */
	uint64_t past_copy_stacks;	/* complete stacks whose outer frames lay past their
					   copy (DLP_STACK_PAST_COPY) */
	uint64_t recorded_stacks;	/* user stacks unwound while recording (recunwind.h) */
	uint64_t copied_stacks;		/* user stacks unwound here from their copy */
	/* check_unwind: samples compared; the same; different only in frames a stack
	 * scan found; different otherwise */
	uint64_t unwind_checked, unwind_same, unwind_scan_differs, unwind_differs;
	uint64_t unwind_past_copy;	/* ... deeper than their copy: the same as far as it
					   reaches (DLP_STACK_PAST_COPY) */
	uint64_t lost;
	uint64_t period_total;
	uint64_t first_time, last_time;
	char event[64];
	uint64_t event_every;		/* the event counted samples every so many events and
					   is not the recording's first (whose sampling META
					   says): that many (report -e on a counter); else 0 */
	char other_events[128];		/* the recording's other events ("a,b"), not counted */
	uint64_t other_samples;		/* their samples, left out */
	uint64_t filtered_out;		/* samples of the event the filter left out */
	uint64_t duplicate;		/* samples of processes another recording counts
					   (profile_opts.skip_pids) */
	uint64_t python;		/* stacks with Python frames merged in (pystack.h) */
	uint64_t py_records;		/* samples of Python threads the recorder read */
	uint64_t py_moved, py_failed;	/* ... whose Python stack it could not trust/read */
	uint64_t py_mismatched;		/* ... whose Python and native stacks disagree */
	uint64_t py_delay_ns;		/* mean time from a sample to its read, of those
					   not read as it was taken */
	uint64_t py_at_sample;		/* Python stacks read as the sample was taken */
	uint64_t irqs_off;		/* taken where interrupts came back on (profile_irq_enabler()):
					   counted to the function that turned them on, its
					   leaf frame marked FRAME_IRQS_OFF and " (irqs off)",
					   unless raw_irqs */
	int sample_is_time;		/* event counts nanoseconds (cpu-clock/task-clock) */
	int sample_no_time;		/* event counts things that take no fixed time
					   (page-faults, switches, tracepoints, cache
					   events): no time per sample (0) */
	uint64_t sample_period_ns;	/* estimated ns per sample (freq mode: from the timeline) */
};

/* Add one recording's statistics to those of others (sum: the first one's, its event,
 * period and time span kept) */
void profile_stats_add(struct profile_stats *sum, const struct profile_stats *st);
/* A view's enum dlp_result from profile_run's return and what the reader met: partial
 * when the recording was cut short or malformed records were skipped */
int profile_result(int ret, const struct session_info *info);

/* What a consumer wants to hear.  NULL members are skipped. */
typedef int profile_stack_cb(void *ctx, struct machine *m, const struct dlp_sample *s,
			     const struct frame *frames, size_t nr, int complete);

struct profile_consumer {
	profile_stack_cb *stack;	/* pass 2: once per sample, frames leaf first */
	int (*context_switch)(void *ctx, struct machine *m, uint32_t pid, uint32_t tid,
			      uint32_t cpu, uint64_t time, int out, int preempt);
	/* a thread's exit (its EXIT record) */
	int (*thread_exit)(void *ctx, uint32_t pid, uint32_t tid, uint64_t time);
	/* pass 1: raw non-perf records (ITT, JIT maps, files, ...) after profile's own use */
	int (*other)(void *ctx, uint32_t type, const void *data, size_t len);
	int (*meta)(void *ctx, const struct recmeta *m);
	/* pass 2: a sample the filter (profile_opts.filter) leaves out, unwound all the same
	 * (NULL: not unwound).  For what the kept samples' attribution needs from the
	 * others (attr_observe: an OpenMP worker's operator comes from its master's
	 * samples, which a --tid or --time filter may leave out); counted in no stat. */
	profile_stack_cb *filtered;
	/* pass 2: a sample of an event not counted (another than profile_opts.event), as
	 * recorded: not unwound, not filtered (record --memory's frees, for instance) */
	int (*other_sample)(void *ctx, const struct dlp_sample *s);
	/* after the last sample (off-CPU ones included), the process model still there */
	int (*end)(void *ctx, struct machine *m);
	void *ctx;
};

/* A kernel function that turns interrupts back on and does nothing else of note: the
 * paravirtual and native irq-enable and flags-restore calls, the irq-restoring unlocks
 * (pvm_irq_enable, native_irq_enable, xen_restore_fl, _raw_spin_unlock_irqrestore,
 * _raw_spin_unlock_irq, ...).  A software clock's sample that falls due while
 * interrupts are off is taken when they come back on, in such a function: the time was
 * spent by its caller with interrupts off. */
int profile_irq_enabler(const char *sym);

/* Returns 0 ok, 1 truncated input (delivered what there was), -1 error (printed). */
int profile_run(const char *path, const struct profile_opts *opts,
		const struct profile_consumer *c, struct profile_stats *stats,
		struct session_info *info);

/*
 * Live: the same pipeline fed with the records of a recording as record writes them
 * (recwriter_set_tap), one pass, for dlprof top.  Samples reach c->stack as their
 * records come; off_cpu/wall are not supported (their weights are known at the end).
 * Not thread-safe: one feeding thread.
 */
struct profile_live;
struct jitsyms;

struct profile_live *profile_live_new(const struct profile_opts *opts,
				      const struct profile_consumer *c,
				      struct profile_stats *stats);
/* One record, its payload in two pieces as recwriter_add2() takes it. */
int profile_live_record(struct profile_live *pl, uint32_t type, const void *a, size_t alen,
			const void *b, size_t blen);
/* Its JIT names (to add perf map lines as they are written), for the feeding thread. */
struct jitsyms *profile_live_jit(struct profile_live *pl);
/* fn is called when code in an anonymous mapping of pid has no JIT name: it may add
 * the lines a JIT wrote since (returns > 0 when it did, and the look-up is retried). */
void profile_live_jit_miss(struct profile_live *pl, int (*fn)(void *ctx, uint32_t pid),
			   void *ctx);
/* Where a process's mapped files are (process.h machine_set_root_fn): record's roots of
 * processes in containers and chroots, so that their files are read there. */
void profile_live_roots(struct profile_live *pl,
			const char *(*fn)(void *ctx, uint32_t pid, uint64_t time), void *ctx);
void profile_live_free(struct profile_live *pl);

#endif
