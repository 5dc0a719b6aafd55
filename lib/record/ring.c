/* ring.c - perf mmap ring buffer drain (acquire head, copy, release tail). */
#include "ring.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BOUNCE_SIZE 65536	/* perf_event_header.size is a u16 */

int ring_mmap(struct ring *r, int fd, size_t pages)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	void *p;

	memset(r, 0, sizeof(*r));
	if (!pages || (pages & (pages - 1)))
		return error("ring size of %zu pages is not a power of two", pages);
	p = mmap(NULL, (pages + 1) * psz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		errno = errno ? errno : ENOMEM;
		return -1;	/* caller decides: a smaller ring may fit the mlock limit */
	}
	r->ctl = p;
	r->data = (unsigned char *)p + psz;
	r->size = pages * psz;
	r->map_len = (pages + 1) * psz;
	r->bounce = xmalloc(BOUNCE_SIZE);
	return 0;
}

void ring_init_mem(struct ring *r, struct perf_event_mmap_page *ctl, void *data, size_t size)
{
	memset(r, 0, sizeof(*r));
	r->ctl = ctl;
	r->data = data;
	r->size = size;
	r->bounce = xmalloc(BOUNCE_SIZE);
}

void ring_release(struct ring *r)
{
	if (r->map_len)
		munmap(r->ctl, r->map_len);
	free(r->bounce);
	memset(r, 0, sizeof(*r));
}

static uint64_t load_head(const struct ring *r)
{
	return __atomic_load_n(&r->ctl->data_head, __ATOMIC_ACQUIRE);
}

static void store_tail(struct ring *r, uint64_t tail)
{
	__atomic_store_n(&r->ctl->data_tail, tail, __ATOMIC_RELEASE);
}

uint64_t ring_pending(const struct ring *r)
{
	return load_head(r) - r->ctl->data_tail;
}

/* Copy len bytes starting at ring position pos, wrapping at the end. */
static void copy_out(unsigned char *dst, const unsigned char *data, size_t size,
		     uint64_t pos, size_t len)
{
	size_t off = pos & (size - 1);
	size_t first = size - off;

	if (first >= len) {
		memcpy(dst, data + off, len);
	} else {
		memcpy(dst, data + off, first);
		memcpy(dst + first, data, len - first);
	}
}

/*
 * Ask for the lines of the record at pos that its reader takes first, while the one
 * before it is read: its header and the fields after it (a sample's registers and the
 * start of its stack copy, where a walk begins) and its last line (a stack copy's
 * dyn_size).  The kernel wrote them on another CPU, often long enough ago that they
 * are in memory only: a sample's first reads were ~10% of record's CPU, each waiting.
 */
#define PREFETCH_HEAD	(2048 / 64)	/* lines */
static void prefetch_record(const unsigned char *data, size_t size, uint64_t pos,
			    uint64_t head)
{
	struct perf_event_header h;

	if (head - pos < sizeof(h))
		return;
	copy_out((unsigned char *)&h, data, size, pos, sizeof(h));
	if (h.size < sizeof(h) || h.size > head - pos)
		return;
	for (size_t l = 1; l < PREFETCH_HEAD && l * 64 < h.size; l++)
		__builtin_prefetch(data + ((pos + l * 64) & (size - 1)), 0, 3);
	__builtin_prefetch(data + ((pos + h.size - 8) & (size - 1)), 0, 3);
	/* the header of the record after it */
	if (head - pos - h.size >= sizeof(h))
		__builtin_prefetch(data + ((pos + h.size) & (size - 1)), 0, 3);
}

/*
 * The record at tail, whole: in place, or copied into bounce where it wraps the end or is
 * not aligned.  NULL where no header is there yet (fewer than 8 bytes before head), or
 * where it is malformed (*malformed set): no next record boundary can be found.
 */
static const struct perf_event_header *record_at(const unsigned char *data, size_t size,
						 uint64_t tail, uint64_t head,
						 unsigned char *bounce, int *malformed)
{
	struct perf_event_header hdr;
	size_t off = tail & (size - 1);

	*malformed = 0;
	if (head - tail < sizeof(hdr))
		return NULL;
	copy_out((unsigned char *)&hdr, data, size, tail, sizeof(hdr));
	if (hdr.size < sizeof(hdr) || hdr.size > head - tail || hdr.size > size) {
		*malformed = 1;
		return NULL;
	}
	if (off + hdr.size <= size && !(off & 7))
		return (const void *)(data + off);
	copy_out(bounce, data, size, tail, hdr.size);
	return (const void *)bounce;
}

uint64_t ring_read_records(const unsigned char *data, size_t size, uint64_t tail, uint64_t head,
			   unsigned char *bounce, ring_record_cb *cb, void *ctx, int *err,
			   uint64_t *bad)
{
	const struct perf_event_header *rec;
	int malformed, ret;

	*err = 0;
	while ((rec = record_at(data, size, tail, head, bounce, &malformed))) {
		/* the next record: its header, asked for while the last one was read, says
		 * where its lines are */
		prefetch_record(data, size, tail + rec->size, head);
		ret = cb(ctx, rec);
		if (ret < 0) {
			*err = ret;
			return tail;
		}
		tail += rec->size;
	}
	if (malformed) {
		/* cannot find the next record boundary: drop what is there */
		(*bad)++;
		return head;
	}
	/* a partial header cannot be published by the kernel; leave it for later */
	return tail;
}

struct count_ctx {
	ring_record_cb *cb;
	void *ctx;
	long n;
};

static int count_cb(void *ctx, const struct perf_event_header *rec)
{
	struct count_ctx *c = ctx;
	int ret = c->cb(c->ctx, rec);

	if (!ret)
		c->n++;
	return ret;
}

long ring_drain(struct ring *r, ring_record_cb *cb, void *ctx)
{
	struct count_ctx c = { cb, ctx, 0 };

	for (int round = 0; round < 4; round++) {
		uint64_t head = load_head(r);
		uint64_t tail = r->ctl->data_tail;
		uint64_t start = tail;
		int err;

		if (head == tail)
			break;
		tail = ring_read_records(r->data, r->size, tail, head, r->bounce, count_cb, &c,
					 &err, &r->bad);
		if (tail != start)
			store_tail(r, tail);
		if (err)
			return err;
		if (tail != head)
			break;	/* partial header: wait for the kernel */
	}
	return c.n;
}

/* ---- several rings, in time order ---- */

/* A time this far past the cut is none (a damaged record): it would hold its ring back
 * until the last read, and the kernel would drop what came after it meanwhile */
#define MERGE_FUTURE_NS	(60 * 1000000000ull)

struct msrc {
	struct ring *ring;	/* NULL: the queue */
	uint64_t tail, head;
	const struct perf_event_header *rec;	/* the next one, to be delivered */
	uint64_t t;		/* its time */
};

/* The source's next record, if there is one whose time is at most cut */
static int msrc_peek(struct msrc *s, struct ring_queue *q, uint64_t cut, ring_time_fn *tf,
		     void *ctx)
{
	const struct perf_event_header *rec;
	uint64_t t = s->t;

	if (s->ring) {
		struct ring *r = s->ring;
		int malformed;

		rec = record_at(r->data, r->size, s->tail, s->head, r->bounce, &malformed);
		if (malformed) {
			r->bad++;	/* no next record boundary: what is there goes */
			s->tail = s->head;
		}
		if (!rec)
			return 0;
	} else {
		struct perf_event_header hdr;

		if (q->len - q->off < sizeof(hdr))
			return 0;
		memcpy(&hdr, q->buf + q->off, sizeof(hdr));
		if (hdr.size < sizeof(hdr) || hdr.size > q->len - q->off) {
			q->off = q->len;
			return 0;
		}
		rec = (const void *)(q->buf + q->off);
	}
	if (tf(ctx, rec, &t) && t > cut && t - cut > MERGE_FUTURE_NS)
		t = s->t;	/* (no time: it keeps its place) */
	if (t > cut)
		return 0;
	s->rec = rec;
	s->t = t;
	return 1;
}

static int msrc_before(const struct msrc *s, int a, int b)
{
	return s[a].t < s[b].t || (s[a].t == s[b].t && a < b);
}

static void heap_down(int *heap, int n, const struct msrc *s, int i)
{
	for (;;) {
		int l = 2 * i + 1, m = i;

		if (l < n && msrc_before(s, heap[l], heap[m]))
			m = l;
		if (l + 1 < n && msrc_before(s, heap[l + 1], heap[m]))
			m = l + 1;
		if (m == i)
			return;
		int x = heap[i];

		heap[i] = heap[m];
		heap[m] = x;
		i = m;
	}
}

long ring_merge(struct ring *rings, int nr, struct ring_queue *q, uint64_t cut,
		ring_time_fn *tf, ring_record_cb *cb, ring_record_cb *qcb, void *ctx)
{
	struct msrc *s = xcalloc((size_t)nr + 1, sizeof(*s));
	int *heap = xmalloc(((size_t)nr + 1) * sizeof(*heap));
	int n = 0, ns = 0;
	long done = 0;

	for (int i = 0; i < nr; i++) {
		if (!rings[i].ctl)
			continue;
		s[ns].ring = &rings[i];
		s[ns].head = load_head(&rings[i]);
		s[ns].tail = rings[i].ctl->data_tail;
		ns++;
	}
	if (q)
		ns++;	/* (the queue: last, s[ns - 1].ring NULL) */
	for (int i = 0; i < ns; i++)
		if (msrc_peek(&s[i], q, cut, tf, ctx))
			heap[n++] = i;
	for (int i = n / 2 - 1; i >= 0; i--)
		heap_down(heap, n, s, i);
	while (n) {
		struct msrc *m = &s[heap[0]];
		int ret;

		if (m->ring)
			prefetch_record(m->ring->data, m->ring->size, m->tail + m->rec->size, m->head);
		ret = (m->ring ? cb : qcb)(ctx, m->rec);
		if (ret < 0) {
			done = ret;
			break;
		}
		done++;
		if (m->ring)
			m->tail += m->rec->size;
		else
			q->off += m->rec->size;
		if (!msrc_peek(m, q, cut, tf, ctx))
			heap[0] = heap[--n];
		heap_down(heap, n, s, 0);
	}
	for (int i = 0; i < ns; i++)
		if (s[i].ring && s[i].tail != s[i].ring->ctl->data_tail)
			store_tail(s[i].ring, s[i].tail);
	free(heap);
	free(s);
	return done;
}
