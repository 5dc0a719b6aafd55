/* pprof-view.h - dlprof pprof: one recording or several (labelled input, host, pid,
 * rank) as one pprof profile (pprof.h); or a record --memory recording as a heap profile.
 */
#ifndef DLPROF_PPROF_VIEW_H
#define DLPROF_PPROF_VIEW_H

#include <stddef.h>

#include "profile.h"

struct family_rules;
struct sample_filter;

struct pprof_view_opts {
	const char *const *inputs;
	size_t nr_inputs;
	const char *output;		/* "-": stdout */
	int no_kernel;			/* leave kernel frames out */
	int memory;			/* a heap profile (one recording) */
	struct profile_opts po;
	const struct family_rules *rules;
	struct sample_filter *filt;
};

/* Read the recordings and write the profile.  enum dlp_result. */
int pprof_view_run(const struct pprof_view_opts *o);

#endif
