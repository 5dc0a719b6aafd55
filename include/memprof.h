/* memprof.h - the heap of a recording made with record --memory: each sampled allocation
 * with its stack and attribution, matched with its free, and the heap's peak.
 *
 * memprof_run() reads the "mem-alloc" samples through profile_run (unwound and
 * symbolized as CPU samples are) and the "mem-free" ones as recorded, then puts them in
 * time order and matches each free to the live allocation it names in its process (by
 * number, or by address where every allocation was recorded: memevent.h).
 * Every sampled allocation gets one attribution (attr.h), computed once from its stack
 * below the allocator: the frames of dlprof's interposer are cut down to the one the
 * workload called (malloc, posix_memalign, ...), and "self" is the first frame under the
 * allocation functions (operator new, c10::alloc_cpu, PyMem_*, ...).  All memory views
 * (report --memory, fold --memory, pprof --memory) read these.
 *
 * Byte and count figures are estimates: each sample stands for weight bytes and
 * weight/size allocations (memevent.h); exact with record --mem-sample 1.
 */
#ifndef DLPROF_MEMPROF_H
#define DLPROF_MEMPROF_H

#include <stdint.h>
#include <stdio.h>

#include "calltree.h"
#include "fold.h"
#include "family.h"
#include "filter.h"
#include "profile.h"
#include "util.h"

struct mem_alloc {
	uint64_t time, free_time;	/* free_time 0: still live when its process ended */
	uint64_t key, size, weight;	/* key: the block's number | MEM_KEY_SEQ, or its
					   address (memevent.h); weight: the bytes it
					   stands for */
	uint32_t pid, tid;
	uint32_t stack;			/* memprof_text() */
	uint32_t tag;			/* what memprof_frames_cb returned for it */
	const char *self;		/* the allocating function */
	const char *family, *op, *pyline, *thread;	/* interned; pyline NULL outside Python */
	uint32_t ops;			/* the operators on its stack (family_ops_on_stack, names
					   without overload): one of memprof's sets + 1, 0: none */
	uint8_t kind;			/* enum mem_kind */
	uint8_t at_peak;		/* live at the heap's peak */
};

struct memprof_summary {
	uint64_t mean;			/* the sampling interval, bytes (1: every allocation) */
	uint64_t samples, frees;	/* sampled allocations, their frees seen */
	uint64_t unmatched_frees;	/* frees of addresses with no live sample (a fork's
					   child freeing its parent's, ...) */
	uint64_t unseen_frees;		/* samples at an address sampled before and not freed */
	double alloc_bytes, alloc_count, freed_bytes, freed_count;
	double peak_bytes, exit_bytes, exit_count;
	uint64_t peak_time, first_time;	/* ns, the recording's clock */
	uint64_t fault_samples;		/* page-fault samples (record -e page-faults) */
	double fault_bytes;		/* the faults they stand for x 4 KiB */
};

/* MEM_KEY_TOTAL: the op rows ordered by Total, the bytes allocated in the operator and the
 * operators it called (as torch.profiler's "CPU Mem" counts; it nets the frees out) */
enum memprof_key { MEM_KEY_SELF, MEM_KEY_OP, MEM_KEY_LINE, MEM_KEY_FAMILY, MEM_KEY_THREAD,
		   MEM_KEY_TOTAL };

struct memprof;

/* fold: the stack texts' shape (fold.h options); NULL: thread name first, kernel kept */
struct memprof *memprof_new(const struct family_rules *rules, const struct fold_opts *fold);
void memprof_free(struct memprof *mp);
/* Read path.  Returns profile_run's value (0, 1 truncated, -1 error printed); an error too
 * when the recording has no mem-alloc event (not made with --memory). */
int memprof_run(struct memprof *mp, const char *path, struct profile_opts *po,
		struct sample_filter *filt, struct profile_stats *st, struct session_info *info);
size_t memprof_allocs(struct memprof *mp, const struct mem_alloc **out);
/* Called for each sampled allocation as it is read (before memprof_run returns), with its
 * stack below the interposer (leaf first: the allocation function the workload called)
 * for a view that needs the frames themselves (pprof); what it returns is kept as the
 * allocation's tag. */
typedef uint32_t memprof_frames_cb(void *ctx, const struct frame *frames, size_t nr,
				   const char *comm, uint32_t tid, const char *family);
void memprof_set_frames_cb(struct memprof *mp, memprof_frames_cb *cb, void *ctx);
/* The folded stack ("comm;outermost;...;malloc") of an allocation. */
const char *memprof_text(const struct memprof *mp, uint32_t stack);
const struct memprof_summary *memprof_summary(const struct memprof *mp);
/* META of the recording: the command line, or NULL. */
const char *memprof_cmdline(const struct memprof *mp);

/* The report --memory table (limit 0: all rows).  Returns 0. */
int memprof_print(struct memprof *mp, enum memprof_key key, FILE *out,
		  enum out_format format, size_t limit);
/* The key named (self, op, line, family, thread, total), or -1 */
int memprof_key_parse(const char *name);
/* report --memory: read input and print the table on stdout (limit -1: the format's
 * default).  enum dlp_result. */
int memprof_report(const char *input, const char *symfs, enum memprof_key key,
		   enum out_format format, int limit, const struct family_rules *rules,
		   struct sample_filter *filt, int srcline);

#endif
