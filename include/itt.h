/* itt.h - ITT task intervals written by the collector (build/libdlprof-itt.so) and read
 * back at report time.
 *
 * The collector writes $DLPROF_ITT_DIR/itt-PID.bin; dlprof record stores each such file
 * as one DLP_REC_ITT record (payload = the file's bytes).  Layout, little-endian:
 *
 *	struct itt_file_header		magic "DLPITT\0\0", version, pid
 *	blocks, each:  struct itt_block_header { u32 kind; u32 len; }  then len bytes
 *	  ITT_BLOCK_NAME:    u32 id, then the name (len - 4 bytes, no NUL)
 *	  ITT_BLOCK_EVENTS:  u32 tid, u32 nr, then nr struct itt_event
 *	  ITT_BLOCK_PRIM:    (version 2) u32 id, then a oneDNN primitive's description
 *	                     (len - 4 bytes, no NUL): "NAME=VALUE" lines joined by '\n'
 *	  ITT_BLOCK_EXECS:   (version 2) u32 tid, u32 nr, then nr struct itt_exec
 *
 * Name ids are small integers starting at 1; a name block precedes (in file order or not)
 * the events that use it.  An event with name ITT_END closes the innermost open task of
 * its thread.  Times are CLOCK_MONOTONIC nanoseconds, the clock of the samples.
 *
 * Version 2 adds what the collector's dnnl_primitive_execute() interposer saw (record
 * preloads the collector; DLPROF_NO_DNNL_HOOK=1 turns it off): each primitive, described
 * once per process through oneDNN's C API, and each execution, on the thread that called
 * it, from entry to return.  Primitive ids are their own small integers from 1 (one per
 * distinct description, not per primitive object).  The description's names, each at
 * most once, in this order, unknown names ignored by readers:
 *	kind	 primitive kind as oneDNN prints it ("convolution", "reorder"); required
 *	impl	 dnnl_query_impl_info_str ("jit:avx2", "ref:any", "brgconv:avx512_core")
 *	prop	 propagation kind ("forward_training", "backward_data"; "undef" for none)
 *	shape	 the problem in ONEDNN_VERBOSE's spelling (lib/inject/dnnl-hook.c says which
 *		 kinds get which): "mb32_ic3oc32_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"
 *	src, diff_src, wei, diff_wei, dst, diff_dst
 *		 a tensor: "DT:FORMAT:DIMS", e.g. "f32:aBcd16b:32x64x32x32" (FORMAT in
 *		 verbose's spelling: the dimensions a, b, ... outermost first by stride,
 *		 blocked ones upper-case, then the inner blocks; "any", "wino", "packed")
 * A file without these blocks had no such call seen: oneDNN linked statically (its
 * calls do not reach the interposer), another path to it, or the hook off.
 */
#ifndef DLPROF_ITT_H
#define DLPROF_ITT_H

#include <stddef.h>
#include <stdint.h>

#define ITT_MAGIC "DLPITT\0\0"
#define ITT_VERSION 2		/* readers take 1 (no primitive blocks) and 2 */
#define ITT_BLOCK_NAME 1
#define ITT_BLOCK_EVENTS 2
#define ITT_BLOCK_PRIM 3
#define ITT_BLOCK_EXECS 4
#define ITT_END 0u
#define ITT_MAX_NAME 1024
#define ITT_MAX_PRIM 4096	/* a description's bytes */

struct itt_file_header {
	char magic[8];
	uint32_t version;
	uint32_t pid;
};

struct itt_block_header {
	uint32_t kind;
	uint32_t len;
};

struct itt_event {
	uint64_t time;
	uint32_t name;		/* name id, ITT_END for task end */
	uint32_t pad;
};

/* One execution of a oneDNN primitive (ITT_BLOCK_EXECS) */
struct itt_exec {
	uint64_t start, end;
	uint32_t prim;		/* the ITT_BLOCK_PRIM id */
	uint32_t pad;
};

/* ---- reader (lib/attribute/itt.c) ---- */

/* A distinct oneDNN primitive: every string interned; NULL where the file did not say.
 * One per description across all the files read (processes), so pointers compare. */
enum itt_md { ITT_MD_SRC, ITT_MD_DIFF_SRC, ITT_MD_WEI, ITT_MD_DIFF_WEI, ITT_MD_DST,
	      ITT_MD_DIFF_DST, ITT_MD_NR };
extern const char *const itt_md_names[ITT_MD_NR];	/* "src", "diff_src", ... */

struct itt_prim {
	const char *key;	/* the whole description: the identity */
	const char *kind, *impl, *prop, *shape;
	const char *md[ITT_MD_NR];	/* "f32:aBcd16b:32x64x32x32" */
	const char *dtype;	/* the data type of its first tensor (src, else diff_dst ...) */
	uint64_t calls, ns;	/* executions and their summed time, after itt_data_finish */
};

struct itt_interval {
	uint64_t start, end;
	const char *name;	/* interned */
	uint32_t depth;		/* nesting level, 0 = outermost */
	uint32_t worker;	/* an OpenMP worker's share of a call another thread made: */
	uint32_t caller_tid;	/* ... the thread that made it, */
	const struct itt_interval *caller;	/* ... and its task (valid after finish) */
	uint32_t taken;		/* handed out by itt_take_calls() */
};

struct itt_data;

struct itt_data *itt_data_new(void);
void itt_data_free(struct itt_data *d);
/* Add the content of one collector file (a DLP_REC_ITT payload).  Validates everything;
 * returns 0, or -1 on malformed input (nothing of it is kept).  Prints nothing: the
 * reason is in itt_data_error() for the caller's one message. */
int itt_data_add(struct itt_data *d, const void *buf, size_t len);
/* Why the last itt_data_add() failed ("bad magic", ...). */
const char *itt_data_error(const struct itt_data *d);
/* Call after the last itt_data_add (sorts, tells callers' tasks from workers', counts).
 * Tasks never ended are closed at their thread's last event time. */
void itt_data_finish(struct itt_data *d);
/* The innermost task thread pid/tid was in at time t, or NULL. */
const struct itt_interval *itt_lookup(const struct itt_data *d, uint32_t pid, uint32_t tid,
				      uint64_t t);
/* Per task name, after itt_data_finish: calls (the callers' tasks, not the OpenMP
 * workers' shares of them), the summed duration of every task of that name on every
 * thread (total_ns: nested tasks count for their own name too) and of the calls alone
 * (call_ns, wall time on the calling threads; NULL: not wanted).  Iterate i = 0.. until
 * it returns NULL. */
const char *itt_name_stats(const struct itt_data *d, size_t i, uint64_t *calls,
			   uint64_t *total_ns, uint64_t *call_ns);
/* Every task, the workers' shares too (iv->worker), thread by thread in time order. */
void itt_each_interval(const struct itt_data *d,
		       void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
		       void *ctx);
/* Every call (task that is not a worker's share), thread by thread in time order. */
/* The calls (as itt_each_call) that end before hi and were not handed out before, each
 * once: for a reader that counts calls as the samples go by.  Returns the earliest start
 * of an interval not handed out yet (UINT64_MAX: none). */
uint64_t itt_take_calls(struct itt_data *d, uint64_t hi,
			void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
			void *ctx);
void itt_each_call(const struct itt_data *d,
		   void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
		   void *ctx);
size_t itt_nr_intervals(const struct itt_data *d);
/* The oneDNN primitive whose execution thread pid/tid was in at time t, or NULL. */
const struct itt_prim *itt_prim_at(const struct itt_data *d, uint32_t pid, uint32_t tid,
				   uint64_t t);
/* The distinct primitives described (i = 0.. until NULL), calls and ns filled in by
 * itt_data_finish(). */
const struct itt_prim *itt_prim_each(const struct itt_data *d, size_t i);
size_t itt_nr_prims(const struct itt_data *d);

#endif
