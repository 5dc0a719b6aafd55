/* recfile-priv.h - recfile.c entry points for session.c and the tests (not a public API). */
#ifndef DLPROF_RECFILE_PRIV_H
#define DLPROF_RECFILE_PRIV_H

#include "recfile.h"

#include <string.h>

#define RECFILE_QUIET (1u << 0)	/* do not print the truncation warning */
#define RECFILE_SKIP_SAMPLES  (1u << 1)	/* step over chunks flagged SAMPLES (header checked) */
#define RECFILE_SKIP_SIDEBAND (1u << 2)	/* step over chunks flagged SIDEBAND (header checked) */

/*
 * Sample-class records: perf records that session.c delivers in its second pass
 * (everything but MMAP, MMAP2, COMM, FORK and EXIT).  The writer of a split file puts
 * them in SAMPLES chunks and everything else in SIDEBAND chunks.  A too-short perf record
 * is side-band (pass 1 counts it as malformed).
 */
static inline int dlp_perf_type_is_sideband(uint32_t perf_type)
{
	return perf_type == PERF_RECORD_MMAP || perf_type == PERF_RECORD_MMAP2 ||
	       perf_type == PERF_RECORD_COMM || perf_type == PERF_RECORD_FORK ||
	       perf_type == PERF_RECORD_EXIT;
}

static inline int dlp_rec_is_sample_class(uint32_t type, const void *payload, size_t len)
{
	struct perf_event_header h;

	if (type == DLP_REC_STACK || type == DLP_REC_USAMPLE || type == DLP_REC_MEMALLOC ||
	    type == DLP_REC_USAMPLES)
		return 1;
	if (type != DLP_REC_PERF || len < sizeof(h))
		return 0;
	memcpy(&h, payload, sizeof(h));
	return !dlp_perf_type_is_sideband(h.type);
}

/* recfile_read() with flags (RECFILE_*). */
int recfile_read_flags(const char *path, recfile_cb *cb, void *ctx,
		       struct recfile_info *info, unsigned flags);

/* Records added so far (the header promises it next to recwriter_bytes). */
uint64_t recwriter_records(const struct recwriter *w);

/* Uncompressed chunk size the writer aims for (tests lower it to exercise chunking). */
void recwriter_set_chunk_size(struct recwriter *w, size_t bytes);

#endif
