/* interpose.c - libdlprof-mem.so, the allocation sampler dlprof record --memory preloads.
 *
 * It replaces malloc, calloc, realloc, reallocarray, free, posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc and anonymous mmap/munmap, forwards each to glibc
 * (__libc_malloc & co, the mmap system call) and decides, inside the process, which
 * allocations are sampled: a Poisson process over the bytes allocated, mean
 * $DLPROF_MEM_SAMPLE bytes (1: every allocation).  An allocation of n bytes is sampled with
 * probability p = 1 - exp(-n/mean), and stands for n/p bytes and 1/p allocations, so sums
 * over the samples are unbiased estimates of the workload's.  One of at least
 * SURE_MEANS means is sampled always (p = 1, weight n), the countdown left as it was: by
 * the process's memorylessness the others keep their p, and a large block (a leak, a
 * tensor) is never the one left out (at 8 means p misses one such block in 3,000: the
 * likely way a loaded t9500 run lost one 4 MiB leaked block of 15, -6.7% on its row).
 *
 * A sampled allocation calls dlprof_mem_alloc_event(addr, size, weight,
 * kind | seq << 4): an empty function dlprof watches with a uprobe, which carries the
 * registers (the arguments) and the stack copy: a sampled allocation travels the same
 * ring, unwinder and attribution as a CPU sample, and only sampled calls pay for it.  A
 * free of a sampled address goes into the free ring of the file dlprof shares with us
 * (time, the block's number, thread: memevent.h), no trap; when the ring is full or
 * missing, it calls dlprof_mem_free_event(key, kind, len), watched the same way.  A free
 * of an address not sampled costs a hash and a load from a 128 KiB table of bucket
 * counts.
 *
 * A free is sent before the memory goes back to glibc, so a later allocation at the same
 * address comes after it in time.  At exit, dlprof_mem_alloc_event(calls, bytes,
 * rss_anon, MEM_KIND_STATS) tells dlprof how much this process allocated in all, and its
 * resident anonymous memory (an allocator dlprof cannot see shows as the difference).
 *
 * No dependency on libdlprof.a; nothing here allocates.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "memevent.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern size_t malloc_usable_size(void *);
extern char **environ;

/* ---- the events dlprof's uprobes watch ---- */

/* The probed instruction: a one-byte nop, which the kernel emulates (one trap; a ret is
 * stepped out of line: two traps, 23 us an allocation and its free against 9.5 here).  Not
 * the 5-byte nop that kernels from 6.18 turn into a call to their uprobe trampoline: a
 * forked child's events are then not seen at all (t9500's fork test, kernel 6.18). */
#define PROBED_NOP "nop"

EXPORT void dlprof_mem_alloc_event(uintptr_t addr, uint64_t size, uint64_t weight, uint64_t kind,
				   const uint64_t *py, uint64_t npy);
EXPORT void dlprof_mem_free_event(uint64_t key, uint64_t kind, uint64_t len);
EXPORT void dlprof_mem_wait_event(void);

EXPORT __attribute__((noinline, noipa)) void
dlprof_mem_alloc_event(uintptr_t addr, uint64_t size, uint64_t weight, uint64_t kind,
		       const uint64_t *py, uint64_t npy)
{
	__asm__ volatile(PROBED_NOP : : "r"(addr), "r"(size), "r"(weight), "r"(kind), "r"(py),
			 "r"(npy) : "memory");
}

EXPORT __attribute__((noinline, noipa)) void
dlprof_mem_free_event(uint64_t key, uint64_t kind, uint64_t len)
{
	__asm__ volatile(PROBED_NOP : : "r"(key), "r"(kind), "r"(len) : "memory");
}

/* A thread is about to wait for dlprof's drain (throttle): its uprobe wakes dlprof at
 * once (the alloc events wake nobody) */
EXPORT __attribute__((noinline, noipa)) void dlprof_mem_wait_event(void)
{
	__asm__ volatile(PROBED_NOP : : : "memory");
}

/* ---- sampling ---- */

static long mean_bytes;		/* 0: not decided yet; -1: off (not under dlprof) */
static TLS int64_t t_left;	/* bytes until this thread's next sample */
static TLS uint64_t t_rng;
static TLS uint64_t t_calls, t_bytes;	/* not yet added to the totals */
static uint64_t total_calls, total_bytes, total_sampled;
static uint64_t next_seq;	/* the next sampled block's number (memevent.h) */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void decide(void)
{
	const char *v;

	if (!environ)
		return;		/* too early to know: not sampled, asked again later */
	v = getenv("DLPROF_MEM_SAMPLE");
	if (!v || !*v) {
		__atomic_store_n(&mean_bytes, -1, __ATOMIC_RELAXED);
		return;
	}
	long n = strtol(v, NULL, 10);
	/* numbers never seen in this pid before: an image before an exec counted from an
	 * earlier time, and did not sample one allocation a nanosecond */
	__atomic_store_n(&next_seq, mono_ns() & ~MEM_KEY_SEQ, __ATOMIC_RELAXED);
	__atomic_store_n(&mean_bytes, n >= 1 ? n : 512 * 1024, __ATOMIC_RELAXED);
}

static uint64_t next_random(void)
{
	uint64_t x = t_rng;

	if (unlikely(!x)) {
		x = (uint64_t)syscall(SYS_gettid) * 0x9e3779b97f4a7c15ull ^
		    (uint64_t)(uintptr_t)&t_rng ^ __builtin_ia32_rdtsc();
		if (!x)
			x = 1;
	}
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t_rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* an allocation of this many means or more is always sampled (p was 1 - e^-4 = 0.98) */
#define SURE_MEANS 4

/* bytes to the next sample: exponential with the mean, at least 1 */
static int64_t draw(long mean)
{
	double u = ((double)(next_random() >> 11) + 1.0) / 9007199254740993.0;	/* (0, 1] */
	double d = -log(u) * (double)mean;

	return d < 1 ? 1 : d > 4e18 ? (int64_t)4e18 : (int64_t)d;
}

static void flush_totals(void)
{
	__atomic_add_fetch(&total_calls, t_calls, __ATOMIC_RELAXED);
	__atomic_add_fetch(&total_bytes, t_bytes, __ATOMIC_RELAXED);
	t_calls = t_bytes = 0;
}

/*
 * Is an allocation of n bytes sampled?  *weight: the bytes it stands for.  Returns 0 when
 * not (or when not under dlprof).
 */
static int sampled(size_t n, uint64_t *weight)
{
	long mean = __atomic_load_n(&mean_bytes, __ATOMIC_RELAXED);

	if (unlikely(mean == 0)) {
		decide();
		mean = __atomic_load_n(&mean_bytes, __ATOMIC_RELAXED);
		if (!mean)
			return 0;
	}
	if (mean < 0)
		return 0;
	t_bytes += n;
	if (unlikely((++t_calls & 1023) == 0))
		flush_totals();
	if (mean == 1) {
		*weight = n;
		return 1;
	}
	if (unlikely(n >= SURE_MEANS * (size_t)mean)) {
		*weight = n;
		__atomic_add_fetch(&total_sampled, 1, __ATOMIC_RELAXED);
		return 1;
	}
	if (unlikely(t_left == 0))
		t_left = draw(mean);
	t_left -= (int64_t)(n ? n : 1);
	if (likely(t_left > 0))
		return 0;
	t_left = draw(mean);
	/* P(sampled) = 1 - exp(-n/mean): weight n/P (and 1/P allocations) */
	double p = -expm1(-(double)(n ? n : 1) / (double)mean);

	*weight = p > 0 ? (uint64_t)((double)n / p + 0.5) : (uint64_t)mean;
	if (*weight < n)
		*weight = n;
	__atomic_add_fetch(&total_sampled, 1, __ATOMIC_RELAXED);
	return 1;
}

/* ---- the sampled addresses: frees of others must cost next to nothing ---- */

#define NBUCKETS (1u << 16)
#define SLOTS 8

struct bucket {
	uintptr_t slot[SLOTS];	/* 0: free */
	uint64_t seq[SLOTS];	/* the block's number, set by the slot's owner */
};

struct over_ent {
	uintptr_t p;
	uint64_t seq;
};

static struct bucket *table;	/* NBUCKETS, mapped at the first sample */
static uint16_t counts[NBUCKETS];	/* addresses in each bucket (slots and overflow) */
static pthread_mutex_t over_lock = PTHREAD_MUTEX_INITIALIZER;
static struct over_ent *over;	/* addresses whose bucket was full */
static size_t nr_over, alloc_over;

static unsigned bucket_of(uintptr_t p)
{
	uint64_t h = (uint64_t)p * 0x9e3779b97f4a7c15ull;

	return (unsigned)(h >> 48);
}

static int table_ready(void)
{
	struct bucket *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);

	if (likely(t))
		return 1;
	t = (void *)syscall(SYS_mmap, NULL, NBUCKETS * sizeof(struct bucket),
			    PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (t == MAP_FAILED)
		return 0;
	struct bucket *expect = NULL;

	if (!__atomic_compare_exchange_n(&table, &expect, t, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		syscall(SYS_munmap, t, NBUCKETS * sizeof(struct bucket));
	return 1;
}

static void send_free(uint64_t key, uint64_t kind, size_t len);

/*
 * p, sampled as block seq.  A p still there was handed out again without its free going
 * through us (a mapping moved by mremap or unmapped from its middle on, a direct
 * __libc_free): that block is freed now.
 */
static void remember(uintptr_t p, uint64_t seq)
{
	unsigned b = bucket_of(p);
	uint64_t old = 0;

	if (!table_ready())
		return;
	for (int i = 0; i < SLOTS; i++)
		if (__atomic_load_n(&table[b].slot[i], __ATOMIC_ACQUIRE) == p) {
			old = table[b].seq[i];
			__atomic_store_n(&table[b].seq[i], seq, __ATOMIC_RELEASE);
			goto replaced;
		}
	if (__atomic_load_n(&nr_over, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&over_lock);
		for (size_t i = 0; i < nr_over; i++)
			if (over[i].p == p) {
				old = over[i].seq;
				over[i].seq = seq;
				pthread_mutex_unlock(&over_lock);
				goto replaced;
			}
		pthread_mutex_unlock(&over_lock);
	}
	__atomic_add_fetch(&counts[b], 1, __ATOMIC_ACQ_REL);
	for (int i = 0; i < SLOTS; i++) {
		uintptr_t expect = 0;

		/* the slot taken, then its number: only its owner's free reads it after */
		if (__atomic_compare_exchange_n(&table[b].slot[i], &expect, p, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_store_n(&table[b].seq[i], seq, __ATOMIC_RELEASE);
			return;
		}
	}
	pthread_mutex_lock(&over_lock);
	if (nr_over == alloc_over) {
		size_t n = alloc_over ? alloc_over * 2 : 256;
		struct over_ent *v = __libc_realloc(over, n * sizeof(*v));

		if (!v) {
			/* the free will not be seen: the allocation stays live to dlprof */
			pthread_mutex_unlock(&over_lock);
			__atomic_sub_fetch(&counts[b], 1, __ATOMIC_ACQ_REL);
			return;
		}
		over = v;
		alloc_over = n;
	}
	over[nr_over] = (struct over_ent){ p, seq };
	__atomic_store_n(&nr_over, nr_over + 1, __ATOMIC_RELAXED);	/* (read unlocked above) */
	pthread_mutex_unlock(&over_lock);
	return;
replaced:
	send_free(old | MEM_KEY_SEQ, MEM_FREE_FREE, 0);
}

/* Was p sampled?  Its number (0: not sampled), forgotten. */
static uint64_t forget(uintptr_t p)
{
	unsigned b = bucket_of(p);
	uint64_t seq = 0;

	if (likely(!__atomic_load_n(&counts[b], __ATOMIC_ACQUIRE)))
		return 0;
	for (int i = 0; i < SLOTS; i++) {
		uintptr_t expect = p;

		if (__atomic_load_n(&table[b].slot[i], __ATOMIC_RELAXED) != p)
			continue;
		/* read before the slot goes: another thread may take it at once */
		seq = __atomic_load_n(&table[b].seq[i], __ATOMIC_ACQUIRE);
		if (__atomic_compare_exchange_n(&table[b].slot[i], &expect, 0, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			__atomic_sub_fetch(&counts[b], 1, __ATOMIC_ACQ_REL);
			return seq ? seq : 1;
		}
	}
	pthread_mutex_lock(&over_lock);
	for (size_t i = 0; i < nr_over; i++)
		if (over[i].p == p) {
			seq = over[i].seq ? over[i].seq : 1;
			over[i] = over[nr_over - 1];
			__atomic_store_n(&nr_over, nr_over - 1, __ATOMIC_RELAXED);
			break;
		}
	pthread_mutex_unlock(&over_lock);
	if (seq)
		__atomic_sub_fetch(&counts[b], 1, __ATOMIC_ACQ_REL);
	return seq;
}

/* ---- back-pressure (memevent.h) ---- */

static struct mem_shared *shared;	/* NULL: not mapped (yet) */
static int shared_tried, shared_no_ring;
static pid_t my_pid;			/* getpid(), kept; a fork child's own */
static TLS pid_t t_tid;

static struct mem_shared *shared_map(void)
{
	const char *path;
	struct stat st;
	size_t size;
	int fd;
	void *m;

	if (likely(__atomic_load_n(&shared_tried, __ATOMIC_ACQUIRE)))
		return __atomic_load_n(&shared, __ATOMIC_ACQUIRE);
	path = getenv(MEM_ENV_SHARED);
	if (path && *path && (fd = (int)syscall(SYS_open, path, O_RDWR | O_CLOEXEC)) >= 0) {
		/* the counters; the free ring too when the file holds it */
		size = !syscall(SYS_fstat, fd, &st) && (size_t)st.st_size >= MEM_SHARED_SIZE ?
		       MEM_SHARED_SIZE : offsetof(struct mem_shared, free_ring);
		m = (void *)syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		syscall(SYS_close, fd);
		if (m != MAP_FAILED) {
			struct mem_shared *expect = NULL;

			if (size < MEM_SHARED_SIZE)
				shared_no_ring = 1;
			if (!__atomic_compare_exchange_n(&shared, &expect, m, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE))
				syscall(SYS_munmap, m, size);
		}
	}
	__atomic_store_n(&shared_tried, 1, __ATOMIC_RELEASE);
	return __atomic_load_n(&shared, __ATOMIC_ACQUIRE);
}

/* Before an alloc event: wait while dlprof has more than its limit of them to drain,
 * asleep on the futex dlprof wakes after its drains (memevent.h). */
static void throttle(void)
{
	struct mem_shared *sh = shared_map();
	uint64_t n, limit, t0 = 0;

	if (!sh || !(limit = __atomic_load_n(&sh->limit, __ATOMIC_RELAXED)))
		return;
	n = __atomic_fetch_add(&sh->produced, 1, __ATOMIC_ACQ_REL);
	for (;;) {
		struct timespec ts = { 0, 1000000 };
		uint32_t seq;
		int64_t ahead;
		uint64_t now;

		/* counted as waiting before looking: dlprof credits consumed, then reads
		 * waiters; so either this look sees the credit, or dlprof sees this waiter and
		 * bumps wake_seq after seq was read (no wake-up missed) */
		__atomic_add_fetch(&sh->waiters, 1, __ATOMIC_SEQ_CST);
		seq = __atomic_load_n(&sh->wake_seq, __ATOMIC_SEQ_CST);
		ahead = (int64_t)(n - __atomic_load_n(&sh->consumed, __ATOMIC_SEQ_CST));
		now = ahead < (int64_t)limit ? 0 : mono_ns();
		if (!t0 && now)
			dlprof_mem_wait_event();	/* dlprof: drain now */
		if (!t0)
			t0 = now;
		if (now && now - t0 <= MEM_WAIT_MAX_NS)
			/* asleep until dlprof drains (it bumps wake_seq), 1 ms at most a time */
			syscall(SYS_futex, &sh->wake_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
		__atomic_sub_fetch(&sh->waiters, 1, __ATOMIC_SEQ_CST);
		if (!now || now - t0 > MEM_WAIT_MAX_NS)
			return;
	}
}

/* ---- the allocating thread's Python frames (memevent.h) ---- */

#define PY_TS_READ	168	/* enough of a PyThreadState for the fields read */
#define PY_FR_READ	72	/* ... of an interpreter frame */
#define PY_WINDOW	4096	/* frames are read a window at a time */

static TLS uint64_t t_py[2 * MEM_PY_FRAMES];

/* n bytes at addr of this process, read so that a bad address is an error */
static int self_read(uint64_t addr, void *buf, size_t n)
{
	struct iovec l = { buf, n }, r = { (void *)(uintptr_t)addr, n };

	return syscall(SYS_process_vm_readv, my_pid, &l, 1ul, &r, 1ul, 0ul) == (long)n ? 0 : -1;
}

/* This process's entry of the shared file, copied whole; 0 when there is none. */
static int py_walk_of(struct mem_shared *sh, struct mem_pywalk *w)
{
	for (int i = 0; i < MEM_PY_PROCS; i++) {
		struct mem_pywalk *e = &sh->py[i];
		uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

		if (seq & 1 || __atomic_load_n(&e->pid, __ATOMIC_RELAXED) != (uint32_t)my_pid)
			continue;
		memcpy(w, e, sizeof(*w));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == seq && w->pid == (uint32_t)my_pid;
	}
	return 0;
}

/* Walk this thread's interpreter frames into t_py; how many (0: none, or not read). */
static __attribute__((noinline)) size_t py_frames(void)
{
	struct mem_shared *sh = shared_map();
	struct mem_pywalk w;
	unsigned char ts[PY_TS_READ], win[PY_WINDOW];
	uint64_t interp = 0, f = 0, lo = 0, hi = 0;
	int32_t tss[2], tid = 0;
	size_t n = 0;
	void *t;

	if (!sh)
		return 0;
	if (unlikely(!my_pid))
		my_pid = (pid_t)syscall(SYS_getpid);
	if (unlikely(!t_tid))
		t_tid = (pid_t)syscall(SYS_gettid);
	if (!py_walk_of(sh, &w) || w.ts_interp + 8 > PY_TS_READ || w.ts_tid + 4 > PY_TS_READ ||
	    w.ts_frame + 8 > PY_TS_READ)
		return 0;
	/* read as the rest: an entry dlprof has not yet dropped after this process exec'd
	 * names addresses of the image before */
	if (self_read(w.tss, tss, sizeof(tss)) < 0 || tss[0] != 1 || tss[1] < 0 || tss[1] >= 1024)
		return 0;	/* not set (the interpreter finalized), or not a key */
	t = pthread_getspecific((pthread_key_t)tss[1]);
	if (!t || self_read((uintptr_t)t, ts, sizeof(ts)) < 0)
		return 0;	/* no Python thread state: not a Python thread */
	memcpy(&interp, ts + w.ts_interp, 8);
	memcpy(&tid, ts + w.ts_tid, 4);
	memcpy(&f, ts + w.ts_frame, 8);
	if (interp != w.interp || tid != t_tid)
		return 0;
	if (w.cf_current != MEM_PY_NONE && f && self_read(f + w.cf_current, &f, 8) < 0)
		return 0;
	while (f) {
		const unsigned char *fr;
		uint64_t code, instr, prev;
		uint64_t flags = 0;

		if (n == MEM_PY_FRAMES || f > UINT64_MAX - PY_FR_READ)
			return 0;	/* too deep (or nonsense): read from outside */
		if (f < lo || f + PY_FR_READ > hi) {
			/* older frames lie below, in the same chunk: as far down as the page */
			lo = f + PY_FR_READ > PY_WINDOW ? f + PY_FR_READ - PY_WINDOW : 0;
			if (lo < (f & ~4095ull))
				lo = f & ~4095ull;
			hi = f + PY_FR_READ;
			if (self_read(lo, win, (size_t)(hi - lo)) < 0)
				return 0;
		}
		fr = win + (f - lo);
		memcpy(&code, fr + w.fr_code, 8);
		memcpy(&prev, fr + w.fr_previous, 8);
		memcpy(&instr, fr + w.fr_instr, 8);
		if (fr[w.fr_owner] == MEM_PY_OWNED_BY_CSTACK)
			flags |= MEM_PY_SHIM;
		else if (fr[w.fr_owner] == MEM_PY_OWNED_BY_GENERATOR)
			flags |= MEM_PY_GEN;	/* FRAME_OWNED_BY_GENERATOR */
		if (w.fr_is_entry != MEM_PY_NONE && fr[w.fr_is_entry])
			flags |= MEM_PY_ENTRY;
		t_py[2 * n] = (code & ~7ull) | flags;
		t_py[2 * n + 1] = instr;
		n++;
		f = prev;
	}
	return n;
}

/* The alloc event, with this thread's Python frames on the stack when it has them. */
static __attribute__((noinline)) void alloc_event(uintptr_t p, uint64_t n, uint64_t weight,
						  uint64_t kind)
{
	size_t npy = py_frames();
	uint64_t py[2 * (npy ? npy : 1)];	/* in the stack copy the event carries */

	memcpy(py, t_py, npy * 16);
	throttle();
	dlprof_mem_alloc_event(p, n, weight, kind, py, npy);
}

static void on_alloc(void *p, size_t n, uint64_t kind)
{
	uint64_t weight, seq = 0;

	if (p && sampled(n, &weight)) {
		if (__atomic_load_n(&mean_bytes, __ATOMIC_RELAXED) != 1) {
			seq = __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED);
			remember((uintptr_t)p, seq);
		}
		alloc_event((uintptr_t)p, n, weight, kind | seq << MEM_KIND_BITS);
	}
}

/* A free into the shared ring (memevent.h); 0 when there is no ring or no room. */
static int ring_free(uint64_t key)
{
	struct mem_shared *sh = shared_map();
	struct mem_free_slot *e;
	uint64_t pos;

	if (!sh || shared_no_ring || !__atomic_load_n(&sh->free_ring_on, __ATOMIC_RELAXED))
		return 0;
	pos = __atomic_load_n(&sh->free_head, __ATOMIC_RELAXED);
	for (;;) {
		int64_t dif;

		e = &sh->free_ring[pos & (MEM_FREE_RING - 1)];
		dif = (int64_t)(__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) - pos);
		if (dif == 0) {
			if (__atomic_compare_exchange_n(&sh->free_head, &pos, pos + 1, 1,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				break;
		} else if (dif < 0) {
			return 0;	/* full: dlprof is behind */
		} else {
			pos = __atomic_load_n(&sh->free_head, __ATOMIC_RELAXED);
		}
	}
	if (unlikely(!my_pid))
		my_pid = (pid_t)syscall(SYS_getpid);
	if (unlikely(!t_tid))
		t_tid = (pid_t)syscall(SYS_gettid);
	e->time = mono_ns();
	e->key = key;
	e->pid = (uint32_t)my_pid;
	e->tid = (uint32_t)t_tid;
	__atomic_store_n(&e->seq, pos + 1, __ATOMIC_RELEASE);
	return 1;
}

static void send_free(uint64_t key, uint64_t kind, size_t len)
{
	if (!ring_free(key))
		dlprof_mem_free_event(key, kind, len);
}

/* Before the memory goes back: was it sampled (every free when every allocation is)? */
static void on_free(void *p, uint64_t kind, size_t len)
{
	long mean = __atomic_load_n(&mean_bytes, __ATOMIC_RELAXED);
	uint64_t seq;

	if (!p || mean <= 0)
		return;
	if (mean == 1)
		send_free((uintptr_t)p, kind, len);
	else if ((seq = forget((uintptr_t)p)))
		send_free(seq | MEM_KEY_SEQ, kind, len);
}

/* ---- the C allocator ---- */

EXPORT void *malloc(size_t n)
{
	void *p = __libc_malloc(n);

	on_alloc(p, n, MEM_KIND_MALLOC);
	return p;
}

EXPORT void *calloc(size_t nmemb, size_t size)
{
	void *p = __libc_calloc(nmemb, size);

	on_alloc(p, nmemb * size, MEM_KIND_CALLOC);
	return p;
}

EXPORT void free(void *p)
{
	on_free(p, MEM_FREE_FREE, 0);
	__libc_free(p);
}

EXPORT void *realloc(void *old, size_t n)
{
	void *p;

	if (!old)
		return malloc(n);
	if (!n) {
		free(old);
		return NULL;
	}
	/* the old block's free first: once realloc returns, another thread may get it */
	on_free(old, MEM_FREE_REALLOC, 0);
	p = __libc_realloc(old, n);
	if (!p) {
		/* old is still there: still sampled, if it was (its size is what it has) */
		on_alloc(old, malloc_usable_size(old), MEM_KIND_REALLOC);
		return NULL;
	}
	on_alloc(p, n, MEM_KIND_REALLOC);
	return p;
}

EXPORT void *reallocarray(void *old, size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	on_alloc(p, n, MEM_KIND_MEMALIGN);
	*out = p;
	return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	void *p = __libc_memalign(align, n);

	on_alloc(p, n, MEM_KIND_MEMALIGN);
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	void *p = __libc_memalign(align, n);

	on_alloc(p, n, MEM_KIND_MEMALIGN);
	return p;
}

EXPORT void *valloc(size_t n)
{
	void *p = __libc_valloc(n);

	on_alloc(p, n, MEM_KIND_MEMALIGN);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	void *p = __libc_pvalloc(n);

	on_alloc(p, n, MEM_KIND_MEMALIGN);
	return p;
}

/* ---- anonymous mappings made outside glibc's allocator ---- */

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	void *p = (void *)r;

	if (r == -1)
		return MAP_FAILED;
	/* memory, not a file, not a reservation, not a remap of memory seen already */
	if ((flags & MAP_ANONYMOUS) && !(flags & MAP_FIXED) && prot != PROT_NONE)
		on_alloc(p, len, MEM_KIND_MMAP);
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	on_free(addr, MEM_FREE_MUNMAP, len);
	return (int)syscall(SYS_munmap, addr, len);
}

/* ---- fork and exit ---- */

static void atfork_prepare(void)
{
	pthread_mutex_lock(&over_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&over_lock);
}

static void atfork_child(void)
{
	pthread_mutex_init(&over_lock, NULL);
	t_left = 0;	/* its own draws */
	t_rng = 0;
	my_pid = 0;	/* its own pid and thread id in the free ring */
	t_tid = 0;
	total_calls = total_bytes = total_sampled = 0;
	t_calls = t_bytes = 0;
}

__attribute__((constructor)) static void mem_init(void)
{
	if (!__atomic_load_n(&mean_bytes, __ATOMIC_RELAXED))
		decide();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* RssAnon of /proc/self/status in bytes, 0 when unknown (read without allocating) */
static uint64_t rss_anon(void)
{
	char buf[4096], *s;
	int fd = (int)syscall(SYS_open, "/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = (ssize_t)syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	s = strstr(buf, "RssAnon:");
	if (!s)
		return 0;
	return (uint64_t)strtoull(s + 8, NULL, 10) * 1024;
}

__attribute__((destructor)) static void mem_fini(void)
{
	if (__atomic_load_n(&mean_bytes, __ATOMIC_RELAXED) <= 0)
		return;
	flush_totals();
	throttle();
	dlprof_mem_alloc_event(__atomic_load_n(&total_calls, __ATOMIC_RELAXED),
			       __atomic_load_n(&total_bytes, __ATOMIC_RELAXED), rss_anon(),
			       MEM_KIND_STATS, NULL, 0);
}
