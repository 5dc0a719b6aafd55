/* itt.h - ITT task intervals and oneDNN primitive executions, read back at report time
 * from the collector's files (their layout: itt-format.h). */
#ifndef DLPROF_ITT_H
#define DLPROF_ITT_H

#include <stddef.h>
#include <stdint.h>

#include "itt-format.h"

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
/* The primitive a moment t of task iv (thread pid/tid's innermost at t) ran in: the
 * thread's own execution, or, for an OpenMP worker's share, the execution of the thread
 * that made the call (it encloses the call's task, which encloses the workers'). */
const struct itt_prim *itt_prim_in(const struct itt_data *d, uint32_t pid, uint32_t tid,
				   const struct itt_interval *iv, uint64_t t);
/* The distinct primitives described (i = 0.. until NULL), calls and ns filled in by
 * itt_data_finish(). */
const struct itt_prim *itt_prim_each(const struct itt_data *d, size_t i);
size_t itt_nr_prims(const struct itt_data *d);

#endif
