/* readings.c - several recordings of one job read as one: statistics summed, META kept,
 * one header (readings.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "readings.h"
#include "util.h"

static uint64_t duration(const struct profile_stats *st, const struct session_info *info)
{
	if (info->have_stats && info->stats.end_ns > info->stats.start_ns)
		return info->stats.end_ns - info->stats.start_ns;
	return st->last_time - st->first_time;
}

int readings_run(struct readings *r, const char *const *inputs, size_t nr, reading_fn *fn,
		 void *ctx)
{
	int ret = DLP_OK;

	r->nr = nr;
	r->in = xcalloc(nr ? nr : 1, sizeof(*r->in));
	for (size_t k = 0; k < nr; k++) {
		struct reading *in = &r->in[k];
		int r1;

		in->file = inputs[k];
		r->cur = k;
		r1 = fn(ctx, r, k, &in->st, &in->info);
		if (r1 < 0)
			return DLP_FAILED;
		if (r1 == 1)
			r->truncated = 1;
		if (r1 == 1 || in->info.bad_records)
			ret = DLP_PARTIAL;
		in->duration_ns = duration(&in->st, &in->info);
		if (!k) {
			r->st = in->st;
			r->info = in->info;
			r->duration_ns = in->duration_ns;
			continue;
		}
		profile_stats_add(&r->st, &in->st);
		r->info.bad_records += in->info.bad_records;
		if (in->duration_ns > r->duration_ns) {
			uint64_t bad = r->info.bad_records;

			/* the header's span and statistics: the longest recording's */
			r->info = in->info;
			r->info.bad_records = bad;
			r->duration_ns = in->duration_ns;
		}
	}
	if (nr > 1) {
		struct strbuf sb = STRBUF_INIT;

		for (size_t k = 0; k < nr; k++)
			strbuf_addf(&sb, "%s%s", k ? ", " : "", inputs[k]);
		strbuf_addf(&sb, " (%zu recordings)", nr);
		r->files = sb.buf;
	}
	return ret;
}

void readings_meta(struct readings *r, const char *key, const char *value)
{
	struct reading *in = r->in ? &r->in[r->cur] : NULL;

	if (in && !strcmp(key, "hostname")) {
		free(in->host);
		in->host = xstrdup(value);
	} else if (!strcmp(key, "cmdline")) {
		if (in) {
			free(in->cmdline);
			in->cmdline = xstrdup(value);
		}
		if (!r->cmdline)
			r->cmdline = xstrdup(value);
	} else if (!strcmp(key, "freq")) {
		snprintf(r->sampling, sizeof(r->sampling), "%s Hz", value);
	} else if (!strcmp(key, "period")) {
		snprintf(r->sampling, sizeof(r->sampling), "every %s events", value);
	} else if (!strcmp(key, "callgraph")) {
		snprintf(r->callgraph, sizeof(r->callgraph), "%s", value);
	} else if (!strcmp(key, "source") && !strcmp(value, "perf.data")) {
		r->perf_data = 1;
	} else if (!strncmp(key, "warn.", 5)) {
		/* what record said the recording lacks: repeated in the header */
		ALLOC_GROW(r->warnings, r->nr_warnings + 1, r->alloc_warnings);
		r->warnings[r->nr_warnings++] = xstrdup(value);
	}
}

void readings_header(const struct readings *r, struct report_header *h, int off_cpu, int wall,
		     char *sampling, size_t size)
{
	const struct profile_stats *st = &r->st;

	memset(h, 0, sizeof(*h));
	h->file = r->files ? r->files : r->nr ? r->in[0].file : NULL;
	h->cmdline = r->cmdline;
	h->event = st->event[0] ? st->event : "?";
	h->other_events = st->other_events;
	if (off_cpu)
		snprintf(sampling, size, "every switch-out%s%s",
			 r->callgraph[0] ? ", stacks: " : "", r->callgraph);
	else if (wall)
		snprintf(sampling, size, "%s%s and every switch-out (wall time)",
			 r->sampling, r->sampling[0] ? "" : "samples");
	else
		snprintf(sampling, size, "%s%s%s", r->sampling,
			 r->callgraph[0] ? (r->sampling[0] ? ", stacks: " : "stacks: ") : "",
			 r->callgraph);
	h->sampling = sampling[0] ? sampling : NULL;
	h->samples = st->samples;
	h->lost = st->lost;
	h->duration_ns = r->duration_ns;
	h->complete_stacks = st->complete_stacks;
	h->named = st->named;
	h->recovered_stacks = st->recovered_stacks;
	h->recorded_stacks = st->recorded_stacks;
	h->copied_stacks = st->copied_stacks;
	h->unwind_checked = st->unwind_checked;
	h->unwind_same = st->unwind_same;
	h->unwind_scan_differs = st->unwind_scan_differs;
	h->unwind_differs = st->unwind_differs;
	h->unwound = !strncmp(r->callgraph, "dwarf", 5);
	h->no_stacks = !strcmp(r->callgraph, "none");
	h->perf_data = r->perf_data;
	h->sample_is_time = st->sample_is_time;
	h->no_time = st->sample_no_time;
	h->ns_per_sample = off_cpu || wall ? 1000 : st->sample_period_ns;
	h->off_cpu = off_cpu ? 1 : wall ? 2 : 0;
	h->skipped = r->info.bad_records;
	h->irqs_off = st->irqs_off;
	h->py_records = st->py_records;
	h->py_merged = st->python;
	h->py_moved = st->py_moved;
	h->py_failed = st->py_failed;
	h->py_mismatched = st->py_mismatched;
	h->py_delay_ns = st->py_delay_ns;
	h->py_at_sample = st->py_at_sample;
	h->warnings = (const char *const *)r->warnings;
	h->nr_warnings = r->nr_warnings;
}

void readings_release(struct readings *r)
{
	for (size_t k = 0; r->in && k < r->nr; k++) {
		free(r->in[k].host);
		free(r->in[k].cmdline);
	}
	free(r->in);
	free(r->cmdline);
	for (size_t i = 0; i < r->nr_warnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->files);
	memset(r, 0, sizeof(*r));
}
