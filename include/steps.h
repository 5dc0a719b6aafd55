/* steps.h - training steps found in the samples: the invocations of a repeating function.
 *
 * A step is one run of the function FUNC (a Python function by its name or qualified
 * name, "step" or "main.<locals>.step", or a native symbol) on a thread.  Samples cannot
 * see calls, so an invocation is told from the next by where FUNC is: a new step starts
 * at the first sample with FUNC on the stack after one without it, or when the line FUNC
 * is at (Python) or its return address into a callee (native) goes back, as it does
 * when straight-line code starts over.  A step runs from its first sample to the next
 * step's first one, or one period after its last sample.  Each step also gathers the
 * families of every sample of its process (worker threads included) inside its span.
 *
 *	struct steps *sp = steps_new("train_step");
 *	steps_sample(sp, s, frames, nr, family);	(per sample, any order)
 *	steps_finish(sp, period_ns);
 */
#ifndef DLPROF_STEPS_H
#define DLPROF_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "session.h"

struct steps;

struct step {
	uint32_t pid, tid;
	uint64_t start, end;	/* ns, the recording's clock */
	uint64_t samples;	/* the process's samples in [start, end) */
};

struct steps *steps_new(const char *func);
void steps_free(struct steps *sp);
void steps_sample(struct steps *sp, const struct dlp_sample *s, const struct frame *frames,
		  size_t nr, const char *family);
/* Find the steps (call once, after the last sample).  Returns how many. */
size_t steps_finish(struct steps *sp, uint64_t period_ns);
const struct step *steps_get(const struct steps *sp, size_t *nr);
/* The thread the steps were found on (the one with the most), 0 when none. */
uint32_t steps_tid(const struct steps *sp);
/* Samples of family in step i (interned family names), and the families seen. */
uint64_t steps_family_samples(const struct steps *sp, size_t i, const char *family);
size_t steps_families(const struct steps *sp, const char ***out);

/* report --steps FUNC: the steps' times (min, median, max) and the slowest step against
 * the median one by family; json or a table on out.  0, 1 (partial input), -1 (error
 * printed). */
struct family_rules;
struct sample_filter;
#include <stdio.h>

#include "util.h"

int steps_report(const char *input, const char *symfs, const char *func,
		 struct family_rules *rules, struct sample_filter *filt, enum out_format format,
		 int limit, FILE *out);

#endif
