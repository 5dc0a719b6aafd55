/* test-ring.c - ring_drain on a ring built in plain memory (TAP output).
 *
 * Records of varying sizes are written the way the kernel does (at data_head, wrapping
 * at the end of the data area), then drained: wrapped records must arrive whole and in
 * order, a head that moves during the drain must be followed, LOST records keep their
 * payload, a garbage header resyncs the ring, and data_tail ends at data_head.
 */
#include "ring.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DATA_SIZE 1024

static int ntest, nfail;

static void ok(int cond, const char *what)
{
	ntest++;
	if (!cond)
		nfail++;
	printf("%sok %d - %s\n", cond ? "" : "not ", ntest, what);
}

struct fake {
	struct perf_event_mmap_page ctl;
	unsigned char data[DATA_SIZE];
	struct ring ring;
};

/* Write a record of type and size whose payload bytes are seq + i, at data_head. */
static void put(struct fake *f, uint32_t type, uint16_t size, uint8_t seq)
{
	unsigned char buf[1024];
	struct perf_event_header h = { type, 0, size };
	uint64_t head = f->ctl.data_head;

	memcpy(buf, &h, sizeof(h));
	for (size_t i = sizeof(h); i < size; i++)
		buf[i] = (unsigned char)(seq + i);
	for (size_t i = 0; i < size; i++)
		f->data[(head + i) & (DATA_SIZE - 1)] = buf[i];
	__atomic_store_n(&f->ctl.data_head, head + size, __ATOMIC_RELEASE);
}

static void put_lost(struct fake *f, uint64_t id, uint64_t lost)
{
	unsigned char buf[24];
	struct perf_event_header h = { PERF_RECORD_LOST, 0, sizeof(buf) };
	uint64_t head = f->ctl.data_head;

	memcpy(buf, &h, 8);
	memcpy(buf + 8, &id, 8);
	memcpy(buf + 16, &lost, 8);
	for (size_t i = 0; i < sizeof(buf); i++)
		f->data[(head + i) & (DATA_SIZE - 1)] = buf[i];
	f->ctl.data_head = head + sizeof(buf);
}

struct seen {
	int nr;
	int bad_payload;
	uint8_t seq[64];
	uint16_t size[64];
	uint64_t lost;
	struct fake *grow;	/* when set: add records from inside the callback, once */
	int grown;
	int fail_at;		/* return -1 on this record (1-based), 0: never */
};

static int cb(void *ctx, const struct perf_event_header *rec)
{
	struct seen *s = ctx;
	const unsigned char *p = (const void *)rec;

	if (s->fail_at && s->nr + 1 == s->fail_at)
		return -1;
	if (rec->type == PERF_RECORD_LOST) {
		uint64_t n;

		memcpy(&n, p + 16, 8);
		s->lost += n;
	} else {
		uint8_t seq = (uint8_t)(p[8] - 8);

		for (size_t i = 8; i < rec->size; i++)
			if (p[i] != (unsigned char)(seq + i))
				s->bad_payload++;
		if (s->nr < 64) {
			s->seq[s->nr] = seq;
			s->size[s->nr] = rec->size;
		}
	}
	s->nr++;
	if (s->grow && !s->grown) {
		s->grown = 1;
		put(s->grow, PERF_RECORD_SAMPLE, 200, 90);
		put(s->grow, PERF_RECORD_SAMPLE, 48, 91);
	}
	return 0;
}

/* ---- ring_merge: a record's time is its seq; type NOTIME records have none ---- */
#define NOTIME 99

static int seq_time(void *ctx, const struct perf_event_header *rec, uint64_t *t)
{
	(void)ctx;
	if (rec->type == NOTIME)
		return 0;
	*t = (uint8_t)(((const unsigned char *)rec)[8] - 8);
	return 1;
}

/* seq_time; a record of type FAR has its time at 16 */
#define FAR 98

static int far_time(void *ctx, const struct perf_event_header *rec, uint64_t *t)
{
	if (rec->type != FAR)
		return seq_time(ctx, rec, t);
	memcpy(t, (const unsigned char *)rec + 16, 8);
	return 1;
}

struct order {
	int nr;
	char got[64];	/* "a3" ... : 'r' a ring's record, 'q' the queue's, then its seq */
};

static void note(struct order *o, char src, const struct perf_event_header *rec)
{
	uint8_t seq = (uint8_t)(((const unsigned char *)rec)[8] - 8);

	if (o->nr < 30) {
		o->got[2 * o->nr] = src;
		o->got[2 * o->nr + 1] = (char)('A' + seq);
		o->got[2 * o->nr + 2] = '\0';
	}
	o->nr++;
}

static int ring_cb(void *ctx, const struct perf_event_header *rec)
{
	note(ctx, 'r', rec);
	return 0;
}

static int queue_cb(void *ctx, const struct perf_event_header *rec)
{
	note(ctx, 'q', rec);
	return 0;
}

/* A record as put() writes one, appended to a queue's memory */
static void qput(unsigned char *buf, size_t *len, uint32_t type, uint16_t size, uint8_t seq)
{
	struct perf_event_header h = { type, 0, size };

	memcpy(buf + *len, &h, sizeof(h));
	for (size_t i = sizeof(h); i < size; i++)
		buf[*len + i] = (unsigned char)(seq + i);
	*len += size;
}

static struct fake *fake_new(uint64_t start)
{
	struct fake *f = calloc(1, sizeof(*f));

	f->ctl.data_head = f->ctl.data_tail = start;
	ring_init_mem(&f->ring, &f->ctl, f->data, DATA_SIZE);
	return f;
}

static void fake_free(struct fake *f)
{
	ring_release(&f->ring);
	free(f);
}

int main(void)
{
	struct fake *f;
	struct seen s;
	long n;

	/* 1: plain records, no wrap */
	f = fake_new(0);
	put(f, PERF_RECORD_SAMPLE, 64, 1);
	put(f, PERF_RECORD_SAMPLE, 128, 2);
	memset(&s, 0, sizeof(s));
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 2 && s.nr == 2 && s.seq[0] == 1 && s.seq[1] == 2 && !s.bad_payload,
	   "two records delivered in order");
	ok(f->ctl.data_tail == 192, "data_tail published at the head");
	ok(ring_drain(&f->ring, cb, &s) == 0 && s.nr == 2, "empty ring delivers nothing");
	fake_free(f);

	/* 2: a record wrapping the end, one whose header wraps, positions beyond 2^32 */
	f = fake_new((1ull << 32) + DATA_SIZE - 100);
	put(f, PERF_RECORD_SAMPLE, 64, 10);	/* fits: 36 bytes left */
	put(f, PERF_RECORD_SAMPLE, 300, 11);	/* wraps */
	memset(&s, 0, sizeof(s));
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 2 && s.seq[1] == 11 && s.size[1] == 300 && !s.bad_payload,
	   "record that wraps the end arrives whole");
	f->ctl.data_tail = f->ctl.data_head = (1ull << 32) + 5 * DATA_SIZE - 4;
	put(f, PERF_RECORD_SAMPLE, 40, 12);	/* header itself split 4 + 4 */
	memset(&s, 0, sizeof(s));
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 1 && s.seq[0] == 12 && s.size[0] == 40 && !s.bad_payload,
	   "record whose header wraps arrives whole");
	fake_free(f);

	/* 3: the head moves while draining: the drain goes round again */
	f = fake_new(DATA_SIZE - 50);
	put(f, PERF_RECORD_SAMPLE, 80, 20);
	memset(&s, 0, sizeof(s));
	s.grow = f;
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 3 && s.nr == 3 && s.seq[1] == 90 && s.seq[2] == 91 && !s.bad_payload,
	   "records added during the drain are delivered");
	ok(f->ctl.data_tail == f->ctl.data_head, "tail caught up with the moved head");
	fake_free(f);

	/* 4: LOST records keep their count, mixed with samples, wrapped */
	f = fake_new(DATA_SIZE - 10);
	put_lost(f, 7, 13);
	put(f, PERF_RECORD_SAMPLE, 72, 30);
	put_lost(f, 7, 29);
	memset(&s, 0, sizeof(s));
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 3 && s.lost == 42 && !s.bad_payload, "LOST records delivered with their counts");
	fake_free(f);

	/* 5: a callback failure stops the drain; the record is not consumed */
	f = fake_new(0);
	put(f, PERF_RECORD_SAMPLE, 64, 40);
	put(f, PERF_RECORD_SAMPLE, 64, 41);
	memset(&s, 0, sizeof(s));
	s.fail_at = 2;
	n = ring_drain(&f->ring, cb, &s);
	ok(n < 0 && s.nr == 1 && f->ctl.data_tail == 64, "failed callback leaves its record in the ring");
	s.fail_at = 0;
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 1 && s.seq[1] == 41, "next drain resumes at that record");
	fake_free(f);

	/* 6: garbage (size 0, or beyond the head) is skipped and counted */
	f = fake_new(0);
	put(f, PERF_RECORD_SAMPLE, 64, 50);
	put(f, PERF_RECORD_SAMPLE, 8, 51);
	f->data[64 + 6] = 0;	/* size of the second record := 0 */
	f->data[64 + 7] = 0;
	memset(&s, 0, sizeof(s));
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 1 && f->ring.bad == 1 && f->ctl.data_tail == f->ctl.data_head,
	   "zero-sized header skipped to the head and counted");
	put(f, PERF_RECORD_SAMPLE, 64, 52);
	f->data[(f->ctl.data_head - 64 + 6) & (DATA_SIZE - 1)] = 0xff;	/* size > head - tail */
	n = ring_drain(&f->ring, cb, &s);
	ok(n == 0 && f->ring.bad == 2 && f->ctl.data_tail == f->ctl.data_head,
	   "header claiming more than the ring holds is skipped");
	fake_free(f);

	/* 7: a partial header (fewer than 8 bytes published) is left for later */
	{
		unsigned char data[DATA_SIZE];
		uint64_t bad = 0, pos;
		int err;

		memset(data, 0, sizeof(data));
		memset(&s, 0, sizeof(s));
		pos = ring_read_records(data, DATA_SIZE, 100, 104, NULL, cb, &s, &err, &bad);
		ok(pos == 100 && s.nr == 0 && !bad, "partial header not consumed");
	}

	/* 8: two rings and a queue, merged by time; what is after the cut stays */
	{
		struct fake *a = fake_new(DATA_SIZE - 70), *b = fake_new(0);
		struct ring rings[3];
		unsigned char qb[512];
		size_t qlen = 0;
		struct ring_queue q;
		struct order o = { 0 };

		put(a, PERF_RECORD_SAMPLE, 48, 1);
		put(a, PERF_RECORD_SAMPLE, 64, 4);	/* wraps the end */
		put(a, PERF_RECORD_MMAP2, 40, 6);
		put(a, PERF_RECORD_SAMPLE, 48, 9);
		put(a, PERF_RECORD_SAMPLE, 48, 11);	/* after the cut */
		put(b, PERF_RECORD_SAMPLE, 48, 2);
		put(b, PERF_RECORD_SAMPLE, 48, 3);
		put(b, PERF_RECORD_SAMPLE, 48, 7);
		qput(qb, &qlen, PERF_RECORD_SAMPLE, 48, 5);
		qput(qb, &qlen, PERF_RECORD_SAMPLE, 56, 8);
		qput(qb, &qlen, PERF_RECORD_SAMPLE, 48, 12);	/* after the cut */
		rings[0] = a->ring;
		memset(&rings[1], 0, sizeof(rings[1]));	/* (a cpu without a ring) */
		rings[2] = b->ring;
		q = (struct ring_queue){ qb, qlen, 0 };
		n = ring_merge(rings, 3, &q, 10, seq_time, ring_cb, queue_cb, &o);
		ok(n == 9 && !strcmp(o.got, "rBrCrDrEqFrGrHqIrJ"),
		   "merge: records of two rings and a queue in time order");
		ok(a->ctl.data_tail == a->ctl.data_head - 48 && b->ctl.data_tail == b->ctl.data_head &&
		   q.off == qlen - 48, "merge: the records after the cut stay");
		memset(&o, 0, sizeof(o));
		put(b, PERF_RECORD_SAMPLE, 48, 10);
		n = ring_merge(rings, 3, &q, 20, seq_time, ring_cb, queue_cb, &o);
		ok(n == 3 && !strcmp(o.got, "rKrLqM") && q.off == qlen &&
		   a->ctl.data_tail == a->ctl.data_head, "merge: the next call begins with them");
		fake_free(a);
		fake_free(b);
	}

	/* 9: equal times: the lower ring first, the queue last; a record without a time
	 * keeps its place in its ring */
	{
		struct fake *a = fake_new(0), *b = fake_new(0);
		struct ring rings[2];
		unsigned char qb[64];
		size_t qlen = 0;
		struct ring_queue q;
		struct order o = { 0 };

		put(b, PERF_RECORD_SAMPLE, 48, 5);
		put(a, PERF_RECORD_SAMPLE, 48, 5);
		put(a, PERF_RECORD_SAMPLE, 48, 2);	/* earlier than the record before it */
		put(b, PERF_RECORD_SAMPLE, 48, 3);
		put(b, NOTIME, 48, 25);
		put(b, PERF_RECORD_SAMPLE, 48, 6);
		qput(qb, &qlen, PERF_RECORD_SAMPLE, 48, 5);
		rings[0] = a->ring;
		rings[1] = b->ring;
		q = (struct ring_queue){ qb, qlen, 0 };
		n = ring_merge(rings, 2, &q, 100, seq_time, ring_cb, queue_cb, &o);
		/* a: 5 then 2, out of order, read as they come; b: 5, 3, its untimed one, 6 */
		ok(n == 7 && !strcmp(o.got, "rFrCrFrDrZqFrG"),
		   "merge: ties to the lower ring, the queue last, untimed records in place");
		fake_free(a);
		fake_free(b);
	}

	/* 10: a time far past the cut (a damaged record) does not hold its ring back */
	{
		struct fake *a = fake_new(0);
		struct order o = { 0 };
		unsigned char buf[48];
		uint64_t far = 100ull * 1000000000ull, head;

		put(a, PERF_RECORD_SAMPLE, 48, 1);
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &(struct perf_event_header){ FAR, 0, 48 }, 8);
		buf[8] = 2 + 8;		/* (seq 2 as put() writes it) */
		memcpy(buf + 16, &far, 8);
		head = a->ctl.data_head;
		memcpy(a->data + head, buf, sizeof(buf));
		a->ctl.data_head = head + sizeof(buf);
		put(a, PERF_RECORD_SAMPLE, 48, 3);
		n = ring_merge(&a->ring, 1, NULL, 10, far_time, ring_cb, ring_cb, &o);
		ok(n == 3 && !strcmp(o.got, "rBrCrD") && a->ctl.data_tail == a->ctl.data_head,
		   "merge: a time far past the cut counts as none");
		fake_free(a);
	}

	/* 11: a callback failure stops the merge; the tails say what was consumed */
	{
		struct fake *a = fake_new(0), *b = fake_new(0);
		struct ring rings[2];

		memset(&s, 0, sizeof(s));
		put(a, PERF_RECORD_SAMPLE, 48, 1);
		put(b, PERF_RECORD_SAMPLE, 48, 2);
		put(a, PERF_RECORD_SAMPLE, 48, 3);
		rings[0] = a->ring;
		rings[1] = b->ring;
		s.fail_at = 2;
		n = ring_merge(rings, 2, NULL, 100, seq_time, cb, cb, &s);
		ok(n < 0 && s.nr == 1 && a->ctl.data_tail == 48 && b->ctl.data_tail == 0,
		   "merge: a failed callback leaves its record and those after it");
		fake_free(a);
		fake_free(b);
	}

	printf("1..%d\n", ntest);
	return nfail != 0;
}
