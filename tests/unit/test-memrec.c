/* test-memrec.c - unit tests of lib/file/memrec.c: what record writes as compact USAMPLES
 * entries and record --memory as MEMALLOC and MEMFREES entries decodes to what it was
 * given (frees named by number to the microsecond, rounded up), and a cut or damaged
 * record is an error, never a read past its end. */
#include <stdio.h>
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
static struct memrec_sample samples[N];
static uint64_t chains[N][12];

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

		/* a sample: mostly taken in user mode (no kernel chain), now and then in the
		 * kernel (a chain of PERF_CONTEXT_KERNEL and kernel addresses) */
		struct memrec_sample *sm = &samples[i];

		memset(sm, 0, sizeof(*sm));
		sm->time = a->time;
		sm->pid = a->pid;
		sm->tid = a->tid;
		sm->cpu = a->cpu;
		sm->ip = i % 3 ? 0x7f3e6d18fc20ull + rnd() % 100000 : 0x4feedbull + rnd() % 4096;
		sm->period = 1000000 + rnd() % 3000 - 1500;
		if (i % 71 == 9)
			sm->period = 1;
		sm->stack_id = a->stack_id;
		sm->flags = a->flags;
		sm->cpumode = PERF_RECORD_MISC_USER;
		if (i % 4 == 1) {
			uint32_t n = 2 + (uint32_t)(rnd() % 10);

			sm->cpumode = PERF_RECORD_MISC_KERNEL;
			sm->ip = 0xffffffff81000000ull + rnd() % (16u << 20);
			chains[i][0] = PERF_CONTEXT_KERNEL;
			chains[i][1] = sm->ip;
			for (uint32_t k = 2; k < n; k++)
				chains[i][k] = 0xffffffff81000000ull + rnd() % (16u << 20);
			sm->nr_callchain = n;
			sm->callchain = chains[i];
		}
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

static int same_sample(const struct memrec_sample *x, const struct memrec_sample *y)
{
	if (x->time != y->time || x->ip != y->ip || x->period != y->period || x->pid != y->pid ||
	    x->tid != y->tid || x->cpu != y->cpu || x->stack_id != y->stack_id ||
	    x->flags != y->flags || x->cpumode != y->cpumode || x->nr_callchain != y->nr_callchain)
		return 0;
	if (!x->nr_callchain)
		return !x->callchain && !y->callchain;
	return x->callchain && y->callchain &&
	       !memcmp(x->callchain, y->callchain, x->nr_callchain * sizeof(uint64_t));
}

static int round_trip_samples(size_t batch, size_t *bytes)
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
		struct memrec_sample sm;

		for (size_t i = 0; i < n; i++)
			if (memrec_sample_add(&e, 0x77 + done, &samples[done + i]) < 0)
				good = 0;
		p = memrec_take(&e, &len);
		*bytes += len;
		if (!p || memrec_sample_begin(&d, p, len) < 0 || d.id != 0x77 + done)
			return 0;
		for (size_t i = 0; i < n; i++)
			if (memrec_sample_next(&d, &sm) != 1 || !same_sample(&sm, &samples[done + i]))
				good = 0;
		if (memrec_sample_next(&d, &sm) != 0)
			good = 0;
		done += n;
	}
	memrec_enc_release(&e);
	return good;
}

/* a chain longer than a record may hold is refused, and the batch stays as it was */
static int long_chain_refused(void)
{
	static uint64_t big[MEMREC_CHAIN_MAX + 1];
	struct memrec_sample sm = samples[1];
	struct memrec_enc e;
	struct memrec_dec d;
	const void *p;
	size_t len;
	int good;

	memrec_enc_init(&e);
	memrec_sample_add(&e, 5, &samples[0]);
	sm.nr_callchain = MEMREC_CHAIN_MAX + 1;
	sm.callchain = big;
	good = memrec_sample_add(&e, 5, &sm) < 0 && e.nr == 1;
	p = memrec_take(&e, &len);
	good = good && p && !memrec_sample_begin(&d, p, len) && d.nr == 1;
	memrec_dec_release(&d);
	memrec_enc_release(&e);
	return good;
}

/* Every cut of the record, and every byte changed: an error or entries, never a read
 * past its end (ASan in make check's sanitized build) */
static int decode_all(int kind, const void *p, size_t len, int *got)
{
	struct memrec_dec d;
	struct memrec_alloc a;
	struct memrec_free f;
	struct memrec_sample sm;
	int r;

	*got = 0;
	if ((kind == 1 ? memrec_alloc_begin(&d, p, len) : kind == 0 ?
	     memrec_free_begin(&d, p, len) : memrec_sample_begin(&d, p, len)) < 0)
		return -1;
	while ((r = kind == 1 ? memrec_alloc_next(&d, &a) : kind == 0 ?
		    memrec_free_next(&d, &f) : memrec_sample_next(&d, &sm)) > 0) {
		if (kind == 2 && sm.nr_callchain)
			*got += sm.callchain[sm.nr_callchain - 1] != 0;	/* (read: ASan) */
		(*got)++;
	}
	return r;
}

/* kind: 0 frees, 1 allocations, 2 samples */
static int damaged(int kind)
{
	struct memrec_enc e;
	const void *p;
	size_t len;
	int cut_ok = 1;

	memrec_enc_init(&e);
	for (int i = 0; i < 40; i++) {
		if (kind == 1)
			memrec_alloc_add(&e, 7, &allocs[i]);
		else if (kind == 0)
			memrec_free_add(&e, &frees[i]);
		else
			memrec_sample_add(&e, 7, &samples[i]);
	}
	p = memrec_take(&e, &len);
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *b = malloc(cut ? cut : 1);
		int got, r;

		memcpy(b, p, cut);
		r = decode_all(kind, b, cut, &got);
		if (r != -1 || got >= 40)
			cut_ok = 0;	/* a cut record must not read as whole */
		free(b);
	}
	for (size_t at = 0; at < len; at++) {
		unsigned char *b = malloc(len);
		int got;

		memcpy(b, p, len);
		b[at] ^= 0xa5;
		decode_all(kind, b, len, &got);
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
	char got[64];

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
	ok(round_trip_samples(4096, &batched), "samples: every field and kernel chain back as given, "
	   "batches of 4096", NULL);
	ok(round_trip_samples(1, &one), "samples: one a record", NULL);
	ok(batched < one, "samples: a batch costs less than its entries alone", NULL);
	/* a USAMPLE holds 88 bytes of a user-mode sample before deflate, and 8 more for each
	 * entry of a kernel chain */
	snprintf(got, sizeof(got), "%zu bytes an entry", batched / N);
	ok(batched < (size_t)N * 30, "samples: under 30 bytes an entry before deflate", got);
	ok(long_chain_refused(), "samples: a chain over MEMREC_CHAIN_MAX entries is refused", NULL);
	ok(damaged(2), "samples: a cut record is an error", NULL);
	return tap_done();
}
