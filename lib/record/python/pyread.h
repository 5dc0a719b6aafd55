/* pyread.h - Python frames read from a CPython 3.11-3.13 process at record time
 * (lib/record/pyread.c): for each sample of a Python thread, its chain of interpreter frames,
 * read in the kernel (pybpf.h), by the thread itself (memevent.h) or from outside right
 * after the sample and checked against the sample's stack copy, written as the records
 * of pyrec.h.
 *
 * The check: _PyEval_EvalFrameDefault keeps its _PyCFrame on the C stack, and the
 * thread state points at it (tstate->cframe); its current_frame is the interpreter frame
 * running at that instant.  Where that _PyCFrame lies in the sample's stack copy, the copy
 * holds current_frame as it was at the sample: the chain read later is kept when that
 * frame is still on it (the frames from it to the root are then those of the sample),
 * else the sample is "moved" (the Python code went on) and keeps its native stack only.
 */
#ifndef DLPROF_PYREAD_H
#define DLPROF_PYREAD_H

#include "pybpf.h"
#include "pyrec.h"

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
	uint16_t ob_base;	/* where an object's fields start as in a default build
				   (16 in a free-threaded one, 0 else) */
};
int pyreader_walk_info(struct pyreader *pr, uint32_t pid, struct pywalk_info *wi);
/* The distinct layouts of an interpreter frame (_PyInterpreterFrame) among the versions
 * read, for a reader that must know them all beforehand (pybpf.h); how many. */
size_t pyreader_frame_layouts(struct pyframe_layout *out, size_t max);
/* The Python threads of pid as its interpreter lists them now (one state per thread:
 * the newest), and in *wi its layout (tss is 0 here).  How many (0: not Python). */
struct pyreader_thread {
	uint32_t tid;		/* record's */
	uint32_t ns_tid;	/* the id its state holds (another PID namespace's), or tid */
	uint64_t tstate;
};
size_t pyreader_threads(struct pyreader *pr, uint32_t pid, struct pyreader_thread *out,
			size_t max, struct pywalk_info *wi);
/* The address of pid's GIL state (CPython's struct _gil_runtime_state: interval at +0,
 * last_holder at +8, locked at +16 in 3.11-3.13's default builds), 0 when not found
 * (not Python, a build without a GIL, not found yet). */
uint64_t pyreader_gil(struct pyreader *pr, uint32_t pid);
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

#endif
