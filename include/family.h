/* family.h - operator families: an ordered rule set that buckets every sample.
 *
 * A pure function of the resolved stack (leaf first).  Rules live in a text file shipped
 * with the tool (share/families.rules); --families FILE adds rules in front (override).
 */
#ifndef DLPROF_FAMILY_H
#define DLPROF_FAMILY_H

#include <stddef.h>

#include "frame.h"

struct family_rules;

/* Load the built-in rules (the shipped file), then extra_path if not NULL.
 * Returns NULL with a line-numbered error printed on a bad rule. */
struct family_rules *family_rules_load(const char *extra_path);
void family_rules_free(struct family_rules *r);

/* The family name of a stack (frames[0] is the leaf).  Never NULL ("other" at worst).
 * A Python frame as the leaf stands for the interpreter's eval loop that ran it: leaf
 * keys see "_PyEval_EvalFrameDefault" in the frame's DSO (the interpreter's).
 * If rule_out is not NULL it receives a human description of the rule that matched
 * ("file:line: <rule text>"). */
const char *family_classify(const struct family_rules *r, const struct frame *frames,
			    size_t nr, const char **rule_out);
/* A rule's family that names none: the sample is its leaf's caller's (the stack less its
 * leaf, classified again), as for a helper that runs for whoever calls it; without a
 * caller, the rules after it decide. */
#define FAMILY_CALLER "@caller"
/* The kinds of sample (rules' sample= key): a CPU sample (what family_classify
 * assumes), or a switch-out (record's off-CPU event: where a thread blocked or was
 * preempted). */
#define FAMILY_SAMPLE_CPU  (1u << 0)
#define FAMILY_SAMPLE_WAIT (1u << 1)
/* What a sample's family depends on beside its stack: its kind, and the oneDNN primitive
 * kind it ran inside ("convolution", "reorder", ...: its ITT task; NULL outside any), for
 * JIT code whose kernel name does not say what it computes (rules' prim= key). */
struct family_ctx {
	unsigned kind;		/* FAMILY_SAMPLE_CPU or FAMILY_SAMPLE_WAIT */
	const char *prim;
};
const char *family_classify_ctx(const struct family_rules *r, const struct frame *frames,
				size_t nr, const struct family_ctx *ctx, const char **rule_out);

/* The framework operator a stack runs in: innermost at::_ops::<op>::call / at::native::<op>
 * frame, as "aten::<op>" spelled as torch.profiler does, with the schema's overload after a
 * dot when it has one ("aten::fill_.Scalar", "aten::add.Tensor", torchops.h); else an
 * autograd node ("autograd::AccumulateGrad"); NULL when the stack is outside any operator.  The returned
 * string is interned (valid until family_rules_free / process exit). */
const char *family_op_from_stack(const struct frame *frames, size_t nr);
/* Every distinct operator a stack runs in, innermost first: each at::_ops::<op> frame and
 * each autograd node's apply (torch::autograd::generated::<Node>::apply), named as
 * family_op_from_stack() names them; at most MAX.  What an inclusive ("Total") count per operator
 * counts a sample or an allocation to. */
size_t family_ops_on_stack(const struct frame *frames, size_t nr, const char **out, size_t max);
/* An OpenMP runtime's library (libgomp, libiomp5, libomp) by its short DSO name */
int family_omp_runtime_dso(const char *dso);

#endif
