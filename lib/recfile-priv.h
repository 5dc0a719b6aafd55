/* recfile-priv.h - recfile.c entry points for session.c and the tests (not a public API). */
#ifndef DLPROF_RECFILE_PRIV_H
#define DLPROF_RECFILE_PRIV_H

#include "recfile.h"

#define RECFILE_QUIET (1u << 0)	/* do not print the truncation warning */

/* recfile_read() with flags (RECFILE_*). */
int recfile_read_flags(const char *path, recfile_cb *cb, void *ctx,
		       struct recfile_info *info, unsigned flags);

/* Records added so far (the header promises it next to recwriter_bytes). */
uint64_t recwriter_records(const struct recwriter *w);

/* Uncompressed chunk size the writer aims for (tests lower it to exercise chunking). */
void recwriter_set_chunk_size(struct recwriter *w, size_t bytes);

#endif
