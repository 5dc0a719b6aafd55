/* test-memrec.c - unit tests of lib/memrec.c: what record --memory writes as compact
 * MEMALLOC and MEMFREES entries decodes to what it was given (frees named by number to
 * the microsecond, rounded up), and a cut or damaged record is an error, never a read
 * past its end. */
#include <stdlib.h>
#include <string.h>

#include "memevent.h"
#include "memrec.h"
#include "recfile.h"
#include "tap.h"
#include "../xorshift.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	return xorshift64(&rng);
}

#define N 3000

static struct memrec_alloc allocs[N];
static struct memrec_free frees[N];

static void make(void)
{
	uint64_t t = 78536130593324ull, seq = 78536000000000ull;

	for (int i = 0; i < N; i++) {
		struct memrec_alloc *a = &allocs[i];

		memset(a, 0, sizeof(*a));
		t += rnd() % 2000000;
		a->time = i % 97 == 5 ? t - 40000 : t;	/* out of order now and then */
		a->pid = i % 50 == 7 ? 4000000 : 20845;	/* another process, a large pid */
		a->tid = a->pid + (uint32_t)(rnd() % 4);
		if (i % 61 == 3)
			a->tid = 2;	/* a tid below its pid */
		a->cpu = (uint32_t)(rnd() % 2);
		a->kind = MEM_KIND_MALLOC + rnd() % 5;
		a->seq = i % 11 == 4 ? 0 : seq + (uint64_t)i - (i % 13 == 0);
		a->addr = a->seq ? 0 : (0x7f0000000000ull + (rnd() % (1ull << 40))) & ~15ull;
		a->ip = i % 50 == 7 ? 0x7fcd68455c40ull : 0x7f3e6d18fc20ull;
		a->size = i % 7 ? rnd() % 100000 : (uint64_t)1 << 40;
		a->weight = a->size + rnd() % (1 << 20);
		if (i % 83 == 2)
			a->weight = a->size / 2;	/* below its size: still exact */
		a->stack_id = 1 + (uint32_t)(rnd() % 5000);
		a->flags = (uint32_t)((i % 3 ? DLP_USAMPLE_LEAF_IP : 0) |
				      (i % 5 == 1 ? DLP_USAMPLE_PY_OWN : 0) |
				      (i % 9 == 2 ? DLP_USAMPLE_PY_LATE | DLP_USAMPLE_PY_UNCHECKED : 0));
		struct memrec_free *f = &frees[i];

		f->pid = a->pid;
		f->tid = a->tid + (i % 4 == 0);
		f->time = t + rnd() % 100000 - (i % 29 == 0 ? 900000 : 0);
		f->key = a->seq ? (seq + rnd() % N) | MEM_KEY_SEQ : a->addr;
	}
}

static int same_alloc(const struct memrec_alloc *x, const struct memrec_alloc *y)
{
	return x->time == y->time && x->ip == y->ip && x->size == y->size &&
	       x->weight == y->weight && x->kind == y->kind && x->seq == y->seq &&
	       x->addr == y->addr && x->pid == y->pid && x->tid == y->tid && x->cpu == y->cpu &&
	       x->stack_id == y->stack_id && x->flags == y->flags;
}

/* every entry again, in batches as record makes them */
static int round_trip_allocs(size_t batch, size_t *bytes)
{
	struct memrec_enc e;
	int good = 1;
	size_t done = 0;

	memrec_enc_init(&e);
	*bytes = 0;
	while (done < N) {
		size_t n = N - done < batch ? N - done : batch, len;
		const void *p;
		struct memrec_dec d;
		struct memrec_alloc a;

		for (size_t i = 0; i < n; i++)
			memrec_alloc_add(&e, 0x1234 + done, &allocs[done + i]);
		p = memrec_take(&e, &len);
		*bytes += len;
		if (!p || memrec_alloc_begin(&d, p, len) < 0 || d.id != 0x1234 + done)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (memrec_alloc_next(&d, &a) != 1 || !same_alloc(&a, &allocs[done + i]))
				good = 0;
		if (memrec_alloc_next(&d, &a) != 0)
			good = 0;
		done += n;
	}
	memrec_enc_release(&e);
	return good;
}

static int round_trip_frees(size_t batch)
{
	struct memrec_enc e;
	int good = 1;
	size_t done = 0;

	memrec_enc_init(&e);
	while (done < N) {
		size_t n = N - done < batch ? N - done : batch, len;
		const void *p;
		struct memrec_dec d;
		struct memrec_free f;

		for (size_t i = 0; i < n; i++)
			memrec_free_add(&e, &frees[done + i]);
		p = memrec_take(&e, &len);
		if (!p || memrec_free_begin(&d, p, len) < 0)
			return 0;
		for (size_t i = 0; i < n; i++) {
			const struct memrec_free *w = &frees[done + i];
			uint64_t want = w->key & MEM_KEY_SEQ ? (w->time + 999) / 1000 * 1000 : w->time;

			if (memrec_free_next(&d, &f) != 1 || f.key != w->key || f.pid != w->pid ||
			    f.tid != w->tid || f.time != want)
				good = 0;
		}
		if (memrec_free_next(&d, &f) != 0)
			good = 0;
		done += n;
	}
	memrec_enc_release(&e);
	return good;
}

/* Every cut of the record, and every byte changed: an error or entries, never a read
 * past its end (ASan in make check's sanitized build) */
static int damaged(int allocs_kind)
{
	struct memrec_enc e;
	const void *p;
	size_t len;
	int cut_ok = 1;

	memrec_enc_init(&e);
	for (int i = 0; i < 40; i++) {
		if (allocs_kind)
			memrec_alloc_add(&e, 7, &allocs[i]);
		else
			memrec_free_add(&e, &frees[i]);
	}
	p = memrec_take(&e, &len);
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *b = malloc(cut ? cut : 1);
		struct memrec_dec d;
		struct memrec_alloc a;
		struct memrec_free f;
		int r = 0, got = 0;

		memcpy(b, p, cut);
		if ((allocs_kind ? memrec_alloc_begin(&d, b, cut) : memrec_free_begin(&d, b, cut)) == 0)
			while ((r = allocs_kind ? memrec_alloc_next(&d, &a) : memrec_free_next(&d, &f)) > 0)
				got++;
		else
			r = -1;
		if (r != -1 || got >= 40)
			cut_ok = 0;	/* a cut record must not read as whole */
		free(b);
	}
	for (size_t at = 0; at < len; at++) {
		unsigned char *b = malloc(len);
		struct memrec_dec d;
		struct memrec_alloc a;
		struct memrec_free f;

		memcpy(b, p, len);
		b[at] ^= 0xa5;
		if ((allocs_kind ? memrec_alloc_begin(&d, b, len) : memrec_free_begin(&d, b, len)) == 0)
			while ((allocs_kind ? memrec_alloc_next(&d, &a) : memrec_free_next(&d, &f)) > 0)
				;
		free(b);
	}
	memrec_enc_release(&e);
	return cut_ok;
}

int main(void)
{
	size_t one, batched;
	struct memrec_enc e;
	size_t len;

	make();
	ok(round_trip_allocs(1024, &batched), "allocations: every field back as given, batches of 1024",
	   NULL);
	ok(round_trip_allocs(1, &one), "allocations: every field back as given, one a record", NULL);
	ok(batched < one, "a batch costs less than its entries alone", NULL);
	ok(batched < (size_t)N * 24, "allocations: under 24 bytes an entry before deflate", NULL);
	ok(round_trip_frees(1024), "frees: by number to the microsecond (rounded up), by address to the ns",
	   NULL);
	ok(round_trip_frees(3), "frees: small batches", NULL);
	memrec_enc_init(&e);
	ok(memrec_take(&e, &len) == NULL, "an empty batch gives no record", NULL);
	memrec_enc_release(&e);
	ok(damaged(1), "allocations: a cut record is an error", NULL);
	ok(damaged(0), "frees: a cut record is an error", NULL);
	return tap_done();
}
