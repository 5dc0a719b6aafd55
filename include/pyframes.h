/* pyframes.h - Python frames: read from a CPython process at record time (lib/pyread.c),
 * merged into the native stacks at report time (lib/pystack.c).
 *
 * Recording: for each sample of a thread of a CPython 3.11-3.13 process, the thread's chain
 * of interpreter frames is read as the sample is taken (in the kernel, pybpf.h; by the
 * allocating thread, memevent.h) and written once per distinct chain (DLP_REC_PYCHAIN),
 * which the sample's record names; where that cannot be, dlprof record reads it from
 * outside (process_vm_readv) right after the sample, checks it against the sample's own
 * stack copy, and writes it as a chain too (or a DLP_REC_PYSTACK record, with its time
 * and delay, where the samples are written as they come, and for a stack moved on or
 * unreadable).  Each code object the chains name is
 * written once, as a DLP_REC_PYCODE record (qualified name, file, first line), with the
 * line of each of its instructions the samples ran.
 *
 * The check: _PyEval_EvalFrameDefault keeps its _PyCFrame on the C stack, and the
 * thread state points at it (tstate->cframe); its current_frame is the interpreter frame
 * running at that instant.  Where that _PyCFrame lies in the sample's stack copy, the copy
 * holds current_frame as it was at the sample: the chain read later is kept when that
 * frame is still on it (the frames from it to the root are then those of the sample),
 * else the sample is "moved" (the Python code went on) and keeps its native stack only.
 */
#ifndef DLPROF_PYFRAMES_H
#define DLPROF_PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

/* DLP_REC_PYCODE payload: this struct, then qualname and file name (no NUL), then
 * linetable_len bytes: with DLP_PYCODE_LINES (what record writes), pairs of int32 (code
 * unit index, line: -1 when the instruction has no line) giving the line of each
 * instruction the samples ran, from the code object's location table (co_linetable)
 * at record time; a code object's first record has its names, later ones (names of
 * length 0) the lines of instructions met since.  Without the flag (recordings made
 * before it): the location table itself, CPython 3.11's format (as 3.12's and 3.13's),
 * or the part of it that covers the instructions run so far, continued at
 * linetable_off by later records of the same id. */
struct dlp_pycode_rec {
	uint32_t id;		/* the recording's number for the code object, 1.. */
	int32_t pid;
	uint64_t addr;		/* before format 4: where it was (for the curious); 0 */
	uint32_t firstlineno;
	uint16_t qualname_len, file_len;
	uint32_t linetable_len;
	uint32_t pyversion;	/* PY_VERSION_HEX of the interpreter */
	uint32_t linetable_off;	/* without DLP_PYCODE_LINES: where these bytes go in the
				   table: 0, or the end of what earlier records gave */
	uint32_t flags;		/* DLP_PYCODE_* */
};

#define DLP_PYCODE_LINES 1u	/* the bytes after the names are (code unit, line) pairs */

/* DLP_REC_PYSTACK states */
enum {
	DLP_PY_TRUSTED = 1,	/* checked against the sample's stack copy */
	DLP_PY_UNCHECKED = 2,	/* no stack copy to check it against (fp, none) */
	DLP_PY_MOVED = 3,	/* the sample's frame was gone when read: no frames */
	DLP_PY_FAILED = 4,	/* a memory read failed (the thread was exiting, ...) */
};

/* DLP_REC_PYSTACK flags */
#define DLP_PYSTACK_OWN	1u	/* read by the thread itself at the sample (an allocation of
				   record --memory, memevent.h): exact, delay 0 */
#define DLP_PYSTACK_KERNEL 2u	/* read in the kernel at the sample (pybpf.h): exact */
#define DLP_PYSTACK_CHAIN 4u	/* the frames are a DLP_REC_PYCHAIN's: a u32 chain id
				   follows the struct (nr, same 0) */

#define DLP_PY_ENTRY	0x80000000u	/* pyframe.instr: the frame an eval loop entered at */
#define DLP_PY_NO_INSTR	0x7fffffffu	/* no instruction yet: the first line */

struct dlp_pyframe {
	uint32_t code;		/* dlp_pycode_rec.id */
	uint32_t instr;		/* code unit index of the instruction running | DLP_PY_ENTRY */
};

/* DLP_REC_PYSTACK payload: this struct, then nr - same struct dlp_pyframe, leaf first:
 * the frames that differ from the previous PYSTACK record of the same thread (in file
 * order), whose last `same` frames (the root side) complete the stack. */
struct dlp_pystack_rec {
	uint32_t pid, tid;
	uint64_t time;		/* the sample's time */
	uint32_t delay_ns;	/* from the sample to the read (capped) */
	uint8_t state;
	uint8_t flags;		/* DLP_PYSTACK_* */
	uint16_t nr;		/* frames of the stack */
	uint16_t same;		/* of them, root-side frames as in the thread's previous record */
	uint16_t pad2[3];
};

/* DLP_REC_PYCHAIN payload: this struct, then nr - same struct dlp_pyframe, leaf first,
 * whose last `same` frames (the root side) are those of chain `base` (written earlier).
 * A stack read as the sample was taken is written once as a chain, ids from 1 in file
 * order; the DLP_REC_STACK of its sample's native stack names it (DLP_STACK_PY), or a
 * DLP_REC_PYSTACK with
 * DLP_PYSTACK_CHAIN when its sample is kept as it came (raw). */
struct dlp_pychain_rec {
	uint32_t id;
	uint32_t base;		/* 0: none (same is 0) */
	uint16_t nr, same;
	uint32_t pad;
};

/* Packed forms (lib/pyrec.c), what record writes since format 6: DLP_REC_PYCODE_PACKED
 * holds varints id, flags (DLP_PYCODE_LINES | 2: names follow), [pid, firstlineno,
 * pyversion, qualname_len, file_len, the names], then with DLP_PYCODE_LINES the number
 * of pairs and each pair as zigzag differences from the one before (the first from
 * (0, firstlineno)), else linetable_off, linetable_len and the bytes;
 * DLP_REC_PYCHAIN_PACKED holds varints id, base, nr, same, then per frame code and
 * instr << 1 | (DLP_PY_ENTRY set).  Fields not written are 0.  The Python records took
 * ~9.5% of a 3 s CNN recording written plain; packed, deflate keeps ~30% fewer bytes of
 * them. */
struct strbuf;
/* A DLP_REC_PYCODE or DLP_REC_PYCHAIN (a: its struct, b: the rest) packed into out, its
 * type in *packed_type; -1: it has no packed form (write it plain). */
int pyrec_pack(uint32_t type, const void *a, size_t alen, const void *b, size_t blen,
	       struct strbuf *out, uint32_t *packed_type);
/* A packed record as the plain one (struct and body) in out, its type in *plain_type;
 * -1: malformed. */
int pyrec_unpack(uint32_t type, const void *data, size_t len, struct strbuf *out,
		 uint32_t *plain_type);

/* ---- record side (lib/pyread.c) ---- */
struct pyreader;
typedef int pyreader_emit_fn(void *ctx, uint32_t type, const void *a, size_t alen,
			     const void *b, size_t blen);

struct pyreader *pyreader_new(pyreader_emit_fn *emit, void *ctx);
void pyreader_free(struct pyreader *pr);
/* The process exec'd: what was known of it goes. */
void pyreader_exec(struct pyreader *pr, uint32_t pid);
/* A stack read after its sample, written once as a chain (DLP_REC_PYCHAIN) for the
 * sample's own record to name: its id (0: none, a DLP_REC_PYSTACK was written), and how
 * it was read (DLP_PY_TRUSTED or DLP_PY_UNCHECKED; the delays: pyreader_stats.late_*). */
struct pychain_ref {
	uint32_t chain;
	uint8_t state;
};
/* One sample of thread tid: read its Python stack when pid is a CPython 3.11-3.13 process
 * (stack/len/sp: the sample's user stack copy, NULL without one).  Returns 1 when the
 * process is Python (a record was written), 0 when not.  With ref, a stack read (checked
 * or not) is named by the sample's record (ref->chain), not written as a PYSTACK. */
int pyreader_sample(struct pyreader *pr, uint32_t pid, uint32_t tid, uint64_t time,
		    const unsigned char *stack, size_t len, uint64_t sp, struct pychain_ref *ref);
/* The same for a chain of interpreter frames read at the sample, by the thread itself
 * (memevent.h) or in the kernel (pybpf.h): pairs of code address | MEM_PY_* flags,
 * instruction pointer, innermost first; flags: DLP_PYSTACK_*.  chain NULL: its reads
 * failed.  Returns 1 when the process is Python (a record was written), 0 when not.
 * With chain_id: a stack read is written as a DLP_REC_PYCHAIN (when new) whose id goes
 * to *chain_id, for the sample's own record to name; no DLP_REC_PYSTACK then (*chain_id
 * 0: a PYSTACK was written, the reads failed). */
int pyreader_sample_chain(struct pyreader *pr, uint32_t pid, uint32_t tid, uint64_t time,
			  const uint64_t *chain, size_t n, unsigned flags, uint32_t *chain_id);
/* A code object as read in the kernel at a sample (pybpf.h): kept for the chains that
 * name it (written when one does), so that it needs no read from outside in time. */
struct pybpf_code;
void pyreader_kernel_code(struct pyreader *pr, const struct pybpf_code *code);
/* The kernel reads code objects at the sample (and says when another object takes a
 * freed one's address): the chains it reads need no later look at them. */
void pyreader_codes_in_kernel(struct pyreader *pr);
/* Write the lines of the instructions met since the last call (a DLP_REC_PYCODE per
 * code object; call after each drain, and before the recording ends). */
void pyreader_flush(struct pyreader *pr);
/* The next chain read in the kernel was read at this time (its code records'). */
void pyreader_chain_read_at(struct pyreader *pr, uint64_t time);
/* What a process's own threads need to read their frames (memevent.h's struct
 * mem_pywalk, but seq and pid): 1 when pid is Python and its thread-state key is set. */
struct pywalk_info {
	uint64_t tss, interp;
	uint16_t ts_interp, ts_tid, ts_frame, cf_current;
	uint16_t fr_code, fr_previous, fr_instr, fr_owner, fr_is_entry;
	uint16_t frame;		/* which of pyreader_frame_layouts() these fr_ are */
};
int pyreader_walk_info(struct pyreader *pr, uint32_t pid, struct pywalk_info *wi);
/* The distinct layouts of an interpreter frame (_PyInterpreterFrame) among the versions
 * read, for a reader that must know them all beforehand (pybpf.h); how many. */
struct pyframe_layout {
	uint16_t code, previous, instr, owner;
	uint16_t is_entry;	/* MEM_PY_NONE: none */
};
size_t pyreader_frame_layouts(struct pyframe_layout *out, size_t max);
/* The Python threads of pid as its interpreter lists them now (one state per thread:
 * the newest), and in *wi its layout (tss is 0 here).  How many (0: not Python). */
struct pyreader_thread {
	uint32_t tid;
	uint64_t tstate;
};
size_t pyreader_threads(struct pyreader *pr, uint32_t pid, struct pyreader_thread *out,
			size_t max, struct pywalk_info *wi);
/* A path that names a Python interpreter (python3.11, python3, libpython3.11.so.1.0). */
int pyreader_python_path(const char *path);
/* How many processes were found to be Python so far, 0: none (record polls its rings
 * more often then). */
int pyreader_active(const struct pyreader *pr);

struct pyreader_stats {
	uint64_t samples, trusted, unchecked, moved, failed;
	uint64_t own;		/* of the trusted: read by the thread itself */
	uint64_t kernel;	/* of the trusted: read in the kernel at the sample */
	uint64_t codes;
	uint64_t codes_outside;	/* of them, read from outside (not by the kernel) */
	uint64_t kernel_codes;	/* code objects the kernel read (named by a stack or not) */
	uint64_t gone;		/* frames whose code object was freed before it was read */
	uint64_t delay_sum_ns, delay_max_ns;
	/* of the samples read from outside, those named by their sample's record (their
	 * delays are not in the file but in META python_late: count, sum, max) */
	uint64_t late_named, late_delay_sum_ns, late_delay_max_ns;
};
void pyreader_get_stats(const struct pyreader *pr, struct pyreader_stats *st);

/* ---- report side (lib/pystack.c) ---- */
struct pystacks;
struct frame;

struct pystacks *pystacks_new(void);
void pystacks_free(struct pystacks *ps);
/* DLP_REC_PYCODE / DLP_REC_PYSTACK / DLP_REC_PYCHAIN records, plain or packed (pass 1);
 * others are ignored. */
void pystacks_add(struct pystacks *ps, uint32_t type, const void *data, size_t len);
/* A sample whose own record names its chain (dlp_sample.pychain): counted among the
 * stacks read (flags: DLP_PYSTACK_*, state: DLP_PY_TRUSTED or _UNCHECKED). */
void pystacks_count_chain(struct pystacks *ps, unsigned flags, unsigned state);
/* META python_late ("COUNT SUM MAX"): the delays of the stacks read from outside that
 * their samples name. */
void pystacks_late_delays(struct pystacks *ps, const char *value);
/* Pass 1 is over: index the stacks. */
void pystacks_finish(struct pystacks *ps);
int pystacks_any(const struct pystacks *ps);
/* Replace each _PyEval_EvalFrameDefault frame of the sample's stack (leaf first, nr in
 * *nr, room for max) by the Python frames it ran: chain's (dlp_sample.pychain), else
 * those of the DLP_REC_PYSTACK of (pid, tid, time); chain_exact: it was read as the
 * sample was taken.  Returns 1 merged, 0 no Python stack
 * for the sample (or not trusted: left native), -1 the Python and native stacks did not
 * match (left native). */
int pystacks_merge(struct pystacks *ps, uint32_t pid, uint32_t tid, uint64_t time,
		   uint32_t chain, int chain_exact, struct frame *fr, size_t *nr, size_t max,
		   int complete);

struct pystacks_stats {
	uint64_t records, trusted, unchecked, moved, failed;	/* of the recording */
	uint64_t merged, mismatched;				/* of this report's samples */
	uint64_t delay_sum_ns, delay_max_ns;
	uint64_t at_sample;	/* read as the sample was taken (in the kernel, or by the
				   thread itself): delay 0 */
};
void pystacks_get_stats(const struct pystacks *ps, struct pystacks_stats *st);

/* The line of code unit index instr in a CPython 3.11 line table, firstlineno-based;
 * -1 when the table says no line. */
int py311_line(const unsigned char *tab, size_t len, int firstlineno, uint32_t instr);

#endif
