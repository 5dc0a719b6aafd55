/* calltree.h - aggregation of resolved stacks: self/total per key.
 *
 * Self counts a sample for the key of its leaf frame; total counts it once for every
 * distinct key anywhere in its stack (recursion counts once).  Strings are copied into
 * the aggregate's own pool, so the aggregate outlives profile_run().
 */
#ifndef DLPROF_CALLTREE_H
#define DLPROF_CALLTREE_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"

enum ct_key {
	CT_KEY_SYM,	/* symbol + DSO */
	CT_KEY_DSO,
	CT_KEY_COMM,
	CT_KEY_TID,
	CT_KEY_CUSTOM,	/* the caller passes its own key per frame (family, op, ...) */
};

struct ct_callers;

struct ct_row {
	const char *name;	/* symbol, DSO, comm, "tid (comm)" or custom key */
	const char *dso;	/* CT_KEY_SYM: the DSO; else NULL */
	uint64_t self, total;
	unsigned flags;		/* FRAME_* of the first frame seen for this row */
	const char *path;	/* FRAME_PYTHON: the source file's path */
	/* CT_KEY_SYM rows of unnamed code (FRAME_FDE, FRAME_ANON, FRAME_UNKNOWN): the named
	 * function (symbol or JIT name) nearest above it in the stack, the most frequent
	 * one among the row's samples; NULL when no stack names one.  A thread root
	 * (start_thread, _start, clone3, ...) is no caller: such samples count none.
	 * Set by calltree_rows. */
	const char *caller;
	uint64_t caller_count;	/* samples of the row under that caller */
	/* the source line most of the row's self samples hit (frames with srcline, i.e.
	 * report --srcline), NULL when none; set by calltree_rows */
	const char *srcline;
	uint64_t srcline_count;
	uint64_t gen;		/* internal: last stack that counted total */
	struct ct_callers *callers;	/* internal: caller counts */
	struct ct_callers *lines;	/* internal: srcline counts of self samples */
};

struct calltree;

struct calltree *calltree_new(enum ct_key key);
void calltree_free(struct calltree *t);

/* Count one sample with frames leaf first; comm/tid are the sample's thread. */
void calltree_add(struct calltree *t, const struct frame *frames, size_t nr,
		  const char *comm, uint32_t tid, uint64_t weight);
/* CT_KEY_CUSTOM: keys[0] is the leaf's key, keys[i] the i-th frame's (NULL entries skipped). */
void calltree_add_keys(struct calltree *t, const char *const *keys, size_t nr, uint64_t weight);

enum ct_sort { CT_SORT_SELF, CT_SORT_TOTAL, CT_SORT_NAME, CT_SORT_DSO };
/* The rows, sorted; valid until calltree_free. */
size_t calltree_rows(struct calltree *t, enum ct_sort sort, struct ct_row ***out);
/* Sum of weights added. */
uint64_t calltree_samples(const struct calltree *t);

#endif
