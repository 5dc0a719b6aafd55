/* recfile.h - the dlprof recording file: versioned, chunked, zlib-compressed.
 *
 * The file is a header followed by self-delimiting chunks; each chunk holds a run of
 * records (u32 type, u32 length, payload).  The byte layout is documented in
 * docs/FORMAT.md.  The writer never leaves a half-written chunk visible as valid: a
 * recording cut short (dlprof killed, disk full) reads back up to its last complete
 * chunk.  The reader validates every length, offset and checksum.
 *
 * This module knows nothing of what records mean: see session.h for that.
 */
#ifndef DLPROF_RECFILE_H
#define DLPROF_RECFILE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#define DLP_FORMAT_VERSION 8	/* 2: chunks may be flagged side-band or samples; 3: stacks
				   unwound while recording (DLP_REC_STACK, DLP_REC_USAMPLE);
				   4: Python stacks stored once and named by their samples
				   (DLP_REC_PYCHAIN, DLP_STACK_PY), code objects with the
				   lines of their instructions (DLP_PYCODE_LINES); 5: record
				   --memory's compact records (DLP_REC_MEMALLOC,
				   DLP_REC_MEMFREES), sampled blocks named by number;
				   6: code objects and Python stacks written packed
				   (DLP_REC_PYCODE_PACKED, DLP_REC_PYCHAIN_PACKED);
				   7: plain samples unwound while recording in compact
				   batches (DLP_REC_USAMPLES); 8: the GIL held, read in
				   the kernel (DLP_USAMPLE_PY_GIL, DLP_PYSTACK_GIL) */

enum dlp_rec_type {
	DLP_REC_PERF	= 1,	/* raw perf record as read from the ring (perf_event_header first) */
	DLP_REC_ATTR	= 2,	/* struct dlp_attr_rec: one event and its sample ids */
	DLP_REC_META	= 3,	/* "key\0value\0" pairs: cmdline, hostname, release,
				   attach (record -p), ... */
	DLP_REC_BUILDID = 4,	/* struct dlp_buildid_rec: build-id of a mapped file */
	DLP_REC_KSYMS	= 5,	/* text "ADDR SIZE NAME [MODULE]\n" (hex) for kernel code hit */
	DLP_REC_JITMAP	= 6,	/* struct dlp_jit_rec + content of /tmp/perf-PID.map */
	DLP_REC_JITDUMP = 7,	/* struct dlp_jit_rec + content of a jit-PID.dump file */
	DLP_REC_ITT	= 8,	/* the bytes of one ITT collector output file (format in itt.h) */
	DLP_REC_STATS	= 9,	/* struct dlp_stats: written once, last */
	DLP_REC_FILE	= 10,	/* struct dlp_file_rec + bytes of a small file captured at record time */
	DLP_REC_PYCODE	= 11,	/* struct dlp_pycode_rec + strings: a Python code object (pyrec.h) */
	DLP_REC_PYSTACK = 12,	/* struct dlp_pystack_rec + frames: a sample's Python stack */
	DLP_REC_STACK	= 13,	/* struct dlp_stack_rec + addresses: one user stack, unwound
				   while recording, stored once */
	DLP_REC_USAMPLE = 14,	/* struct dlp_usample_rec + a PERF_RECORD_SAMPLE: a sample
				   whose user stack is a DLP_REC_STACK */
	DLP_REC_PROC	= 15,	/* struct dlp_proc_rec + "key\0value\0" pairs: a process's
				   command line and rank, read when it exec'd */
	DLP_REC_MEMFREE	= 16,	/* struct dlp_memfree[]: frees of sampled blocks (record
				   --memory) that came through the library's free ring */
	DLP_REC_PYCHAIN = 17,	/* struct dlp_pychain_rec + frames: one Python stack, stored
				   once, named by samples (pyrec.h) */
	DLP_REC_MEMALLOC = 18,	/* sampled allocations unwound while recording, a batch of
				   compact entries (memrec.h) */
	DLP_REC_MEMFREES = 19,	/* frees of sampled blocks, a batch of compact entries
				   (memrec.h); replaces DLP_REC_MEMFREE */
	DLP_REC_PYCODE_PACKED = 20,	/* a DLP_REC_PYCODE packed (pyrec.h) */
	DLP_REC_PYCHAIN_PACKED = 21,	/* a DLP_REC_PYCHAIN packed */
	DLP_REC_USAMPLES = 22,	/* a batch of compact DLP_REC_USAMPLEs: samples with no
				   kernel chain, registers or stack copy (memrec.h) */
	DLP_REC_SYMNAME = 23,	/* struct dlp_buildid_rec (pid -1), then "SYM\0NAME\0": in
				   the file of that build-id, function SYM is called NAME
				   (a torch.compile kernel: "kernel", "cpp_fused_relu_0") */
	DLP_REC_MAX
};

/* DLP_REC_ATTR payload: this struct, then attr_size bytes of perf_event_attr, then nr_ids u64. */
struct dlp_attr_rec {
	uint32_t attr_size;
	uint32_t nr_ids;
	char name[64];		/* as the user named it (or the fallback), NUL-terminated */
};

/* DLP_REC_BUILDID payload: this struct, then the path, NUL-terminated. */
struct dlp_buildid_rec {
	int32_t pid;		/* -1: any process */
	uint8_t size;		/* bytes used in id[] */
	uint8_t pad[3];
	uint8_t id[20];
};

/* DLP_REC_JITMAP / DLP_REC_JITDUMP payload: this struct, then the file content. */
struct dlp_jit_rec {
	int32_t pid;
	uint32_t pad;
};

/* DLP_REC_PROC payload: this struct, then "key\0value\0" pairs: cmdline (its arguments
 * joined by spaces), and from its environment at exec when set: rank (RANK, else
 * OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), local_rank (LOCAL_RANK, ...),
 * world_size (WORLD_SIZE, ...).  One per exec; a later one for the same pid replaces
 * the earlier. */
struct dlp_proc_rec {
	int32_t pid;
	uint32_t pad;
};

/* DLP_REC_FILE payload: this struct, then the NUL-terminated path, then the bytes.
 * dlprof record writes one: "[vdso]", the recorder's own vDSO image (the same for every
 * 64-bit process of that kernel), which report symbolizes the [vdso] mappings with. */
struct dlp_file_rec {
	uint32_t path_len;	/* including the NUL */
	uint32_t pad;
};

/* Append the DLP_REC_FILE payload of this process's own [vdso] image to sb.  Returns 0,
 * or -1 when there is none (no AT_SYSINFO_EHDR, not a 64-bit ELF). */
struct strbuf;
int recfile_vdso_rec(struct strbuf *sb);

/* DLP_REC_STACK payload: this struct, then nr u64 addresses (leaf first: the sampled
 * user IP, then return addresses as found on the stack, not adjusted), then
 * ceil(nr / 8) bytes of flags, bit i set when frame i was found by a stack scan.  A
 * stack is defined (in the samples' chunks) before the first sample that names it; ids
 * count from 1. */
struct dlp_stack_rec {
	uint32_t id;
	uint16_t nr;
	uint16_t flags;		/* DLP_STACK_* */
};
#define DLP_STACK_COMPLETE (1u << 0)	/* the walk reached the thread root */
#define DLP_STACK_PY	(1u << 1)	/* a u32 follows the scan bits: the id of the Python
					   stack (DLP_REC_PYCHAIN) its samples ran, read as
					   they were taken (the same native stack with another
					   Python stack is another STACK) */
#define DLP_STACK_PAST_COPY (1u << 2)	/* its outer frames lie past the end of the stack
					   copy: taken from the thread's last walk, joined
					   where both met a frame in the same state */

/* DLP_REC_USAMPLE payload: this struct, then the PERF_RECORD_SAMPLE as read from the
 * ring, with its user stack copy (and registers) dropped unless flags says they are
 * kept (record --keep-stacks). */
struct dlp_usample_rec {
	uint32_t stack_id;
	uint32_t flags;		/* DLP_USAMPLE_* */
};
#define DLP_USAMPLE_RAW_KEPT (1u << 0)	/* the perf record still holds its registers and stack */
#define DLP_USAMPLE_ARGS_REGS (1u << 2)	/* the perf record keeps 4 registers only, CX DX SI
					   DI (mask 0x3c): a memory event's arguments */
#define DLP_USAMPLE_LEAF_IP  (1u << 1)	/* the stack starts at the caller: its leaf frame is the
					   sample's IP (a sample taken in user mode), which
					   leaves far fewer distinct stacks to store */
#define DLP_USAMPLE_PY_OWN (1u << 3)	/* its stack's Python stack (DLP_STACK_PY) was read by
					   the allocating thread, not in the kernel */
#define DLP_USAMPLE_PY_LATE (1u << 4)	/* ... read from outside after the sample (the delays:
					   META python_late) */
#define DLP_USAMPLE_PY_UNCHECKED (1u << 5) /* ... and not checked against its stack copy */
#define DLP_USAMPLE_PY_GIL (1u << 6)	/* ... read in the kernel: its thread held the GIL
					   (DLP_PYSTACK_GIL) */

/* DLP_REC_MEMFREE payload: len / sizeof(struct dlp_memfree) of these, in the order the
 * free ring gave them (not sorted by time). */
struct dlp_memfree {
	uint64_t time;		/* CLOCK_MONOTONIC ns, taken before the memory went back */
	uint64_t addr;
	uint32_t pid, tid;
};

/* DLP_REC_STATS payload. */
struct dlp_stats {
	uint64_t samples;	/* PERF_RECORD_SAMPLE records written */
	uint64_t lost;		/* samples the kernel reported lost (sum of PERF_RECORD_LOST.lost) */
	uint64_t lost_records;	/* PERF_RECORD_LOST records seen */
	uint64_t start_ns;	/* CLOCK_MONOTONIC when the workload was released */
	uint64_t end_ns;	/* CLOCK_MONOTONIC when the workload ended */
	int32_t exit_status;	/* workload's exit code, or 128+signal */
	uint32_t flags;		/* DLP_STATS_* */
};
#define DLP_STATS_INTERRUPTED (1u << 0)	/* record was stopped by SIGINT/SIGTERM */
#define DLP_STATS_LIMIT	(1u << 1)	/* stopped at --duration/--max-size; a command ran on
					   (exit_status -1: not known when the file was finished) */

/* ---- writer ---- */
struct recwriter;

/* Create PATH (mode 0600, replacing an existing file) and write the file header. */
struct recwriter *recwriter_open(const char *path);
/* A writer that keeps nothing: each record only goes to its tap (dlprof top without -o). */
struct recwriter *recwriter_open_discard(void);
/* Hand every record added from now on to tap as well, on the thread that adds it, before
 * it is buffered (NULL: none).  The writer has one adding thread at a time, so the tap
 * is called serially. */
typedef void recwriter_tap_fn(void *ctx, uint32_t type, const void *a, size_t alen,
			      const void *b, size_t blen);
void recwriter_set_tap(struct recwriter *w, recwriter_tap_fn *tap, void *ctx);
/* Append one record.  May compress and write a chunk.  Returns 0 or -1 (error printed). */
int recwriter_add(struct recwriter *w, uint32_t type, const void *data, size_t len);
/* The same, with the payload in two pieces (header struct + body). */
int recwriter_add2(struct recwriter *w, uint32_t type, const void *a, size_t alen,
		   const void *b, size_t blen);
/*
 * Keep side-band and samples in separate chunks (call right after recwriter_open):
 * perf records other than MMAP, MMAP2, COMM, FORK and EXIT go to "samples" chunks,
 * everything else to "side-band" chunks, so a reader can skip one kind without
 * inflating it.  Side-band added before a sample is on disk before that sample.
 */
void recwriter_split_samples(struct recwriter *w);
/*
 * Compress chunks on a background thread at idle priority (SCHED_IDLE), so the CPU
 * spent deflating is taken from idle time rather than from the profiled workload.  When
 * more than cap raw bytes wait to be compressed, the thread adding records compresses
 * them itself (bounded memory, bounded loss on SIGKILL).  Chunks reach the file in the
 * order they were made.  0, or -1 (error printed); without a thread, compression stays
 * inline.  Call right after recwriter_open().
 */
int recwriter_set_background(struct recwriter *w, size_t cap);
/* Deflate level for the chunks from now on (1-9; the default, 1, suits stack copies:
 * ~23 KB per sample).  Call before the first record (and after set_background). */
void recwriter_set_level(struct recwriter *w, int level);
/* Wait until every chunk handed over so far is written (background mode). */
void recwriter_sync(struct recwriter *w);
/* Write out the pending chunks, if any (call periodically so a kill loses little). */
int recwriter_flush(struct recwriter *w);
/* Flush, close and free.  Returns 0 or -1.  w is freed either way. */
int recwriter_close(struct recwriter *w);
/* Bytes written to the file so far (compressed chunks already on disk; in background
 * mode call recwriter_sync() first for the complete figure). */
uint64_t recwriter_bytes(const struct recwriter *w);

/* ---- reader ---- */
struct recfile_info {
	uint32_t version;
	uint64_t chunks;	/* complete chunks read (skipped ones included) */
	uint64_t records;	/* records in those chunks (delivered or skipped) */
	int truncated;		/* file ended inside a chunk or without its end marker */
	uint64_t ignored_bytes;	/* trailing bytes not part of a complete chunk */
	uint64_t skipped_chunks;	/* chunks of a class the caller skipped (session passes) */
};

typedef int recfile_cb(void *ctx, uint32_t type, const void *data, size_t len);

/*
 * Read PATH and call cb for every record in file order.  The data pointer is valid only
 * during the call.  A callback returning non-zero stops the read and that value is
 * returned.  Returns 0 when the whole file was read (info->truncated says whether it
 * ended short; a warning is printed once), -1 on a malformed or unreadable file (one-line
 * error printed, records of earlier chunks may have been delivered).
 */
int recfile_read(const char *path, recfile_cb *cb, void *ctx, struct recfile_info *info);

#endif
