/* memrec.c - the compact records of record --memory (memrec.h, docs/FORMAT.md). */
#include "memrec.h"

#include <string.h>

#include "memevent.h"
#include "recfile.h"

/* ---- varints: 7 bits a byte, low first; signed ones zigzag ---- */

static void put_uv(struct strbuf *sb, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (unsigned char)v;
	strbuf_add(sb, b, n);
}

static void put_sv(struct strbuf *sb, int64_t v)
{
	put_uv(sb, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static int get_uv(struct memrec_dec *d, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (d->p >= d->end)
			return -1;
		uint64_t b = *d->p++;

		if (shift == 63 && b > 1)
			return -1;	/* past 64 bits */
		x |= (b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

static int get_sv(struct memrec_dec *d, int64_t *v)
{
	uint64_t u;

	if (get_uv(d, &u) < 0)
		return -1;
	*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	return 0;
}

static int get_u32(struct memrec_dec *d, uint32_t *v)
{
	uint64_t u;

	if (get_uv(d, &u) < 0 || u > UINT32_MAX)
		return -1;
	*v = (uint32_t)u;
	return 0;
}

/* a u32 given as a difference from another */
static int get_u32_from(struct memrec_dec *d, uint32_t base, uint32_t *v)
{
	int64_t x;

	if (get_sv(d, &x) < 0 || (int64_t)base + x < 0 || (int64_t)base + x > UINT32_MAX)
		return -1;
	*v = (uint32_t)((int64_t)base + x);
	return 0;
}

/* ---- the encoder ---- */

#define ALLOC_FLAGS	(DLP_USAMPLE_LEAF_IP | DLP_USAMPLE_PY_OWN | DLP_USAMPLE_PY_LATE | \
			 DLP_USAMPLE_PY_UNCHECKED)
#define ENT_ADDR	1u	/* an alloc entry: the address follows */
#define ENT_SEQ		1u	/* a free entry: named by seq, its time in microseconds */

void memrec_enc_init(struct memrec_enc *e)
{
	memset(e, 0, sizeof(*e));
	strbuf_init(&e->buf, 0);
}

void memrec_enc_release(struct memrec_enc *e)
{
	strbuf_release(&e->buf);
}

static void begin(struct memrec_enc *e, uint64_t id, size_t head)
{
	static const unsigned char zero[16];

	strbuf_reset(&e->buf);
	strbuf_add(&e->buf, zero, head);
	e->nr = 0;
	e->id = id;
	e->head = head;
	memset(&e->pa, 0, sizeof(e->pa));
	memset(&e->pf, 0, sizeof(e->pf));
}

/*
 * An entry: flags (u8: DLP_USAMPLE_LEAF_IP, _PY_*, bit 0 the address follows); pid and
 * the seq, ip and time as differences from the entry before; tid from pid; cpu, kind,
 * stack id, size; weight from size; then the address.
 */
void memrec_alloc_add(struct memrec_enc *e, uint64_t id, const struct memrec_alloc *a)
{
	unsigned char fl = (unsigned char)((a->flags & ALLOC_FLAGS) | (a->addr ? ENT_ADDR : 0));
	struct strbuf *sb = &e->buf;

	if (!e->nr)
		begin(e, id, 16);
	strbuf_add(sb, &fl, 1);
	put_sv(sb, (int64_t)a->pid - (int64_t)e->pa.pid);
	put_sv(sb, (int64_t)a->tid - (int64_t)a->pid);
	put_uv(sb, a->cpu);
	put_uv(sb, a->kind);
	put_sv(sb, (int64_t)(a->seq - e->pa.seq));
	put_sv(sb, (int64_t)(a->ip - e->pa.ip));
	put_uv(sb, a->stack_id);
	put_sv(sb, (int64_t)(a->time - e->pa.time));
	put_uv(sb, a->size);
	put_sv(sb, (int64_t)(a->weight - a->size));
	if (a->addr)
		put_uv(sb, a->addr);
	e->pa = *a;
	e->nr++;
}

static uint64_t ceil_us(uint64_t t)
{
	return t / 1000 + (t % 1000 != 0);
}

/*
 * An entry: flags (u8, bit 0: named by seq); pid from the entry before, tid from pid;
 * named by seq: the seq from the last seq before it, the time in microseconds from the
 * entry before's (rounded up: never before the free); else the address, the time in ns
 * from the entry before's.
 */
void memrec_free_add(struct memrec_enc *e, const struct memrec_free *f)
{
	int by_seq = !!(f->key & MEM_KEY_SEQ);
	unsigned char fl = by_seq ? ENT_SEQ : 0;
	struct strbuf *sb = &e->buf;
	uint64_t t = f->time;

	if (!e->nr)
		begin(e, 0, 8);
	strbuf_add(sb, &fl, 1);
	put_sv(sb, (int64_t)f->pid - (int64_t)e->pf.pid);
	put_sv(sb, (int64_t)f->tid - (int64_t)f->pid);
	if (by_seq) {
		uint64_t seq = f->key & ~MEM_KEY_SEQ;

		put_sv(sb, (int64_t)(seq - e->pa.seq));	/* pa.seq: the last seq */
		e->pa.seq = seq;
		t = ceil_us(t);
		put_sv(sb, (int64_t)(t - ceil_us(e->pf.time)));
		t *= 1000;
	} else {
		put_uv(sb, f->key);
		put_sv(sb, (int64_t)(t - e->pf.time));
	}
	e->pf = *f;
	e->pf.time = t;		/* as the reader has it */
	e->nr++;
}

const void *memrec_take(struct memrec_enc *e, size_t *len)
{
	uint32_t nr = e->nr;

	if (!nr)
		return NULL;
	/* MEMALLOC: id, nr, 0; MEMFREES: nr, 0 */
	if (e->head == 16)
		memcpy(e->buf.buf, &e->id, 8);
	memcpy(e->buf.buf + e->head - 8, &nr, 4);
	e->nr = 0;
	*len = e->buf.len;
	return e->buf.buf;
}

/* ---- the decoder ---- */

static int dec_begin(struct memrec_dec *d, const void *data, size_t len, size_t head)
{
	uint32_t zero;

	memset(d, 0, sizeof(*d));
	if (len < head)
		return -1;
	if (head == 16)
		memcpy(&d->id, data, 8);
	memcpy(&d->left, (const unsigned char *)data + head - 8, 4);
	memcpy(&zero, (const unsigned char *)data + head - 4, 4);
	if (zero)
		return -1;
	d->p = (const unsigned char *)data + head;
	d->end = (const unsigned char *)data + len;
	return 0;
}

int memrec_alloc_begin(struct memrec_dec *d, const void *data, size_t len)
{
	return dec_begin(d, data, len, 16);
}

int memrec_free_begin(struct memrec_dec *d, const void *data, size_t len)
{
	return dec_begin(d, data, len, 8);
}

static int dec_end(const struct memrec_dec *d)
{
	return d->p == d->end ? 0 : -1;
}

int memrec_alloc_next(struct memrec_dec *d, struct memrec_alloc *a)
{
	struct memrec_alloc *p = &d->pa;
	int64_t x;
	unsigned fl;

	if (!d->left)
		return dec_end(d);
	if (d->p >= d->end)
		return -1;
	fl = *d->p++;
	if (fl & ~(ALLOC_FLAGS | ENT_ADDR))
		return -1;
	memset(a, 0, sizeof(*a));
	a->flags = fl & ALLOC_FLAGS;
	if (get_u32_from(d, p->pid, &a->pid) < 0 || get_u32_from(d, a->pid, &a->tid) < 0 ||
	    get_u32(d, &a->cpu) < 0 || get_uv(d, &a->kind) < 0 || get_sv(d, &x) < 0)
		return -1;
	a->seq = p->seq + (uint64_t)x;
	if (get_sv(d, &x) < 0)
		return -1;
	a->ip = p->ip + (uint64_t)x;
	if (get_u32(d, &a->stack_id) < 0 || !a->stack_id || get_sv(d, &x) < 0)
		return -1;
	a->time = p->time + (uint64_t)x;
	if (get_uv(d, &a->size) < 0 || get_sv(d, &x) < 0)
		return -1;
	a->weight = a->size + (uint64_t)x;
	if ((fl & ENT_ADDR) && (get_uv(d, &a->addr) < 0 || !a->addr))
		return -1;
	*p = *a;
	d->left--;
	return 1;
}

int memrec_free_next(struct memrec_dec *d, struct memrec_free *f)
{
	struct memrec_free *p = &d->pf;
	int64_t x;
	unsigned fl;

	if (!d->left)
		return dec_end(d);
	if (d->p >= d->end)
		return -1;
	fl = *d->p++;
	if (fl & ~ENT_SEQ)
		return -1;
	memset(f, 0, sizeof(*f));
	if (get_u32_from(d, p->pid, &f->pid) < 0 || get_u32_from(d, f->pid, &f->tid) < 0)
		return -1;
	if (fl & ENT_SEQ) {
		uint64_t seq, us;

		if (get_sv(d, &x) < 0)
			return -1;
		seq = d->pa.seq + (uint64_t)x;
		if (seq & MEM_KEY_SEQ)
			return -1;
		d->pa.seq = seq;
		f->key = seq | MEM_KEY_SEQ;
		if (get_sv(d, &x) < 0)
			return -1;
		us = ceil_us(p->time) + (uint64_t)x;
		if (us > UINT64_MAX / 1000)
			return -1;
		f->time = us * 1000;
	} else {
		if (get_uv(d, &f->key) < 0 || (f->key & MEM_KEY_SEQ))
			return -1;
		if (get_sv(d, &x) < 0)
			return -1;
		f->time = p->time + (uint64_t)x;
	}
	*p = *f;
	d->left--;
	return 1;
}
