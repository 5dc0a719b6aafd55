/* recunwind-write.c - a record unwound and written while recording (recunwind.h): the
 * live session's callbacks that walk a sample's stack copy, the table of distinct stacks
 * (a stack written once, samples naming it by id), and the writing of records, compact
 * sample batches and Python chains. */
#include <string.h>
#include <x86intrin.h>

#include "frame.h"
#include "isa.h"
#include "pyrec.h"
#include "python/pybpf-prog.h"
#include "recunwind-priv.h"
#include <sys/mman.h>
#include "util.h"

int recunw_tsc_invariant(void)
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

void recunw_put(struct recunw *ru, uint32_t type, const void *a, size_t alen, const void *b,
		size_t blen)
{
	if (!ru->write_failed && recwriter_add2(ru->w, type, a, alen, b, blen) < 0)
		ru->write_failed = 1;
}

/* The sampled allocations gathered, as one DLP_REC_MEMALLOC record */
void recunw_put_mem(struct recunw *ru)
{
	size_t len;
	const void *p = memrec_take(&ru->mem, &len);

	if (p)
		recunw_put(ru, DLP_REC_MEMALLOC, p, len, NULL, 0);
}

#define MEM_BATCH	1024	/* allocations a MEMALLOC record holds at most */
#define SMP_BATCH	4096	/* samples a USAMPLES record holds at most */

/* The plain samples gathered, as one DLP_REC_USAMPLES record.  Whichever thread unwinds
 * writes them: the draining one at the end of a drain it unwound itself and when it hands
 * the samples on to the unwinding thread, that one when its queue runs empty. */
void recunw_put_smp(struct recunw *ru)
{
	size_t len;
	const void *p = memrec_take(&ru->smp, &len);

	if (p)
		recunw_put(ru, DLP_REC_USAMPLES, p, len, NULL, 0);
}

/* the sample layout of every event of a dwarf recording (record.c events_attr_common) */
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

	/* (a counter sampled on its own has no PERIOD: its attr's, in the entry as read) */
	if (!s->evsel || (s->evsel->attr.sample_type | PERF_SAMPLE_PERIOD) != PLAIN_TYPE || !s->id ||
	    s->nr_callchain > MEMREC_CHAIN_MAX || !strncmp(s->evsel->name, "mem-", 4))
		return 0;
	if (ru->smp.nr && ru->smp.id != s->id)
		recunw_put_smp(ru);
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
		recunw_put_smp(ru);
	return 1;
}

/* The batches gathered so far written, and the recording's pending chunks too */
void recunw_flush_all(struct recunw *ru)
{
	recunw_put_mem(ru);
	recunw_put_smp(ru);
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
		recunw_put_mem(ru);
	return 1;
}

/* A sample as it came (report unwinds it), its Python stack named after it */
void recunw_put_raw(struct recunw *ru, const void *rec, size_t len, const struct recunw_py *py)
{
	recunw_put(ru, DLP_REC_PERF, rec, len, NULL, 0);
	if (py && py->chain) {
		struct dlp_pystack_rec ps;

		memset(&ps, 0, sizeof(ps));
		ps.pid = py->pid;
		ps.tid = py->tid;
		ps.time = py->time;
		ps.state = py->state;	/* (a delay, read from outside: in META) */
		ps.flags = (uint8_t)(py->flags | DLP_PYSTACK_CHAIN);
		recunw_put(ru, DLP_REC_PYSTACK, &ps, sizeof(ps), &py->chain, sizeof(py->chain));
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
			 int past_copy, uint32_t pychain)
{
	const uint64_t *ips = ru->ips + first;
	const unsigned *flags = ru->flags + first;
	uint8_t bits[(MAX_FRAMES + 7) / 8];
	uint16_t fl = (complete ? DLP_STACK_COMPLETE : 0) | (pychain ? DLP_STACK_PY : 0) |
		      (past_copy ? DLP_STACK_PAST_COPY : 0);
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
	recunw_put(ru, DLP_REC_STACK, &rec, sizeof(rec), ru->out.buf, ru->out.len);
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

/* A torch.compile kernel's .so just mapped: its name, while its module is there */
static void name_inductor(struct recunw *ru, const struct dlp_mmap *mm)
{
	const struct map *mp = machine_find_map(ru->m, mm->pid, mm->start, mm->time);
	const struct dso *d = mp ? mp->dso : NULL;
	char *name;

	if (!d || !d->build_id_size)
		return;
	for (size_t i = 0; i < ru->nr_names; i++)
		if (ru->names[i].size == d->build_id_size &&
		    !memcmp(ru->names[i].id, d->build_id, d->build_id_size))
			return;
	if (!ru->inductor)
		ru->inductor = inductor_index_new();
	name = inductor_kernel_name(ru->inductor, dso_file(d));
	if (!name)
		return;
	ALLOC_GROW(ru->names, ru->nr_names + 1, ru->alloc_names);
	ru->names[ru->nr_names].size = d->build_id_size;
	memcpy(ru->names[ru->nr_names].id, d->build_id, d->build_id_size);
	ru->names[ru->nr_names].sym = "kernel";
	ru->names[ru->nr_names++].name = name;
}

static int cb_mmap(void *ctx, const struct dlp_mmap *mm)
{
	struct recunw *ru = ctx;
	int ret;

	unwind_maps_changed(ru->uw, mm->pid, mm->time);
	ret = machine_mmap(ru->m, mm);
	if (!ret && mm->filename && (mm->prot & PROT_EXEC) && inductor_file(mm->filename))
		name_inductor(ru, mm);
	if (!ret && ru->ks && (mm->prot & PROT_EXEC))
		kstack_mmap(ru->ks, machine_find_map(ru->m, mm->pid, mm->start, mm->time), mm->pid);
	return ret;
}

static int cb_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, int exec,
		   uint64_t time)
{
	struct recunw *ru = ctx;

	if (exec) {	/* a new image: what was cached of the old one is not its */
		unwind_maps_changed(ru->uw, pid, time);
		kstack_exec(ru->ks, pid);
	}
	return machine_comm(ru->m, pid, tid, comm, exec, time);
}

static int cb_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		   uint64_t time)
{
	struct recunw *ru = ctx;

	int ret;

	/* a new process gets its parent's maps: what a walk cached for it before (one
	 * of its samples drained ahead of this record) was done without them */
	if (pid != ppid)
		unwind_maps_changed(ru->uw, pid, time);
	ret = machine_fork(ru->m, pid, ppid, tid, ptid, time);
	kstack_fork(ru->ks, pid, ppid);
	return ret;
}

static int cb_exit(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		   uint64_t time)
{
	struct recunw *ru = ctx;

	unwind_thread_exit(ru->uw, pid, tid);
	if (pid == tid)
		kstack_exit(ru->ks, pid);
	return machine_exit(ru->m, pid, tid, time);
}

/*
 * The sample record without its registers and stack copy: ABI 0 (no registers), stack
 * size 0 (no data, no dyn_size), whatever followed kept.  The memory events (record
 * --memory) keep the registers that hold the allocation's arguments, CX DX SI DI
 * (memevent.h): returns DLP_USAMPLE_ARGS_REGS then, else 0.
 */
uint32_t recunw_strip_sample(struct recunw *ru, const struct dlp_sample *s)
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

int recunw_cb_sample(void *ctx, const struct dlp_sample *s)
{
	struct recunw *ru = ctx;
	struct dlp_usample_rec us;
	struct dlp_sample cut;
	uint64_t t0;
	size_t n;
	uint32_t pychain;
	int complete = 0, unmapped, past_copy = 0;

	ru->delivered = 1;
	if (ru->cur_py && ru->cur_py->kwalk) {
		/* walked in the kernel to the thread's root: its "copy" is the walk */
		n = s->stack_size / 8 < MAX_FRAMES ? s->stack_size / 8 : MAX_FRAMES;
		for (size_t i = 0; i < n; i++) {
			uint64_t ip;

			memcpy(&ip, s->stack + 8 * i, 8);
			ru->ips[i] = ip & ~KUNW_SCANNED;
			ru->flags[i] = ip & KUNW_SCANNED ? FRAME_RECOVERED : 0;
		}
		if (!n)
			return 0;
		complete = 1;
		ru->st.samples++;
		ru->st.kernel_walked++;
		goto unwound;
	}
	if (!s->user_abi || !s->user_regs || !s->stack || !s->stack_size) {
		if (ru->inl_try)
			ru->bail = 1;	/* written as it came: by the thread, cut */
		else
			recunw_put_raw(ru, ru->cur, ru->cur_len, ru->cur_py);
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
	/* (a walk that met an address in no mapping and went on by a stack scan to the
	 * thread's root is complete, and wrong: a scan from main's frame into libc not seen
	 * yet finds _start, and the thread's next walks join it) */
	unmapped = unwind_met_unmapped(ru->uw);
	past_copy = unwind_past_copy(ru->uw);
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
		recunw_put_raw(ru, ru->cur, ru->cur_len, ru->cur_py);
		return 0;
	}
	/* (still met an address in no mapping two batches later: not code of a mapping
	 * not seen yet but a "return address" that is none, into the stack, the heap or
	 * data: report's walk would stop there too, so the stack so far, incomplete,
	 * instead of a 32 KiB copy) */
	if (unmapped && !complete)
		ru->st.partial++;
	if (ru->ks) {
		/* with the copies kept (--keep-stacks), the stack recorded is the kernel's
		 * where it went to the root: report --check-unwind compares it with the copy */
		size_t kn = kstack_compare(ru->ks, s->tid, s->time, ru->ips, n, complete,
					   past_copy, ru->keep_raw ? ru->kips : NULL, ru->kflags,
					   MAX_FRAMES);

		if (kn) {
			memcpy(ru->ips, ru->kips, kn * sizeof(*ru->ips));
			memcpy(ru->flags, ru->kflags, kn * sizeof(*ru->flags));
			n = kn;
			complete = 1;
			past_copy = 0;
			ru->st.kernel_walked++;
		}
	}
unwound:
	/* the leaf is the sample's own IP when it was taken in user mode: the stack
	 * stored is the callers' */
	us.flags = n > 1 && s->ip == ru->ips[0] && !ru->flags[0] ? DLP_USAMPLE_LEAF_IP : 0;
	/* its Python stack goes with its native one: the one nearly says the other (the
	 * CNN: 977 native stacks, 1033 with their Python stacks), so the samples name both
	 * for the bytes of one id */
	pychain = ru->cur_py ? ru->cur_py->chain : 0;
	us.stack_id = stack_id(ru, us.flags ? 1 : 0, (uint32_t)n, complete, past_copy, pychain);
	ru->st.unwound++;
	if (pychain && (ru->cur_py->flags & DLP_PYSTACK_GIL))
		us.flags |= DLP_USAMPLE_PY_GIL;
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
		recunw_put(ru, DLP_REC_USAMPLE, &us, sizeof(us), ru->cut, len);
	} else if (ru->keep_raw) {
		us.flags |= DLP_USAMPLE_RAW_KEPT;
		recunw_put(ru, DLP_REC_USAMPLE, &us, sizeof(us), ru->cur, ru->cur_len);
	} else if (!add_mem(ru, s, us.stack_id, us.flags) &&
		   !add_plain(ru, s, us.stack_id, us.flags)) {
		us.flags |= recunw_strip_sample(ru, s);
		recunw_put(ru, DLP_REC_USAMPLE, &us, sizeof(us), ru->out.buf, ru->out.len);
	}
	return 0;
}

/* the callbacks of the session each thread feeds its records to */
const struct session_ops recunw_live_ops = {
	.mmap = cb_mmap,
	.comm = cb_comm,
	.fork = cb_fork,
	.exit = cb_exit,
	.sample = recunw_cb_sample,
};

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
