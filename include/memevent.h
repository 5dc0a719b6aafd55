/* memevent.h - what libdlprof-mem.so (lib/inject/mem-interpose.c) tells dlprof record --memory.
 *
 * Two empty functions of the library are watched by uprobes (record.c makes them trace
 * events in tracefs and opens them as the events "mem-alloc" and "mem-free"); their
 * arguments arrive in the sample's user registers:
 *   dlprof_mem_alloc_event(addr, size, weight, kind | seq << MEM_KIND_BITS, py, npy)
 *						DI SI DX CX R8 R9, with the stack copy
 *   dlprof_mem_free_event(key, kind, len)		DI SI DX, no stack worth keeping
 * seq: the sampled block's number, from a counter of the process's sampled allocations
 * that starts at CLOCK_MONOTONIC when the library starts in a process image (so numbers
 * are never reused within a pid, exec included; a fork child goes on from its parent's
 * count).  A free names its block by key: seq | MEM_KEY_SEQ.  With every allocation
 * sampled (DLPROF_MEM_SAMPLE=1) the library keeps no table of sampled blocks: seq is 0
 * and a free's key is its address (the reader matches it by time and address).
 * A sampled block's address handed out again without a free seen (a mapping moved by
 * mremap, a direct __libc_free) is freed by the library at that moment, by its key.
 * A free goes through the shared free ring below when it can (record writes those as
 * DLP_REC_MEMFREE records), through the free event when not.
 * weight: the bytes the sampled allocation stands for (size / P(sampled)); its count
 * estimate is weight / size.  An alloc event of kind MEM_KIND_STATS is the process's
 * exit: DI the allocation calls seen, SI their bytes, DX its resident anonymous memory.
 * py, npy: the allocating thread's Python frames, read by the thread itself at the call
 * (below), on its stack where the copy holds them; npy 0 when it has none to give.
 */
#ifndef DLPROF_MEMEVENT_H
#define DLPROF_MEMEVENT_H

#include <stdint.h>

#define MEM_ALLOC_FUNC	"dlprof_mem_alloc_event"
#define MEM_FREE_FUNC	"dlprof_mem_free_event"
#define MEM_WAIT_FUNC	"dlprof_mem_wait_event"
#define MEM_LIBRARY	"libdlprof-mem.so"
#define MEM_ENV_SAMPLE	"DLPROF_MEM_SAMPLE"	/* mean bytes between samples; 1: all */
#define MEM_DEFAULT_SAMPLE (512u * 1024)	/* tcmalloc's default */
#define MEM_ENV_SHARED	"DLPROF_MEM_SHARED"	/* the file of struct mem_shared */

/*
 * The file both map (MEM_ENV_SHARED names it; fork children keep the mapping, an exec'd
 * program maps it again), a page of counters, then the ring of frees:
 *
 * Back-pressure: the alloc events carry a stack copy each (tens of KiB in the ring), and
 * with every allocation sampled a workload makes them faster than dlprof can drain.  The
 * library counts the events it makes (produced), dlprof those it drained (consumed); past
 * limit in flight the library waits (at most MEM_WAIT_MAX_NS per event: a dlprof that
 * stopped draining never hangs the workload), asleep on the futex wake_seq, which dlprof
 * bumps and wakes after a drain while someone waits (a sleep-and-look loop made 16
 * threads of two processes, all waiting, take the CPU dlprof needed to drain: 1 ms an
 * allocation).  The alloc events wake nobody (dlprof reads them at its ring's watermark
 * or its next look): a thread that must wait first calls MEM_WAIT_FUNC, whose uprobe
 * event wakes dlprof at once (an alloc event waking dlprof every few made a third of the
 * CNN's context switches, each an off-CPU sample and a switch record in the file).
 *
 * Frees: a free of a sampled block needs no stack, only its time, address and thread, so
 * it does not trap into the kernel: the library puts it in free_ring, a bounded queue of
 * any number of writers (every thread of every process) and one reader (record's drain):
 * a writer takes position pos (free_head) when its slot's seq is pos, fills the slot and
 * sets seq to pos + 1; the reader takes slot pos when seq is pos + 1 and hands it back
 * with seq pos + MEM_FREE_RING.  A full ring, or no ring, sends the free as the uprobe
 * event instead (nothing is lost).  The time is CLOCK_MONOTONIC (the samples' clock),
 * taken before the memory goes back, so an allocation at the same address later comes
 * after it.
 */
#define MEM_FREE_RING	(1u << 16)	/* slots, a power of two */

/*
 * Python frames at the allocation: record reads a Python thread's frames from outside,
 * which for an allocation sample is late (the alloc events wake it every few) and can
 * name the line the thread went on to.  So where dlprof knows a process is CPython
 * 3.11-3.13 it puts in py[] what the library needs to read its own thread's frames: the
 * interpreter's thread-state key (Py_tss_t: int initialized, pthread key; the key's
 * value is the thread's PyThreadState), the main interpreter, and the structure offsets
 * (pyread.c lists them).  At a sampled allocation the library checks that the thread
 * state is its own (interp, native thread id), walks its frames innermost first through
 * process_vm_readv on itself (a frame freed under a daemon thread at interpreter exit is
 * an error, not a crash) and passes them in a buffer on its stack as pairs of u64:
 * code object address | MEM_PY_* flags, the frame's instruction pointer.  A chain of more
 * than MEM_PY_FRAMES frames is not passed (npy 0: record reads it from outside).
 * An entry is written under seq (odd while dlprof writes it; the library copies it and
 * checks seq did not move).
 */
#define MEM_PY_PROCS	16
#define MEM_PY_FRAMES	128
#define MEM_PY_SHIM	1u	/* the frame is an eval loop's entry shim (3.12+) */
#define MEM_PY_ENTRY	2u	/* the frame is the first of its eval loop (3.11 is_entry) */
#define MEM_PY_GEN	4u	/* the frame belongs to a generator or coroutine */
#define MEM_PY_NONE	0xffffu	/* an offset that does not exist (3.13: _PyCFrame) */
/* _PyInterpreterFrame.owner values the flags come from (CPython's FRAME_OWNED_BY_*) */
#define MEM_PY_OWNED_BY_GENERATOR 1
#define MEM_PY_OWNED_BY_CSTACK	3	/* 3.12+: an eval loop's entry shim */

struct mem_pywalk {
	uint32_t seq;
	uint32_t pid;		/* 0: a free entry */
	uint64_t tss;		/* address of the interpreter's Py_tss_t */
	uint64_t interp;	/* the main PyInterpreterState */
	uint16_t ts_interp, ts_tid, ts_frame;	/* PyThreadState: interp, native_thread_id,
						   cframe (3.13: current_frame) */
	uint16_t cf_current;	/* _PyCFrame.current_frame, MEM_PY_NONE in 3.13 */
	uint16_t fr_code, fr_previous, fr_instr, fr_owner;	/* _PyInterpreterFrame */
	uint16_t fr_is_entry;	/* MEM_PY_NONE: none (3.12+) */
	uint16_t pad[3];
};

struct mem_free_slot {
	uint64_t seq;
	uint64_t time;
	uint64_t key;		/* the block's seq | MEM_KEY_SEQ, or its address (above) */
	uint32_t pid, tid;
};
#define MEM_KIND_BITS	4
#define MEM_KIND_MASK	((1ull << MEM_KIND_BITS) - 1)
#define MEM_KEY_SEQ	(1ull << 63)

struct mem_shared {
	uint64_t produced;
	uint64_t pad[7];	/* its own cache line */
	uint64_t consumed;
	uint64_t limit;		/* 0: no waiting */
	uint32_t wake_seq;	/* a futex: dlprof adds 1 and wakes the waiters when it
				   drained while some were waiting */
	uint32_t waiters;	/* threads waiting on it */
	uint64_t pad2[5];
	uint64_t free_head;	/* the next position a writer takes */
	uint64_t pad3[7];
	uint64_t free_ring_on;	/* 1: free_ring is there (the file is MEM_SHARED_SIZE) */
	struct mem_pywalk py[MEM_PY_PROCS];
	uint64_t pad4[487 - MEM_PY_PROCS * sizeof(struct mem_pywalk) / 8];	/* the ring starts
				   on the second page */
	struct mem_free_slot free_ring[MEM_FREE_RING];
};
#define MEM_SHARED_SIZE	sizeof(struct mem_shared)
#define MEM_WAIT_MAX_NS	20000000ull

enum mem_kind {
	MEM_KIND_MALLOC = 1,
	MEM_KIND_CALLOC,
	MEM_KIND_REALLOC,
	MEM_KIND_MEMALIGN,	/* posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
	MEM_KIND_MMAP,		/* an anonymous mmap outside glibc's allocator */
	MEM_KIND_STATS = 9,
};

enum mem_free_kind {
	MEM_FREE_FREE = 1,
	MEM_FREE_REALLOC,	/* the old block of a realloc */
	MEM_FREE_MUNMAP,
};

/* perf register indexes (PERF_REG_X86_*) of the arguments */
#define MEM_REG_DI 5
#define MEM_REG_SI 4
#define MEM_REG_DX 3
#define MEM_REG_CX 2
#define MEM_REG_R8 16
#define MEM_REG_R9 17

#endif
