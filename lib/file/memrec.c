/* memrec.c - the compact records of record and record --memory (memrec.h, docs/FORMAT.md). */
#include "memrec.h"

#include <stdlib.h>
#include <string.h>

#include "memevent.h"
#include "recfile.h"

/* ---- varints (util.h): 7 bits a byte, low first; signed ones zigzag ---- */

static int get_u32(struct varint_rd *d, uint32_t *v)
{
	uint64_t u;

	if (varint_get(d, &u) < 0 || u > UINT32_MAX)
		return -1;
	*v = (uint32_t)u;
	return 0;
}

/* a u32 given as a difference from another */
static int get_u32_from(struct varint_rd *d, uint32_t base, uint32_t *v)
{
	int64_t x;

	if (varint_get_signed(d, &x) < 0 || (int64_t)base + x < 0 ||
	    (int64_t)base + x > UINT32_MAX)
		return -1;
	*v = (uint32_t)((int64_t)base + x);
	return 0;
}

#define ALLOC_FLAGS	(DLP_USAMPLE_LEAF_IP | DLP_USAMPLE_PY_OWN | DLP_USAMPLE_PY_LATE | \
			 DLP_USAMPLE_PY_UNCHECKED)
#define SAMPLE_FLAGS	(ALLOC_FLAGS | DLP_USAMPLE_PY_GIL)
#define ENT_ADDR	1u	/* an alloc entry: it has an address */
#define ENT_SEQ		1u	/* a free entry: named by seq, its time in microseconds */

static uint64_t ceil_us(uint64_t t)
{
	return t / 1000 + (t % 1000 != 0);
}

/*
 * The columns of a batch (its entries in a[0..n), a strbuf sb to write, a reader r and
 * an int64_t x to read, an index i): the same in MEMALLOC and USAMPLES, whose entries
 * name these fields alike.
 */
#define PUT_U(f)	for (i = 0; i < n; i++) strbuf_add_varint(sb, a[i].f)
#define PUT_FROM_LAST(f) \
	for (i = 0; i < n; i++) strbuf_add_svarint(sb, (int64_t)(a[i].f - (i ? a[i - 1].f : 0)))
/* pid from the entry before's, tid from its pid, cpu */
#define PUT_WHO() do { \
	for (i = 0; i < n; i++) \
		strbuf_add_svarint(sb, (int64_t)a[i].pid - (int64_t)(i ? a[i - 1].pid : 0)); \
	for (i = 0; i < n; i++) \
		strbuf_add_svarint(sb, (int64_t)a[i].tid - (int64_t)a[i].pid); \
	PUT_U(cpu); \
} while (0)
/* ip from the entry before's, stack id, time from the entry before's */
#define PUT_WHERE() do { PUT_FROM_LAST(ip); PUT_U(stack_id); PUT_FROM_LAST(time); } while (0)

#define GET_FROM_LAST(f) \
	for (i = 0; i < n; i++) { \
		if (varint_get_signed(r, &x) < 0) \
			return -1; \
		a[i].f = (i ? a[i - 1].f : 0) + (uint64_t)x; \
	}
#define GET_WHO() do { \
	for (i = 0; i < n; i++) \
		if (get_u32_from(r, i ? a[i - 1].pid : 0, &a[i].pid) < 0) \
			return -1; \
	for (i = 0; i < n; i++) \
		if (get_u32_from(r, a[i].pid, &a[i].tid) < 0) \
			return -1; \
	for (i = 0; i < n; i++) \
		if (get_u32(r, &a[i].cpu) < 0) \
			return -1; \
} while (0)
#define GET_WHERE() do { \
	GET_FROM_LAST(ip); \
	for (i = 0; i < n; i++) \
		if (get_u32(r, &a[i].stack_id) < 0 || !a[i].stack_id) \
			return -1; \
	GET_FROM_LAST(time); \
} while (0)

/* ---- the encoder ---- */

void memrec_enc_init(struct memrec_enc *e)
{
	memset(e, 0, sizeof(*e));
	strbuf_init(&e->buf, 0);
}

void memrec_enc_release(struct memrec_enc *e)
{
	strbuf_release(&e->buf);
	free(e->a);
	free(e->f);
	free(e->s);
	free(e->chain);
}

void memrec_alloc_add(struct memrec_enc *e, uint64_t id, const struct memrec_alloc *a)
{
	if (!e->nr)
		e->id = id;
	e->kind = MEMREC_ALLOCS;
	ALLOC_GROW(e->a, e->nr + 1, e->alloc_a);
	e->a[e->nr++] = *a;
}

void memrec_free_add(struct memrec_enc *e, const struct memrec_free *f)
{
	e->kind = MEMREC_FREES;
	ALLOC_GROW(e->f, e->nr + 1, e->alloc_f);
	e->f[e->nr++] = *f;
}

int memrec_sample_add(struct memrec_enc *e, uint64_t id, const struct memrec_sample *s)
{
	if (s->nr_callchain > MEMREC_CHAIN_MAX)
		return -1;
	if (!e->nr) {
		e->id = id;
		e->nr_chain = 0;
	}
	e->kind = MEMREC_SAMPLES;
	ALLOC_GROW(e->s, e->nr + 1, e->alloc_s);
	e->s[e->nr] = *s;
	e->s[e->nr++].callchain = NULL;
	if (s->nr_callchain) {
		ALLOC_GROW(e->chain, e->nr_chain + s->nr_callchain, e->alloc_chain);
		memcpy(e->chain + e->nr_chain, s->callchain, s->nr_callchain * sizeof(uint64_t));
		e->nr_chain += s->nr_callchain;
	}
	return 0;
}

/*
 * MEMALLOC: u64 id, u32 nr, u32 0; then each field of every entry in turn: flags (u8:
 * DLP_USAMPLE_LEAF_IP, _PY_*, bit 0 it has an address), pid from the entry before's, tid
 * from its pid, cpu, kind, seq from the entry before's, ip from the entry before's,
 * stack id, time from the entry before's, size, weight from its size, and the addresses
 * of those with bit 0.
 */
static void put_allocs(struct memrec_enc *e)
{
	struct strbuf *sb = &e->buf;
	const struct memrec_alloc *a = e->a;
	uint32_t n = e->nr, i;

	for (i = 0; i < n; i++) {
		unsigned char fl = (unsigned char)((a[i].flags & ALLOC_FLAGS) |
						   (a[i].addr ? ENT_ADDR : 0));

		strbuf_add(sb, &fl, 1);
	}
	PUT_WHO();
	PUT_U(kind);
	PUT_FROM_LAST(seq);
	PUT_WHERE();
	PUT_U(size);
	for (i = 0; i < n; i++)
		strbuf_add_svarint(sb, (int64_t)(a[i].weight - a[i].size));
	for (i = 0; i < n; i++)
		if (a[i].addr)
			strbuf_add_varint(sb, a[i].addr);
}

/*
 * MEMFREES: u32 nr, u32 0; then each field of every entry in turn: flags (u8, bit 0:
 * named by seq), pid from the entry before's, tid from its pid, the seqs of those named
 * by seq (each from the seq before), the addresses of the others, and the times: named
 * by seq in microseconds (rounded up: never before the free) from the entry before's
 * time so rounded, else in ns from the entry before's.
 */
static void put_frees(struct memrec_enc *e)
{
	struct strbuf *sb = &e->buf;
	const struct memrec_free *f = e->f;
	uint32_t n = e->nr, i;
	uint64_t last = 0, t = 0;

	for (i = 0; i < n; i++) {
		unsigned char fl = f[i].key & MEM_KEY_SEQ ? ENT_SEQ : 0;

		strbuf_add(sb, &fl, 1);
	}
	for (i = 0; i < n; i++)
		strbuf_add_svarint(sb, (int64_t)f[i].pid - (int64_t)(i ? f[i - 1].pid : 0));
	for (i = 0; i < n; i++)
		strbuf_add_svarint(sb, (int64_t)f[i].tid - (int64_t)f[i].pid);
	for (i = 0; i < n; i++)
		if (f[i].key & MEM_KEY_SEQ) {
			strbuf_add_svarint(sb, (int64_t)((f[i].key & ~MEM_KEY_SEQ) - last));
			last = f[i].key & ~MEM_KEY_SEQ;
		}
	for (i = 0; i < n; i++)
		if (!(f[i].key & MEM_KEY_SEQ))
			strbuf_add_varint(sb, f[i].key);
	for (i = 0; i < n; i++) {
		if (f[i].key & MEM_KEY_SEQ) {
			uint64_t us = ceil_us(f[i].time);

			strbuf_add_svarint(sb, (int64_t)(us - ceil_us(t)));
			t = us * 1000;	/* as the reader has it */
		} else {
			strbuf_add_svarint(sb, (int64_t)(f[i].time - t));
			t = f[i].time;
		}
	}
}

/*
 * USAMPLES: u64 id, u32 nr, u32 0; then each field of every entry in turn: flags (u8:
 * DLP_USAMPLE_LEAF_IP, _PY_*), pid from the entry before's, tid from its pid, cpu,
 * cpumode, ip from the entry before's, stack id, time from the entry before's, period
 * from the entry before's, the length of its kernel chain; then the chains' entries, one
 * chain after the other, each from the entry before (the first from 0).
 */
static void put_samples(struct memrec_enc *e)
{
	struct strbuf *sb = &e->buf;
	const struct memrec_sample *a = e->s;
	uint32_t n = e->nr, i;

	for (i = 0; i < n; i++) {
		unsigned char fl = (unsigned char)(a[i].flags & SAMPLE_FLAGS);

		strbuf_add(sb, &fl, 1);
	}
	PUT_WHO();
	PUT_U(cpumode);
	PUT_WHERE();
	PUT_FROM_LAST(period);
	PUT_U(nr_callchain);
	for (size_t k = 0; k < e->nr_chain; k++)
		strbuf_add_svarint(sb, (int64_t)(e->chain[k] - (k ? e->chain[k - 1] : 0)));
}

const void *memrec_take(struct memrec_enc *e, size_t *len)
{
	static const unsigned char zero[16];
	uint32_t nr = e->nr;

	if (!nr)
		return NULL;
	strbuf_reset(&e->buf);
	if (e->kind != MEMREC_FREES) {
		strbuf_add(&e->buf, &e->id, 8);
		strbuf_add(&e->buf, &nr, 4);
		strbuf_add(&e->buf, zero, 4);
		if (e->kind == MEMREC_ALLOCS)
			put_allocs(e);
		else
			put_samples(e);
	} else {
		strbuf_add(&e->buf, &nr, 4);
		strbuf_add(&e->buf, zero, 4);
		put_frees(e);
	}
	e->nr = 0;
	*len = e->buf.len;
	return e->buf.buf;
}

/* ---- the decoder ---- */

void memrec_dec_release(struct memrec_dec *d)
{
	free(d->a);
	free(d->f);
	free(d->s);
	free(d->chain);
	memset(d, 0, sizeof(*d));
}

/* the header: *rd at the first column; -1 when it is not one */
static int dec_head(struct memrec_dec *d, struct varint_rd *rd, const void *data, size_t len,
		    size_t head)
{
	uint32_t zero;

	memset(d, 0, sizeof(*d));
	if (len < head)
		return -1;
	if (head == 16)
		memcpy(&d->id, data, 8);
	memcpy(&d->nr, (const unsigned char *)data + head - 8, 4);
	memcpy(&zero, (const unsigned char *)data + head - 4, 4);
	/* each entry takes two bytes at least */
	if (zero || d->nr > MEMREC_MAX || d->nr > (len - head) / 2)
		return -1;
	rd->p = (const unsigned char *)data + head;
	rd->end = (const unsigned char *)data + len;
	return 0;
}

static int dec_allocs(struct memrec_dec *d, struct varint_rd *r)
{
	struct memrec_alloc *a = d->a;
	uint32_t n = d->nr, i;
	int64_t x;

	for (i = 0; i < n; i++) {
		unsigned fl = *r->p++;	/* (nr <= bytes / 2) */

		if (fl & ~(ALLOC_FLAGS | ENT_ADDR))
			return -1;
		a[i].flags = fl;
	}
	GET_WHO();
	for (i = 0; i < n; i++)
		if (varint_get(r, &a[i].kind) < 0)
			return -1;
	GET_FROM_LAST(seq);
	GET_WHERE();
	for (i = 0; i < n; i++)
		if (varint_get(r, &a[i].size) < 0)
			return -1;
	for (i = 0; i < n; i++) {
		if (varint_get_signed(r, &x) < 0)
			return -1;
		a[i].weight = a[i].size + (uint64_t)x;
	}
	for (i = 0; i < n; i++) {
		if (a[i].flags & ENT_ADDR) {
			if (varint_get(r, &a[i].addr) < 0 || !a[i].addr)
				return -1;
			a[i].flags &= ~ENT_ADDR;
		}
	}
	return r->p == r->end ? 0 : -1;
}

int memrec_alloc_begin(struct memrec_dec *d, const void *data, size_t len)
{
	struct varint_rd r;

	if (dec_head(d, &r, data, len, 16) < 0)
		return -1;
	d->a = xcalloc(d->nr ? d->nr : 1, sizeof(*d->a));
	if (dec_allocs(d, &r) < 0) {
		memrec_dec_release(d);
		return -1;
	}
	return 0;
}

static int dec_frees(struct memrec_dec *d, struct varint_rd *r)
{
	struct memrec_free *f = d->f;
	uint32_t n = d->nr, i;
	uint64_t last = 0, t = 0;
	int64_t x;

	for (i = 0; i < n; i++) {
		unsigned fl = *r->p++;	/* (nr <= bytes / 2) */

		if (fl & ~ENT_SEQ)
			return -1;
		f[i].key = fl & ENT_SEQ ? MEM_KEY_SEQ : 0;
	}
	for (i = 0; i < n; i++)
		if (get_u32_from(r, i ? f[i - 1].pid : 0, &f[i].pid) < 0)
			return -1;
	for (i = 0; i < n; i++)
		if (get_u32_from(r, f[i].pid, &f[i].tid) < 0)
			return -1;
	for (i = 0; i < n; i++) {
		if (!f[i].key)
			continue;
		if (varint_get_signed(r, &x) < 0)
			return -1;
		last += (uint64_t)x;
		if (last & MEM_KEY_SEQ)
			return -1;
		f[i].key = last | MEM_KEY_SEQ;
	}
	for (i = 0; i < n; i++)
		if (!f[i].key && (varint_get(r, &f[i].key) < 0 || (f[i].key & MEM_KEY_SEQ)))
			return -1;
	for (i = 0; i < n; i++) {
		if (varint_get_signed(r, &x) < 0)
			return -1;
		if (f[i].key & MEM_KEY_SEQ) {
			uint64_t us = ceil_us(t) + (uint64_t)x;

			if (us > UINT64_MAX / 1000)
				return -1;
			t = us * 1000;
		} else {
			t += (uint64_t)x;
		}
		f[i].time = t;
	}
	return r->p == r->end ? 0 : -1;
}

int memrec_free_begin(struct memrec_dec *d, const void *data, size_t len)
{
	struct varint_rd r;

	if (dec_head(d, &r, data, len, 8) < 0)
		return -1;
	d->f = xcalloc(d->nr ? d->nr : 1, sizeof(*d->f));
	if (dec_frees(d, &r) < 0) {
		memrec_dec_release(d);
		return -1;
	}
	return 0;
}

static int dec_samples(struct memrec_dec *d, struct varint_rd *r)
{
	struct memrec_sample *a = d->s;
	uint32_t n = d->nr, i;
	size_t total = 0;
	uint64_t u;
	int64_t x;

	for (i = 0; i < n; i++) {
		unsigned fl = *r->p++;	/* (nr <= bytes / 2) */

		if (fl & ~SAMPLE_FLAGS)
			return -1;
		a[i].flags = fl;
	}
	GET_WHO();
	for (i = 0; i < n; i++) {
		if (varint_get(r, &u) < 0 || u > PERF_RECORD_MISC_CPUMODE_MASK)
			return -1;
		a[i].cpumode = (uint16_t)u;
	}
	GET_WHERE();
	GET_FROM_LAST(period);
	for (i = 0; i < n; i++) {
		if (get_u32(r, &a[i].nr_callchain) < 0 || a[i].nr_callchain > MEMREC_CHAIN_MAX)
			return -1;
		total += a[i].nr_callchain;
	}
	/* each entry takes a byte at least */
	if (total > (size_t)(r->end - r->p))
		return -1;
	d->chain = xmalloc((total ? total : 1) * sizeof(*d->chain));
	for (size_t k = 0; k < total; k++) {
		if (varint_get_signed(r, &x) < 0)
			return -1;
		d->chain[k] = (k ? d->chain[k - 1] : 0) + (uint64_t)x;
	}
	for (i = 0, total = 0; i < n; i++) {
		a[i].callchain = a[i].nr_callchain ? d->chain + total : NULL;
		total += a[i].nr_callchain;
	}
	return r->p == r->end ? 0 : -1;
}

int memrec_sample_begin(struct memrec_dec *d, const void *data, size_t len)
{
	struct varint_rd r;

	if (dec_head(d, &r, data, len, 16) < 0)
		return -1;
	d->s = xcalloc(d->nr ? d->nr : 1, sizeof(*d->s));
	if (dec_samples(d, &r) < 0) {
		memrec_dec_release(d);
		return -1;
	}
	return 0;
}

int memrec_sample_next(struct memrec_dec *d, struct memrec_sample *out)
{
	if (!d->s || d->next >= d->nr) {
		memrec_dec_release(d);
		return 0;
	}
	*out = d->s[d->next++];
	return 1;
}

int memrec_alloc_next(struct memrec_dec *d, struct memrec_alloc *out)
{
	if (!d->a || d->next >= d->nr) {
		memrec_dec_release(d);
		return 0;
	}
	*out = d->a[d->next++];
	return 1;
}

int memrec_free_next(struct memrec_dec *d, struct memrec_free *out)
{
	if (!d->f || d->next >= d->nr) {
		memrec_dec_release(d);
		return 0;
	}
	*out = d->f[d->next++];
	return 1;
}
