/* pybpf.h - Python stacks read in the kernel at the sample (lib/record/pybpf.bpf.c, loaded
 * by lib/record/pybpf.c).
 *
 * A BPF program on the sampling events (BPF_PROG_TYPE_PERF_EVENT, run on each overflow,
 * before the sample is written) reads the sampled thread's chain of interpreter frames
 * from its memory (bpf_probe_read_user) when the thread is one record told it about, and
 * puts it in a BPF ring buffer, with no wake-up: record drains it with the perf rings and
 * joins each chain to its sample (same thread, the sample's time just after the chain's).
 * The read is at the sample, so it is exact, and record needs no wake-up per sample (it
 * did to read the frames from outside soon enough).  Where BPF is not there (no
 * CONFIG_BPF_SYSCALL, no CAP_BPF, a verifier that refuses), record reads from outside.
 */
#ifndef DLPROF_PYBPF_H
#define DLPROF_PYBPF_H

#include <stddef.h>
#include <stdint.h>

#define PYBPF_MAXF	256	/* frames a chain holds; deeper ones are flagged */
#define PYBPF_TRUNC	0x80000000u	/* in n: the chain went on */
#define PYBPF_FAIL	0x40000000u	/* in n: a read failed on the way */
#define PYBPF_GIL	0x10000000u	/* in n: the thread held the GIL (its state the last
					   holder, the lock taken) */
#define PYBPF_EXACT	0x08000000u	/* in n: time is the sample's own (pybpf.bpf.c,
					   sample_time) */
#define PYBPF_STALE	0x04000000u	/* in n: the thread's listed state is not its own */

/* What the program needs to read a thread (the tid map's value). */
struct pybpf_thread {
	uint64_t tstate;	/* its PyThreadState */
	uint16_t ts_frame;	/* PyThreadState.cframe (3.13: current_frame) */
	uint16_t cf_current;	/* _PyCFrame.current_frame, 0xffff: none (3.13) */
	uint16_t ts_tid;	/* PyThreadState.native_thread_id */
	uint16_t layout;	/* which of the frame layouts pybpf_new() was given */
	/* set by the program in an entry it copied at a fork (pybpf.bpf.c, forked): the
	 * forking thread and its process; 0 in those record lists */
	uint32_t from_tid, from_pid;
	uint32_t ns_tid;	/* the id the state holds where not the thread's (a thread of
				   another PID namespace: its id there), else 0 */
	uint16_t ob_base;	/* where its objects' fields start as a default build's (0;
				   16 in a free-threaded one: pyread-priv.h) */
	uint16_t pad;
	uint64_t gil;		/* its process's GIL state (pyreader_gil), 0: not known */
};

struct pybpf;
/* A reader of frames of these layouts (pyreader_frame_layouts()); NULL (and why in *why,
 * static) when BPF cannot be used here. */
/* An interpreter frame's layout (_PyInterpreterFrame): its fields' offsets */
struct pyframe_layout {
	uint16_t code, previous, instr, owner;
	uint16_t is_entry;	/* MEM_PY_NONE: none */
};
/* native: walk each sample's native frames too (pybpf_native_*): PYBPF_NATIVE_BESIDE
 * the stack copy, or PYBPF_NATIVE_INSTEAD of it where the walk reached the thread's
 * root (the sample's own record dropped, the walk's in its place) */
enum { PYBPF_NATIVE_OFF, PYBPF_NATIVE_BESIDE, PYBPF_NATIVE_INSTEAD };
/* one_event: record samples one event, whose samples come with the registers of their
 * moment (not a scheduler's or a tracepoint's, made up where they fire): the switch-outs
 * then run the sampling event's program, which tells them apart, and no other is loaded */
struct pybpf *pybpf_new(const struct pyframe_layout *lays, size_t nr, int native,
			int one_event, const char **why);
void pybpf_free(struct pybpf *pb);
/* Run the program on this sampling event (and the events it passes to threads it
 * makes from now on): the one that may drop a sample walked in the kernel (record's
 * first event), or the one that drops none.  0, or -errno. */
int pybpf_attach(struct pybpf *pb, int perf_fd, int may_drop);
/* The switch-outs' event (record's EVENT, > 0): where the native walk stands in for the
 * copies, their records are dropped where the walk is whole, and remade as EVENT's;
 * elsewhere as pybpf_attach(may_drop 0) */
int pybpf_attach_switch(struct pybpf *pb, int perf_fd, uint32_t event);
int pybpf_set_thread(struct pybpf *pb, uint32_t tid, const struct pybpf_thread *t);
void pybpf_drop_thread(struct pybpf *pb, uint32_t tid);

/* The code objects of a chain that the program had not met (in that process, at that
 * address, as that object: the XOR of its names' and line table's pointers) are read at
 * the sample too, before the chain is written: a code record each, at most
 * PYBPF_CODE_BUDGET a sample (the others at a later sample, if they live).  Its layout in
 * the ring buffer: u32 pid, u32 PYBPF_CODE (where a chain has its frame count), u64
 * address, u64 the sample's time, u64 the line table's size (its ob_size), u32 what was
 * read (PYBPF_GOT_*), u32 0, PYBPF_CODE_HEAD bytes of the object, PYBPF_STR_READ bytes of
 * its co_qualname's object and as many of its co_filename's (each as it lies: the str
 * header, then its characters), then up to PYBPF_TAB_READ bytes of the line table, as the
 * record's length says. */
#define PYBPF_CODE		0x20000000u
#define PYBPF_CODE_BUDGET	32
#define PYBPF_CODE_HEAD		192	/* up to 3.13's _co_firsttraceable, with room */
#define PYBPF_STR_READ		328	/* a compact str's header (72 at most) + 256 bytes */
#define PYBPF_TAB_READ		4096
#define PYBPF_CO_FILENAME	112	/* PyCodeObject, 3.11 to 3.13 */
#define PYBPF_CO_QUALNAME	128
#define PYBPF_CO_LINETABLE	136
#define PYBPF_GOT_HEAD		1u
#define PYBPF_GOT_QUALNAME	2u
#define PYBPF_GOT_FILENAME	4u
#define PYBPF_GOT_TAB		8u

struct pybpf_code {
	uint32_t pid;
	uint64_t addr;
	uint64_t time;			/* the sample's (as its chain's) */
	const unsigned char *head;	/* PYBPF_CODE_HEAD bytes */
	const unsigned char *qualname, *filename;	/* PYBPF_STR_READ bytes; NULL: unread */
	const unsigned char *tab;	/* tab_len bytes of the line table; NULL: unread */
	size_t tab_len;
	uint64_t tab_size;		/* its whole size */
};
typedef void pybpf_code_fn(void *ctx, const struct pybpf_code *code);

/* NULL when the program reads code objects, else why not (a kernel without bpf_loop,
 * 5.17, or BTF; DLPROF_NO_BPF_CODES). */
const char *pybpf_codes_off(const struct pybpf *pb);

/* A chain as the program read it: pairs of u64, code object address | MEM_PY_* flags
 * (memevent.h), instruction pointer; innermost first. */
typedef void pybpf_chain_fn(void *ctx, uint32_t tid, uint64_t time, const uint64_t *chain,
			    uint32_t n, unsigned flags);
#define PYBPF_CHAIN_FAILED 1u	/* a read failed on the way, or deeper than PYBPF_MAXF */
#define PYBPF_CHAIN_GIL    2u	/* the thread held the GIL (PYBPF_GIL) */
#define PYBPF_CHAIN_EXACT  4u	/* its time is its sample's, to the nanosecond */
#define PYBPF_CHAIN_STALE  8u	/* the thread's listed state was not its own (PYBPF_STALE) */
/* Hand over every code record and chain in the ring buffer, in order; how many chains. */
size_t pybpf_drain(struct pybpf *pb, pybpf_chain_fn *fn, pybpf_code_fn *code_fn, void *ctx);
/* Chains the ring buffer had no room for (the drain was late). */
uint64_t pybpf_dropped(const struct pybpf *pb);
/* The descriptors that become readable when a ring is half full (the program wakes record
 * then, not at each record): up to two, into fds; how many.  The walks' ring is polled
 * only where they stand in for the copies (read at each sample beside them). */
int pybpf_poll_fds(const struct pybpf *pb, int fds[2]);

/* The native walk (kunwind.h, lib/record/kstack.c): at each sample, the thread's native
 * frames walked with the tables of the files its process maps, as far as they go. */
struct unw_ktable;
struct kunw_proc;
struct kunw_chain;
/* how it runs (PYBPF_NATIVE_*: 0 where not asked, or the kernel has no bpf_loop) */
int pybpf_native(const struct pybpf *pb);
/* the table of file fid (0 .. KUNW_MAX_FILES - 1); process pid's code mappings */
int pybpf_native_table(struct pybpf *pb, uint32_t fid, const struct unw_ktable *kt);
/* tables made that the kernel did not take (their files stay without) */
uint64_t pybpf_native_tables_failed(struct pybpf *pb);
int pybpf_native_proc(struct pybpf *pb, uint32_t pid, const struct kunw_proc *p);
/* Whether a walk read a row of file fid's table: 1, 0, or -errno */
int pybpf_native_walked(struct pybpf *pb, uint32_t fid);
void pybpf_native_drop(struct pybpf *pb, uint32_t pid);
/* the walks written since the last drain, in order */
typedef void pybpf_native_fn(void *ctx, const struct kunw_chain *c);
void pybpf_native_drain(struct pybpf *pb, pybpf_native_fn *fn, void *ctx);
uint64_t pybpf_native_dropped(const struct pybpf *pb);
/* The kernel's count of the program's runs and the time they took (kernel.bpf_stats),
 * counted from pybpf_stats_on() while pb lives.  0, or -errno. */
int pybpf_stats_on(struct pybpf *pb);
int pybpf_stats(const struct pybpf *pb, uint64_t *runs, uint64_t *ns);

#endif
