/* ring.h - draining a perf_event mmap ring buffer.
 *
 * The kernel writes records at data_head and we consume at data_tail.  data_head is
 * read with a load-acquire (so the record bytes it covers are visible), data_tail is
 * written with a store-release after the records were copied out (so the kernel never
 * overwrites bytes still being read).  A record that wraps the end of the data area is
 * copied whole into a bounce buffer, so the callback always sees one contiguous record.
 *
 * The drain works on any memory laid out like the kernel's mapping (control page, then a
 * power-of-two data area), so tests can feed it a ring built in plain memory.
 */
#ifndef DLPROF_RING_H
#define DLPROF_RING_H

#include <stddef.h>
#include <stdint.h>
#include <linux/perf_event.h>

/*
 * Called once per record; rec->size bytes are valid at rec.  Return 0 to go on; a
 * negative value stops the drain (the records before it stay consumed).
 */
typedef int ring_record_cb(void *ctx, const struct perf_event_header *rec);

struct ring {
	struct perf_event_mmap_page *ctl;	/* control page (data_head/data_tail) */
	unsigned char *data;			/* data area, size bytes */
	size_t size;				/* power of two */
	size_t map_len;				/* bytes mmap'd, 0 when not from mmap */
	unsigned char *bounce;			/* holds a wrapped record (up to 64 KiB) */
	uint64_t bad;				/* malformed headers met (ring resynced) */
};

/* Map pages data pages (a power of two) plus the control page of a perf event fd. */
int ring_mmap(struct ring *r, int fd, size_t pages);
/* Use caller memory: ctl (one control page) and data (size bytes, a power of two). */
void ring_init_mem(struct ring *r, struct perf_event_mmap_page *ctl, void *data, size_t size);
/* Unmap (when mmap'd) and free the bounce buffer. */
void ring_release(struct ring *r);

/*
 * Deliver every record between data_tail and data_head, then publish the new tail.  When
 * the head moved while draining, go round again (at most a few times, so a busy ring
 * cannot hold the caller forever).  Returns the number of records delivered, or the
 * callback's negative value.
 */
long ring_drain(struct ring *r, ring_record_cb *cb, void *ctx);

/*
 * Records of plain memory read with the rings (ring_merge): each whole, 8-byte aligned,
 * one after another in buf[off, len); off moves past those handed on.
 */
struct ring_queue {
	const unsigned char *buf;
	size_t len, off;
};

/*
 * A record's time into *t; 0 where it has none (*t is then left as it was: the time of
 * the record before it in its ring, so that it keeps its place there).
 */
typedef int ring_time_fn(void *ctx, const struct perf_event_header *rec, uint64_t *t);

/*
 * Deliver the records of nr rings (those with a ctl) and of the queue q (may be NULL), in
 * the order of their times, each ring's and the queue's own order kept (two records of the
 * same time: the one of the lower ring first, the queue's last), to cb (the queue's to
 * qcb): every one up to the first of its ring whose time is after cut, which stays, with
 * those after it, for the next call (a time over 60 s past cut counts as none).  Each ring's tail is published once, at the end.
 * Returns the number delivered, or a callback's negative value (what was delivered
 * before it stays consumed).
 */
long ring_merge(struct ring *rings, int nr, struct ring_queue *q, uint64_t cut,
		ring_time_fn *tf, ring_record_cb *cb, ring_record_cb *qcb, void *ctx);

/* Bytes waiting in the ring (head - tail). */
uint64_t ring_pending(const struct ring *r);

/*
 * The core of ring_drain on a plain buffer: deliver the records in [tail, head) of the
 * data area (positions taken modulo size) and return the position reached.  Stops early
 * (returning the position of the offending record) when cb fails, setting *err.  A header
 * whose size is below 8 or beyond head is malformed: the rest is skipped (returns head)
 * and *bad is incremented.
 */
uint64_t ring_read_records(const unsigned char *data, size_t size, uint64_t tail, uint64_t head,
			   unsigned char *bounce, ring_record_cb *cb, void *ctx, int *err,
			   uint64_t *bad);

#endif
