/* session.h - meaning of the records in a recording: a callback table, as perf's tools.
 *
 * session_process() reads the file twice: pass 1 delivers the side-band (attrs, meta,
 * comm, mmap, fork, exit, build-ids, kernel symbols, JIT maps, ITT, stats), pass 2 the
 * samples, lost and context-switch records (each pass inflates only the chunks that can
 * hold its records when the file was written with recwriter_split_samples()).  So a sample callback sees every mapping that
 * was ever made; proc.c resolves addresses "as of" the sample's time.
 */
#ifndef DLPROF_SESSION_H
#define DLPROF_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

#include "recfile.h"
#include "recmeta.h"

/* Events are owned by the session reader: pointers to them (dlp_sample.evsel, the attr
 * callback's argument) stay valid until the process exits, so consumers may keep them. */
struct evsel {
	struct perf_event_attr attr;
	char name[64];
	uint64_t *ids;
	size_t nr_ids;
};

struct dlp_sample {
	const struct evsel *evsel;
	uint64_t id, ip, time, period;
	uint32_t pid, tid, cpu;
	uint16_t cpumode;		/* header.misc & PERF_RECORD_MISC_CPUMODE_MASK */
	uint64_t nr_callchain;		/* raw, PERF_CONTEXT_* markers included */
	const uint64_t *callchain;
	uint64_t user_abi;		/* PERF_SAMPLE_REGS_ABI_*, 0: no registers */
	uint64_t user_regs_mask;	/* attr.sample_regs_user */
	const uint64_t *user_regs;	/* one per set bit of the mask, in bit order */
	uint64_t stack_size;		/* bytes of user stack copied (dyn_size, trimmed) */
	const uint8_t *stack;		/* starts at the sampled SP */
	/* the user stack unwound while recording (DLP_REC_USAMPLE), nr_ustack 0: none */
	uint32_t nr_ustack;
	int ustack_complete;		/* that walk reached the thread root */
	int ustack_past_copy;		/* ... its outer frames past the copy's end taken from
					   the thread's last walk (DLP_STACK_PAST_COPY) */
	const uint64_t *ustack;		/* leaf first, as unwind_sample() writes them */
	const uint8_t *ustack_scanned;	/* bit i: frame i found by a stack scan */
	/* which stored stack that is: the samples of one have the same (with ustack_leaf_ip
	 * its addresses from the second on, the first the sample's IP), for as long as the
	 * session lives; NULL: none */
	const void *ustack_id;
	int ustack_leaf_ip;
	/* its Python stack read as it was taken (DLP_STACK_PY), pychain 0: none */
	uint32_t pychain;		/* a DLP_REC_PYCHAIN's id */
	uint32_t pyflags;		/* DLP_PYSTACK_* (none: read from outside, later) */
	uint32_t pystate;		/* DLP_PY_TRUSTED or DLP_PY_UNCHECKED */
	/* PERF_SAMPLE_READ of a group (record --metrics: the counts of the interval the
	 * sample ends, its thread's on its cpu since its sample before there, META
	 * metrics): [0] the sampling event's own, then its members'; nr_read 0: none */
	uint32_t nr_read;
	const uint64_t *read;
	uint64_t read_enabled, read_running;
	/* a counter's own sample (record --metrics sampling each on its own, META
	 * metrics_mode=events), given its counts in read by the profile (profile.h:
	 * metric_samples): it stands for them alone, no CPU time and no sample of a view */
	int counts_only;
};

struct dlp_mmap {
	uint32_t pid, tid;
	uint64_t start, len, pgoff, time;
	uint32_t prot, flags;
	uint16_t misc;			/* PERF_RECORD_MISC_* (user/kernel, MMAP_DATA, BUILD_ID) */
	uint8_t build_id_size;		/* 0 when the kernel gave none */
	uint8_t build_id[20];
	const char *filename;
};

struct session;

struct session_ops {
	int (*attr)(void *ctx, const struct evsel *ev);
	int (*meta)(void *ctx, const struct recmeta *m);	/* (valid during the call) */
	int (*mmap)(void *ctx, const struct dlp_mmap *m);
	int (*comm)(void *ctx, uint32_t pid, uint32_t tid, const char *comm, int exec, uint64_t time);
	int (*fork)(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time);
	int (*exit)(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time);
	/* pass 2 */
	int (*sample)(void *ctx, const struct dlp_sample *s);
	int (*lost)(void *ctx, uint64_t id, uint64_t lost);
	/* PERF_RECORD_SWITCH: out=1 when switched out; preempt=1 when it was still runnable */
	int (*context_switch)(void *ctx, uint32_t pid, uint32_t tid, uint32_t cpu, uint64_t time,
			      int out, int preempt);
	/* any non-perf record not covered above (BUILDID, KSYMS, JITMAP, JITDUMP, ITT, FILE, STATS),
	 * raw payload, pass 1 */
	int (*other)(void *ctx, uint32_t type, const void *data, size_t len);
};

struct session_info {
	struct recfile_info file;
	struct dlp_stats stats;
	int have_stats;
	uint64_t bad_records;	/* perf records that failed validation and were skipped */
	uint64_t first_time, last_time;	/* sample time range */
};

/*
 * Read PATH, dispatching to ops (NULL members are skipped).  Returns 0 when complete,
 * 1 when the file was truncated (what was there was delivered; a warning was printed),
 * -1 on error (message printed).
 */
int session_process(const char *path, const struct session_ops *ops, void *ctx,
		    struct session_info *info);

/*
 * A live session, for record: the perf records of a recording being made, dispatched as
 * they come (side-band and samples alike, one pass).  Attrs first, as DLP_REC_ATTR
 * payloads.  Returns the callback's value, 0 for a malformed record (counted).
 */
struct session *session_live_new(const struct session_ops *ops, void *ctx);
int session_live_attr(struct session *s, const void *data, size_t len);
int session_live_perf(struct session *s, const void *rec, size_t len);
/* Any record of a recording as it is written (recwriter_set_tap): perf records as above,
 * stacks and samples unwound while recording, attrs, meta, stats and the other types
 * (ops->other), in one pass. */
int session_live_record(struct session *s, uint32_t type, const void *data, size_t len);
/* The evsel of a sample record's id (for record's rewriting), NULL when none. */
const struct evsel *session_live_evsel(struct session *s, const void *rec, size_t len);
void session_live_free(struct session *s);

/* Parse one raw PERF_RECORD_SAMPLE for evsel (exposed for tests). 0 or -1 when malformed. */
/* The time in the sample_id_all trailer of a side-band perf record (MMAP2, COMM, ...) of
 * an event with attr; 0 when it has none */
uint64_t session_trailer_time(const struct perf_event_attr *attr, const void *rec, size_t len);
int session_parse_sample(const struct evsel *ev, const void *rec, size_t len,
			 struct dlp_sample *out);
/* The same for a record holding the registers of regs_mask, not the event's (0: the
 * event's): a DLP_USAMPLE_ARGS_REGS sample has 0x3c. */
int session_parse_sample_regs(const struct evsel *ev, const void *rec, size_t len,
			      struct dlp_sample *out, uint64_t regs_mask);
/* User register regno (PERF_REG_X86_*) of a parsed sample into *v; -1 when the sample has
 * no such register (none copied, or not in its mask) */
int session_sample_reg(const struct dlp_sample *s, int regno, uint64_t *v);
/* The arguments of an allocation event of record --memory (memevent.h: DI the address,
 * SI the size, DX the weight, CX kind | seq << MEM_KIND_BITS): 0 when s carries them and
 * its kind is an allocation (MEM_KIND_MALLOC..MEM_KIND_MMAP), else -1 */
struct session_mem_alloc {
	uint64_t addr, size, weight, kind;
	uint64_t seq;		/* the block's number, 0: none (named by its address) */
};
int session_mem_alloc(const struct dlp_sample *s, struct session_mem_alloc *a);

#endif
