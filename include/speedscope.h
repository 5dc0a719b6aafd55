/* speedscope.h - the profile in speedscope's file format (JSON, the schema the
 * speedscope npm package ships as file-format-schema.json): frames shared by name, file
 * and line (a Python function's line apart from its name), one "sampled" profile per
 * thread, its samples in time order with consecutive equal stacks merged, weighted in
 * nanoseconds for a clock event (unit "none" for a count). */
#ifndef DLPROF_SPEEDSCOPE_H
#define DLPROF_SPEEDSCOPE_H

#include <stdint.h>
#include <stdio.h>

#include "frame.h"
#include "profile.h"

struct speedscope;

struct speedscope *speedscope_new(void);
void speedscope_free(struct speedscope *ss);
/* One sample of thread tid, frames leaf first, worth weight (ns or 1). */
void speedscope_add(struct speedscope *ss, uint32_t pid, uint32_t tid, const char *comm,
		    const struct frame *frames, size_t nr, uint64_t weight);
/* Returns 0, or -1 on a write error. */
int speedscope_write(struct speedscope *ss, FILE *out, const char *name, int time_unit);

struct sample_filter;
struct speedscope_opts {
	const char *input, *output;	/* output "-": stdout */
	int no_kernel;			/* leave kernel frames out */
	struct profile_opts po;
	struct sample_filter *filt;
};
/* dlprof speedscope: read the recording and write the file.  enum dlp_result. */
int speedscope_run(const struct speedscope_opts *o);

#endif
