/* pybpf.bpf.c - the BPF program that reads a sampled thread's Python frames in the kernel
 * (pybpf.h), built by clang -target bpf and loaded by pybpf.c through libbpf.
 *
 * It runs on each overflow of the sampling events, before the sample is written.  For a
 * thread record listed, it puts the chain of interpreter frames in a ring buffer without
 * a wake-up, after the chain's code objects not met before.  Every read goes through
 * bpf_probe_read_user: a bad pointer is an error, not a fault.  Needs Linux 5.8 (ring
 * buffer); reading code objects, 5.17 (bpf_loop).
 *
 * Where record asks (by default; DLPROF_KSTACK: lib/record/kstack.c), the program that
 * reads code objects also walks the thread's native frames with the tables of its
 * files' CFI (kunwind.h), and on record's first event (and the switch-outs) drops the
 * sample's own record where that walk replaces its stack copy; else it always lets the
 * sample be written.
 */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#include "memevent.h"
#include "pybpf-prog.h"

char LICENSE[] SEC("license") = "GPL";	/* bpf_probe_read_user is GPL-only */

/* the frame layouts pyread knows (3.11's, and 3.12's which is 3.13's), set by pybpf.c */
const volatile struct pyframe_layout layouts[PYBPF_MAX_LAYOUTS];
const volatile __u32 nr_layouts;

__u64 dropped;	/* chains the ring buffer had no room for */

/* the threads record listed: tid -> where its frames are */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, PYBPF_MAX_THREADS);
	__type(key, __u32);
	__type(value, struct pybpf_thread);
} threads SEC(".maps");

/* A process forked by a listed thread, until record lists it: the forking thread's
 * entry (its state lies at the same address in the copy of its memory), kept for the
 * child's first thread (from_tid and from_pid the forker's), by the child's task (its
 * task_struct's address: the raw tracepoint gives no pid).  Filled at the fork
 * (sched_process_fork), so a DataLoader worker's first samples have their Python frames;
 * least recently used go. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYBPF_MAX_FORKS);
	__type(key, __u64);
	__type(value, struct pybpf_thread);
} forked SEC(".maps");

/* record's own PID namespace where it is not the first (record run in a container): the
 * threads it lists carry that namespace's ids, not the kernel's global ones (pybpf.c);
 * 0: the first namespace */
const volatile __u64 pidns_dev;
const volatile __u64 pidns_ino;

/* the current thread's pid << 32 | tid, as record's namespace numbers them (0: not in it) */
static __always_inline __u64 current_ids(void)
{
	struct bpf_pidns_info ns = {};

	if (!pidns_ino)
		return bpf_get_current_pid_tgid();
	if (bpf_get_ns_current_pid_tgid(pidns_dev, pidns_ino, &ns, sizeof(ns)))
		return 0;
	return (__u64)ns.tgid << 32 | ns.pid;
}

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, PYBPF_RB_MAX);	/* (pybpf.c sizes it by the cpus) */
} ring SEC(".maps");

/* half of each ring's size (pybpf.c) */
const volatile __u64 ring_half, kring_half;

/* Where the kernel keeps the sample's own time, found in its BTF by pybpf.c (0: not
 * known; time is never the first member): the offsets of perf_sample_data's time and
 * sample_flags, and of the sample data's pointer in the context (struct
 * bpf_perf_event_data_kern). */
const volatile __u32 sd_time_off, sd_flags_off, ctx_data_off;

#define SAMPLE_TIME_FLAG 4	/* PERF_SAMPLE_TIME */

/* For the tests (DLPROF_TEST_BPF_HOLD_US): every hold_every-th run on a cpu waits
 * hold_ns before it reads the time, as a guest's cpu held up by its host does */
const volatile __u64 hold_ns;
const volatile __u32 hold_every;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hold_runs SEC(".maps");

static long hold_step(__u32 i, void *until)
{
	return bpf_ktime_get_ns() >= *(__u64 *)until;
}

/* The time of the sample this program runs for, as its record will carry it, with
 * SAMPLE_TIME_EXACT set: since Linux 6.3 the kernel fills the sample's fields (its time
 * among them, flagged in sample_flags) before it runs the program, so the chain is matched
 * to its sample exactly.  Else (an older kernel, or one whose BTF does not say) the time
 * now, some microseconds after the sample's, or tens of them where the guest's cpu was
 * held up meanwhile (pykernel.c matches those by the closest time).  (A global function,
 * its answer one value: the verifier follows it once, and its callers once, not once per
 * way out of it.) */
#define SAMPLE_TIME_EXACT (1ull << 63)
_Static_assert(PYBPF_EXACT == 1u << 27, "the exact flag, shifted from the time's");

__noinline __u64 pybpf_sample_time(struct bpf_perf_event_data *ctx)
{
	__u64 data = 0, flags = 0, t = 0;

	if (hold_ns && hold_every) {
		__u32 zero = 0;
		__u64 *runs = bpf_map_lookup_elem(&hold_runs, &zero), until;

		if (runs && !(++*runs % hold_every)) {
			until = bpf_ktime_get_ns() + hold_ns;
			bpf_loop(1 << 20, hold_step, &until, 0);
		}
	}
	if (!sd_time_off ||
	    bpf_probe_read_kernel(&data, sizeof(data), (char *)ctx + ctx_data_off) || !data ||
	    bpf_probe_read_kernel(&flags, sizeof(flags), (void *)(data + sd_flags_off)) ||
	    !(flags & SAMPLE_TIME_FLAG) ||
	    bpf_probe_read_kernel(&t, sizeof(t), (void *)(data + sd_time_off)) || !t)
		return bpf_ktime_get_ns() & ~SAMPLE_TIME_EXACT;
	return t | SAMPLE_TIME_EXACT;
}

/* A record goes out without waking record, which reads the rings every 100 ms or more
 * often; once its ring is half full, woken to read it (it polls the rings' descriptors),
 * so that a burst does not fill it */
static __always_inline __u64 rb_wake(void *rb, __u64 half)
{
	return bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) >= half ? BPF_RB_FORCE_WAKEUP :
								 BPF_RB_NO_WAKEUP;
}

/* a chain is built in its cpu's scratch, then copied as long as it is; the frame being
 * read lies beside it, in more room than is read: a field's offset masked to that room is
 * one the verifier sees in bounds (pybpf.c checked that the fields lie in the bytes read,
 * the pointers 8-aligned) */
#define FRAME_ROOM	128

struct chain_scratch {
	struct pybpf_chain_rec c;
	__u64 next;		/* the walk's next frame to read (0: none) */
	union {
		__u64 q[FRAME_ROOM / 8];
		unsigned char b[FRAME_ROOM];
	} frame;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct chain_scratch);
} chain_scratch SEC(".maps");

/* the code objects met: (process, address) -> which object it was (the XOR of its
 * co_filename, co_qualname and co_linetable pointers: another object made at the address
 * of a freed one has other names or another table) */
struct code_key {
	__u32 pid;
	__u32 zero;
	__u64 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, PYBPF_MAX_CODES);
	__type(key, struct code_key);
	__type(value, __u64);
} codes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pybpf_code_rec);
} code_scratch SEC(".maps");

/* frames of a chain: its count less the flags, bounded where the verifier sees it */
static __always_inline __u32 nframes(__u32 n)
{
	n &= 0x3ff;
	return n > PYBPF_MAXF ? PYBPF_MAXF : n;
}

/* the MEM_PY_* flag of a frame by its owner (_PyInterpreterFrame.owner): an eval loop's
 * entry shim (3.12+), a generator's or coroutine's frame */
static const __u8 owner_flag[256] = {
	[MEM_PY_OWNED_BY_CSTACK] = MEM_PY_SHIM,
	[MEM_PY_OWNED_BY_GENERATOR] = MEM_PY_GEN,
};

/* The frames a part of the walk reads (PYBPF_MAXF a multiple of it) */
#define WALK_PART	16

/* A layout's offsets in the bytes read of a frame, each masked to the room read */
struct frame_offs {
	__u32 code, prev, instr, owner, entry;
};

static __always_inline void frame_offs(__u32 l, struct frame_offs *o)
{
	o->code = layouts[l].code / 8 % (FRAME_ROOM / 8);
	o->prev = layouts[l].previous / 8 % (FRAME_ROOM / 8);
	o->instr = layouts[l].instr / 8 % (FRAME_ROOM / 8);
	o->owner = layouts[l].owner % FRAME_ROOM;
	/* 3.11's is_entry (3.12+: none, a byte past those read, which stays 0) */
	o->entry = layouts[l].is_entry == MEM_PY_NONE ? PYBPF_FR_READ :
		   layouts[l].is_entry % FRAME_ROOM;
}

/* Frame k of the chain, from the bytes read of it: the frame after it (is_entry is a
 * bool, 0 or 1: the first frame of its eval loop) */
static __always_inline __u64 frame_put(struct chain_scratch *s, const struct frame_offs *o,
				       __u32 k)
{
	s->c.f[k].code = s->frame.q[o->code] | owner_flag[s->frame.b[o->owner]] |
			 (s->frame.b[o->entry] & 1) * MEM_PY_ENTRY;
	s->c.f[k].instr = s->frame.q[o->instr];
	return s->frame.q[o->prev];
}

/*
 * A part of the walk: up to WALK_PART frames from s->next, innermost first, into s->c.f
 * from first on, with layout l's offsets; s->next left at the frame after them.  The
 * frames read, with PYBPF_FAIL when a read failed.  (A global function: the verifier
 * follows it once, not once for each place and state it is called from; and once for
 * its WALK_PART frames, not for all PYBPF_MAXF.  The flags are looked up and shifted in,
 * not branched on: it follows one way through each frame, not one for each
 * combination.)
 */
__noinline __u32 pybpf_walk_part(struct chain_scratch *s, __u32 l, __u32 first)
{
	struct frame_offs o;
	__u32 i;
	__u64 f;

	if (!s || l >= nr_layouts || l >= PYBPF_MAX_LAYOUTS)
		return PYBPF_FAIL;	/* (not met: walk's caller checked the layout) */
	/* (the verifier bounds the register compared, not the copy indexed with) */
	asm volatile("%0 &= %1" : "+r"(l) : "i"(PYBPF_MAX_LAYOUTS - 1));
	frame_offs(l, &o);
	f = s->next;
	for (i = 0; i < WALK_PART; i++) {
		if (!f)
			break;
		if (bpf_probe_read_user(&s->frame, PYBPF_FR_READ, (void *)f)) {
			s->next = f;
			return i | PYBPF_FAIL;
		}
		f = frame_put(s, &o, (first + i) & (PYBPF_MAXF - 1));
	}
	s->next = f;
	return i;
}

/*
 * The same in one, for the program of kernels without bpf_loop (dlprof_py_chain: 5.8 to
 * 5.16, where before 5.12 a global function takes no pointer): the verifier follows
 * each of the PYBPF_MAXF frames apart (about 20,000 instructions on 6.18, 20 ms).
 */
static __always_inline __u32 walk_inline(struct chain_scratch *s, __u64 f, __u32 l)
{
	struct frame_offs o;
	__u32 i;

	if (l >= nr_layouts || l >= PYBPF_MAX_LAYOUTS)
		return 0;	/* a layout it was not given: an empty chain */
	frame_offs(l, &o);
	for (i = 0; i < PYBPF_MAXF; i++) {
		if (!f)
			return i;
		if (bpf_probe_read_user(&s->frame, PYBPF_FR_READ, (void *)f))
			return i | PYBPF_FAIL;
		f = frame_put(s, &o, i);
	}
	return f ? PYBPF_MAXF | PYBPF_TRUNC : PYBPF_MAXF;
}

/*
 * Walk the frames from f, innermost first, into s->c.f with layout l's offsets: n, with
 * PYBPF_FAIL when a read failed, PYBPF_TRUNC when there were more than PYBPF_MAXF.
 */
static __always_inline __u32 walk(struct chain_scratch *s, __u64 f, __u32 l)
{
	__u32 part, n;

	_Static_assert(PYBPF_MAXF % WALK_PART == 0 && !(PYBPF_MAXF & (PYBPF_MAXF - 1)),
		       "the walk's parts fill the chain");
	if (l >= nr_layouts || l >= PYBPF_MAX_LAYOUTS)
		return 0;	/* a layout it was not given: an empty chain */
	s->next = f;
	for (part = 0; part < PYBPF_MAXF / WALK_PART; part++) {
		n = pybpf_walk_part(s, l, part * WALK_PART);
		if (n & PYBPF_FAIL)
			return (part * WALK_PART + (n & 0x3ff)) | PYBPF_FAIL;
		if (!s->next)
			return part * WALK_PART + n;
	}
	return PYBPF_MAXF | PYBPF_TRUNC;
}

/* bpf_loop's context: the process, and the code objects this sample may still read */
struct code_ctx {
	__u32 pid;
	__u32 left;
	__u64 base;	/* the thread's ob_base: each object read from there */
};

/*
 * bpf_loop's callback, once for each frame of the chain in this cpu's scratch: its code
 * object, when not met before as that object, read and put in the ring buffer (pybpf.h).
 * Read at the first sample that meets it, a module's code freed once its import is over,
 * or code made by exec() and dropped, is named however short its life (from outside it
 * had to be read within a millisecond or two).  0: go on; 1: stop (no reads left, or no
 * room).
 */
static long read_code(__u32 i, void *arg)
{
	struct code_ctx *cx = arg;
	struct code_key key = { .pid = cx->pid };
	struct chain_scratch *s;
	struct pybpf_code_rec *r;
	__u64 ptrs[4], ident, tab, len, *met;
	__u32 zero = 0, got;

	if (!cx->left)
		return 1;
	s = bpf_map_lookup_elem(&chain_scratch, &zero);
	if (!s)
		return 1;
	key.addr = s->c.f[i & (PYBPF_MAXF - 1)].code & ~7ull;	/* less its flags */
	if (!key.addr)
		return 0;
	/* which object it is: co_filename, co_qualname, co_linetable lie in these 32 bytes */
	if (bpf_probe_read_user(ptrs, sizeof(ptrs), (void *)(key.addr + cx->base + PYBPF_CO_FILENAME)))
		return 0;
	ident = ptrs[0] ^ ptrs[(PYBPF_CO_QUALNAME - PYBPF_CO_FILENAME) / 8] ^
		ptrs[(PYBPF_CO_LINETABLE - PYBPF_CO_FILENAME) / 8];
	met = bpf_map_lookup_elem(&codes, &key);
	if (met && *met == ident)
		return 0;
	cx->left--;
	r = bpf_map_lookup_elem(&code_scratch, &zero);
	if (!r)
		return 1;
	r->pid = cx->pid;
	r->kind = PYBPF_CODE;
	r->addr = key.addr;
	r->time = s->c.time;
	r->tab_size = 0;
	r->zero = 0;
	/* its head; unreadable: not marked as met (read from outside, if ever) */
	if (bpf_probe_read_user(r->head, sizeof(r->head), (void *)(key.addr + cx->base)))
		return 0;
	got = PYBPF_GOT_HEAD;
	/* the two names' objects as they lie */
	if (!bpf_probe_read_user(r->qualname, sizeof(r->qualname),
				 (void *)(*(__u64 *)&r->head[PYBPF_CO_QUALNAME] + cx->base)))
		got |= PYBPF_GOT_QUALNAME;
	if (!bpf_probe_read_user(r->filename, sizeof(r->filename),
				 (void *)(*(__u64 *)&r->head[PYBPF_CO_FILENAME] + cx->base)))
		got |= PYBPF_GOT_FILENAME;
	/* the line table (a bytes object): its size (ob_size, at 16), then up to
	 * PYBPF_TAB_READ of its bytes (ob_sval, at 32), past its ob_base */
	tab = *(__u64 *)&r->head[PYBPF_CO_LINETABLE] + cx->base;
	if (!bpf_probe_read_user(&r->tab_size, sizeof(r->tab_size), (void *)(tab + 16))) {
		len = r->tab_size;
		if (len > PYBPF_TAB_READ)
			len = PYBPF_TAB_READ;
		if (!bpf_probe_read_user(r->tab, len, (void *)(tab + 32)))
			got |= PYBPF_GOT_TAB;
	}
	r->got = got;
	/* out: as long as what was read of the table */
	len = 0;
	if (got & PYBPF_GOT_TAB) {
		len = r->tab_size;
		if (len > PYBPF_TAB_READ)
			len = PYBPF_TAB_READ;
	}
	if (bpf_ringbuf_output(&ring, r, __builtin_offsetof(struct pybpf_code_rec, tab) + len,
			       rb_wake(&ring, ring_half)))
		return 1;	/* no room: the chain has none either */
	bpf_map_update_elem(&codes, &key, &ident, BPF_ANY);	/* met, as this object */
	return 0;
}

/* A chain of no frames that says why (flags: PYBPF_FAIL, PYBPF_STALE): a listed thread's
 * sample always has its chain */
__noinline int pybpf_put_failed(struct chain_scratch *s, __u32 flags)
{
	if (!s)
		return 1;
	s->c.n = flags;
	if (bpf_ringbuf_output(&ring, &s->c, 16, rb_wake(&ring, ring_half)))
		__sync_fetch_and_add(&dropped, 1);
	return 1;
}

/* stamp: the sample's time, SAMPLE_TIME_EXACT where it is its own (pybpf_sample_time) */
static __always_inline int read_stack(int with_codes, __u64 stamp)
{
	__u64 id = current_ids(), f;
	__u32 tid = (__u32)id, zero = 0, ts_tid, n;
	const struct pybpf_thread *t;
	struct chain_scratch *s;

	if (!tid)
		return 1;	/* not a thread of record's namespace */
	t = bpf_map_lookup_elem(&threads, &tid);
	/* a process forked by a listed thread, its first thread (not a thread of the forker) */
	if (!t && tid == (__u32)(id >> 32)) {
		__u64 task = bpf_get_current_task();

		t = bpf_map_lookup_elem(&forked, &task);
	}
	if (!t)
		return 1;
	s = bpf_map_lookup_elem(&chain_scratch, &zero);
	if (!s)
		return 1;
	s->c.tid = tid;
	s->c.time = stamp & ~SAMPLE_TIME_EXACT;
	/* the state's native thread id must be the thread's (a state freed and reused: no),
	 * or in a forked child, the forker's until the child's runtime has set its own;
	 * else the chain says so (pykernel.c lists the thread again), as it says a frame
	 * it could not read */
	if (bpf_probe_read_user(&ts_tid, sizeof(ts_tid), (void *)(t->tstate + t->ts_tid)) ||
	    (ts_tid != (t->ns_tid ? t->ns_tid : tid) &&
	     !(t->from_tid && ts_tid == t->from_tid && (__u32)(id >> 32) != t->from_pid)))
		return pybpf_put_failed(s, PYBPF_FAIL | PYBPF_STALE | ((__u32)(stamp >> 63) << 27));
	/* the running frame: *(tstate + ts_frame), in 3.11/3.12 through the _PyCFrame */
	if (bpf_probe_read_user(&f, sizeof(f), (void *)(t->tstate + t->ts_frame)) ||
	    (t->cf_current != MEM_PY_NONE && f &&
	     bpf_probe_read_user(&f, sizeof(f), (void *)(f + t->cf_current))))
		return pybpf_put_failed(s, PYBPF_FAIL | ((__u32)(stamp >> 63) << 27));
	s->c.n = with_codes ? walk(s, f, t->layout) : walk_inline(s, f, t->layout);
	s->c.n |= ((__u32)(stamp >> 63) << 27);	/* PYBPF_EXACT */
	if (t->gil) {
		/* whether it holds the GIL: the lock taken, its state the last holder.  The
		 * lock first: a taker stores locked, then last_holder, so read the other way
		 * round a thread that has just given it up (a sleep's switch-out) is seen as
		 * holding it whenever the next taker's first store falls between the reads,
		 * and is counted as the holder for all of its sleep; read in this order, only
		 * inside the taker's own few instructions between its stores */
		__u64 holder = 0;
		__u32 locked = 0;

		if (!bpf_probe_read_user(&locked, sizeof(locked), (void *)(t->gil + 16)) &&
		    locked &&
		    !bpf_probe_read_user(&holder, sizeof(holder), (void *)(t->gil + 8)) &&
		    holder == t->tstate)
			s->c.n |= PYBPF_GIL;
	}
	/* (read back: the verifier then goes on once from here, not once per way out of
	 * the walk) */
	n = nframes(*(volatile __u32 *)&s->c.n);
	if (with_codes) {
		/* the chain's code objects not met before go first */
		struct code_ctx cx = { .pid = id >> 32, .left = PYBPF_CODE_BUDGET,
				       .base = t->ob_base };

		bpf_loop(n, read_code, &cx, 0);
	}
	if (bpf_ringbuf_output(&ring, &s->c, 16 + 16 * n, rb_wake(&ring, ring_half)))
		__sync_fetch_and_add(&dropped, 1);
	return 1;
}

/* ---- native frames, walked with the files' CFI tables (kunwind.h) ---- */

/* walk native frames too (set by pybpf.c where record asks): PYBPF_NATIVE_BESIDE (1)
 * the stack copy, or _INSTEAD (2) of it where the walk reaches the thread's root */
const volatile __u32 native_walk;

struct kunw_block {
	__u32 w[KUNW_BLOCK];
};

struct kunw_inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32[KUNW_BLOCK]);	/* (struct kunw_block: clang gives BTF a
						   declaration only) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, KUNW_MAX_FILES);
	__type(key, __u32);
	__array(values, struct kunw_inner);
} ktabs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KUNW_MAX_FILES);
	__type(key, __u32);
	__type(value, struct kunw_file);
} kfiles SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, KUNW_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct kunw_proc);
} kprocs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, KUNW_RB_MAX);	/* (sized by pybpf.c) */
} kring SEC(".maps");

/* rows of return addresses met lately, by cpu, direct-mapped: valid for the process's
 * mappings of that generation (kunw_proc.gen) */
struct kunw_cached {
	__u64 ip;
	__u32 pid, gen;
	struct kunw_row row;
	__u64 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KUNW_CACHE);
	__type(key, __u32);
	__type(value, struct kunw_cached);
} kcache SEC(".maps");

struct kwalk {
	__u64 ip, sp, bp;
	__u32 pid, n, why, bp_known;
	__u32 in_root;		/* the last frame is in a thread's first function */
	__u32 gen;		/* its process's mappings (kunw_proc.gen) */
	__u64 lo, hi;		/* where its files' code is, all of it */
	__u32 scans;		/* stack scans made */
	__u32 scanning;		/* a scan is under way */
	__u32 first_why;	/* why the first scan began */
	__u32 from_scan;	/* ip was found by a scan */
	__u32 fid;		/* KW_NO_TAB: the file without its table */
	__u32 activation;	/* ip is where a signal came, not a return address */
	__u64 scan_at, scan_to;	/* the scan under way: the next word, the end */
	__u64 found_at, found;	/* what it found: a return address, and where */
	struct kunw_row row;	/* the frame's row (kstep) */
	/* the frame the last scan found: the count of frames with it (0: none), and the
	 * registers it began with (pybpf_dead_end) */
	__u32 scan_frame, scan_bp_known;
	__u64 scan_sp, scan_bp;
	__u32 dead_n;		/* a dead end's frames, kept where no scan finds another */
	__u32 dead_ends;	/* frames dropped so (at most KUNW_DEAD_ENDS) */
};

/* A cpu's walk: its state, and its chain as it grows.  The state lies here, not in the
 * stack of the program that calls bpf_loop: the verifier follows the values a stack
 * holds (each count of scans would be a state of its own), not those a map holds. */
struct kscr {
	struct kunw_chain c;
	struct kwalk w;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kscr);
} kscratch SEC(".maps");

__u64 kdropped;		/* walks the ring had no room for */

/* x86-64's struct pt_regs (the uapi header gives i386's to -target bpf) */
struct x86_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax,
	      ip, cs, flags, sp, ss;
};


/* A word of the stack at addr, which the window last read (this cpu's walk) does not
 * hold: read with the KUNW_WIN bytes from there (one read for several frames: a read of
 * user memory costs about as much as finding a frame's row), else alone.  0, or -1.  (A
 * global function: the verifier follows it once, not at each of the walk's reads.) */
__noinline int pybpf_stack_read(struct kunw_chain *c, __u64 addr, __u64 *v)
{
	__u64 d;

	if (!c || !v)
		return -1;
	if (!(addr & 7)) {
		/* (a read that fails zeroes the buffer: the window it held is gone.  Kept,
		 * a walk whose rbp a JIT kernel had clobbered read its frame's slot at
		 * 0x408, then zeros for the window's words: a scan went past libgomp's
		 * return address to a libc one, 1,444 stacks of the container's CNN) */
		c->win_len = 0;
		if (!bpf_probe_read_user(c->win, KUNW_WIN, (void *)addr)) {
			c->win_at = addr;
			c->win_len = KUNW_WIN;
			*v = c->win[0];
			return 0;
		}
		/* past the end of the stack's mapping: what is left of its page */
		d = 4096 - (addr & 4095);
		if (d < KUNW_WIN && !bpf_probe_read_user(c->win, d & (KUNW_WIN - 1), (void *)addr)) {
			c->win_at = addr;
			c->win_len = d;
			*v = c->win[0];
			return 0;
		}
	}
	return bpf_probe_read_user(v, 8, (void *)addr) ? -1 : 0;
}

/* A word of the stack at addr: from the window of it last read, else read.  0, or -1. */
static __always_inline int stack_word(struct kunw_chain *c, __u64 addr, __u64 *v)
{
	__u64 d = addr - c->win_at;

	if (!(addr & 7) && c->win_len && d < c->win_len) {
		/* (the index through the scratch: the verifier then asks nothing of where it
		 * came from, the walk's state in its caller's stack) */
		*(volatile __u32 *)&c->tmp = (__u32)(d >> 3);
		*v = c->win[*(volatile __u32 *)&c->tmp & (KUNW_WIN / 8 - 1)];
		return 0;
	}
	return pybpf_stack_read(c, addr, v);
}

/* Process p's mapping of code around addr: the index of the last that starts at or
 * before it (the index goes through the scratch, so that the verifier tracks no range of
 * it: it would follow each way through the search apart); -1 where none covers it.  (A
 * global function: the verifier follows it once, not at each place it is called from.) */
__noinline int pybpf_find_map(const struct kunw_proc *p, struct kunw_chain *c, __u64 addr)
{
	const struct kunw_map *x;
	__u32 lo = 0, hi, k;

	if (!p || !c)
		return -1;
	hi = p->n < KUNW_MAX_MAPS ? p->n : KUNW_MAX_MAPS;

	for (k = 0; k < 10; k++) {
		__u32 half = hi >> 1;

		if (!half)
			break;
		*(volatile __u32 *)&c->tmp = lo + half;
		x = &p->m[*(volatile __u32 *)&c->tmp & (KUNW_MAX_MAPS - 1)];
		if (x->start <= addr)
			lo += half;
		hi -= half;
	}
	*(volatile __u32 *)&c->tmp = lo;
	x = &p->m[*(volatile __u32 *)&c->tmp & (KUNW_MAX_MAPS - 1)];
	return p->n && addr >= x->start && addr < x->end ? (int)(lo & (KUNW_MAX_MAPS - 1)) : -1;
}

/* The mapping itself, NULL where none covers addr */
static __always_inline const struct kunw_map *find_map(const struct kunw_proc *p,
						       struct kunw_chain *c, __u64 addr)
{
	int i = pybpf_find_map(p, c, addr);

	return i < 0 ? 0 : &p->m[i & (KUNW_MAX_MAPS - 1)];
}

/* In a block of a table, of the n rows from slot lo (n at least 1), the last at or before
 * at (the first where none is): its word.  (A global function: the verifier follows its
 * search once, not at each state of the walk's step; the index goes through the scratch,
 * so that it tracks no range of it: it would follow each way through apart.) */
__noinline __u32 pybpf_block_row(const struct kunw_block *blk, struct kunw_chain *c, __u32 lo,
				 __u32 n, __u32 at)
{
	__u32 k;

	if (!blk || !c)
		return ~0u;
	for (k = 0; k < 11; k++) {
		__u32 half = n >> 1;

		if (!half)
			break;
		*(volatile __u32 *)&c->tmp = lo + half;
		if (KUNW_ROW_AT(blk->w[*(volatile __u32 *)&c->tmp & (KUNW_BLOCK - 1)]) <= at)
			lo += half;
		n -= half;
	}
	*(volatile __u32 *)&c->tmp = lo;
	return blk->w[*(volatile __u32 *)&c->tmp & (KUNW_BLOCK - 1)];
}

/* The row for look (an address of process w->pid): 0 and *out, or why not (KW_*) */
static __always_inline __u32 find_row(struct kwalk *w, struct kunw_chain *c, __u64 look,
				      struct kunw_row *out)
{
	const struct kunw_proc *p;
	const struct kunw_map *m;
	const struct kunw_file *f;
	const struct kunw_block *blk;
	const struct kunw_page *pg;
	const struct kunw_rule *rule;
	void *tab;
	__u32 lo, hi, k, key, rb, blo, bhi, rows_at, at, word;
	__u64 off;

	p = bpf_map_lookup_elem(&kprocs, &w->pid);
	if (!p)
		return KW_NO_PROC;
	m = find_map(p, c, look);
	if (!m)
		return KW_NO_MAP;
	if (m->fid == KUNW_ANON)
		return KW_JIT;
	key = m->fid;
	f = bpf_map_lookup_elem(&kfiles, &key);
	if (!f || !f->nr_pages || !(tab = bpf_map_lookup_elem(&ktabs, &key))) {
		w->fid = key;
		return KW_NO_TAB;
	}
	if (!f->walked)		/* (written once: the line stays shared) */
		((struct kunw_file *)f)->walked = 1;
	off = look - m->bias - f->base;
	if (off >= (__u64)f->nr_pages << KUNW_PAGE_SHIFT)
		return KW_NO_ROW;
	rows_at = 2 * f->nr_pages + f->nr_rules;	/* as words */
	at = KUNW_SEG_OFF(off);	/* the rows a page's look-up reads: all of its segment */
	/* the page's rows (two words a page: a page's are in one block) */
	key = (__u32)(off >> KUNW_PAGE_SHIFT) * 2;
	k = key / KUNW_BLOCK;
	blk = bpf_map_lookup_elem(tab, &k);
	if (!blk)
		return KW_NO_ROW;
	pg = (const struct kunw_page *)&blk->w[key % KUNW_BLOCK & ~1u];
	lo = rows_at + pg->first;	/* as words */
	hi = rows_at + pg->end;
	if (hi <= lo)
		return KW_NO_ROW;
	/* the block of the last row at or before off: of the range's blocks, the last whose
	 * first row is (a block past the range's first starts with one of its rows), else
	 * the range's first; found by halving, in four turns for up to 16 blocks (the
	 * verifier follows each turn of the loop apart) */
	blo = lo / KUNW_BLOCK;
	bhi = (hi - 1) / KUNW_BLOCK;
	for (k = 0; k < 4 && blo < bhi; k++) {
		key = (blo + bhi + 1) / 2;
		blk = bpf_map_lookup_elem(tab, &key);
		if (!blk)
			return KW_NO_ROW;
		if (KUNW_ROW_AT(blk->w[0]) <= at)
			blo = key;
		else
			bhi = key - 1;
	}
	if (blo < bhi)
		return KW_NO_ROW;
	key = blo;
	blk = bpf_map_lookup_elem(tab, &key);
	if (!blk)
		return KW_NO_ROW;
	/* then in the block: [lo, hi) as its slots */
	rb = key * KUNW_BLOCK;
	lo = lo > rb ? lo - rb : 0;
	hi = hi - rb > KUNW_BLOCK ? KUNW_BLOCK : hi - rb;
	hi -= lo;
	word = pybpf_block_row(blk, c, lo, hi, at);
	if (KUNW_ROW_AT(word) > at)
		return KW_NO_ROW;
	/* its rule */
	key = 2 * f->nr_pages + KUNW_ROW_RULE(word);
	k = key / KUNW_BLOCK;
	blk = bpf_map_lookup_elem(tab, &k);
	if (!blk)
		return KW_NO_ROW;
	rule = (const struct kunw_rule *)&blk->w[key % KUNW_BLOCK];
	out->addr = (__u32)off;
	out->kind = rule->kind;
	out->rbp = rule->rbp;
	out->cfa = rule->cfa;
	return 0;
}

/*
 * The walk could not go on from its last frame: as the copy's walk does, it looks up the
 * stack from there for a return address, a word of the frame loop at a time (bpf_loop
 * calls from within its callback are refused), and goes on from the one it finds.  A
 * word is taken for a return address where it lies in a file's code of the process and
 * a call is just before it.  A walk whose last frame is in a thread's first function is
 * whole: no scan.  0: go on; 1: the walk ended.
 */
/* A scan that finds no frame (or none begun): the walk ends, and the frame of a dead end
 * before it stays (pybpf_dead_end). 1. */
static __always_inline int scan_none(struct kwalk *w)
{
	if (w->dead_n)
		w->n = w->dead_n;
	w->dead_n = 0;
	return 1;
}

/* Is the step that failed the one from the frame the last scan found, and may the walk
 * drop that frame (pybpf_dead_end)? */
static __always_inline int at_dead_end(const struct kwalk *w)
{
	return w->scan_frame && w->n == w->scan_frame && w->dead_ends < KUNW_DEAD_ENDS;
}

__noinline int pybpf_scan_begin(struct kwalk *w)
{
	if (!w)
		return 1;
	if (w->in_root || w->scans >= KUNW_MAX_SCANS)
		return scan_none(w);
	if (!w->scans)
		w->first_why = w->why;
	w->scans++;
	w->scan_at = (w->sp + 7) & ~7ull;
	w->scan_to = w->scan_at + KUNW_SCAN_BYTES;
	w->scanning = 1;
	return 0;
}

/* the 8 bytes before a return address */
struct code8 {
	__u8 b[8];
};

/* kunw_call_before of the 7 bytes before a return address */
__noinline int pybpf_call_before(const struct code8 *c)
{
	return c && kunw_call_before(c->b + 1);
}

static __always_inline int scan_word(struct kwalk *w, struct kunw_chain *c)
{
	const struct kunw_proc *p;
	const struct kunw_map *x;
	__u64 a = w->scan_at, v, code, bp;
	struct code8 b;

	if (a + 8 > w->scan_to || stack_word(c, a, &v))
		return scan_none(w);
	w->scan_at = a + 8;
	if (v < w->lo || v >= w->hi)
		return 0;
	p = bpf_map_lookup_elem(&kprocs, &w->pid);
	if (!p)
		return scan_none(w);
	x = find_map(p, c, v);
	if (!x || x->fid == KUNW_ANON || bpf_probe_read_user(&code, 8, (void *)(v - 8)))
		return 0;
	__builtin_memcpy(b.b, &code, 8);
	if (!pybpf_call_before(&b))
		return 0;
	/* found: callee-saved registers as the last frame left them; but where rbp points
	 * at the slot below the return address, the code passed over made a classic frame
	 * and that slot holds the caller's */
	if (w->bp_known && w->bp == a - 8 && !stack_word(c, a - 8, &bp))
		w->bp = bp;
	w->ip = v;
	w->from_scan = 1;
	w->sp = a + 8;
	w->why = 0;
	w->scanning = 0;
	w->dead_n = 0;
	w->scan_frame = w->n + 1;
	w->scan_sp = w->sp;
	w->scan_bp = w->bp;
	w->scan_bp_known = w->bp_known;
	return 0;
}

/*
 * The frame a scan found, whose own step led nowhere (to an address in no mapping, to a
 * frame below its own): most likely a stale word.  As the copy's walk takes it
 * (unwind.c, dead_end): the scan goes on past it, with the registers it began with,
 * and the frame goes where the scan finds another; where it finds none, the walk ends
 * with the frame.  0: the scan goes on, 1: the walk ended.
 */
__noinline int pybpf_dead_end(struct kwalk *w)
{
	if (!w)
		return 1;
	w->dead_ends++;
	w->dead_n = w->n;
	w->n = w->scan_frame - 1;
	w->sp = w->scan_sp;
	w->bp = w->scan_bp;
	w->bp_known = w->scan_bp_known;
	w->scan_frame = 0;
	return pybpf_scan_begin(w);
}

/* The step to the caller, its CFA and return address known: 0, or the scan's start.
 * The frames' ends below, which take it, are global functions (as the scan's start),
 * which the verifier follows once each, not once for each way a turn of the walk reaches
 * them; they return 0 (go on) or 1 (the walk ended), as the walk's turn does. */
static __always_inline int frame_step(struct kwalk *w, __u64 cfa, __u64 ra)
{
	if (!ra) {
		w->why = KW_END;
		return pybpf_scan_begin(w) ? 1 : 0;
	}
	if (cfa <= w->sp) {
		w->why = KW_BAD;
		if (at_dead_end(w))
			return pybpf_dead_end(w) ? 1 : 0;
		return pybpf_scan_begin(w) ? 1 : 0;
	}
	w->sp = cfa;
	w->ip = ra;
	return 0;
}

/* A frame's end once its CFA is known: the return address below the CFA, rbp by the
 * row's rule (rbp: KR_RBP_*, or the slot's offset from the CFA in words), then the step */
__noinline int pybpf_frame_end(struct kscr *sc, __u64 cfa, __s32 rbp)
{
	struct kunw_chain *c;
	struct kwalk *w;
	__u64 ra;

	if (!sc)
		return 1;
	c = &sc->c;
	w = &sc->w;
	if (stack_word(c, cfa - 8, &ra)) {
		w->why = KW_READ;
		return pybpf_scan_begin(w) ? 1 : 0;
	}
	if (rbp == KR_RBP_UNKNOWN)
		w->bp_known = 0;
	else if (rbp == KR_RBP_AT_RBP)
		w->bp_known = w->bp_known && !stack_word(c, w->bp, &w->bp);
	else if (rbp != KR_RBP_SAME)
		w->bp_known = !stack_word(c, cfa + (__s64)rbp * 8, &w->bp);
	return frame_step(w, cfa, ra);
}

/* A signal frame (__restore_rt): the interrupted code's registers, saved in it */
__noinline int pybpf_signal_frame(struct kscr *sc)
{
	struct kunw_chain *c;
	struct kwalk *w;
	__u64 ra, sp, bp;

	if (!sc)
		return 1;
	c = &sc->c;
	w = &sc->w;
	if (stack_word(c, w->sp + KUNW_SIG_RIP, &ra) ||
	    stack_word(c, w->sp + KUNW_SIG_RSP, &sp) ||
	    stack_word(c, w->sp + KUNW_SIG_RBP, &bp)) {
		w->why = KW_READ;
		return pybpf_scan_begin(w);
	}
	w->ip = ra;
	w->sp = sp;
	w->bp = bp;
	w->bp_known = 1;
	w->activation = 1;
	if (ra)
		return 0;
	w->why = KW_END;
	return 1;
}

/* A frame without CFI: the frame-pointer step, as the unwinder takes it */
__noinline int pybpf_fp_frame(struct kscr *sc)
{
	struct kunw_chain *c;
	struct kwalk *w;
	__u64 ra, bp, cfa;

	if (!sc)
		return 1;
	c = &sc->c;
	w = &sc->w;
	if (!w->bp_known || stack_word(c, w->bp, &bp) || stack_word(c, w->bp + 8, &ra)) {
		w->why = w->bp_known ? KW_READ : KW_OTHER;
		return pybpf_scan_begin(w);
	}
	cfa = w->bp + 16;
	w->bp = bp;
	return frame_step(w, cfa, ra);
}

/* bpf_loop's callback: one frame (0: go on, 1: the walk ended, why in w->why) */
static long kstep(__u32 i, void *arg)
{
	struct kscr *sc;
	struct kwalk *w;
	struct kunw_chain *c;
	struct kunw_cached *e;
	const struct kunw_row *row;
	__u32 zero = 0, h, why;
	__u64 look, cfa;

	sc = bpf_map_lookup_elem(&kscratch, &zero);
	if (!sc)
		return 1;
	c = &sc->c;
	w = &sc->w;
	if (w->scanning)
		return scan_word(w, c);
	if (w->n >= KUNW_MAXF) {
		w->why = KW_DEEP;
		return 1;
	}
	/* a return address: the call before it; where a signal came: itself */
	look = w->n && !w->activation ? w->ip - 1 : w->ip;
	w->activation = 0;
	/* a return address met lately on this cpu: its row at once (a look-up through the
	 * tables touches five or six cache lines the workload has pushed out) */
	h = (__u32)(look ^ (look >> 13) ^ ((__u64)w->pid * 0x9e3779b1u)) & (KUNW_CACHE - 1);
	e = bpf_map_lookup_elem(&kcache, &h);
	if (e && e->ip == look && e->pid == w->pid && e->gen == w->gen) {
		w->row = e->row;
		why = 0;
	} else {
		why = find_row(w, c, look, &w->row);
	}
	/* (the reason and the row through the scratch: the verifier then goes on once from
	 * here, not once for each way to a row or to a reason for none) */
	*(volatile __u32 *)&c->tmp = why;
	why = *(volatile __u32 *)&c->tmp;
	if (why == KW_NO_MAP && w->n) {
		/* an address in no mapping record told of: one it has not told yet (or a
		 * "return address" that is none): the copy's walk does it; but where a scan
		 * found the frame it is the return address of, a dead end */
		w->why = why;
		if (at_dead_end(w))
			return pybpf_dead_end(w) ? 1 : 0;
		return 1;
	}
	*(volatile __u32 *)&c->tmp = w->n;
	c->ip[*(volatile __u32 *)&c->tmp & (KUNW_MAXF - 1)] = w->ip |
		(w->from_scan ? KUNW_SCANNED : 0);
	w->from_scan = 0;
	w->n++;
	w->in_root = 0;
	if (why) {
		w->why = why;
		/* JIT code, a row it cannot follow: the scan; a table or a mapping it was
		 * not told of yet: the copy's walk does it */
		if (why == KW_NO_TAB || why == KW_NO_PROC || why == KW_NO_MAP)
			return 1;
		goto scan;
	}
	e = bpf_map_lookup_elem(&kcache, &h);
	if (e && (e->ip != look || e->pid != w->pid || e->gen != w->gen)) {
		e->ip = look;
		e->pid = w->pid;
		e->gen = w->gen;
		e->row = w->row;
	}
	row = &w->row;
	w->in_root = row->kind >> 7;
	switch (row->kind & ~KR_IN_ROOT) {
	case KR_ROOT:
		w->why = KW_ROOT;
		w->in_root = 1;
		return 1;
	case KR_SIGNAL:
		return pybpf_signal_frame(sc) ? 1 : 0;
	case KR_NONE:
		return pybpf_fp_frame(sc) ? 1 : 0;
	case KR_RSP:
		cfa = w->sp + (__s64)row->cfa * 8;
		break;
	case KR_PLT:
		cfa = w->sp + (__s64)row->cfa * 8 + ((w->ip & 15) >= (__u64)row->rbp ? 8 : 0);
		break;
	case KR_RBP:
	case KR_RBP_DEREF:
		if (!w->bp_known) {
			w->why = KW_OTHER;
			goto scan;
		}
		cfa = w->bp + (__s64)row->cfa * 8;
		if ((row->kind & ~KR_IN_ROOT) == KR_RBP_DEREF && stack_word(c, cfa, &cfa)) {
			w->why = KW_READ;
			goto scan;
		}
		break;
	default:
		w->why = KW_OTHER;
		goto scan;
	}
	return pybpf_frame_end(sc, cfa, (row->kind & ~KR_IN_ROOT) == KR_PLT ? KR_RBP_SAME :
				       row->rbp) ? 1 : 0;
scan:
	return pybpf_scan_begin(w) ? 1 : 0;
}

/* the switch-out event's index in record's (set after load: the events are made after
 * the program); 0: its samples keep their copies */
__u32 switch_event;

/* 1: this program runs on the switch-outs too, and knows theirs by what the scheduler
 * gives: registers made up at the switch (flags 0, where a trap's or an interrupt's
 * always have bit 1 set) and a period of 1.  Record says so where its one sampling event
 * cannot give both (no scheduler or tracepoint event): one program verified, not three. */
const volatile __u32 switch_merged;

/* The sampled thread's native frames, from its user registers, into kring.  Where
 * record asks (native_walk 2) and the walk reached the thread's root, the record it
 * writes is the sample's, with the kernel frames of a sample taken there, and the
 * sample's own (its 32 KiB stack copy) is dropped: 0.  Else 1: the sample is written. */
/* may_drop: 0, 1, or WALK_MAIN: 1, or what the switch-outs' program would say where
 * this is one (switch_merged).  time: the sample's (sample_time), as its Python chain's:
 * the sample the walk makes stands where the copy's would, however long the walk took
 * (a walk that scans JIT code may take hundreds of microseconds; a sample timed after
 * it found no chain) */
#define WALK_MAIN 2
static __always_inline int walk_native(void *ctx, int may_drop, __u32 event, __u64 time)
{
	const struct kunw_proc *p;
	struct x86_regs ur;
	struct kscr *sc;
	struct kwalk *w;
	struct kunw_chain *c;
	__u64 cs, ip, sp, bp, kip = 0, period, id = current_ids(), len;
	__u32 zero = 0, n, nk = 0, pid = id >> 32, drop;
	long got;

	if (!(__u32)id)
		return 1;
	/* (each field loaded from the context at its own offset: the verifier takes no
	 * other way in) */
	asm volatile("%0 = *(u64 *)(%1 + 136)" : "=r"(cs) : "r"(ctx));
	asm volatile("%0 = *(u64 *)(%1 + 168)" : "=r"(period) : "r"(ctx));
	if ((cs & 3) == 3) {
		asm volatile("%0 = *(u64 *)(%1 + 128)" : "=r"(ip) : "r"(ctx));
		asm volatile("%0 = *(u64 *)(%1 + 152)" : "=r"(sp) : "r"(ctx));
		asm volatile("%0 = *(u64 *)(%1 + 32)" : "=r"(bp) : "r"(ctx));
	} else {
		/* in the kernel: the registers it saved at its entry */
		struct task_struct *t = bpf_get_current_task_btf();
		void *u = (void *)bpf_task_pt_regs(t);

		asm volatile("%0 = *(u64 *)(%1 + 128)" : "=r"(kip) : "r"(ctx));
		if (!u || bpf_probe_read_kernel(&ur, sizeof(ur), u) || (ur.cs & 3) != 3)
			return 1;	/* a kernel thread */
		ip = ur.ip;
		sp = ur.sp;
		bp = ur.bp;
	}
	sc = bpf_map_lookup_elem(&kscratch, &zero);
	if (!sc)
		return 1;
	w = &sc->w;
	__builtin_memset(w, 0, sizeof(*w));
	w->ip = ip;
	w->sp = sp;
	w->bp = bp;
	w->bp_known = 1;
	w->pid = pid;
	p = bpf_map_lookup_elem(&kprocs, &pid);
	if (p) {
		w->gen = p->gen;
		w->lo = p->lo;
		w->hi = p->hi;
	}
	c = &sc->c;
	c->tid = (__u32)id;
	c->pid = pid;
	c->time = time;
	c->cpu = bpf_get_smp_processor_id();
	c->period = period;
	c->sample_ip = kip ? kip : ip;
	c->win_len = 0;
	bpf_loop(KUNW_MAXF + 1 + KUNW_MAX_SCANS * KUNW_SCAN_BYTES / 8, kstep, NULL, 0);
	sc = bpf_map_lookup_elem(&kscratch, &zero);
	if (!sc)
		return 1;
	c = &sc->c;
	/* (decided after the walk, which then is one for the verifier whatever the event) */
	if (may_drop == WALK_MAIN && switch_merged) {
		__u64 flags, period;

		asm volatile("%0 = *(u64 *)(%1 + 144)" : "=r"(flags) : "r"(ctx));
		asm volatile("%0 = *(u64 *)(%1 + 168)" : "=r"(period) : "r"(ctx));
		if (!flags && period == 1) {
			event = *(volatile __u32 *)&switch_event;
			may_drop = event != 0;
		}
	}
	c->event = event;	/* (record's first event, or the switch-outs') */
	c->why = sc->w.why | (sc->w.first_why & 0xff) << 8 | (sc->w.scans & 0xff) << 16;
	c->whole = sc->w.in_root;
	c->fid = sc->w.fid;
	n = sc->w.n < KUNW_MAXF ? sc->w.n : KUNW_MAXF;
	drop = native_walk == 2 && c->whole && may_drop;
	if (drop && kip) {
		/* the kernel's frames, after the user ones (n at most KUNW_MAXF: then
		 * KUNW_MAXK more fit in ip) */
		_Static_assert(KUNW_MAXF + KUNW_MAXK <= KUNW_IPS, "the kernel's frames fit");
		got = bpf_get_stack(ctx, &c->ip[n], KUNW_MAXK * 8, 0);
		if (got > 0)
			nk = (__u32)got / 8;
	}
	nk = nk < KUNW_MAXK ? nk : KUNW_MAXK;
	c->nk = nk;
	c->dropped = drop;
	/* where the sample's own record goes on, the walk only where record compares it,
	 * else what a table it wants (why, fid) */
	c->n = native_walk == 2 && !drop ? 0 : n;
	len = KUNW_HEAD + 8 * (__u64)(c->n + nk);
	if (len > sizeof(c->ip) + KUNW_HEAD)
		len = sizeof(c->ip) + KUNW_HEAD;
	if (bpf_ringbuf_output(&kring, c, len, rb_wake(&kring, kring_half))) {
		__sync_fetch_and_add(&kdropped, 1);
		return 1;	/* (then the sample as it is) */
	}
	return !drop;
}

/* A fork by a listed thread (the current one): its entry for the child (see forked).
 * A raw tracepoint, as its detach does not wait for an RCU grace period (a tracepoint's
 * perf event's does: 60 to 90 ms at the end of each record) */
SEC("raw_tp/sched_process_fork")
int dlprof_fork(struct bpf_raw_tracepoint_args *ctx)
{
	__u64 id = current_ids(), child = ctx->args[1];
	__u32 parent = (__u32)id;
	const struct pybpf_thread *pt;
	struct pybpf_thread t;

	if (!parent)
		return 0;
	pt = bpf_map_lookup_elem(&threads, &parent);
	if (!pt)
		return 0;
	t = *pt;
	t.from_tid = parent;
	t.from_pid = (__u32)(id >> 32);
	bpf_map_update_elem(&forked, &child, &t, BPF_ANY);
	return 0;
}

/* chains and the code objects they meet (5.17: bpf_loop) */
SEC("perf_event")
int dlprof_py(void *ctx)
{
	/* the Python chain first, as its sample's record comes after it (pb_find) */
	__u64 stamp = pybpf_sample_time(ctx);	/* the sample's (walk_native) */

	read_stack(1, stamp);
	return native_walk ? walk_native(ctx, WALK_MAIN, 0, stamp & ~SAMPLE_TIME_EXACT) : 1;
}

/* the same on the switch-outs, whose records it drops as the sampling event's where the
 * walk is whole (an event's program goes to the events inherited from it, its cookie
 * does not: the event is the program's) */
SEC("perf_event")
int dlprof_py_switch(void *ctx)
{
	__u32 ev = *(volatile __u32 *)&switch_event;
	__u64 stamp = pybpf_sample_time(ctx);

	read_stack(1, stamp);
	return native_walk ? walk_native(ctx, ev != 0, ev, stamp & ~SAMPLE_TIME_EXACT) : 1;
}

/* the same on the events whose samples are never dropped (the switch-outs, and the
 * sampling events after record's first: the walk's record says no event); an event's
 * program goes to the events inherited from it, its cookie does not */
SEC("perf_event")
int dlprof_py_keep(void *ctx)
{
	__u64 stamp = pybpf_sample_time(ctx);

	read_stack(1, stamp);
	return native_walk ? walk_native(ctx, 0, 0, stamp & ~SAMPLE_TIME_EXACT) : 1;
}

/* chains only, where the kernel will not load the other (or DLPROF_NO_BPF_CODES) */
SEC("perf_event")
int dlprof_py_chain(void *ctx)
{
	return read_stack(0, pybpf_sample_time(ctx));
}
