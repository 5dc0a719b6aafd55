/* recunwind-priv.h - the unwinding while recording, shared by its files:
 * recunwind.c (the queue, the thread, the API) and recunwind-write.c (a record unwound
 * and written: the stack table, the live session's callbacks). */
#ifndef DLPROF_RECUNWIND_PRIV_H
#define DLPROF_RECUNWIND_PRIV_H

#include <pthread.h>
#include <stdint.h>

#include "memrec.h"
#include "proc-root.h"
#include "process.h"
#include "recfile.h"
#include "recunwind.h"
#include "rephash.h"
#include "session.h"
#include "unwind.h"

#define MAX_FRAMES	512		/* as deep as report unwinds */
#define SOFT_CAP	(32u << 20)	/* bytes waiting past which samples go raw */
#define HARD_CAP	(256u << 20)	/* bytes waiting past which recunw_add() waits */
#define TABLE_MAX	(1u << 21)	/* distinct stacks remembered */
#define BATCH_MAX	(4u << 20)	/* bytes gathered before a hand-over on its own */
#define WAKE_BYTES	(1u << 20)	/* bytes waiting that wake the thread at once */
#define WAKE_MS		20		/* else at most this often, when work came */
/* Records are copied into items of a few size classes (powers of two), which the thread
 * hands back for reuse (a malloc and a free per sample were 5-8% of record's CPU) */
#define POOL_MIN_SHIFT	9		/* 512 bytes */
#define POOL_CLASSES	8		/* up to 64 KiB (a cut stack copy: 32 KiB + its record) */
#define POOL_MAX	(16u << 20)	/* bytes of items kept for reuse */
#define NO_CLASS	0xff

enum { IT_WRITE, IT_PERF, IT_SAMPLE_BEHIND, IT_FLUSH };

struct item {
	struct item *next;
	uint32_t type;		/* DLP_REC_* (IT_WRITE) */
	uint16_t kind;
	uint8_t cls;		/* its size class, NO_CLASS: its own size */
	size_t len;
	struct recunw_py py;	/* a sample's Python stack (chain 0: none) */
	unsigned char data[] __attribute__((aligned(8)));	/* a perf record's fields */
};

struct stack_ent {
	uint64_t hash;
	uint32_t id, nr;
	uint16_t flags;
	uint32_t pychain;	/* its Python stack (DLP_STACK_PY), 0: none */
	uint64_t *ips;		/* nr addresses, then the scan bits */
};

struct recunw {
	struct recwriter *w;
	int keep_raw;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work, space;
	struct item *head, *tail;	/* handed over, under mu */
	size_t queued;
	int closing;
	int idle;			/* the thread waits for work */
	uint64_t idle_since;		/* since when (now_ns) */
	/* items handed back by the thread (under mu), and the recorder's own to reuse */
	struct item *ret[POOL_CLASSES], *ret_last[POOL_CLASSES], *pool[POOL_CLASSES];
	size_t nr_ret[POOL_CLASSES], ret_bytes;
	/* the recorder's own: records not handed over yet */
	struct item *phead, *ptail;
	size_t pbytes;
	size_t pool_bytes;		/* in pool[] */
	int unwoken;			/* work handed over, the thread not woken for it */
	size_t seen_queued;		/* queued at the last hand-over */
	size_t soft_cap;
	int write_failed;
	/* the thread's own */
	struct session *live;
	struct machine *m;
	struct unwinder *uw;
	const unsigned char *cur;	/* the sample record being delivered */
	size_t cur_len;
	const struct recunw_py *cur_py;	/* its Python stack */
	uint64_t cur_dyn;		/* inline: the stack copy's length as cut (UINT64_MAX:
					   not cut) */
	size_t cut_head;		/* inline, cut: the bytes up to the stack size word */
	uint64_t cut_keep;		/* ... and the bytes of stack kept */
	unsigned char *cut;		/* inline, --keep-stacks: the cut record */
	size_t alloc_cut;
	int inl;			/* the draining thread unwinds (see the top) */
	int inl_try;			/* a record tried inline */
	int inl_asked;			/* inline_begin() asked the thread this drain */
	int bail;			/* recunw_cb_sample: it has to go to the thread */
	int no_inline;			/* never (DLPROF_NO_INLINE_UNWIND, tests) */
	int delivered;			/* recunw_cb_sample saw it */
	int defer;			/* recunw_cb_sample wants it again after the batch */
	int retrying;			/* the deferred samples' second (1) or third (2) try */
	struct item *dhead, *dtail;	/* deferred samples: tried again after their batch */
	struct item *d2head, *d2tail;	/* deferred twice: tried again after a later batch */
	uint64_t handled, d2_mark;	/* items handled; that count when d2 was begun */
	uint64_t ips[MAX_FRAMES];
	unsigned flags[MAX_FRAMES];
	uint64_t kips[MAX_FRAMES];	/* the kernel's walk of the sample (kstack_compare) */
	unsigned kflags[MAX_FRAMES];
	struct stack_ent *table;
	size_t table_cap, table_nr;
	uint32_t next_id;
	struct strbuf out;
	struct memrec_enc mem;		/* sampled allocations not written yet (of the one
					   mem-alloc event) */
	struct memrec_enc smp;		/* plain samples not written yet (of one event) */
	struct recunw_stats st;
	/* the walks are timed in TSC ticks where the TSC runs at one rate whatever the
	 * core's state (constant_tsc, nonstop_tsc: two clock_gettime a sample were 3.4% of
	 * record's CPU on a 16-core Xeon guest, and are a system call each where the
	 * clocksource has no vDSO), converted by the ticks and ns from start to end */
	int tsc;
	uint64_t tsc0, mono0;
	struct proc_roots *roots;	/* the processes' roots (the recorder's) */
	/* torch.compile's kernels named as their files were mapped (cb_mmap) */
	struct inductor_index *inductor;
	struct keep_name *names;
	size_t nr_names, alloc_names;
	struct kstack *ks;		/* the kernel's native walks, or NULL */
};

/* recunwind-write.c */
extern const struct session_ops recunw_live_ops;
int recunw_tsc_invariant(void);
void recunw_put(struct recunw *ru, uint32_t type, const void *a, size_t alen, const void *b,
		size_t blen);
void recunw_put_mem(struct recunw *ru);
void recunw_put_smp(struct recunw *ru);
void recunw_flush_all(struct recunw *ru);
void recunw_put_raw(struct recunw *ru, const void *rec, size_t len, const struct recunw_py *py);
uint32_t recunw_strip_sample(struct recunw *ru, const struct dlp_sample *s);
int recunw_cb_sample(void *ctx, const struct dlp_sample *s);

#endif
