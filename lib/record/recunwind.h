/* recunwind.h - unwinding the copied user stacks while recording.
 *
 * The recorder hands every record it would write (perf records from the rings, Python
 * records, ...) to recunw_add() in the order it would have written them.  A thread of
 * its own keeps a process model from the side-band (mmap, comm, fork, exit), unwinds
 * each sample's copied stack with the report's unwinder (unwind.h) and writes, in the
 * same order:
 *   - each distinct user stack once (DLP_REC_STACK) and the sample without its copy,
 *     naming that stack (DLP_REC_USAMPLE);
 *   - the sample as it came (DLP_REC_PERF, unwound at report time) when the walk did
 *     not reach the thread root and stopped at an address in no mapping seen so far
 *     (its mmap record may be in another cpu's ring), or when the thread has fallen
 *     behind: more than a soft cap of bytes waiting.  Nothing is
 *     dropped for the unwinder's sake; past a hard cap recunw_add() waits.
 * With keep_raw (record --keep-stacks) samples keep their registers and stack copy
 * inside the DLP_REC_USAMPLE, so report can unwind them again and compare.
 */
#ifndef DLPROF_RECUNWIND_H
#define DLPROF_RECUNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "kstack.h"

struct recwriter;
struct recunw;

struct recunw_stats {
	uint64_t samples;	/* samples with a stack copy handed over */
	uint64_t unwound;	/* written as a stack id */
	uint64_t incomplete;	/* written raw: the walk found no frame */
	uint64_t partial;	/* written unwound as far as an address that two batches of
				   records later was still in no mapping (a "return address"
				   that is none: report stops there too) */
	uint64_t behind;	/* written raw: the unwinder was behind */
	uint64_t stacks;	/* distinct stacks written */
	uint64_t cpu_ns;	/* the thread's CPU time */
	uint64_t unwind_ns;	/* of it, in the unwinder (wall time of the walks) */
	uint64_t frames;	/* frames the walks gave */
	uint64_t joined;	/* walks that joined their thread's last walk */
	uint64_t reused;	/* frames they took from it */
	uint64_t past_copy;	/* of them, with their outer frames past their copy's end
				   (DLP_STACK_PAST_COPY) */
	uint64_t inline_samples;	/* unwound by the draining thread, from the ring */
	uint64_t bails;		/* records it gave to the thread after all */
	uint64_t kernel_walked;	/* samples the kernel walked in place of their copy */
	int kstack;		/* the kernel walked native frames too (recunw_set_native) */
	struct kstack_stats ks;	/* and how its walks compare */
};

/* The files of other roots (containers) the walks met, kept in the build-id cache so
 * that a recording reads after they are gone (keep-files.c) */
struct keep_stats {
	int off;		/* copy nothing (--no-buildid-cache) */
	uint64_t files, bytes;	/* copied now */
	uint64_t had;		/* there already */
	uint64_t failed;	/* could not be kept (no cache folder, not writable) */
	char *first_failed;	/* the first of those */
	uint64_t ns;		/* the time it took */
	/* functions of files named otherwise than their symbols (keep_names) */
	struct keep_name {
		uint8_t id[20], size;	/* the file's build-id */
		const char *sym;	/* its symbol */
		char *name;		/* its name */
	} *names;
	size_t nr_names, alloc_names;
};
struct machine;
void keep_files(struct machine *m, struct keep_stats *st);
/* torch.compile's kernels (inductor.c): each Inductor .so's "kernel" named as the
 * generated module that calls it names it (cpp_fused_relu_0), read from the Inductor
 * cache as the .so is mapped */
struct inductor_index;
struct inductor_index *inductor_index_new(void);
void inductor_index_free(struct inductor_index *ix);
/* path is a kernel .so of an Inductor cache */
int inductor_file(const char *path);
/* its name (so_file: where it can be read now), malloc'd; NULL when not found */
char *inductor_kernel_name(struct inductor_index *ix, const char *so_file);

/* Start the thread.  NULL (error printed) when it cannot start: write directly then. */
struct proc_roots;
/* roots: where the processes' files are (the recorder's; outlives the unwinder) */
struct recunw *recunw_new(struct recwriter *w, int keep_raw, struct proc_roots *roots);
/* Set the kernel's native walks of pb beside the walks of the copies (kstack.h): its
 * tables made as files are mapped, its walks compared. */
struct pybpf;
/* (no_keep: none of its tables kept in the build-id cache) */
void recunw_set_native(struct recunw *ru, struct pybpf *pb, int no_keep);
struct kstack *recunw_kstack(struct recunw *ru);
/* A DLP_REC_ATTR payload, as written (also written by the thread). */
int recunw_attr(struct recunw *ru, const void *data, size_t len);
/* One record to write: type and payload in two pieces. */
int recunw_add(struct recunw *ru, uint32_t type, const void *a, size_t alen, const void *b,
	       size_t blen);
/* A sample's Python stack read as it was taken: a DLP_REC_PYCHAIN already added, which
 * the sample's DLP_REC_STACK names with its native stack (DLP_STACK_PY); a sample written as it
 * came gets a DLP_REC_PYSTACK naming the chain after it (pid, tid, time: the sample's). */
struct recunw_py {
	uint32_t chain, flags;	/* chain id (0: none), DLP_PYSTACK_* (none: read after the
				   sample, from outside) */
	uint32_t pid, tid;
	uint64_t time;
	uint8_t state;		/* DLP_PY_TRUSTED or DLP_PY_UNCHECKED (not checked against
				   the sample's stack copy) */
	uint8_t kwalk;		/* the sample's "stack copy" is the user stack the kernel
				   walked to the thread's root (kstack.h): its addresses */
};
/* flags of a sample: RECUNW_WAIT, never written as it came for the thread being behind
 * (the queue waits instead, past its hard cap): an allocation sample, whose thread waits
 * for record's drain (memevent.h), so that record sets the pace, not the copies written
 * raw (at --mem-sample 1 those made 292 MB in 8 s of the CNN, and their deflate most of
 * record's 52 s of CPU) */
#define RECUNW_WAIT	1u
/* A PERF_RECORD_SAMPLE with its Python stack (py, or NULL) */
int recunw_add_sample(struct recunw *ru, const struct perf_event_header *rec,
		      const struct recunw_py *py, unsigned flags);
/* A PERF_RECORD_SAMPLE whose user stack copy is cut to keep bytes (dyn its new
 * dyn_size): head_len bytes of rec up to its stack size word, then the first keep bytes
 * of the copy, assembled in the queue (one copy, not two); py: its Python stack, or
 * NULL; flags: RECUNW_*. */
int recunw_add_cut(struct recunw *ru, const struct perf_event_header *rec, size_t head_len,
		   uint64_t keep, uint64_t dyn, const struct recunw_py *py, unsigned flags);
/* That cut record, head_len + 16 + keep bytes, written at dst: rec up to its stack size
 * word, keep as that word, the copy's first keep bytes, dyn as its dyn_size; the header
 * says its size. */
void recunw_cut(unsigned char *dst, const struct perf_event_header *rec, size_t head_len,
		uint64_t keep, uint64_t dyn);
/* Hand what was added so far to the thread (call after each drain of the rings;
 * recunw_add() hands over on its own past a few MiB). */
void recunw_kick(struct recunw *ru);
/* Ask the thread to write out pending chunks (recwriter_flush) after what it has. */
void recunw_flush(struct recunw *ru);
/* Write everything handed over, stop the thread and free; with keep, the files of other
 * roots its walks met kept first (keep_files).  Returns 0, or -1 when a write
 * failed (the error was printed). */
int recunw_finish(struct recunw *ru, struct recunw_stats *st, struct keep_stats *keep);

/* The nice value of record's reading and unwinding threads, where allowed */
#define RECORD_NICE	(-10)

#endif
