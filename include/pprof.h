/* pprof.h - write a profile in pprof's format (profile.proto, gzip-compressed), for
 * `go tool pprof`, speedscope and the other tools that read it.
 *
 * Samples are added with their stacks (leaf first) and labels; equal stacks with equal
 * labels are merged.  A location stands for a function (pprof's default granularity):
 * its address is the function's start where known.  Labels: "thread" (the thread's
 * name), "tid", and when given "family" and "operator", so `pprof -tagfocus
 * family=jit-conv` picks one operator family; "pid", "host", "rank" and "input" from
 * pprof_set_source().
 */
#ifndef DLPROF_PPROF_H
#define DLPROF_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "frame.h"

struct pprof;

struct pprof_info {
	const char *event;		/* "cpu-clock", "cycles", ... */
	int event_is_time;		/* the event counts nanoseconds */
	uint64_t ns_per_sample;		/* estimated time per sample (0: unknown) */
	uint64_t duration_ns;
	const char *comment;		/* e.g. the recorded command line, or NULL */
};

struct pprof *pprof_new(void);
void pprof_free(struct pprof *p);

/* The source of the samples added from now on (sticky): the recording they come from
 * (NULL: not labelled), its host, the process and its rank (NULL when none).  Labels
 * "input", "host", "pid" and "rank", so back-ends that gather many machines and ranks
 * (Parca, Pyroscope) can tell them apart. */
void pprof_set_source(struct pprof *p, const char *input, const char *host, uint32_t pid,
		      const char *rank);

/* One sample (or count equal ones): frames leaf first; family and op may be NULL. */
void pprof_add(struct pprof *p, const struct frame *frames, size_t nr, const char *comm,
	       uint32_t tid, const char *family, const char *op, uint64_t count,
	       uint64_t period);

/* pprof_add() for a sample whose operator and values are known only later: returns a
 * handle for pprof_add_memory() */
uint32_t pprof_add_deferred(struct pprof *p, const struct frame *frames, size_t nr,
			    const char *comm, uint32_t tid, const char *family, uint64_t count,
			    uint64_t period);

/* A memory profile (record --memory): samples with Go's heap-profile values,
 * alloc_objects, alloc_space, inuse_objects and inuse_space (bytes and counts the sampled
 * allocations stand for; in use = live at exit), period "space" in bytes (give the mean
 * bytes per sample as pprof_info.ns_per_sample).
 * Add each with pprof_add_deferred() (count and period unused), then its values with
 * pprof_add_memory(). */
struct pprof *pprof_new_memory(void);
void pprof_add_memory(struct pprof *p, uint32_t handle, const char *op, const uint64_t v[4]);

/* Encode and gzip the profile to out.  Returns 0, or -1 on a write error. */
int pprof_write(struct pprof *p, const struct pprof_info *info, FILE *out);

/* Samples, functions and distinct stacks added so far (for the summary line). */
void pprof_counts(const struct pprof *p, uint64_t *samples, size_t *functions, size_t *stacks);

#endif
