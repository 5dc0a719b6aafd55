/* recunwind.c - unwinding the copied user stacks while recording (see recunwind.h).
 *
 * One queue (a list of copied records under a mutex) from the draining thread to the
 * unwinding thread; that thread is the only writer of the recording while it runs.
 * While it has nothing to do (nothing queued, nothing deferred), the draining thread
 * unwinds and writes the records itself, straight from the ring ("inline"), with walks
 * that do nothing long (unwinder_set_fast: opening a file, its .eh_frame and its
 * thread-root functions are short; reading its .debug_frame is not): the first record
 * that would need more (a .debug_frame read, a mapping not seen yet, a walk that found no
 * frame) is queued as before, and so is every record after it until the thread is idle
 * again.  Inline, a sample is not copied out of the ring nor handed across cores: what
 * the walk does not read of its stack copy is never touched.
 * Distinct stacks are kept in an open-addressing table (address chain, scan flags,
 * completeness) up to a cap; past it a new chain is still written, under a fresh id.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <x86intrin.h>

#include "isa.h"
#include "memevent.h"
#include "memrec.h"
#include "process.h"
#include "pyrec.h"
#include "recfile.h"
#include "recunwind.h"
#include "rephash.h"
#include "session.h"
#include "unwind.h"
#include "util.h"

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
	int bail;			/* cb_sample: it has to go to the thread */
	int no_inline;			/* never (DLPROF_NO_INLINE_UNWIND, tests) */
	int delivered;			/* cb_sample saw it */
	int defer;			/* cb_sample wants it again after the batch */
	int retrying;			/* the deferred samples' second (1) or third (2) try */
	struct item *dhead, *dtail;	/* deferred samples: tried again after their batch */
	struct item *d2head, *d2tail;	/* deferred twice: tried again after a later batch */
	uint64_t handled, d2_mark;	/* items handled; that count when d2 was begun */
	uint64_t ips[MAX_FRAMES];
	unsigned flags[MAX_FRAMES];
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
};

static int tsc_invariant(void)
{
	char *flags = isa_cpuinfo_flags();
	char *w = flags ? xasprintf(" %s ", flags) : NULL;	/* (whole words) */
	int ok = w && strstr(w, " constant_tsc ") && strstr(w, " nonstop_tsc ");

	free(w);
	free(flags);
	return ok;
}

static inline uint64_t walk_clock(const struct recunw *ru)
{
	return ru->tsc ? __rdtsc() : now_ns();
}

static void put(struct recunw *ru, uint32_t type, const void *a, size_t alen, const void *b,
		size_t blen)
{
	if (!ru->write_failed && recwriter_add2(ru->w, type, a, alen, b, blen) < 0)
		ru->write_failed = 1;
}

/* The sampled allocations gathered, as one DLP_REC_MEMALLOC record */
static void put_mem(struct recunw *ru)
{
	size_t len;
	const void *p = memrec_take(&ru->mem, &len);

	if (p)
		put(ru, DLP_REC_MEMALLOC, p, len, NULL, 0);
}

#define MEM_BATCH	1024	/* allocations a MEMALLOC record holds at most */
#define SMP_BATCH	4096	/* samples a USAMPLES record holds at most */

/* The plain samples gathered, as one DLP_REC_USAMPLES record.  Whichever thread unwinds
 * writes them: the draining one at the end of a drain it unwound itself and when it hands
 * the samples on to the unwinding thread, that one when its queue runs empty. */
static void put_smp(struct recunw *ru)
{
	size_t len;
	const void *p = memrec_take(&ru->smp, &len);

	if (p)
		put(ru, DLP_REC_USAMPLES, p, len, NULL, 0);
}

/* the sample layout of every event of a dwarf recording (record.c attr_common) */
#define PLAIN_TYPE	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
			 PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

/*
 * A plain sample (its registers and stack copy go; not a memory event's, whose registers
 * stay) goes into the batch of compact entries, which hold all the rest of it; 0 when s
 * is not one.
 */
static int add_plain(struct recunw *ru, const struct dlp_sample *s, uint32_t stack_id,
		     uint32_t flags)
{
	struct memrec_sample e;

	if (!s->evsel || s->evsel->attr.sample_type != PLAIN_TYPE || !s->id ||
	    s->nr_callchain > MEMREC_CHAIN_MAX || !strncmp(s->evsel->name, "mem-", 4))
		return 0;
	if (ru->smp.nr && ru->smp.id != s->id)
		put_smp(ru);
	e.time = s->time;
	e.ip = s->ip;
	e.period = s->period;
	e.pid = s->pid;
	e.tid = s->tid;
	e.cpu = s->cpu;
	e.stack_id = stack_id;
	e.flags = flags;
	e.cpumode = s->cpumode;
	e.nr_callchain = (uint32_t)s->nr_callchain;
	e.callchain = s->callchain;
	memrec_sample_add(&ru->smp, s->id, &e);
	if (ru->smp.nr >= SMP_BATCH)
		put_smp(ru);
	return 1;
}

/* The batches gathered so far written, and the recording's pending chunks too */
static void flush_all(struct recunw *ru)
{
	put_mem(ru);
	put_smp(ru);
	if (!ru->write_failed && recwriter_flush(ru->w) < 0)
		ru->write_failed = 1;
}

/*
 * A sampled allocation (a mem-alloc sample of kind MALLOC..MMAP) goes into the batch of
 * compact entries; 0 when s is not one
 */
static int add_mem(struct recunw *ru, const struct dlp_sample *s, uint32_t stack_id,
		   uint32_t flags)
{
	struct session_mem_alloc m;
	struct memrec_alloc a;

	if (!s->evsel || strcmp(s->evsel->name, "mem-alloc") || !s->id ||
	    session_mem_alloc(s, &m) < 0)
		return 0;	/* (the record names its event by a sample id) */
	memset(&a, 0, sizeof(a));
	a.size = m.size;
	a.weight = m.weight;
	a.kind = m.kind;
	a.seq = m.seq;
	a.addr = a.seq ? 0 : m.addr;	/* the number names it */
	a.time = s->time;
	a.ip = s->ip;
	a.pid = s->pid;
	a.tid = s->tid;
	a.cpu = s->cpu;
	a.stack_id = stack_id;
	a.flags = flags;
	memrec_alloc_add(&ru->mem, s->id, &a);
	if (ru->mem.nr >= MEM_BATCH)
		put_mem(ru);
	return 1;
}

/* A sample as it came (report unwinds it), its Python stack named after it */
static void put_raw(struct recunw *ru, const void *rec, size_t len, const struct recunw_py *py)
{
	put(ru, DLP_REC_PERF, rec, len, NULL, 0);
	if (py && py->chain) {
		struct dlp_pystack_rec ps;

		memset(&ps, 0, sizeof(ps));
		ps.pid = py->pid;
		ps.tid = py->tid;
		ps.time = py->time;
		ps.state = py->state;	/* (a delay, read from outside: in META) */
		ps.flags = (uint8_t)(py->flags | DLP_PYSTACK_CHAIN);
		put(ru, DLP_REC_PYSTACK, &ps, sizeof(ps), &py->chain, sizeof(py->chain));
	}
}

/* ---- the stack table ---- */

static uint64_t stack_hash(const uint64_t *ips, const uint8_t *bits, uint32_t nr, uint16_t fl)
{
	uint64_t h = hash_bytes(ips, (size_t)nr * 8);

	return h ^ hash_u64(hash_bytes(bits, (nr + 7u) / 8) + ((uint64_t)fl << 32 | nr));
}

static void table_grow(struct recunw *ru)
{
	size_t cap = ru->table_cap ? ru->table_cap * 2 : 4096;
	struct stack_ent *t = xcalloc(cap, sizeof(*t));

	for (size_t i = 0; i < ru->table_cap; i++) {
		struct stack_ent *e = &ru->table[i];
		size_t j;

		if (!e->id)
			continue;
		for (j = e->hash & (cap - 1); t[j].id; j = (j + 1) & (cap - 1))
			;
		t[j] = *e;
	}
	free(ru->table);
	ru->table = t;
	ru->table_cap = cap;
}

/* The id of the stack ips[first..nr) with Python stack pychain (0: none), writing its
 * DLP_REC_STACK when new. */
static uint32_t stack_id(struct recunw *ru, uint32_t first, uint32_t nr, int complete,
			 uint32_t pychain)
{
	const uint64_t *ips = ru->ips + first;
	const unsigned *flags = ru->flags + first;
	uint8_t bits[(MAX_FRAMES + 7) / 8];
	uint16_t fl = (complete ? DLP_STACK_COMPLETE : 0) | (pychain ? DLP_STACK_PY : 0);
	size_t nb, j = 0;
	uint64_t h;
	struct dlp_stack_rec rec;
	int remember = ru->table_nr < TABLE_MAX;

	nr -= first;
	nb = (nr + 7u) / 8;
	memset(bits, 0, nb);
	for (uint32_t i = 0; i < nr; i++)
		if (flags[i])
			bits[i / 8] |= (uint8_t)(1u << (i % 8));
	h = stack_hash(ips, bits, nr, fl) ^ hash_u64(pychain);
	if (remember) {
		if ((ru->table_nr + 1) * 2 > ru->table_cap)
			table_grow(ru);
		for (j = h & (ru->table_cap - 1); ru->table[j].id; j = (j + 1) & (ru->table_cap - 1)) {
			struct stack_ent *e = &ru->table[j];

			if (e->hash == h && e->nr == nr && e->flags == fl && e->pychain == pychain &&
			    !memcmp(e->ips, ips, (size_t)nr * 8) &&
			    !memcmp(e->ips + nr, bits, nb))
				return e->id;
		}
	}
	rec.id = ++ru->next_id;
	rec.nr = (uint16_t)nr;
	rec.flags = fl;
	strbuf_reset(&ru->out);
	strbuf_add(&ru->out, ips, (size_t)nr * 8);
	strbuf_add(&ru->out, bits, nb);
	if (pychain)
		strbuf_add(&ru->out, &pychain, sizeof(pychain));
	put(ru, DLP_REC_STACK, &rec, sizeof(rec), ru->out.buf, ru->out.len);
	ru->st.stacks++;
	if (remember) {
		struct stack_ent *e = &ru->table[j];

		e->hash = h;
		e->id = rec.id;
		e->nr = nr;
		e->flags = fl;
		e->pychain = pychain;
		e->ips = xmalloc((size_t)nr * 8 + nb + 8);
		memcpy(e->ips, ru->out.buf, ru->out.len);
		ru->table_nr++;
	}
	return rec.id;
}

/* ---- the live session's callbacks ---- */

static int cb_mmap(void *ctx, const struct dlp_mmap *mm)
{
	struct recunw *ru = ctx;

	unwind_maps_changed(ru->uw, mm->pid, mm->time);
	return machine_mmap(ru->m, mm);
}

static int cb_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, int exec,
		   uint64_t time)
{
	struct recunw *ru = ctx;

	if (exec)	/* a new image: what was cached of the old one is not its */
		unwind_maps_changed(ru->uw, pid, time);
	return machine_comm(ru->m, pid, tid, comm, exec, time);
}

static int cb_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		   uint64_t time)
{
	struct recunw *ru = ctx;

	/* a new process gets its parent's maps: what a walk cached for it before (one
	 * of its samples drained ahead of this record) was done without them */
	if (pid != ppid)
		unwind_maps_changed(ru->uw, pid, time);
	return machine_fork(ru->m, pid, ppid, tid, ptid, time);
}

static int cb_exit(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		   uint64_t time)
{
	struct recunw *ru = ctx;

	unwind_thread_exit(ru->uw, pid, tid);
	return machine_exit(ru->m, pid, tid, time);
}

/*
 * The sample record without its registers and stack copy: ABI 0 (no registers), stack
 * size 0 (no data, no dyn_size), whatever followed kept.  The memory events (record
 * --memory) keep the registers that hold the allocation's arguments, CX DX SI DI
 * (memevent.h): returns DLP_USAMPLE_ARGS_REGS then, else 0.
 */
static uint32_t strip_sample(struct recunw *ru, const struct dlp_sample *s)
{
	int keep_regs = s->evsel && !strncmp(s->evsel->name, "mem-", 4) &&
			(s->user_regs_mask & 0x3c) == 0x3c;
	const unsigned char *rec = ru->cur, *end = ru->cur + ru->cur_len;
	const unsigned char *abi = (const unsigned char *)s->user_regs - 8;
	const unsigned char *size_at = (const unsigned char *)s->user_regs +
				       8 * (size_t)__builtin_popcountll(s->user_regs_mask);
	uint64_t size, zero = 0;
	const unsigned char *rest;
	struct perf_event_header *h;

	memcpy(&size, size_at, 8);
	rest = size_at + 8 + (size ? size + 8 : 0);
	strbuf_reset(&ru->out);
	if (keep_regs) {
		strbuf_add(&ru->out, rec, (size_t)(abi - rec) + 8);	/* up to the ABI */
		for (int r = 2; r <= 5; r++)
			strbuf_add(&ru->out, s->user_regs +
				   __builtin_popcountll(s->user_regs_mask & ((1ull << r) - 1)), 8);
	} else {
		strbuf_add(&ru->out, rec, (size_t)(abi - rec));
		strbuf_add(&ru->out, &zero, 8);	/* PERF_SAMPLE_REGS_ABI_NONE */
	}
	strbuf_add(&ru->out, &zero, 8);		/* stack size 0 */
	if (rest < end)
		strbuf_add(&ru->out, rest, (size_t)(end - rest));
	h = (struct perf_event_header *)ru->out.buf;
	h->size = (uint16_t)ru->out.len;
	return keep_regs ? DLP_USAMPLE_ARGS_REGS : 0;
}

static int cb_sample(void *ctx, const struct dlp_sample *s)
{
	struct recunw *ru = ctx;
	struct dlp_usample_rec us;
	struct dlp_sample cut;
	uint64_t t0;
	size_t n;
	uint32_t pychain;
	int complete = 0, unmapped;

	ru->delivered = 1;
	if (!s->user_abi || !s->user_regs || !s->stack || !s->stack_size) {
		if (ru->inl_try)
			ru->bail = 1;	/* written as it came: by the thread, cut */
		else
			put_raw(ru, ru->cur, ru->cur_len, ru->cur_py);
		return 0;
	}
	if (ru->inl_try && s->stack_size > ru->cur_dyn) {
		/* the copy as the thread would see it, cut by record */
		cut = *s;
		cut.stack_size = ru->cur_dyn;
		s = &cut;
	}
	t0 = walk_clock(ru);
	n = unwind_sample(ru->uw, s, ru->ips, ru->flags, MAX_FRAMES, &complete);
	ru->st.unwind_ns += walk_clock(ru) - t0;	/* (ticks with ru->tsc) */
	unmapped = !complete && unwind_met_unmapped(ru->uw);
	if (ru->inl_try && (!n || unmapped)) {
		/* a walk that needed more than a fast walk does, or one the thread writes raw
		 * or tries again later */
		ru->bail = 1;
		return 0;
	}
	if (!ru->retrying)
		ru->st.samples++;
	if (n && unmapped && ru->retrying < 2) {
		/* its mmap may come later in this batch, from another cpu's ring (try again
		 * once the batch is in), or in the next drain (and once more after that) */
		ru->defer = 1;
		return 0;
	}
	if (!n) {
		/* report unwinds it again, with every mapping of the run known */
		ru->st.incomplete++;
		put_raw(ru, ru->cur, ru->cur_len, ru->cur_py);
		return 0;
	}
	/* (still met an address in no mapping two batches later: not code of a mapping
	 * not seen yet but a "return address" that is none, into the stack, the heap or
	 * data: report's walk would stop there too, so the stack so far, incomplete,
	 * instead of a 32 KiB copy) */
	if (unmapped)
		ru->st.partial++;
	/* the leaf is the sample's own IP when it was taken in user mode: the stack
	 * stored is the callers' */
	us.flags = n > 1 && s->ip == ru->ips[0] && !ru->flags[0] ? DLP_USAMPLE_LEAF_IP : 0;
	/* its Python stack goes with its native one: the one nearly says the other (the
	 * CNN: 977 native stacks, 1033 with their Python stacks), so the samples name both
	 * for the bytes of one id */
	pychain = ru->cur_py ? ru->cur_py->chain : 0;
	us.stack_id = stack_id(ru, us.flags ? 1 : 0, (uint32_t)n, complete, pychain);
	ru->st.unwound++;
	if (pychain && (ru->cur_py->flags & DLP_PYSTACK_OWN))
		us.flags |= DLP_USAMPLE_PY_OWN;
	else if (pychain && !(ru->cur_py->flags & DLP_PYSTACK_KERNEL))
		us.flags |= DLP_USAMPLE_PY_LATE |
			    (ru->cur_py->state == DLP_PY_UNCHECKED ? DLP_USAMPLE_PY_UNCHECKED : 0);
	if (ru->keep_raw && ru->inl_try && ru->cut_head) {
		/* the record as the thread would have had it: cut */
		size_t len = ru->cut_head + 16 + (size_t)ru->cut_keep;

		ALLOC_GROW(ru->cut, len, ru->alloc_cut);
		recunw_cut(ru->cut, (const void *)ru->cur, ru->cut_head, ru->cut_keep, ru->cur_dyn);
		us.flags |= DLP_USAMPLE_RAW_KEPT;
		put(ru, DLP_REC_USAMPLE, &us, sizeof(us), ru->cut, len);
	} else if (ru->keep_raw) {
		us.flags |= DLP_USAMPLE_RAW_KEPT;
		put(ru, DLP_REC_USAMPLE, &us, sizeof(us), ru->cur, ru->cur_len);
	} else if (!add_mem(ru, s, us.stack_id, us.flags) &&
		   !add_plain(ru, s, us.stack_id, us.flags)) {
		us.flags |= strip_sample(ru, s);
		put(ru, DLP_REC_USAMPLE, &us, sizeof(us), ru->out.buf, ru->out.len);
	}
	return 0;
}

static const struct session_ops live_ops = {
	.mmap = cb_mmap,
	.comm = cb_comm,
	.fork = cb_fork,
	.exit = cb_exit,
	.sample = cb_sample,
};

/* ---- the thread ---- */

/* Handle one record.  Returns 1 when the item was kept for later (ru->deferred). */
static int handle(struct recunw *ru, struct item *it)
{
	switch (it->kind) {
	case IT_WRITE:
		put(ru, it->type, it->data, it->len, NULL, 0);
		break;
	case IT_PERF:
		/* side-band feeds the model; samples are unwound and written by cb_sample */
		ru->cur = it->data;
		ru->cur_len = it->len;
		ru->cur_py = &it->py;
		if (((struct perf_event_header *)it->data)->type != PERF_RECORD_SAMPLE) {
			session_live_perf(ru->live, it->data, it->len);
			put(ru, DLP_REC_PERF, it->data, it->len, NULL, 0);
		} else {
			/* a record the parser refuses is still kept, as it came */
			ru->delivered = 0;
			ru->defer = 0;
			session_live_perf(ru->live, it->data, it->len);
			if (!ru->delivered)
				put_raw(ru, it->data, it->len, &it->py);
			if (ru->defer) {
				struct item **head = ru->retrying ? &ru->d2head : &ru->dhead;
				struct item **tail = ru->retrying ? &ru->d2tail : &ru->dtail;

				if (ru->retrying && !ru->d2head)
					ru->d2_mark = ru->handled;
				it->next = NULL;
				if (*tail)
					(*tail)->next = it;
				else
					*head = it;
				*tail = it;
				return 1;
			}
		}
		break;
	case IT_SAMPLE_BEHIND:
		ru->st.samples++;
		ru->st.behind++;
		put_raw(ru, it->data, it->len, &it->py);
		break;
	case IT_FLUSH:
		flush_all(ru);
		break;
	}
	return 0;
}

/* The samples deferred for a mapping not seen yet: once more, now that the batch they
 * came in (all rings of one drain) is in. */
static void retry_deferred(struct recunw *ru, int round)
{
	struct item *it = round == 1 ? ru->dhead : ru->d2head, *next;

	if (round == 1)
		ru->dhead = ru->dtail = NULL;
	else
		ru->d2head = ru->d2tail = NULL;
	ru->retrying = round;
	for (; it; it = next) {
		next = it->next;
		if (!handle(ru, it))
			free(it);
	}
	ru->retrying = 0;
}

static size_t class_size(unsigned cls)
{
	return (size_t)1 << (cls + POOL_MIN_SHIFT);
}

static void free_items(struct item *it)
{
	while (it) {
		struct item *next = it->next;

		free(it);
		it = next;
	}
}

/* An item done with (under mu): kept for reuse while the pool is small, else freed */
static void item_give_back(struct recunw *ru, struct item *it)
{
	if (it->cls == NO_CLASS || ru->ret_bytes + class_size(it->cls) > POOL_MAX) {
		free(it);
		return;
	}
	it->next = ru->ret[it->cls];
	if (!it->next)
		ru->ret_last[it->cls] = it;
	ru->ret[it->cls] = it;
	ru->nr_ret[it->cls]++;
	ru->ret_bytes += class_size(it->cls);
}

static void *thread_main(void *arg)
{
	struct recunw *ru = arg;
	struct item *it;
	int kept;

	/* as the rings' reader (record.c): a workload on every core must not hold it off,
	 * or the samples it falls behind on are written with their whole stack copies
	 * (1024 busy threads on 16 cores: 61% of them, and 7% lost while the reader
	 * compressed those); where not allowed, the default weight */
	(void)setpriority(PRIO_PROCESS, 0, RECORD_NICE);
	for (;;) {
		if (!ru->head && ru->dhead) {
			pthread_mutex_unlock(&ru->mu);
			retry_deferred(ru, 1);
			pthread_mutex_lock(&ru->mu);
			continue;
		}
		if (!ru->head && ru->d2head && (ru->handled > ru->d2_mark || ru->closing)) {
			pthread_mutex_unlock(&ru->mu);
			retry_deferred(ru, 2);
			pthread_mutex_lock(&ru->mu);
			continue;
		}
		if (!ru->head && ru->smp.nr) {
			/* its queue ran empty: what it unwound goes out (the draining thread
			 * takes over only once this one waits, below) */
			pthread_mutex_unlock(&ru->mu);
			put_smp(ru);
			pthread_mutex_lock(&ru->mu);
			continue;
		}
		while (!ru->head && !ru->closing) {
			struct timespec ts;

			/* woken by hand_over(); the time-out is only a safety net */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec++;
			ru->idle = 1;
			ru->idle_since = now_ns();
			pthread_cond_timedwait(&ru->work, &ru->mu, &ts);
			ru->idle = 0;
		}
		it = ru->head;
		if (!it)
			break;	/* closing, and nothing left */
		ru->head = it->next;
		if (!ru->head)
			ru->tail = NULL;
		pthread_mutex_unlock(&ru->mu);
		kept = handle(ru, it);
		ru->handled++;
		pthread_mutex_lock(&ru->mu);
		ru->queued -= it->len;
		if (!kept)
			item_give_back(ru, it);
		if (ru->queued <= HARD_CAP)
			pthread_cond_signal(&ru->space);
	}
	pthread_mutex_unlock(&ru->mu);
	put_mem(ru);
	put_smp(ru);
	ru->st.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	{
		struct unwind_stats us;

		unwind_get_stats(ru->uw, &us);
		ru->st.joined = us.joined;
		ru->st.reused = us.reused;
		ru->st.frames = us.frames;
	}
	return NULL;
}

static void hand_over(struct recunw *ru, int force);

/* Records are gathered in a private list and handed over a batch at a time
 * (recunw_kick): one lock and at most one wake-up per drain, not per record. */
static struct item *item_new(struct recunw *ru, uint32_t kind, uint32_t type, const void *a,
			     size_t alen, const void *b, size_t blen)
{
	size_t need = alen + blen;
	unsigned cls = 0;
	struct item *it;

	if (need > class_size(0))
		cls = (unsigned)(64 - __builtin_clzll((unsigned long long)need - 1)) - POOL_MIN_SHIFT;
	if (cls < POOL_CLASSES && ru->pool[cls]) {
		it = ru->pool[cls];
		ru->pool[cls] = it->next;
		ru->pool_bytes -= class_size(cls);
	} else {
		it = xmalloc(sizeof(*it) + (cls < POOL_CLASSES ? class_size(cls) : need));
	}
	it->cls = cls < POOL_CLASSES ? (uint8_t)cls : NO_CLASS;
	it->next = NULL;
	it->kind = (uint16_t)kind;
	it->type = type;
	it->len = alen + blen;
	memset(&it->py, 0, sizeof(it->py));
	if (alen && a)	/* (NULL: written by the caller) */
		memcpy(it->data, a, alen);
	if (blen)
		memcpy(it->data + alen, b, blen);
	return it;
}

static void queue_item(struct recunw *ru, struct item *it)
{
	if (ru->ptail)
		ru->ptail->next = it;
	else
		ru->phead = it;
	ru->ptail = it;
	ru->pbytes += it->len;
	if (ru->pbytes > BATCH_MAX)
		hand_over(ru, 1);
}

static void enqueue(struct recunw *ru, uint32_t kind, uint32_t type, const void *a, size_t alen,
		    const void *b, size_t blen)
{
	queue_item(ru, item_new(ru, kind, type, a, alen, b, blen));
}

/* With force, wake the thread now; else when much waits or it has been idle WAKE_MS
 * (a wake-up per drain, often per sample, would cost more than the unwinding; a thread
 * that wakes on a timer to look, as it did, wakes for nothing most times: 15% of its
 * CPU went to switching on the CNN).  Work handed over without a wake-up is looked at
 * again at the next drain. */
static void hand_over(struct recunw *ru, int force)
{
	struct item *drop = NULL;

	if (!ru->phead && !force && !ru->unwoken)
		return;
	pthread_mutex_lock(&ru->mu);
	while (ru->queued > HARD_CAP)
		pthread_cond_wait(&ru->space, &ru->mu);
	if (!ru->phead)
		;
	else if (ru->tail)
		ru->tail->next = ru->phead;
	else
		ru->head = ru->phead;
	if (ru->ptail)
		ru->tail = ru->ptail;
	ru->queued += ru->pbytes;
	ru->seen_queued = ru->queued;
	for (unsigned c = 0; c < POOL_CLASSES; c++)
		if (ru->ret[c]) {
			/* what the thread handed back, ours to reuse (all of it: taken only
			 * into an empty pool, a pool short by a few items malloc'd new ones
			 * until the next hand-over while the returned ones piled up to
			 * POOL_MAX and were freed, and the heap gave their pages back: a
			 * page fault per 4 KiB copied, 12% of the reader's CPU on the CNN) */
			size_t bytes = ru->nr_ret[c] * class_size(c);

			if (ru->pool_bytes + bytes <= POOL_MAX) {
				ru->ret_last[c]->next = ru->pool[c];
				ru->pool[c] = ru->ret[c];
				ru->pool_bytes += bytes;
			} else {
				/* past POOL_MAX (after a burst): freed, or the pool would keep
				 * the burst's memory for the rest of the run */
				ru->ret_last[c]->next = drop;
				drop = ru->ret[c];
			}
			ru->ret[c] = ru->ret_last[c] = NULL;
			ru->ret_bytes -= bytes;
			ru->nr_ret[c] = 0;
		}
	ru->unwoken = 0;
	if (ru->idle && (force || (ru->head && (ru->queued > WAKE_BYTES ||
						  now_ns() - ru->idle_since >=
						  WAKE_MS * 1000000ull))))
		pthread_cond_signal(&ru->work);
	else if (ru->idle && ru->head)
		ru->unwoken = 1;
	pthread_mutex_unlock(&ru->mu);
	free_items(drop);
	ru->phead = ru->ptail = NULL;
	ru->pbytes = 0;
}

/*
 * The draining thread unwinds from now on, when the thread has nothing: nothing queued
 * or deferred, and it waits for work (it touches nothing of the unwinder's or the
 * writer's until it is handed some: the lock orders what either did before).
 */
static void inline_begin(struct recunw *ru)
{
	if (ru->inl || ru->no_inline || ru->phead || ru->inl_asked)
		return;
	ru->inl_asked = 1;	/* once a drain */
	pthread_mutex_lock(&ru->mu);
	ru->inl = ru->idle && !ru->head && !ru->dhead && !ru->d2head && !ru->closing;
	pthread_mutex_unlock(&ru->mu);
}

void recunw_kick(struct recunw *ru)
{
	if (ru->inl)
		put_smp(ru);	/* the drain's samples, unwound inline */
	hand_over(ru, 0);
	ru->inl_asked = 0;
}

/*
 * A perf record, inline: a sample unwound by a fast walk and written (1), or 0 when
 * it goes to the thread after all (nothing written; inline ends).  head_len: a sample to
 * be cut (recunw_add_cut), else 0.
 */
static int inline_perf(struct recunw *ru, const struct perf_event_header *rec,
		       const struct recunw_py *py, size_t head_len, uint64_t keep, uint64_t dyn)
{
	static const struct recunw_py none;

	ru->cur = (const unsigned char *)rec;
	ru->cur_len = rec->size;
	ru->cur_py = py ? py : &none;
	if (rec->type != PERF_RECORD_SAMPLE) {
		session_live_perf(ru->live, rec, rec->size);
		put(ru, DLP_REC_PERF, rec, rec->size, NULL, 0);
		return 1;
	}
	ru->cur_dyn = UINT64_MAX;
	ru->cut_head = head_len;
	if (head_len) {
		uint64_t size;

		/* (sample_fixup() checked the sizes) what strip_sample() keeps ends at the
		 * dyn_size word, as in the cut record */
		memcpy(&size, ru->cur + head_len, 8);
		ru->cur_len = head_len + 16 + (size_t)size;
		ru->cut_keep = keep;
		ru->cur_dyn = dyn;
	}
	ru->delivered = 0;
	ru->defer = 0;
	ru->bail = 0;
	ru->inl_try = 1;
	unwinder_set_fast(ru->uw, 1);
	session_live_perf(ru->live, rec, rec->size);
	unwinder_set_fast(ru->uw, 0);
	ru->inl_try = 0;
	if (!ru->delivered || ru->bail) {
		ru->inl = 0;
		put_smp(ru);	/* before the thread takes over */
		ru->st.bails++;
		return 0;
	}
	ru->st.inline_samples++;
	return 1;
}

void recunw_cut(unsigned char *dst, const struct perf_event_header *rec, size_t head_len,
		uint64_t keep, uint64_t dyn)
{
	const unsigned char *p = (const void *)rec;

	memcpy(dst, p, head_len);
	memcpy(dst + head_len, &keep, 8);
	memcpy(dst + head_len + 8, p + head_len + 8, (size_t)keep);
	memcpy(dst + head_len + 8 + keep, &dyn, 8);
	((struct perf_event_header *)dst)->size = (uint16_t)(head_len + 16 + keep);
}

/* A sample is queued to be unwound, or as it is when the thread is behind: what waited
 * at the last hand-over, and what waits here, past the soft cap */
static uint32_t sample_kind(const struct recunw *ru, unsigned flags)
{
	if (flags & RECUNW_WAIT)
		return IT_PERF;
	return ru->seen_queued + ru->pbytes >= ru->soft_cap ? IT_SAMPLE_BEHIND : IT_PERF;
}

int recunw_add(struct recunw *ru, uint32_t type, const void *a, size_t alen, const void *b,
	       size_t blen)
{
	uint32_t kind = IT_WRITE;

	if (type == DLP_REC_PERF && alen >= sizeof(struct perf_event_header) && !blen)
		kind = ((const struct perf_event_header *)a)->type == PERF_RECORD_SAMPLE ?
		       sample_kind(ru, 0) : IT_PERF;
	inline_begin(ru);
	if (ru->inl && kind == IT_WRITE) {
		put(ru, type, a, alen, b, blen);
		return 0;
	}
	if (ru->inl && inline_perf(ru, a, NULL, 0, 0, 0))
		return 0;
	enqueue(ru, kind, type, a, alen, b, blen);
	return 0;
}

int recunw_add_sample(struct recunw *ru, const struct perf_event_header *rec,
		      const struct recunw_py *py, unsigned flags)
{
	struct item *it;

	inline_begin(ru);
	if (ru->inl && inline_perf(ru, rec, py, 0, 0, 0))
		return 0;
	it = item_new(ru, sample_kind(ru, flags), DLP_REC_PERF, rec, rec->size, NULL, 0);
	if (py)
		it->py = *py;
	queue_item(ru, it);
	return 0;
}

int recunw_add_cut(struct recunw *ru, const struct perf_event_header *rec, size_t head_len,
		   uint64_t keep, uint64_t dyn, const struct recunw_py *py, unsigned flags)
{
	struct item *it;

	inline_begin(ru);
	if (ru->inl && inline_perf(ru, rec, py, head_len, keep, dyn))
		return 0;
	it = item_new(ru, sample_kind(ru, flags), DLP_REC_PERF, NULL, head_len + 16 + (size_t)keep,
		      NULL, 0);
	recunw_cut(it->data, rec, head_len, keep, dyn);
	if (py)
		it->py = *py;
	queue_item(ru, it);
	return 0;
}

int recunw_attr(struct recunw *ru, const void *data, size_t len)
{
	/* the thread has not seen a record yet when attrs come: safe to touch */
	pthread_mutex_lock(&ru->mu);
	session_live_attr(ru->live, data, len);
	pthread_mutex_unlock(&ru->mu);
	if (ru->inl)
		put(ru, DLP_REC_ATTR, data, len, NULL, 0);
	else
		enqueue(ru, IT_WRITE, DLP_REC_ATTR, data, len, NULL, 0);
	return 0;
}

void recunw_flush(struct recunw *ru)
{
	if (ru->inl) {
		flush_all(ru);
		return;
	}
	enqueue(ru, IT_FLUSH, 0, NULL, 0, NULL, 0);
	hand_over(ru, 1);
}

struct recunw *recunw_new(struct recwriter *w, int keep_raw)
{
	struct recunw *ru = xcalloc(1, sizeof(*ru));
	struct strbuf sb = STRBUF_INIT;
	sigset_t all, old;
	int started;

	ru->w = w;
	ru->keep_raw = keep_raw;
	ru->soft_cap = SOFT_CAP;
	if (getenv("DLPROF_TEST_UNWIND_BEHIND")) {	/* tests: every sample "behind" */
		ru->soft_cap = 0;
		ru->no_inline = 1;
	}
	/* (the thread unwinds every sample: to compare, and for tests of its path) */
	if (getenv("DLPROF_NO_INLINE_UNWIND"))
		ru->no_inline = 1;
	ru->m = machine_new();
	ru->uw = unwinder_new(ru->m);
	if (ru->uw)
		unwinder_set_live(ru->uw);
	ru->live = session_live_new(&live_ops, ru);
	strbuf_init(&ru->out, 0);
	memrec_enc_init(&ru->mem);
	memrec_enc_init(&ru->smp);
	ru->tsc = tsc_invariant();
	ru->mono0 = now_ns();
	ru->tsc0 = __rdtsc();
	if (!vdso_file_rec(&sb) && sb.len > sizeof(struct dlp_file_rec)) {
		struct dlp_file_rec fr;

		memcpy(&fr, sb.buf, sizeof(fr));
		if (fr.path_len && sizeof(fr) + fr.path_len <= sb.len)
			machine_set_image(ru->m, sb.buf + sizeof(fr), sb.buf + sizeof(fr) + fr.path_len,
					  sb.len - sizeof(fr) - fr.path_len);
	}
	strbuf_release(&sb);
	pthread_mutex_init(&ru->mu, NULL);
	pthread_cond_init(&ru->work, NULL);
	pthread_cond_init(&ru->space, NULL);
	/* the thread takes no signal: the recorder's signalfd sees them all */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	started = ru->uw && !pthread_create(&ru->thread, NULL, thread_main, ru);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!started) {
		error("unable to start the unwinding thread: stacks are kept as copies");
		unwinder_free(ru->uw);
		session_live_free(ru->live);
		machine_free(ru->m);
		strbuf_release(&ru->out);
		free(ru);
		return NULL;
	}
	return ru;
}

int recunw_finish(struct recunw *ru, struct recunw_stats *st)
{
	int failed;

	if (ru->inl)
		put_smp(ru);
	ru->inl = 0;	/* the thread writes the rest */
	hand_over(ru, 0);
	pthread_mutex_lock(&ru->mu);
	ru->closing = 1;
	pthread_cond_signal(&ru->work);
	pthread_mutex_unlock(&ru->mu);
	pthread_join(ru->thread, NULL);
	if (ru->tsc) {
		uint64_t ticks = __rdtsc() - ru->tsc0, ns = now_ns() - ru->mono0;

		ru->st.unwind_ns = ticks ? (uint64_t)((double)ru->st.unwind_ns * ns / ticks) : 0;
	}
	if (st)
		*st = ru->st;
	failed = ru->write_failed;
	for (unsigned c = 0; c < POOL_CLASSES; c++) {
		free_items(ru->ret[c]);
		free_items(ru->pool[c]);
	}
	for (size_t i = 0; i < ru->table_cap; i++)
		free(ru->table[i].ips);
	free(ru->table);
	unwinder_free(ru->uw);
	session_live_free(ru->live);
	machine_free(ru->m);
	strbuf_release(&ru->out);
	free(ru->cut);
	memrec_enc_release(&ru->mem);
	memrec_enc_release(&ru->smp);
	pthread_mutex_destroy(&ru->mu);
	pthread_cond_destroy(&ru->work);
	pthread_cond_destroy(&ru->space);
	free(ru);
	return failed ? -1 : 0;
}
