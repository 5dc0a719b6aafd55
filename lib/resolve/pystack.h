/* pystack.h - the Python frames of a recording merged into its native stacks at report
 * time (lib/resolve/pystack.c): each _PyEval_EvalFrameDefault frame replaced by the Python
 * functions it ran. */
#ifndef DLPROF_PYSTACK_H
#define DLPROF_PYSTACK_H

#include "pyrec.h"

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
/* Replace each _PyEval_EvalFrameDefault frame of the sample's stack (leaf first, nr in
 * *nr, room for max) by the Python frames it ran: chain's (dlp_sample.pychain), else
 * those of the DLP_REC_PYSTACK of (pid, tid, time); chain_exact: it was read as the
 * sample was taken.  Returns 1 merged, 0 no Python stack
 * for the sample (or not trusted: left native), -1 the Python and native stacks did not
 * match (left native). */
/* Whether the Python stack record of sample (pid, tid, time), one written apart from it
 * (read in the kernel after the sample was written), says its thread held the GIL */
int pystacks_gil(struct pystacks *ps, uint32_t pid, uint32_t tid, uint64_t time);
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

#endif
