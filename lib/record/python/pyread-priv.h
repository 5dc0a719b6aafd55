/* pyread-priv.h - the outside reader's state, shared by its files: pyread.c (processes,
 * interpreters and threads), pyread-code.c (code objects), pyread-stack.c (a sample's
 * frames). */
#ifndef DLPROF_PYREAD_PRIV_H
#define DLPROF_PYREAD_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "pybpf.h"
#include "pyread.h"
#include "rephash.h"
#include "util.h"

#define TS_READ		168	/* enough of a PyThreadState for each */
#define FR_SIZE		72	/* ... of an interpreter frame */
#define CO_READ		192	/* ... of a code object, up to its code */
#define CO_TYPE		8
#define CO_FILENAME	112
#define CO_QUALNAME	128
#define CO_LINETABLE	136
_Static_assert(CO_READ == PYBPF_CODE_HEAD && CO_FILENAME == PYBPF_CO_FILENAME &&
	       CO_QUALNAME == PYBPF_CO_QUALNAME && CO_LINETABLE == PYBPF_CO_LINETABLE,
	       "the kernel's reader reads code objects as pyread does");

struct pylayout {
	uint32_t hex;		/* major << 24 | minor << 16 */
	uint16_t rt_interp_head;
	uint16_t is_threads_head, ts_native_tid, ts_next, ts_cframe;	/* 3.13: current_frame */
	uint16_t cf_current, cf_previous;
	uint16_t fr_code, fr_previous, fr_prev_instr, fr_owner, fr_is_entry;	/* 0: none */
	uint16_t co_firstline, co_firsttrace, co_code;
	uint16_t str_ascii, str_compact;
	uint16_t rt_tss;	/* _PyRuntimeState: the thread-state key, Py_tss_t (memevent.h) */
	uint16_t ts_interp;	/* PyThreadState.interp */
};

/* 3.13 has no _PyCFrame: cf_current and cf_previous are NO_CFRAME, ts_cframe is
 * tstate->current_frame; its offsets are checked against the _Py_DebugOffsets the
 * interpreter carries at the start of _PyRuntime (debug_offsets_ok) */
#define NO_CFRAME	0xffff


#define MAX_FRAMES	512
#define WINDOW		8192
#define WALK_EVERY_NS	50000000ull	/* look for new threads at most every 50 ms */
#define WALK_EMPTY_NS	1000000ull	/* ... every 1 ms while there is none */
/* A walk checks that its cached code objects are still at their addresses (one more read)
 * at most this often per process: a code object freed and another made at its address
 * is named by the old one for at most this long */
#define VERIFY_EVERY_NS	10000000ull

struct pycode {
	uint64_t addr;
	uint32_t id;
	int32_t firsttrace;
	/* its names and line table (co_linetable) as read; the records carry the names
	 * and the line of each instruction a sample ran (pyreader.lines_written) */
	char *qualname, *file;
	unsigned char *tab;
	uint32_t tab_len, firstlineno;
	uint16_t qlen, flen;
	uint64_t ident[4];	/* co_filename, co_name, co_qualname, co_linetable as read */
	int stale;		/* the address holds another code object now */
	/* read in the kernel: the time of the sample that read it, and (an older object
	 * at that address, in pyproc.old) when the next one was read */
	uint64_t since, until;
};

#define OLD_MAX		256	/* older objects at reused addresses kept, per process */

#define CO_IDENT	CO_FILENAME	/* the four pointers that say which code it is */

struct pytid {
	uint32_t tid;		/* record's (the samples') */
	uint32_t ns_tid;	/* the state's own: the thread's id in its PID namespace */
	uint64_t tstate;	/* 0: not a Python thread (at the last walk) */
};

struct pyproc {
	uint32_t pid;
	int state;		/* 0 unknown, 1 Python 3.11-3.13, -1 not Python (or not read) */
	const struct pylayout *lay;
	uint64_t runtime, code_type;
	uint64_t str_type;	/* PyUnicode_Type, 0: not known */
	uint32_t version;
	struct pytid *tids;
	size_t nr_tids, alloc_tids;
	uint64_t last_walk;
	uint64_t last_verify;	/* when a walk last checked its cached code objects */
	struct pycode *codes;	/* open addressing on addr */
	size_t nr_codes, size_codes;
	/* code objects the kernel read whose addresses hold newer ones, oldest first: the
	 * samples taken before the newer one was read still name them */
	struct pycode *old;
	size_t nr_old, alloc_old;
	/* an interpreter executable whose libpython is not mapped yet (it is loading):
	 * probed again from then on, PROBE_TRIES times at most */
	uint64_t probe_again;
	unsigned probes;
	/* where an object's fields start as a default build lays them out: 0, or 16 in a
	 * free-threaded build (3.13t), whose object header is 16 bytes longer (ob_tid,
	 * the local and shared counts before ob_type); every read of a code object, str or
	 * bytes starts there, so the layouts and offsets above hold for both */
	uint16_t ob_base;
	int pidns;		/* 0 unknown, 1 record's PID namespace, 2 another (a container's:
				   its states hold the ids of that namespace) */
	uint64_t gil;		/* its GIL's state (struct _gil_runtime_state), 0: not found */
	int gil_looked;		/* looked for: 1 found, -1 not found (looked again later) */
	uint64_t gil_next;	/* not found: when to look again */
};

#define PROBE_EVERY_NS	5000000ull
#define PROBE_TRIES	200

struct pysyms {
	char *path;
	int ok;
	uint64_t runtime, version, code_type, str_type;	/* link-time addresses */
	uint64_t first_vaddr;
	int is_dyn;
};

/* The last stack written for a thread (DLP_REC_PYSTACK's `same`) */
struct last_stack {
	uint32_t pid, tid;
	struct dlp_pyframe *frames;
	size_t n, alloc;
	uint32_t chain;		/* its last DLP_REC_PYCHAIN (a chain's base) */
};

/* The chains written (DLP_REC_PYCHAIN), remembered up to CHAIN_MAX: their frames */
struct chain_ent {
	size_t first;		/* in pyreader.chain_frames */
	uint16_t nr;
};
#define CHAIN_MAX	(1u << 20)

struct pend_line {
	uint32_t code;
	int32_t pair[2];	/* code unit, line */
};

struct pyreader {
	pyreader_emit_fn *emit;
	void *ctx;
	struct last_stack *last;
	size_t nr_last, alloc_last;
	struct pyproc *procs;
	size_t nr_procs, alloc_procs;
	struct pysyms *syms;
	size_t nr_syms, alloc_syms;
	uint32_t next_code;
	struct u64map lines_written;	/* code id << 32 | code unit: its line is written */
	struct chain_ent *chains;	/* by id - 1 */
	size_t nr_chains, alloc_chains;
	struct dlp_pyframe *chain_frames;
	size_t nr_chain_frames, alloc_chain_frames;
	struct u64map chain_ids;	/* hash of a chain's frames -> its id */
	int active;
	struct pyreader_stats st;
	/* the frame window of the sample being read */
	uint32_t win_pid;
	uint64_t win_base;
	size_t win_len;
	unsigned char win[WINDOW];
	struct dlp_pyframe frames[MAX_FRAMES];
	/* the cached code objects a walk used, checked after it in one read: a code object
	 * freed and another made at its address (a module's code after its import) */
	struct pycode *verify[MAX_FRAMES];
	size_t nr_verify;
	uint64_t stale_codes;
	struct pend_line *pend;	/* lines of instructions not written yet */
	size_t nr_pend, alloc_pend;
	int kernel_codes;	/* the kernel reads code objects at the sample (pybpf.h) */
	uint64_t cur_time;	/* the chain the kernel read: its time (0: none) */
	uint64_t chain_time;	/* pyreader_chain_read_at() */
};

/* pyread.c */
void pyread_code_free(struct pycode *c);
int pyread_rd(uint32_t pid, uint64_t addr, void *buf, size_t len);
int pyread_rd64(uint32_t pid, uint64_t addr, uint64_t *v);
struct pyproc *pyread_proc(struct pyreader *pr, uint32_t pid);
void pyread_probe(struct pyreader *pr, struct pyproc *p);
size_t pyread_tstates_of(struct pyproc *p, uint32_t tid, uint64_t now, uint64_t *out, size_t max);

/* pyread-code.c */
struct pycode *pyread_code_slot(struct pyproc *p, uint64_t addr);
void pyread_code_emit(struct pyreader *pr, struct pyproc *p, struct pycode *c, uint32_t instr,
		      int first);
const struct pycode *pyread_code_get(struct pyreader *pr, struct pyproc *p, uint64_t addr,
				     uint32_t instr);
size_t pyread_verify_codes(struct pyreader *pr, uint32_t pid);

#endif
