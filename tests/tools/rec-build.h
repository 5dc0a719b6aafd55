/* rec-build.h - build perf records by hand for tests (recording-file tests, recdump input).
 *
 * Records use dlprof's sample layout: sample_type IDENTIFIER IP TID TIME CPU PERIOD
 * [CALLCHAIN] [REGS_USER STACK_USER], sample_id_all with the trailer TID TIME CPU IDENTIFIER.
 */
#ifndef DLPROF_TEST_REC_BUILD_H
#define DLPROF_TEST_REC_BUILD_H

#include <stdint.h>
#include <string.h>
#include <linux/perf_event.h>

#include "recfile.h"

#define RB_SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
			PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | \
			PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define RB_REGS_MASK ((1ull << 6) | (1ull << 7) | (1ull << 8))	/* bp sp ip */

struct rb {
	uint64_t buf[8192];	/* 64 KiB: the largest perf record */
	size_t n;		/* u64 words used */
};

static inline void rb_start(struct rb *b, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = { .type = type, .misc = misc, .size = 0 };

	b->n = 0;
	memcpy(&b->buf[b->n++], &h, 8);
}

static inline void rb_u64(struct rb *b, uint64_t v)
{
	b->buf[b->n++] = v;
}

static inline void rb_u32x2(struct rb *b, uint32_t lo, uint32_t hi)
{
	b->buf[b->n++] = (uint64_t)hi << 32 | lo;
}

/* Bytes, NUL-padded to 8. */
static inline void rb_bytes(struct rb *b, const void *p, size_t len)
{
	size_t words = (len + 7) / 8;

	memset(&b->buf[b->n], 0, words * 8);
	memcpy(&b->buf[b->n], p, len);
	b->n += words;
}

static inline void rb_str(struct rb *b, const char *s)
{
	size_t len = strlen(s) + 1;
	size_t words = (len + 7) / 8;

	memset(&b->buf[b->n], 0, words * 8);
	memcpy(&b->buf[b->n], s, len);
	b->n += words;
}

/* sample_id_all trailer: TID TIME CPU IDENTIFIER */
static inline void rb_trailer(struct rb *b, uint32_t pid, uint32_t tid, uint64_t time,
			      uint32_t cpu, uint64_t id)
{
	rb_u32x2(b, pid, tid);
	rb_u64(b, time);
	rb_u32x2(b, cpu, 0);
	rb_u64(b, id);
}

static inline size_t rb_finish(struct rb *b)
{
	struct perf_event_header h;

	memcpy(&h, &b->buf[0], 8);
	h.size = b->n * 8;
	memcpy(&b->buf[0], &h, 8);
	return b->n * 8;
}

static inline int rb_write(struct rb *b, struct recwriter *w)
{
	size_t len = rb_finish(b);

	return recwriter_add(w, DLP_REC_PERF, b->buf, len);
}

static inline int rb_attr(struct recwriter *w, const char *name, uint64_t sample_type,
			  const uint64_t *ids, uint32_t nr_ids)
{
	struct {
		struct dlp_attr_rec h;
		struct perf_event_attr a;
		uint64_t ids[16];
	} r;

	memset(&r, 0, sizeof(r));
	r.h.attr_size = sizeof(r.a);
	r.h.nr_ids = nr_ids;
	strncpy(r.h.name, name, sizeof(r.h.name) - 1);
	r.a.size = sizeof(r.a);
	r.a.type = PERF_TYPE_SOFTWARE;
	r.a.config = PERF_COUNT_SW_CPU_CLOCK;
	r.a.sample_type = sample_type;
	r.a.sample_id_all = 1;
	r.a.sample_regs_user = RB_REGS_MASK;
	r.a.sample_stack_user = 8192;
	memcpy(r.ids, ids, nr_ids * 8);
	return recwriter_add2(w, DLP_REC_ATTR, &r.h, sizeof(r.h), &r.a, sizeof(r.a) + nr_ids * 8);
}

static inline int rb_comm(struct recwriter *w, uint32_t pid, uint32_t tid, const char *comm,
			  int exec, uint64_t time, uint64_t id)
{
	struct rb b;

	rb_start(&b, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0);
	rb_u32x2(&b, pid, tid);
	rb_str(&b, comm);
	rb_trailer(&b, pid, tid, time, 0, id);
	return rb_write(&b, w);
}

static inline int rb_mmap2(struct recwriter *w, uint32_t pid, uint32_t tid, uint64_t start,
			   uint64_t len, uint64_t pgoff, const uint8_t *bid, uint8_t bid_size,
			   uint32_t prot, uint32_t flags, const char *file, uint64_t time, uint64_t id)
{
	struct rb b;
	unsigned char u[24];

	rb_start(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | (bid ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0));
	rb_u32x2(&b, pid, tid);
	rb_u64(&b, start);
	rb_u64(&b, len);
	rb_u64(&b, pgoff);
	memset(u, 0, sizeof(u));
	if (bid) {
		u[0] = bid_size;
		memcpy(u + 4, bid, bid_size);
	}
	rb_bytes(&b, u, sizeof(u));
	rb_u32x2(&b, prot, flags);
	rb_str(&b, file);
	rb_trailer(&b, pid, tid, time, 0, id);
	return rb_write(&b, w);
}

static inline int rb_task(struct recwriter *w, uint32_t type, uint32_t pid, uint32_t ppid,
			  uint32_t tid, uint32_t ptid, uint64_t time, uint64_t id)
{
	struct rb b;

	rb_start(&b, type, 0);
	rb_u32x2(&b, pid, ppid);
	rb_u32x2(&b, tid, ptid);
	rb_u64(&b, time);
	rb_trailer(&b, pid, tid, time, 0, id);
	return rb_write(&b, w);
}

static inline int rb_lost(struct recwriter *w, uint64_t id, uint64_t lost, uint64_t time)
{
	struct rb b;

	rb_start(&b, PERF_RECORD_LOST, 0);
	rb_u64(&b, id);
	rb_u64(&b, lost);
	rb_trailer(&b, 0, 0, time, 0, id);
	return rb_write(&b, w);
}

/*
 * A sample in RB_SAMPLE_TYPE layout into b (not written).  stack_bytes of stack copied
 * (rounded to 8 in the record), dyn_size as given.
 */
static inline void rb_sample(struct rb *b, uint64_t id, uint64_t ip, uint32_t pid, uint32_t tid,
			     uint64_t time, uint32_t cpu, uint64_t period, const uint64_t *chain,
			     uint64_t nr, const uint64_t *regs, const void *stack,
			     uint64_t stack_bytes, uint64_t dyn_size)
{
	rb_start(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	rb_u64(b, id);
	rb_u64(b, ip);
	rb_u32x2(b, pid, tid);
	rb_u64(b, time);
	rb_u32x2(b, cpu, 0);
	rb_u64(b, period);
	rb_u64(b, nr);
	memcpy(&b->buf[b->n], chain, nr * 8);
	b->n += nr;
	rb_u64(b, regs ? PERF_SAMPLE_REGS_ABI_64 : PERF_SAMPLE_REGS_ABI_NONE);
	if (regs) {
		memcpy(&b->buf[b->n], regs, 3 * 8);
		b->n += 3;
	}
	rb_u64(b, (stack_bytes + 7) & ~7ull);
	if (stack_bytes) {
		rb_bytes(b, stack, stack_bytes);
		rb_u64(b, dyn_size);
	}
	rb_finish(b);
}

#endif
