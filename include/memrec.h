/* memrec.h - the compact records of record: DLP_REC_USAMPLES (samples whose stacks were
 * unwound while recording), and of record --memory: DLP_REC_MEMALLOC (sampled
 * allocations so unwound) and DLP_REC_MEMFREES (the frees of sampled blocks).  Each record holds a batch of entries, stored field by field (each field of
 * every entry, then the next field: deflate models a column far better than a row), each
 * a varint, most of them differences from the entry before (docs/FORMAT.md).  The encoder
 * is record's, the decoder report's; both live here so they cannot drift apart.
 */
#ifndef DLPROF_MEMREC_H
#define DLPROF_MEMREC_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* One sampled allocation: the fields of its mem-alloc sample that report reads. */
struct memrec_alloc {
	uint64_t time, ip;
	uint64_t size, weight;
	uint64_t kind, seq;	/* the event's CX: kind | seq << MEM_KIND_BITS (memevent.h) */
	uint64_t addr;		/* 0 when not kept: the block is named by seq */
	uint32_t pid, tid, cpu;
	uint32_t stack_id;	/* its DLP_REC_STACK */
	uint32_t flags;		/* DLP_USAMPLE_LEAF_IP and DLP_USAMPLE_PY_* */
};

/* One sample of a USAMPLES batch: a sample whose user stack is a DLP_REC_STACK, without
 * its registers and stack copy. */
struct memrec_sample {
	uint64_t time, ip, period;
	uint32_t pid, tid, cpu;
	uint32_t stack_id;	/* its DLP_REC_STACK */
	uint32_t flags;		/* DLP_USAMPLE_LEAF_IP and DLP_USAMPLE_PY_* */
	uint16_t cpumode;	/* header.misc & PERF_RECORD_MISC_CPUMODE_MASK */
	uint32_t nr_callchain;	/* its kernel chain, PERF_CONTEXT_* markers included */
	const uint64_t *callchain;	/* (copied by memrec_sample_add; the decoder's, until
					   it is released) */
};

#define MEMREC_CHAIN_MAX 512	/* entries of a sample's kernel chain, at most */

/* One free of a sampled block. */
struct memrec_free {
	uint64_t time;		/* ns; a free named by seq: rounded up to the microsecond */
	uint64_t key;		/* seq | MEM_KEY_SEQ, or the block's address (memevent.h) */
	uint32_t pid, tid;
};

/* An encoder gathers entries for one record; memrec_take() gives its payload. */
enum memrec_kind { MEMREC_ALLOCS, MEMREC_FREES, MEMREC_SAMPLES };

struct memrec_enc {
	struct strbuf buf;
	uint32_t nr;
	uint64_t id;		/* MEMALLOC, USAMPLES: the sample id of the batch's event */
	struct memrec_alloc *a;	/* a batch of one kind: allocations, frees or samples */
	struct memrec_free *f;
	struct memrec_sample *s;
	uint64_t *chain;	/* the samples' kernel chains, one after the other */
	size_t alloc_a, alloc_f, alloc_s, nr_chain, alloc_chain;
	enum memrec_kind kind;
};

void memrec_enc_init(struct memrec_enc *e);
void memrec_enc_release(struct memrec_enc *e);
/* Add one entry; the first one of a batch sets its id (MEMALLOC).  A batch holds one
 * kind of entry. */
void memrec_alloc_add(struct memrec_enc *e, uint64_t id, const struct memrec_alloc *a);
void memrec_free_add(struct memrec_enc *e, const struct memrec_free *f);
/* (a sample whose chain is longer than MEMREC_CHAIN_MAX: not added, -1) */
int memrec_sample_add(struct memrec_enc *e, uint64_t id, const struct memrec_sample *s);
/* The batch as a record payload (*len bytes, valid until the next add), and a new batch
 * begun; NULL when it has no entry */
const void *memrec_take(struct memrec_enc *e, size_t *len);

#define MEMREC_MAX	65536	/* entries a record may hold */

/* A decoder reads one record's entries at once (the record is column by column) */
struct memrec_dec {
	uint32_t nr, next;
	uint64_t id;
	struct memrec_alloc *a;
	struct memrec_free *f;
	struct memrec_sample *s;
	uint64_t *chain;
};

/* 0, or -1 when the payload is not a whole record of its kind (the decoder holds nothing
 * then) */
int memrec_alloc_begin(struct memrec_dec *d, const void *data, size_t len);
int memrec_free_begin(struct memrec_dec *d, const void *data, size_t len);
int memrec_sample_begin(struct memrec_dec *d, const void *data, size_t len);
/* 1: *out filled; 0: no more (the decoder released) */
int memrec_alloc_next(struct memrec_dec *d, struct memrec_alloc *out);
int memrec_free_next(struct memrec_dec *d, struct memrec_free *out);
int memrec_sample_next(struct memrec_dec *d, struct memrec_sample *out);
/* Before the last entry was read */
void memrec_dec_release(struct memrec_dec *d);

#endif
