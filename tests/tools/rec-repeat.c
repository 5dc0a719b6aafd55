/* rec-repeat.c - a long recording made from a short one, for scale measurements.
 *
 *   build/tests/rec-repeat [-m KEY=VALUE]... IN.data TIMES OUT.data
 *
 * Writes IN's side-band once (attrs, meta, mappings, names, build-ids, kernel symbols,
 * JIT maps, ITT, Python code) and its samples TIMES over, each round shifted in time
 * past the one before, as a workload that runs the same code for TIMES as long would
 * give: the same stacks, the same processes and threads.  Perf records other than
 * samples (context switches, lost, throttling) are kept once, in the first round.
 * STATS says TIMES as many samples and the stretched duration.  Samples are dlprof's
 * own layout (IDENTIFIER IP TID TIME first), as record writes them; a recording with
 * stacks unwound while recording (STACK, USAMPLE, USAMPLES) repeats the USAMPLEs and the
 * USAMPLES batches (each entry shifted), the STACKs once.  -m adds a META pair after the
 * recorded ones (a reader takes a key's last value): a recording as another machine would
 * have made it (META metrics_ran of counters that shared a PMU).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>

#include "memrec.h"
#include "recfile.h"
#include "util.h"

struct rec {
	uint32_t type;
	size_t len;
	unsigned char *data;
};

struct all {
	struct rec *side, *samp;
	size_t nr_side, nr_samp, alloc_side, alloc_samp;
	struct dlp_stats stats;
	int have_stats;
	uint64_t first, last;
};

/* The time field of a sample (perf record at p): after IDENTIFIER, IP and TID. */
#define TIME_OFF (sizeof(struct perf_event_header) + 24)

static int is_sample(uint32_t type, const unsigned char *d, size_t len, size_t *perf_off)
{
	struct perf_event_header h;
	size_t off = type == DLP_REC_USAMPLE ? sizeof(struct dlp_usample_rec) : 0;

	if ((type != DLP_REC_PERF && type != DLP_REC_USAMPLE) || len < off + TIME_OFF + 8)
		return 0;
	memcpy(&h, d + off, sizeof(h));
	*perf_off = off;
	return h.type == PERF_RECORD_SAMPLE;
}

static void span_of(struct all *a, uint64_t t)
{
	if (!a->first || t < a->first)
		a->first = t;
	if (t > a->last)
		a->last = t;
}

/* A USAMPLES batch again, its times shift ns later */
static int put_batch(struct recwriter *w, const struct rec *r, uint64_t shift)
{
	struct memrec_dec d;
	struct memrec_enc e;
	struct memrec_sample sm;
	const void *p;
	size_t len;
	int ret;

	if (memrec_sample_begin(&d, r->data, r->len) < 0)
		return -1;
	memrec_enc_init(&e);
	while (memrec_sample_next(&d, &sm) > 0) {
		sm.time += shift;
		memrec_sample_add(&e, d.id, &sm);
	}
	p = memrec_take(&e, &len);
	ret = p ? recwriter_add(w, DLP_REC_USAMPLES, p, len) : 0;
	memrec_enc_release(&e);
	return ret;
}

static int take(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct all *a = ctx;
	struct rec r = { type, len, xmalloc(len ? len : 1) };
	size_t off;

	memcpy(r.data, data, len);
	if (type == DLP_REC_USAMPLES) {
		struct memrec_dec d;
		struct memrec_sample sm;

		if (memrec_sample_begin(&d, data, len) < 0)
			die("a USAMPLES record that does not decode");
		while (memrec_sample_next(&d, &sm) > 0)
			span_of(a, sm.time);
		ALLOC_GROW(a->samp, a->nr_samp + 1, a->alloc_samp);
		a->samp[a->nr_samp++] = r;
		return 0;
	}
	if (type == DLP_REC_STATS && len >= sizeof(a->stats)) {
		memcpy(&a->stats, data, sizeof(a->stats));
		a->have_stats = 1;
		free(r.data);
		return 0;
	}
	if (is_sample(type, r.data, len, &off)) {
		uint64_t t;

		memcpy(&t, r.data + off + TIME_OFF, 8);
		span_of(a, t);
		ALLOC_GROW(a->samp, a->nr_samp + 1, a->alloc_samp);
		a->samp[a->nr_samp++] = r;
		return 0;
	}
	/* other perf records of the samples class ride along with the first round */
	ALLOC_GROW(a->side, a->nr_side + 1, a->alloc_side);
	a->side[a->nr_side++] = r;
	return 0;
}

int main(int argc, char **argv)
{
	struct all a;
	struct recfile_info info;
	struct recwriter *w;
	unsigned long times;
	uint64_t span;

	struct strbuf meta = STRBUF_INIT;

	for (; argc > 2 && !strcmp(argv[1], "-m"); argc -= 2, argv += 2) {
		const char *eq = strchr(argv[2], '=');

		if (!eq)
			die("-m KEY=VALUE, not '%s'", argv[2]);
		strbuf_add(&meta, argv[2], (size_t)(eq - argv[2]));
		strbuf_addch(&meta, '\0');
		strbuf_add(&meta, eq + 1, strlen(eq + 1) + 1);
	}
	if (argc != 4 || !(times = strtoul(argv[2], NULL, 10)))
		die("usage: rec-repeat [-m KEY=VALUE]... IN.data TIMES OUT.data");
	memset(&a, 0, sizeof(a));
	if (recfile_read(argv[1], take, &a, &info) < 0)
		return 1;
	if (!a.nr_samp)
		die("%s: no samples", argv[1]);
	span = a.last - a.first + 1000000;	/* a round, and 1 ms between rounds */
	w = recwriter_open(argv[3]);
	if (!w)
		return 1;
	recwriter_split_samples(w);
	for (size_t i = 0; i < a.nr_side; i++) {
		struct rec *r = &a.side[i];

		if (r->type == DLP_REC_META && meta.len) {
			r->data = xrealloc(r->data, r->len + meta.len);
			memcpy(r->data + r->len, meta.buf, meta.len);
			r->len += meta.len;
		}
		if (recwriter_add(w, r->type, r->data, r->len) < 0)
			return 1;
	}
	strbuf_release(&meta);
	for (unsigned long k = 0; k < times; k++) {
		for (size_t i = 0; i < a.nr_samp; i++) {
			struct rec *r = &a.samp[i];
			size_t off = 0;
			uint64_t t;

			if (r->type == DLP_REC_USAMPLES) {
				if (put_batch(w, r, k * span) < 0)
					return 1;
				continue;
			}
			is_sample(r->type, r->data, r->len, &off);
			memcpy(&t, r->data + off + TIME_OFF, 8);
			t += k ? span : 0;	/* each round one span later than the last */
			memcpy(r->data + off + TIME_OFF, &t, 8);
			if (recwriter_add(w, r->type, r->data, r->len) < 0)
				return 1;
		}
	}
	if (a.have_stats) {
		a.stats.samples *= times;
		a.stats.end_ns = a.stats.start_ns + (a.stats.end_ns - a.stats.start_ns) * times;
		recwriter_add(w, DLP_REC_STATS, &a.stats, sizeof(a.stats));
	}
	if (recwriter_close(w) < 0)
		return 1;
	fprintf(stderr, "rec-repeat: %zu sample records x %lu -> %s\n", a.nr_samp, times, argv[3]);
	return 0;
}
