/* attr.h - what a sample is: its attribution, computed once and read by every view.
 *
 * For each sample, from its resolved stack, its thread and the recording's ITT tasks:
 *   family	the operator family (family.h), the leaf's kind of work
 *   op		the framework operator it ran in, as torch.profiler names it
 *		("aten::fill_.Scalar": the overload after the dot, see attr_op_name()), or an
 *		autograd node; outside any, the oneDNN primitive ("dnnl:convolution"), the
 *		process's phase ("(library init)", "(exit)"), or "(no op)"
 *   prim	the oneDNN primitive kind of the innermost ITT task of the sample's thread
 *		("convolution"), or NULL.  A primitive is not an operator: a sample in a
 *		convolution task inside aten::convolution_backward has that op and this prim
 *		(the PyTorch profiler's Self CPU counts it to the op too)
 *   prim_desc	with prim, the oneDNN primitive the sample's work belongs to, as the
 *		collector described it (itt.h struct itt_prim: kind, implementation,
 *		shape, tensors): the execution its thread was in, or for an OpenMP
 *		worker's share of a call (itt_interval.worker) the caller's execution at
 *		that time.  NULL without prim, or when no execution was recorded (oneDNN
 *		not reached through its shared library's C API, the hook off)
 *   sym	the leaf symbol
 *   pychain	the Python frames of the stack (pystack.h), root first, joined by ';'
 *		(interned), and pyline the innermost of them; NULL outside Python.  An
 *		OpenMP worker takes those of the thread that dispatched its work: the caller
 *		of its oneDNN call, else the nearest Python sample of another thread
 * An OpenMP worker's stack holds no operator frame (the operator runs on its team's
 * master): its op is the master's around the sample's time, known once every sample is
 * in.  Such a sample's op is NULL and deferred its handle until attr_resolve().
 *
 * Every reader (report's tables and findings, fold, pprof, diff, the filters, check-isa
 * -i) calls attr_sample() once per sample, in recording order, and reads the deferred
 * ops after attr_resolve(); none computes any part of it on its own.
 */
#ifndef DLPROF_ATTR_H
#define DLPROF_ATTR_H

#include <stddef.h>
#include <stdint.h>

#include "family.h"
#include "profile.h"

/* How the op was found */
enum attr_source {
	ATTR_NONE,	/* "(no op)" */
	ATTR_STACK,	/* an operator frame on the sample's own stack */
	ATTR_MASTER,	/* an OpenMP worker: its team master's operator */
	ATTR_ITT,	/* no operator anywhere: the oneDNN primitive's ITT task names it */
	ATTR_PHASE,	/* library init / exit */
};

struct sample_attr {
	const char *family;
	const char *op;		/* NULL while deferred */
	const char *prim;
	const struct itt_prim *prim_desc;
	const char *sym;
	const char *pychain, *pyline;
	uint32_t pid, tid;
	uint32_t deferred;	/* 0, or the handle for attr_deferred() */
	enum attr_source src;
	unsigned fw : 1;	/* the leaf is libtorch/libc10/libdnnl or JIT code */
};

struct attr;
struct itt_data;
struct itt_prim;

struct attr *attr_new(const struct family_rules *rules);
void attr_free(struct attr *a);
/* A profile_consumer.other record: DLP_REC_ITT records are the ITT tasks (read in
 * profile_run's first pass, before any sample).  Other types are ignored. */
int attr_other(struct attr *a, uint32_t type, const void *data, size_t len);
/* A switch-out (record's off-CPU event): the stack where the thread left the CPU;
 * its family is one of the sample=wait rules'. */
int attr_is_switch(const struct dlp_sample *s);
/* The frame of a distributed job's collective a stack is in (a wait: the caller of the
 * lock it sleeps on): the innermost of c10d, gloo, MPI or oneCCL, named without its
 * arguments (interned), or NULL */
const char *attr_collective_frame(const struct frame *frames, size_t nr);
/* The attribution of one sample (nr >= 1; with nr == 0 family is "other", op "(no op)"). */
void attr_sample(struct attr *a, const struct dlp_sample *s, const struct frame *frames,
		 size_t nr, struct sample_attr *out);
/* A sample left out of the view (a filter's): what the others' attribution needs of it
 * (its operator, for the OpenMP workers of its process).  Not attributed, not counted. */
void attr_observe(struct attr *a, const struct dlp_sample *s, const struct frame *frames,
		  size_t nr);
/* After the last sample: the deferred ops, and which operator each oneDNN call ran in.
 * Idempotent. */
void attr_resolve(struct attr *a);
/* The resolved attribution of deferred sample HANDLE (src ATTR_MASTER when the master
 * had an operator). */
const struct sample_attr *attr_deferred(struct attr *a, uint32_t handle);
size_t attr_nr_deferred(const struct attr *a);
/* Live use (dlprof top), instead of attr_resolve(): resolve the deferred samples older
 * than BEFORE (ns, sample clock) with the marks known now, hand each to cb, and forget
 * them and the marks no deferred sample at or after BEFORE can need.  Call with BEFORE
 * at least the window (10 ms) behind the newest sample, so that the marks a deferred
 * sample needs are in.  Not with attr_deferred(). */
typedef void attr_settled_fn(void *ctx, uint32_t handle, const struct sample_attr *sa);
void attr_settle(struct attr *a, uint64_t before, attr_settled_fn *cb, void *ctx);
/* The ITT tasks (NULL when the recording has none), finished. */
const struct itt_data *attr_itt(struct attr *a);
/* oneDNN calls by (operator, primitive) after attr_resolve(): the operator a call ran in is
 * the op of the calling thread's samples inside the call, else the op of its samples
 * just before and just after when the two agree (within 10 ms); other calls count to
 * "dnnl:PRIM".  Iterate
 * i = 0.. until it returns 0. */
int attr_calls(const struct attr *a, size_t i, const char **op, const char **prim,
	       uint64_t *calls, uint64_t *call_ns);
/* An op key without its overload ("aten::fill_.Scalar" -> "aten::fill_"), interned;
 * *overload (when not NULL) gets the overload or NULL. */
const char *attr_op_name(const char *op, const char **overload);
/* "dnnl:PRIM", interned */
const char *attr_prim_op(const char *prim);

#endif
