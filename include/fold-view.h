/* fold-view.h - dlprof fold and flamegraph: the recordings' stacks folded (fold.h),
 * printed for flamegraph.pl or drawn as an SVG (flamegraph.h); a differential graph of
 * two recordings; the heap's stacks by bytes.
 */
#ifndef DLPROF_FOLD_VIEW_H
#define DLPROF_FOLD_VIEW_H

#include <stddef.h>

#include "fold.h"
#include "profile.h"

struct family_rules;
struct sample_filter;

enum fold_weight {
	FOLD_SAMPLES,		/* samples; microseconds with po.off_cpu or po.wall */
	FOLD_MEM_ALLOC,		/* record --memory: bytes allocated */
	FOLD_MEM_PEAK,		/* ... live at the peak */
	FOLD_MEM_LIVE,		/* ... live at exit */
};

struct fold_view_opts {
	const char *const *inputs;	/* one recording or several (one fold); diff: BASE NEW */
	size_t nr_inputs;
	int by_input;			/* each stack under the recording it came from */
	int by_family, by_op;		/* each stack under its family and/or operator */
	enum fold_weight weight;
	struct fold_opts fo;
	struct profile_opts po;
	const struct family_rules *rules;	/* NULL: no attribution needed */
	struct sample_filter *filt;
	/* flamegraph: an SVG, coloured by family; diff: BASE against NEW */
	int svg, diff;
	const char *output;		/* "-": stdout */
	const char *title;		/* NULL: the recording's name */
	int width;
};

/* Print the folded stacks on stdout, or write the SVG.  enum dlp_result. */
int fold_view_run(const struct fold_view_opts *o);

#endif
