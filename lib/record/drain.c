/* drain.c - the drain: one callback per perf record, the sample rewritten and handed on (recorder.h). */
#include "python/pybpf-prog.h"
#include "recorder.h"

#include <errno.h>
#include <string.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>

/* ---- the drain: one callback per perf record ---- */

static void note_kernel_ips(struct recorder *r, uint16_t cpumode, uint64_t ip,
			    const uint64_t *chain, uint64_t nr)
{
	uint64_t ctx = 0;

	if (cpumode == PERF_RECORD_MISC_KERNEL)
		u64map_add(&r->kaddrs, ip);
	for (uint64_t i = 0; i < nr; i++) {
		if (chain[i] >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = chain[i];
			continue;
		}
		if (ctx == (uint64_t)PERF_CONTEXT_KERNEL)
			u64map_add(&r->kaddrs, chain[i]);
	}
}

/*
 * The kernel copies a thread's stack from sp upwards until the requested size or the
 * first unreadable page.  Above a glibc thread's stack lie its static TLS and struct
 * pthread (the TCB, at the top of the stack block), and above the block whatever
 * mapping happens to be adjacent: when that is readable, the copy runs on through bytes
 * no unwinder needs (measured: a torch worker thread's copies grew from ~5 KB to ~30 KB
 * per sample in the runs where ASLR put a mapping right above its stack, doubling the
 * file).  The TCB starts with tcbhead_t on x86-64: header.tcb (offset 0) and
 * header.self (offset 16) both hold the TCB's own address, and struct pthread is
 * 64-byte aligned.  No stack frame lies at or above it, so the copy is cut at the
 * lowest 64-aligned address A holding A at A and A + 16 (a main thread's TCB is not on
 * its stack: nothing is cut there).  Returns the bytes to keep of the len copied.
 */
/* Does the copy hold a TCB at off (address addr): addr at off and at off + 16?  (The
 * copy has 24 bytes at off.) */
static int tcb_at(const unsigned char *stack, size_t off, uint64_t addr)
{
	uint64_t v, self;

	memcpy(&v, stack + off, 8);
	if (v != addr)
		return 0;
	memcpy(&self, stack + off + 16, 8);
	return self == addr;
}

static uint64_t stack_end_at_tcb(const unsigned char *stack, size_t len, uint64_t sp,
				 uint64_t from)
{
	size_t off = (size_t)(-sp & 63);

	if (from > sp + off)	/* (from - sp, up to the next 64-aligned address) */
		off = (size_t)(((from + 63) & ~(uint64_t)63) - sp);
	for (; off + 24 <= len; off += 64)
		if (tcb_at(stack, off, sp + off))
			return off;
	return len;
}

/*
 * The same, remembering per thread what the scans found (r->tcb_at: tid -> its TCB's
 * address, or bit 0 set: no TCB below that address), so that a thread's samples do not
 * each read their whole copy once more (that scan was 7% of record's CPU on the CNN, a
 * cache miss per 64 bytes of the ring): a known TCB inside the copy is checked where it
 * is (two words) and the copy cut there; a main thread's stack, with no TCB on it, is
 * scanned above the part scanned before only.  A tid's entry goes with its EXIT record
 * (a thread made later under the same tid starts afresh); a stale entry can only make a
 * copy longer, never cut one at a place that is not a TCB.
 */
static uint64_t stack_end(struct recorder *r, uint32_t tid, const unsigned char *stack,
			  size_t len, uint64_t sp)
{
	void **slot = u64map_slot(&r->tcb_at, tid);
	uint64_t known = (uintptr_t)*slot, end;

	if (known && !(known & 1)) {
		if (known < sp || known - sp + 24 > len)
			return len;	/* the copy ends below it */
		if (tcb_at(stack, (size_t)(known - sp), known))
			return known - sp;
		known = 0;		/* not there any more: scanned afresh */
	}
	end = stack_end_at_tcb(stack, len, sp, known & 1 ? known & ~(uint64_t)1 : 0);
	if (end < len)
		*slot = (void *)(uintptr_t)(sp + end);
	else if (len >= 24 && sp + len - 24 > (known & ~(uint64_t)1))
		*slot = (void *)(uintptr_t)((sp + len - 24) | 1);	/* scanned up to there */
	return end;
}

/*
 * Look into a sample: note kernel addresses, and in dwarf mode trim the stack copy.
 * Returns the record to write (rec itself, or r->scratch) or NULL when malformed; with
 * the unwinding thread a copy to cut is returned as rec, r->cut_* saying how.
 */
static const struct perf_event_header *sample_fixup(struct recorder *r,
						    const struct perf_event_header *rec,
						    const struct rec_event *ev)
{
	const unsigned char *p = (const void *)rec, *end = p + rec->size;
	const unsigned char *q = p + sizeof(*rec);
	uint64_t ip, nr = 0, abi, size, dyn, sp = 0;
	const uint64_t *chain = NULL;
	const struct perf_event_attr *a = &r->ev[0].attr;
	size_t regs, keep, head_len;
	int reads = ev && (ev->attr.sample_type & PERF_SAMPLE_READ);
	/* IDENTIFIER, IP, TID, TIME, CPU, PERIOD: six u64 (a counter sampled on its own
	 * has no PERIOD: metrics.c) */
	size_t fixed = ev && !(ev->attr.sample_type & PERF_SAMPLE_PERIOD) ? 40 : 48;

	r->cut_head = 0;
	if (end - q < 48)
		return NULL;
	if (reads) {
		/* its counts are rewritten: in a copy (the ring's data pages are read-only) */
		if (!r->met.copy)
			r->met.copy = xmalloc(65536);	/* a record's size is 16 bits */
		memcpy(r->met.copy, rec, rec->size);
		rec = (const void *)r->met.copy;
		p = r->met.copy;
		end = p + rec->size;
		q = p + sizeof(*rec);
	}
	memcpy(&ip, q + 8, 8);
	if ((rec->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
		uint32_t pid;

		memcpy(&pid, q + 16, 4);
		jitcov_note_anon(r, pid, ip);
	}
	q += fixed;
	if (reads) {
		/* record --metrics: the group's counts (nr, enabled, running, values), made
		 * the counts of the interval this sample ends */
		uint64_t n;
		uint32_t tid, cpu;

		if (end - q < 24)
			return NULL;
		memcpy(&n, q, 8);
		if (n > (uint64_t)(end - q - 24) / 8)
			return NULL;
		memcpy(&tid, p + sizeof(*rec) + 20, 4);	/* IDENTIFIER IP PID/TID */
		memcpy(&cpu, p + sizeof(*rec) + 32, 4);	/* ... TIME CPU */
		if (ev == &r->ev[0] || ev->off_cpu)
			metrics_sample(r, r->met.copy + (q - p), (size_t)(24 + n * 8), tid, cpu);
		q += 24 + n * 8;
	}
	if (a->sample_type & PERF_SAMPLE_CALLCHAIN) {
		if (end - q < 8)
			return NULL;
		memcpy(&nr, q, 8);
		q += 8;
		if (nr > (uint64_t)(end - q) / 8)
			return NULL;
		chain = (const uint64_t *)q;
		q += nr * 8;
	}
	note_kernel_ips(r, rec->misc & PERF_RECORD_MISC_CPUMODE_MASK, ip, chain, nr);
	r->py.smp_stack = NULL;
	r->py.smp_regs = NULL;
	if (a->sample_type & PERF_SAMPLE_REGS_USER) {
		if (end - q < 8)
			return NULL;
		memcpy(&abi, q, 8);
		q += 8;
		regs = abi ? (size_t)__builtin_popcountll(a->sample_regs_user) : 0;
		if ((size_t)(end - q) < regs * 8)
			return NULL;
		if (regs)
			r->py.smp_regs = q;	/* for sample_args() */
		if (regs >= 8 && (a->sample_regs_user & 0xff) == 0xff)
			memcpy(&sp, q + 7 * 8, 8);	/* AX BX CX DX SI DI BP SP */
		q += regs * 8;
	}
	if (!(a->sample_type & PERF_SAMPLE_STACK_USER))
		return rec;

	if (end - q < 8)
		return NULL;
	memcpy(&size, q, 8);
	if (!size)
		return rec;
	if ((size_t)(end - q) < 16 || size > (uint64_t)(end - q) - 16)
		return NULL;
	memcpy(&dyn, q + 8 + size, 8);
	if (dyn > size)
		dyn = size;
	if (sp) {
		uint32_t tid;

		r->py.smp_stack = q + 8;	/* as the sample took it, for the Python check */
		r->py.smp_len = (size_t)dyn;
		r->py.smp_sp = sp;
		memcpy(&tid, p + sizeof(*rec) + 20, 4);	/* IDENTIFIER IP PID/TID */
		dyn = stack_end(r, tid, q + 8, (size_t)dyn, sp);
	}
	keep = (size_t)(dyn + 7) & ~(size_t)7;
	if (keep > size)
		keep = (size_t)size;
	if (keep == size)
		return rec;
	head_len = (size_t)(q - p);
	if (r->ru) {
		/* assembled as it is queued for the unwinding thread: one copy */
		r->cut_head = head_len;
		r->cut_keep = keep;
		r->cut_dyn = dyn;
		return rec;
	}
	/* header .. regs, then size=keep, keep bytes of stack, dyn_size */
	recunw_cut(r->scratch, rec, head_len, keep, dyn);
	return (const void *)r->scratch;
}

/* Our event with sample id id, NULL when none of ours has it (a map of the ids, made
 * again when -p has opened counters on more threads since) */
static const struct rec_event *own_event(struct recorder *r, uint64_t id)
{
	size_t nr = 0;

	for (int e = 0; e < r->nr_ev; e++)
		nr += r->ev[e].nr_ids;
	if (nr != r->own_ids_nr) {
		u64map_release(&r->own_ids);
		u64map_init(&r->own_ids);
		for (int e = 0; e < r->nr_ev; e++)
			for (size_t i = 0; i < r->ev[e].nr_ids; i++)
				u64map_put(&r->own_ids, r->ev[e].ids[i], &r->ev[e]);
		r->own_ids_nr = nr;
	}
	return u64map_get(&r->own_ids, id);
}

/* The event of this sample record (IDENTIFIER first), NULL when its id is unknown. */
static const struct rec_event *sample_event(struct recorder *r, const unsigned char *p)
{
	uint64_t id;

	if (r->nr_ev < 2)
		return &r->ev[0];
	memcpy(&id, p + sizeof(struct perf_event_header), 8);
	return own_event(r, id);
}

/* Can the kernel hand this event a sample whose data another event filled?  The software
 * events counted where the kernel passes a point (switches, faults, migrations) share
 * one sample's data among all of theirs on the cpu; a clock has a timer of its own. */
static int shares_sample_data(const struct rec_event *ev)
{
	return ev->attr.type == PERF_TYPE_SOFTWARE &&
	       ev->attr.config != PERF_COUNT_SW_CPU_CLOCK &&
	       ev->attr.config != PERF_COUNT_SW_TASK_CLOCK;
}

/*
 * A sample in our ring whose id is none of ours.  At a software event's point (a context
 * switch, a fault) the kernel fills one perf_sample_data for every event of that kind on
 * the cpu, and as it keeps what was filled once (data->sample_flags, Linux 6.x), the
 * first event's IDENTIFIER, ID, TID, TIME and CPU stay for the next.  Another profiler
 * sampling the same threads (a dlprof record inside the command: one per rank of a
 * distributed job) then gives our context-switches samples its event's id, which no
 * ATTR of ours lists: report cannot tell which event such a sample is and skips it as
 * malformed (python recorded inside a record: 124 to 194 of ~1300 samples, nearly all
 * the switch-outs of the processes the inner record saw).  The rest of the record is
 * ours: our sample_type and registers, and the callchain, stack copy, thread and cpu of
 * the same switch (TID and TIME hold as long as the other profiler counts in our pid
 * namespace and on CLOCK_MONOTONIC, as dlprof does).  So it is written with the id of
 * our event that shares sample data, on its cpu; with several such events (or none),
 * the first one (or the first event), counted as a guess and said at the end.  Returns
 * rec, or a copy of it with our id in r->relabel.
 */
static const struct perf_event_header *sample_own_id(struct recorder *r,
						     const struct perf_event_header *rec)
{
	const unsigned char *p = (const void *)rec;
	const struct rec_event *ev = NULL;
	uint64_t id;
	uint32_t cpu;
	size_t c = 0;
	int nr = 0;

	/* IDENTIFIER, IP, TID, TIME, CPU first (events_attr_common): else sample_fixup drops it */
	if (rec->size < sizeof(*rec) + 48)
		return rec;
	memcpy(&id, p + sizeof(*rec), 8);
	if (own_event(r, id))
		return rec;
	for (int e = 0; e < r->nr_ev; e++)
		if (shares_sample_data(&r->ev[e]) && !nr++)
			ev = &r->ev[e];
	if (!ev)
		ev = &r->ev[0];
	if (!ev->nr_ids)
		return rec;	/* (each is opened with its ids: cannot be) */
	if (r->nr_ev > 1 && nr != 1) {
		r->relabel_guessed++;
		r->relabel_guess = ev->name;
	}
	/* its cpu's counter: events_open() takes the ids in r->cpus' order */
	memcpy(&cpu, p + sizeof(*rec) + 32, 4);
	while (c < (size_t)r->nr_cpus && r->cpus[c] != (int)cpu)
		c++;
	if (c >= ev->nr_ids)
		c = 0;
	if (!r->relabel)
		r->relabel = xmalloc(65536);	/* a record's size is 16 bits */
	memcpy(r->relabel, rec, rec->size);
	memcpy(r->relabel + sizeof(*rec), &ev->ids[c], 8);
	return (const void *)r->relabel;
}

/* User register regno (PERF_REG_X86_*) of the sample sample_fixup() just read: 0, or -1
 * when the record has none. */
static int sample_reg(const struct recorder *r, int regno, uint64_t *v)
{
	uint64_t mask = r->ev[0].attr.sample_regs_user;

	if (!r->py.smp_regs || !(mask & (1ull << regno)))
		return -1;
	/* registers come in bit order */
	memcpy(v, r->py.smp_regs + 8 * __builtin_popcountll(mask & ((1ull << regno) - 1)), 8);
	return 0;
}

/* The user registers DI, SI, DX, CX of that sample (the arguments of the function a
 * uprobe hit).  Returns 0, or -1 when the record has none. */
static int sample_args(const struct recorder *r, uint64_t args[4])
{
	static const int want[4] = { MEM_REG_DI, MEM_REG_SI, MEM_REG_DX, MEM_REG_CX };

	for (int i = 0; i < 4; i++)
		if (sample_reg(r, want[i], &args[i]) < 0)
			return -1;
	return 0;
}

/* An alloc event that carries its thread's Python frames (memevent.h: R8 points at them
 * in the stack copy, R9 says how many): written as its Python stack.  0 when it carries
 * none (record reads them from outside then). */
static int mem_py_chain(struct recorder *r, uint32_t pid, uint32_t tid, uint64_t time,
			uint32_t *chain_id)
{
	static uint64_t chain[2 * MEM_PY_FRAMES];
	uint64_t at, n;

	if (sample_reg(r, MEM_REG_R8, &at) < 0 || sample_reg(r, MEM_REG_R9, &n) < 0 ||
	    !n || n > MEM_PY_FRAMES || !r->py.smp_stack || at < r->py.smp_sp ||
	    at - r->py.smp_sp > r->py.smp_len || r->py.smp_len - (at - r->py.smp_sp) < n * 16)
		return 0;
	memcpy(chain, r->py.smp_stack + (at - r->py.smp_sp), n * 16);
	return pyreader_sample_chain(r->py.reader, pid, tid, time, chain, n, DLP_PYSTACK_OWN, chain_id);
}

static struct py_pub *py_pub_of(struct recorder *r, uint32_t pid)
{
	for (size_t i = 0; i < r->py.nr_pub; i++)
		if (r->py.pub[i].pid == pid)
			return &r->py.pub[i];
	ALLOC_GROW(r->py.pub, r->py.nr_pub + 1, r->py.alloc_pub);
	r->py.pub[r->py.nr_pub] = (struct py_pub){ pid, -1, 0 };
	return &r->py.pub[r->py.nr_pub++];
}

/* Empty entry slot of mem_shared.py (seq: odd while written) */
static void py_entry_clear(struct recorder *r, int slot)
{
	struct mem_pywalk *e = &r->mem.shared->py[slot];

	__atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&e->pid, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&e->seq, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < r->py.nr_pub; i++)
		if (r->py.pub[i].slot == slot)
			r->py.pub[i].slot = -1;
}

/* A Python process: tell the library there how its threads read their own frames at an
 * allocation (memevent.h), once it can (its thread-state key is set a little after start:
 * tried again at most every 10 ms).  With more processes than entries, the oldest gives
 * its entry up (its allocations' frames are read from outside then). */
static void py_publish(struct recorder *r, uint32_t pid)
{
	struct py_pub *pp = py_pub_of(r, pid);
	struct pywalk_info wi;
	struct mem_pywalk *e;
	uint64_t now;
	int slot = -1;

	if (pp->slot >= 0)
		return;
	now = now_ns();
	if (pp->tried && now - pp->tried < 10000000ull)
		return;
	pp->tried = now;
	if (!pyreader_walk_info(r->py.reader, pid, &wi))
		return;
	for (int i = 0; i < MEM_PY_PROCS && slot < 0; i++)
		if (!__atomic_load_n(&r->mem.shared->py[i].pid, __ATOMIC_RELAXED))
			slot = i;
	if (slot < 0) {
		slot = (int)(r->py.pub_next++ % MEM_PY_PROCS);
		py_entry_clear(r, slot);
	}
	e = &r->mem.shared->py[slot];
	__atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);	/* odd: being written */
	e->tss = wi.tss;
	e->interp = wi.interp;
	e->ts_interp = wi.ts_interp;
	e->ts_tid = wi.ts_tid;
	e->ts_frame = wi.ts_frame;
	e->cf_current = wi.cf_current;
	e->fr_code = wi.fr_code;
	e->fr_previous = wi.fr_previous;
	e->fr_instr = wi.fr_instr;
	e->fr_owner = wi.fr_owner;
	e->fr_is_entry = wi.fr_is_entry;
	__atomic_store_n(&e->pid, pid, __ATOMIC_RELEASE);
	__atomic_add_fetch(&e->seq, 1, __ATOMIC_RELEASE);
	pp->slot = slot;
}

/* pid exec'd: its entry named the image before */
static void py_unpublish(struct recorder *r, uint32_t pid)
{
	for (size_t i = 0; i < r->py.nr_pub; i++)
		if (r->py.pub[i].pid == pid) {
			if (r->py.pub[i].slot >= 0)
				py_entry_clear(r, r->py.pub[i].slot);
			r->py.pub[i].tried = 0;
		}
}

/* --memory: count the events; a process's exit statistics are noted */
static void note_mem_sample(struct recorder *r, const struct rec_event *ev,
			    const struct perf_event_header *rec)
{
	uint64_t args[4];

	if (ev->mem == MEM_EV_FREE) {
		r->mem.frees++;
		return;
	}
	r->mem.alloc_events++;
	if (r->mem.shared)	/* drained: one more may come */
		__atomic_add_fetch(&r->mem.shared->consumed, 1, __ATOMIC_RELEASE);
	if (!sample_args(r, args) && args[3] == MEM_KIND_STATS) {
		uint32_t pid;
		struct mem_proc *mp;

		memcpy(&pid, (const char *)rec + sizeof(*rec) + 16, 4);
		mp = mem_proc_of(r, pid);
		mp->stats = 1;
		mp->calls = args[0];
		mp->bytes = args[1];
		mp->rss_anon = args[2];
		return;
	}
	r->mem.allocs++;
}

/* The PROC record of pid, 0; -1 when its command line cannot be read (now) */
static int try_proc_info(struct recorder *r, uint32_t pid, int first, int last)
{
	struct strbuf sb = STRBUF_INIT, env = STRBUF_INIT, args = STRBUF_INIT;
	int ret = 0;

	if (!attach_proc_info((pid_t)pid, &sb, &env, &args)) {
		rec_put(r, DLP_REC_PROC, sb.buf, sb.len, NULL, 0);
		/* a docker run the command ran (a script's): its container is not ours (the
		 * command's own docker run is followed, or said not to be, at the start) */
		if (!r->unfollowed_run && r->opts->argv && r->opts->argv[0] && !r->opts->pids &&
		    !r->opts->system_wide && !r->opts->ct_follow &&
		    !container_daemon_runtime(r->opts->argv[0]) &&
		    container_run_argv(args.buf, args.len, r->unfollowed_rt))
			r->unfollowed_run = pid;
		capture_itt_foreign(r, pid, attach_env_value(&env, "DLPROF_ITT_DIR"));
	} else if (!last) {
		ret = -1;
	} else if (first) {
		/* the command, gone already: it ran what we started, as we started it */
		attach_proc_info_ours((pid_t)pid, (const char *const *)r->opts->argv, &sb);
		rec_put(r, DLP_REC_PROC, sb.buf, sb.len, NULL, 0);
	}
	strbuf_release(&sb);
	strbuf_release(&env);
	strbuf_release(&args);
	return ret;
}

/* A process exec'd (or is attached to): its command line and rank, read while it runs
 * (a process already gone keeps only its comm).  Read at once after the exec, the
 * command line is still empty (record drains at each exec where it reads Python in the
 * kernel): read again at the next drains, for PROC_LATER_NS at most. */
void drain_proc_info(struct recorder *r, uint32_t pid)
{
	int first = pid && pid == r->cmd_pid && !r->cmd_exec_seen;

	if (pid == r->cmd_pid)
		r->cmd_exec_seen = 1;
	if (!try_proc_info(r, pid, first, kill((pid_t)pid, 0) < 0 && errno == ESRCH))
		return;
	ALLOC_GROW(r->proc_later, r->nr_proc_later + 1, r->alloc_proc_later);
	r->proc_later[r->nr_proc_later++] = (struct proc_later){ pid, first,
								   now_ns() + PROC_LATER_NS };
}

/* The execs whose command line was not in place at the last drain (last: the end of
 * the run, the last try) */
void drain_proc_later(struct recorder *r, int last)
{
	size_t w = 0;
	uint64_t now = r->nr_proc_later ? now_ns() : 0;

	for (size_t i = 0; i < r->nr_proc_later; i++) {
		struct proc_later *p = &r->proc_later[i];
		int gone = last || now > p->until || (kill((pid_t)p->pid, 0) < 0 && errno == ESRCH);

		if (try_proc_info(r, p->pid, p->first, gone))
			r->proc_later[w++] = *p;
	}
	r->nr_proc_later = w;
}

/* A sample's Python stack (body: the sample after its header: IDENTIFIER IP PID/TID
 * TIME), read as it was taken: by the allocating thread itself, by the kernel, or now
 * from outside; py says which and names the chain when the unwinder writes the sample */
static void sample_python(struct recorder *r, const struct rec_event *ev,
			  const unsigned char *body, struct recunw_py *py)
{
	uint32_t pid, tid, *want_chain = r->ru ? &py->chain : NULL;
	uint64_t t;
	struct pychain_ref ref = { 0, 0 };
	int kern;

	memcpy(&pid, body + 16, 4);
	memcpy(&tid, body + 20, 4);
	memcpy(&t, body + 24, 8);
	*py = (struct recunw_py){ .pid = pid, .tid = tid, .time = t, .state = DLP_PY_TRUSTED };
	if (ev->mem == MEM_EV_ALLOC && mem_py_chain(r, pid, tid, t, want_chain)) {
		py->flags = DLP_PYSTACK_OWN;	/* read by the allocating thread */
	} else if (r->py.pb && !ev->mem && (kern = pykernel_sample(r, pid, tid, t, want_chain))) {
		/* read in the kernel, with whether its thread held the GIL */
		py->flags = DLP_PYSTACK_KERNEL | (kern == 2 ? DLP_PYSTACK_GIL : 0);
	} else if (ev->off_cpu) {
		*py = (struct recunw_py){ 0 };	/* a thread not listed yet: native only */
		/* listed now, for its next switch-outs: a new thread that waits for the GIL
		 * runs little, so its first sample came late (t8008's native thread: its
		 * first 77 ms of waits without their line) */
		if (r->py.pb)
			pykernel_list(r, pid);
	} else if (pyreader_sample(r->py.reader, pid, tid, t, r->py.smp_stack, r->py.smp_len,
				   r->py.smp_sp, r->ru ? &ref : NULL)) {
		/* read now, from outside */
		py->chain = ref.chain;
		py->state = ref.state;
		if (r->mem.shared)
			py_publish(r, pid);
		if (r->py.pb)
			pykernel_list_read(r, pid);	/* a Python thread not read yet */
	}
}

/* A process seen (COMM, FORK); an exec: its PROC record, and the Python reader, the
 * kernel program and --memory told */
static void on_comm_fork(struct recorder *r, const struct perf_event_header *rec)
{
	const unsigned char *p = (const void *)rec;
	int exec = rec->type == PERF_RECORD_COMM && (rec->misc & PERF_RECORD_MISC_COMM_EXEC);
	uint32_t pid;

	if (rec->size < sizeof(*rec) + 8)
		return;
	memcpy(&pid, p + sizeof(*rec), 4);
	u64map_add(&r->pids, pid);
	if (rec->type == PERF_RECORD_FORK && rec->size >= sizeof(*rec) + 12) {
		uint32_t ppid, tid;

		memcpy(&ppid, p + sizeof(*rec) + 4, 4);
		memcpy(&tid, p + sizeof(*rec) + 8, 4);
		/* a process in a PID namespace of its own names its threads by that
		 * namespace's ids (its ITT records): each new one's is noted */
		if (ppid != pid)
			proc_roots_of(&r->roots, pid);
		else
			proc_roots_thread(&r->roots, pid, tid);
	}
	if (rec->type == PERF_RECORD_FORK && r->py.pb && !r->py.bells &&
	    rec->size >= sizeof(*rec) + 8) {
		uint32_t ppid;

		memcpy(&ppid, p + sizeof(*rec) + 4, 4);
		if (ppid != pid)
			pykernel_new_process(r, pid, ppid, 0);
	}
	if (!exec)
		return;
	drain_proc_info(r, pid);
	if (r->py.reader) {
		pyreader_exec(r->py.reader, pid);
		if (r->mem.shared)
			py_unpublish(r, pid);
		if (r->py.pb) {
			/* its one thread left: its state was the image's before */
			pykernel_forget(r, pid);
			*pykernel_proc_of(r, pid) = (struct pb_proc){ .pid = pid };
			if (!r->py.bells)
				pykernel_new_process(r, pid, 0, pid);
		}
	}
	if (r->opts->memory && rec->size >= sizeof(*rec) + 9) {
		struct mem_proc *mp = mem_proc_of(r, pid);
		size_t n = rec->size - sizeof(*rec) - 8;

		n = n < sizeof(mp->comm) - 1 ? n : sizeof(mp->comm) - 1;
		memcpy(mp->comm, p + sizeof(*rec) + 8, n);
		mp->comm[n] = 0;
	}
}

/* A mapping (MMAP2: pid tid start len pgoff (maj min ino ino_gen | bid) prot flags
 * filename): executable ranges for JIT coverage, libdnnl, the allocation sampler's
 * library, jitdumps, files whose build-id the record lacks */
static void on_mmap2(struct recorder *r, const struct perf_event_header *rec)
{
	const unsigned char *p = (const void *)rec;
	const char *fn = (const char *)p + sizeof(*rec) + 64;
	uint32_t prot, pid;
	uint64_t start, len, time;
	const char *root;

	if (rec->size <= sizeof(*rec) + 64 || !memchr(fn, '\0', rec->size - sizeof(*rec) - 64))
		return;
	memcpy(&prot, p + sizeof(*rec) + 56, 4);
	memcpy(&pid, p + sizeof(*rec), 4);
	memcpy(&start, p + sizeof(*rec) + 8, 8);
	memcpy(&len, p + sizeof(*rec) + 16, 8);
	if (prot & PROT_EXEC) {
		int anon = !strcmp(fn, "//anon") || !strncmp(fn, "[anon", 5);

		jitcov_note_map(r, pid, start, len, anon);
		if (anon)
			return;
	}
	if (fn[0] != '/')
		return;
	if (!r->itt.dnnl_path && strstr(fn, "/libdnnl.so")) {
		r->itt.dnnl_path = xstrdup(fn);
		r->itt.dnnl_pid = pid;
	}
	if (r->opts->memory && (prot & PROT_EXEC) && strstr(fn, "/" MEM_LIBRARY))
		u64map_add(&r->mem.pids, pid);
	/* where its files are (its root; a container's own, or a chroot) and what it
	 * calls itself (its PID namespace), noted while it lives: its perf map and
	 * jitdump are read under that root and named by that pid at the end; and the
	 * operators' library (--op-calls) read under it */
	if (prot & PROT_EXEC) {
		time = r->nr_ev ? session_trailer_time(&r->ev[0].attr, rec, rec->size) : 0;
		root = proc_roots_note(&r->roots, pid, time);
		opcalls_mapped(r, pid, fn, root, start, len, time);
	}
	if (strstr(fn, "/jit-") && strstr(fn, ".dump"))
		capture_jit_dump_add(r, pid, fn);
	else if ((prot & PROT_EXEC) && !(rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
		path_list_add(&r->need_buildid, fn);
}

int drain_record(void *ctx, const struct perf_event_header *rec)
{
	struct recorder *r = ctx;
	const unsigned char *p = (const void *)rec;
	const struct rec_event *ev;
	/* the sample's Python stack read as it was taken, when its own record names it */
	struct recunw_py py = { 0 };
	unsigned unw_flags = 0;		/* RECUNW_* */

	if (!r->kw_pending)
		r->ring_bytes += rec->size;	/* (through the perf rings) */
	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		rec = sample_own_id(r, rec);
		p = (const void *)rec;
		ev = sample_event(r, p);
		rec = sample_fixup(r, rec, ev);
		if (!rec)
			return 0;	/* malformed: not stored */
		if (ev && ev->mem == MEM_EV_WAIT) {
			r->mem.waits++;	/* it woke us: that was all */
			return 0;
		}
		r->samples++;
		if (ev && ev->off_cpu)
			r->switch_outs++;
		if (ev && ev->mem)
			note_mem_sample(r, ev, (const void *)p);
		if (ev && ev->mem == MEM_EV_ALLOC && r->ru)
			unw_flags = RECUNW_WAIT;	/* its thread waits for us: unwound */
		/* not for a free (no stack worth the name), nor for a switch-out the kernel
		 * does not read (read from outside at every switch: late, and costly) */
		if (r->py.reader && ev && (!ev->off_cpu || r->py.pb_switch) && ev->mem != MEM_EV_FREE)
			sample_python(r, ev, p + sizeof(*rec), &py);
		break;
	case PERF_RECORD_LOST:
		if (rec->size >= sizeof(*rec) + 16) {
			uint64_t n;

			memcpy(&n, p + sizeof(*rec) + 8, 8);
			r->lost += n;
			r->lost_records++;
		}
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (rec->size >= sizeof(*rec) + 8) {
			uint64_t n;

			memcpy(&n, p + sizeof(*rec), 8);
			r->lost += n;
			r->lost_records++;
		}
		break;
	case PERF_RECORD_EXIT:
		if (rec->size >= sizeof(*rec) + 12) {
			uint32_t tid;

			memcpy(&tid, p + sizeof(*rec) + 8, 4);
			if (u64map_get(&r->tcb_at, tid))
				u64map_put(&r->tcb_at, tid, NULL);
			if (r->py.pb)
				pykernel_forget(r, tid);
		}
		break;
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
		on_comm_fork(r, rec);
		break;
	case PERF_RECORD_MMAP2:
		on_mmap2(r, rec);
		break;
	}
	if (r->kw_pending) {
		/* walked in the kernel (kw_sample): unwound, never written as it came */
		py.kwalk = 1;
		unw_flags |= RECUNW_WAIT;
	}
	if (rec->type == PERF_RECORD_SAMPLE && r->cut_head)
		recunw_add_cut(r->ru, rec, r->cut_head, r->cut_keep, r->cut_dyn,
			       py.chain ? &py : NULL, unw_flags);
	else if (py.chain || unw_flags)
		recunw_add_sample(r->ru, rec, py.chain || py.kwalk ? &py : NULL, unw_flags);
	else
		rec_put(r, DLP_REC_PERF, rec, rec->size, NULL, 0);
	return 0;
}

int drain_py_emit(void *ctx, uint32_t type, const void *a, size_t alen, const void *b,
		   size_t blen)
{
	struct strbuf packed = STRBUF_INIT;
	uint32_t ptype;

	/* code objects and chains packed (pyrec.h): ~30% fewer bytes of them in the
	 * file, which on a short run are most of what Python frames add */
	if (!pyrec_pack(type, a, alen, b, blen, &packed, &ptype))
		rec_put(ctx, ptype, packed.buf, packed.len, NULL, 0);
	else
		rec_put(ctx, type, a, alen, b, blen);
	strbuf_release(&packed);
	return 0;
}



static void kw_put(unsigned char **q, uint64_t v)
{
	memcpy(*q, &v, 8);
	*q += 8;
}

/*
 * A sample the kernel walked to its thread's root, whose own record it dropped
 * (kstack.h): made again as the kernel would have written it, its kernel frames its
 * callchain, no registers, and in place of its stack copy the walk's addresses, which
 * the unwinding thread takes as the stack (recunw_py.kwalk), then drops as it drops a
 * copy.  It goes through drain_record as the kernel's own would.
 */
static void kw_sample(void *ctx, const struct kunw_chain *c)
{
	struct recorder *r = ctx;
	const struct rec_event *ev = c->event < (uint32_t)r->nr_ev ? &r->ev[c->event] : NULL;
	struct perf_event_header h;
	unsigned char *q;
	int in_kernel = c->sample_ip != c->ip[0];

	if (!ev || ev->attr.sample_type != KW_TYPE || !ev->nr_ids) {
		r->kw_lost++;	/* (record asks for these only where its events are so) */
		return;
	}
	if (!r->kw_buf)
		r->kw_buf = xmalloc(65536);
	q = r->kw_buf + sizeof(h);
	/* (one id for all: the walks come in time order, the cpus interleaved, and the
	 * unwinding thread packs a run of samples of one id together) */
	kw_put(&q, ev->ids[0]);
	kw_put(&q, c->sample_ip);
	kw_put(&q, (uint64_t)c->tid << 32 | c->pid);
	kw_put(&q, c->time);
	kw_put(&q, c->cpu);
	kw_put(&q, c->period);
	kw_put(&q, in_kernel ? 1 + (uint64_t)c->nk : 0);	/* the callchain */
	if (in_kernel) {
		kw_put(&q, (uint64_t)PERF_CONTEXT_KERNEL);
		for (uint32_t k = 0; k < c->nk; k++)
			kw_put(&q, c->ip[c->n + k]);
	}
	kw_put(&q, PERF_SAMPLE_REGS_ABI_NONE);
	kw_put(&q, 8 * (uint64_t)c->n);		/* the "stack copy": the walk */
	memcpy(q, c->ip, 8 * (size_t)c->n);
	q += 8 * (size_t)c->n;
	kw_put(&q, 8 * (uint64_t)c->n);
	h.type = PERF_RECORD_SAMPLE;
	h.misc = in_kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER;
	h.size = (uint16_t)(q - r->kw_buf);
	memcpy(r->kw_buf, &h, sizeof(h));
	strbuf_add(&r->kwq, r->kw_buf, h.size);	/* (read with the rings, drain_all) */
}

/* One of the samples kw_sample made, in its turn among the rings' records */
static int kw_record(void *ctx, const struct perf_event_header *rec)
{
	struct recorder *r = ctx;

	r->kw_pending = 1;
	drain_record(r, rec);
	r->kw_pending = 0;
	return 0;
}

/*
 * A record's time: a sample's is its fourth field, a side-band record's in its sample_id
 * trailer (TID, TIME, CPU, IDENTIFIER: events_attr_common), where the IDENTIFIER is one of
 * our events' (a record of another layout keeps its place in its ring).
 */
static int rec_time(void *ctx, const struct perf_event_header *rec, uint64_t *t)
{
	struct recorder *r = ctx;
	const unsigned char *p = (const void *)rec;
	const struct rec_event *ev;
	uint64_t id;

	if (rec->type == PERF_RECORD_SAMPLE) {
		if (rec->size < sizeof(*rec) + 32)
			return 0;
		memcpy(t, p + sizeof(*rec) + 24, 8);
		return 1;
	}
	if (rec->size < sizeof(*rec) + 32)
		return 0;
	memcpy(&id, p + rec->size - 8, 8);
	ev = own_event(r, id);
	if (!ev || !ev->attr.sample_id_all ||
	    (ev->attr.sample_type & (PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_TIME |
				     PERF_SAMPLE_CPU)) != (PERF_SAMPLE_TIME | PERF_SAMPLE_CPU))
		return 0;
	memcpy(t, p + rec->size - 24, 8);
	return 1;
}

/* A ring past an eighth full once read: read it again at once */
static int rings_full(const struct recorder *r)
{
	for (int c = 0; c < r->nr_cpus; c++)
		if (r->rings[c].ctl && ring_pending(&r->rings[c]) > r->rings[c].size / 8)
			return 1;
	return 0;
}

void drain_all(struct recorder *r, int last)
{
	struct mem_shared *sh = r->mem.shared;
	uint64_t made = sh ? __atomic_load_n(&sh->produced, __ATOMIC_ACQUIRE) : 0;

	/* the Python chains first: the kernel writes a sample's chain before the sample,
	 * so the samples drained next find theirs in (pykernel_sample) */
	if (r->py.pb)
		pykernel_fetch(r);
	/*
	 * The records of every ring, and the samples the kernel walked (in a ring of their
	 * own, their records dropped: kstack.h), handed on in the order they were taken, as
	 * those of one thread must be: a sample after the mapping that names it (top names
	 * each as it is written), a thread's samples before its exit.  Up to now: what
	 * was taken later stays for the next drain, since what came before it in another
	 * ring may not be there yet.
	 */
	for (int round = 0; round < 4; round++) {
		uint64_t cut = last ? UINT64_MAX : now_ns();
		struct ring_queue q;

		if (r->ru && kstack_instead(recunw_kstack(r->ru)))
			kstack_drain(recunw_kstack(r->ru), kw_sample, r);
		q = (struct ring_queue){ (const unsigned char *)r->kwq.buf, r->kwq.len, r->kwq_off };
		ring_merge(r->rings, r->nr_cpus, &q, cut, rec_time, drain_record, kw_record, r);
		r->kwq_off = q.off;
		if (r->kwq_off == r->kwq.len) {
			strbuf_reset(&r->kwq);
			r->kwq_off = 0;
		} else if (r->kwq_off > r->kwq.len / 2) {
			memmove(r->kwq.buf, r->kwq.buf + r->kwq_off, r->kwq.len - r->kwq_off);
			r->kwq.len -= r->kwq_off;
			r->kwq_off = 0;
		}
		if (!rings_full(r))
			break;
	}
	/* the rings drained: an alloc event counted before that is in, or never will be
	 * (the kernel does not deliver every one: in a process just forked, a thread's
	 * first events can go missing, uncounted), so it no longer holds the library back */
	if (sh && (int64_t)(made - __atomic_load_n(&sh->consumed, __ATOMIC_SEQ_CST)) > 0)
		__atomic_store_n(&sh->consumed, made, __ATOMIC_SEQ_CST);
	if (sh && __atomic_load_n(&sh->waiters, __ATOMIC_SEQ_CST)) {
		/* threads of the workload wait for this drain (memevent.h) */
		__atomic_add_fetch(&sh->wake_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &sh->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	mem_ring_drain(r, 0);
	drain_proc_later(r, 0);
	if (r->py.pb)
		pykernel_match(r, 0);
	if (r->py.reader)
		pyreader_flush(r->py.reader);
	if (r->ru)
		recunw_kick(r->ru);
}

