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

static int same_host(const struct reading *a, const struct reading *b)
{
	return a->host && b->host && !strcmp(a->host, b->host);
}

/* The entry of pid in recording in, when it says when the process started */
static const struct proc_entry *started(const struct reading *in, uint32_t pid)
{
	const struct proc_entry *e = in->have_procs ? proc_table_find(&in->procs, pid) : NULL;

	return e && e->start ? e : NULL;
}

/* profile_opts.skip_pids: recording r->cur's processes are known; those an earlier
 * recording of the same host holds (same pid, same start) are counted there */
static const struct u64map *skip_pids(void *ctx, struct machine *m)
{
	struct readings *r = ctx;
	struct reading *in = &r->in[r->cur];

	if (in->have_procs)	/* asked again: a filter's extra pass */
		return in->skip.nr ? &in->skip : NULL;
	proc_table_copy(&in->procs, machine_procs(m));
	in->have_procs = 1;
	for (size_t i = 0; i < in->procs.nr; i++) {
		const struct proc_entry *e = &in->procs.v[i];

		for (size_t j = 0; e->start && j < r->cur; j++) {
			const struct proc_entry *f = started(&r->in[j], e->pid);

			if (!same_host(in, &r->in[j]) || !f || f->start != e->start)
				continue;
			u64map_add(&in->skip, e->pid);
			ALLOC_GROW(r->dups, r->nr_dups + 1, r->alloc_dups);
			r->dups[r->nr_dups++] = (struct readings_dup){ e->pid, j, r->cur };
			break;
		}
	}
	return in->skip.nr ? &in->skip : NULL;
}

void readings_opts(struct readings *r, struct profile_opts *po)
{
	po->skip_pids = skip_pids;
	po->skip_ctx = r;
}

int readings_skipped(const struct readings *r, size_t k, uint32_t pid)
{
	return k < r->nr && u64map_has(&r->in[k].skip, pid);
}

const struct proc_entry *readings_proc(const struct readings *r, size_t k, uint32_t pid)
{
	return k < r->nr && r->in[k].have_procs ? proc_table_find(&r->in[k].procs, pid) : NULL;
}

int64_t readings_shift(const struct readings *r, size_t k, int *anchored)
{
	const struct reading *in = &r->in[k];

	*anchored = in->anchors & 1;
	return *anchored ? (int64_t)(in->real[0] - in->mono[0]) : 0;
}

/* How well the recordings' times line up: the header's "aligned:" line */
static void alignment(struct readings *r)
{
	struct strbuf sb = STRBUF_INIT, none = STRBUF_INIT;
	size_t unanchored = 0;
	char e[32], d[32];

	r->anchored = r->hosts = 0;
	for (size_t k = 0; k < r->nr; k++) {
		const struct reading *in = &r->in[k];
		size_t j;

		if (!(in->anchors & 1)) {
			strbuf_addf(&none, "%s%s", unanchored++ ? ", " : "", in->file);
			continue;
		}
		r->anchored++;
		for (j = 0; j < k && (!(r->in[j].anchors & 1) || !same_host(in, &r->in[j])); j++)
			;
		r->hosts += j == k;
		for (int a = 0; a < 2; a++)
			if ((in->anchors & (1 << a)) && in->err[a] > r->anchor_err_ns)
				r->anchor_err_ns = in->err[a];
		if ((in->anchors & 3) == 3) {
			/* the wall clock against the monotonic one over the run: NTP's slewing */
			int64_t drift = (int64_t)(in->real[1] - in->real[0]) -
					(int64_t)(in->mono[1] - in->mono[0]);
			uint64_t abs_drift = drift < 0 ? (uint64_t)-drift : (uint64_t)drift;

			if (abs_drift > r->drift_ns)
				r->drift_ns = abs_drift;
		}
	}
	/* (none is "0 ns" here, not the tables' "-") */
	snprintf(e, sizeof(e), "0 ns");
	snprintf(d, sizeof(d), "0 ns");
	if (r->anchor_err_ns)
		output_duration_ns(e, sizeof(e), r->anchor_err_ns);
	if (r->drift_ns)
		output_duration_ns(d, sizeof(d), r->drift_ns);
	if (!r->anchored)
		strbuf_addstr(&sb, "none: no clock anchors (recorded by an older dlprof, or perf.data)");
	else if (r->hosts > 1)
		strbuf_addf(&sb, "%zu hosts by wall clock, +-%s (anchor reads), drift up to %s over "
			    "the run; hosts' clocks assumed in sync (NTP)", r->hosts, e, d);
	else
		strbuf_addf(&sb, "one host's wall clock, +-%s (anchor reads), drift up to %s over "
			    "the run", e, d);
	if (r->anchored && unanchored)
		strbuf_addf(&sb, "; no clock anchor in %s: at %s own start", none.buf,
			    unanchored > 1 ? "their" : "its");
	strbuf_release(&none);
	r->aligned = sb.buf;
}

/* The header's line on the processes recorded twice */
static void twice_line(struct readings *r)
{
	struct strbuf sb = STRBUF_INIT;
	uint64_t left = r->st.duplicate;

	if (!r->nr_dups)
		return;
	strbuf_addf(&sb, "%zu process%s in two recordings, counted once: ", r->nr_dups,
		    r->nr_dups == 1 ? "" : "es");
	for (size_t i = 0; i < r->nr_dups && i < 3; i++) {
		const struct readings_dup *d = &r->dups[i];
		const struct proc_entry *e = readings_proc(r, d->again, d->pid);
		const char *cmd = e && e->cmdline ? e->cmdline : "?";

		strbuf_addf(&sb, "%s%s pid %u %.*s (%s, %s)", i ? ", " : "",
			    r->in[d->again].host, d->pid, (int)strcspn(cmd, " "), cmd,
			    r->in[d->first].file, r->in[d->again].file);
	}
	if (r->nr_dups > 3)
		strbuf_addf(&sb, " and %zu more", r->nr_dups - 3);
	strbuf_addf(&sb, "; %llu sample%s of the later left out", (unsigned long long)left,
		    left == 1 ? "" : "s");
	r->twice = sb.buf;
}

/* One process with a rank, seen in the recordings (its first) */
struct ranked {
	const struct proc_entry *e;
	size_t k;
};

static void job_warning(struct readings *r, char *msg)
{
	warning("%s", msg);
	ALLOC_GROW(r->warnings, r->nr_warnings + 1, r->alloc_warnings);
	r->warnings[r->nr_warnings++] = msg;
}

/* Whether some recording holds both processes (a launcher's tree: a wrapper and its
 * child, or spawned workers, share the rank they inherit) */
static int held_together(const struct readings *r, const struct ranked *a,
			 const struct ranked *b)
{
	for (size_t k = 0; k < r->nr; k++) {
		const struct proc_entry *x = started(&r->in[k], a->e->pid);
		const struct proc_entry *y = started(&r->in[k], b->e->pid);

		if (same_host(&r->in[k], &r->in[a->k]) && same_host(&r->in[k], &r->in[b->k]) &&
		    x && x->start == a->e->start && y && y->start == b->e->start)
			return 1;
	}
	return 0;
}

/* The ranks' jobs: one job, and each rank held by one process */
static void check_jobs(struct readings *r)
{
	struct ranked *v = NULL;
	size_t n = 0, alloc = 0, i, j;
	const struct ranked *job = NULL;
	int said_jobs = 0;

	for (size_t k = 0; k < r->nr; k++)
		for (i = 0; r->in[k].have_procs && i < r->in[k].procs.nr; i++) {
			const struct proc_entry *e = &r->in[k].procs.v[i];

			if (!e->rank || readings_skipped(r, k, e->pid))
				continue;
			ALLOC_GROW(v, n + 1, alloc);
			v[n++] = (struct ranked){ e, k };
		}
	for (i = 0; i < n; i++) {
		const struct ranked *a = &v[i];

		if (a->e->job && !job)
			job = a;
		else if (a->e->job && strcmp(a->e->job, job->e->job) && !said_jobs++)
			job_warning(r, xasprintf("recordings of different jobs read together: %s (%s) "
						 "and %s (%s)", job->e->job, r->in[job->k].file,
						 a->e->job, r->in[a->k].file));
		for (j = 0; j < i; j++) {
			const struct ranked *b = &v[j];
			size_t m;

			if (strcmp(a->e->rank, b->e->rank) ||
			    (a->e->job && b->e->job && strcmp(a->e->job, b->e->job)) ||
			    !!a->e->job != !!b->e->job)
				continue;
			if (a->k == b->k || (same_host(&r->in[a->k], &r->in[b->k]) &&
					       a->e->start && b->e->start && held_together(r, a, b)))
				continue;
			/* said once a rank */
			for (m = 0; m < j && strcmp(v[m].e->rank, a->e->rank); m++)
				;
			if (m < j)
				continue;
			job_warning(r, xasprintf("rank %s twice: %s pid %u (%s) and %s pid %u (%s)",
						 a->e->rank, r->in[b->k].host ? r->in[b->k].host : "?",
						 b->e->pid, r->in[b->k].file,
						 r->in[a->k].host ? r->in[a->k].host : "?", a->e->pid,
						 r->in[a->k].file));
			break;
		}
	}
	free(v);
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
	alignment(r);
	twice_line(r);
	check_jobs(r);
	return ret;
}

void readings_meta(struct readings *r, const struct recmeta *m)
{
	struct reading *in = r->in ? &r->in[r->cur] : NULL;

	if (in && m->hostname) {
		free(in->host);
		in->host = xstrdup(m->hostname);
	}
	if (m->cmdline) {
		if (in) {
			free(in->cmdline);
			in->cmdline = xstrdup(m->cmdline);
		}
		if (!r->cmdline)
			r->cmdline = xstrdup(m->cmdline);
	}
	/* freq or period, whichever came last */
	for (size_t i = 0; i < m->nr; i++) {
		const char *k = m->pairs[i].key, *v = m->pairs[i].value;

		if (!strcmp(k, "freq"))
			snprintf(r->sampling, sizeof(r->sampling), "%s Hz", v);
		else if (!strcmp(k, "period"))
			snprintf(r->sampling, sizeof(r->sampling), "every %s events", v);
		else if (!strcmp(k, "callgraph"))
			snprintf(r->callgraph, sizeof(r->callgraph), "%s", v);
		else if (!strcmp(k, "source") && !strcmp(v, "perf.data"))
			r->perf_data = 1;
	}
	for (int a = 0; a < 2 && in; a++)
		if (m->clock[a].set) {
			in->mono[a] = m->clock[a].mono;
			in->real[a] = m->clock[a].real;
			in->err[a] = m->clock[a].err;
			in->anchors |= 1 << a;
		}
	/* what record said the recording lacks: repeated in the header */
	for (size_t i = 0; i < m->nr_warn; i++) {
		ALLOC_GROW(r->warnings, r->nr_warnings + 1, r->alloc_warnings);
		r->warnings[r->nr_warnings++] = xstrdup(m->warn[i]);
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
	if (st->event_every && !off_cpu && !wall) {
		/* an event after the first (report -e on a counter sampled on its own): its
		 * own period, not the first event's that META says */
		char every[48] = "every event";

		if (st->event_every > 1)
			snprintf(every, sizeof(every), "every %llu events",
				 (unsigned long long)st->event_every);
		snprintf(sampling, size, "%s%s%s", every, r->callgraph[0] ? ", stacks: " : "",
			 r->callgraph);
	} else if (off_cpu)
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
	h->past_copy_stacks = st->past_copy_stacks;
	h->recorded_stacks = st->recorded_stacks;
	h->copied_stacks = st->copied_stacks;
	h->unwind_checked = st->unwind_checked;
	h->unwind_same = st->unwind_same;
	h->unwind_scan_differs = st->unwind_scan_differs;
	h->unwind_past_copy = st->unwind_past_copy;
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
	h->recordings = r->nr;
	h->aligned = r->nr > 1 ? r->aligned : NULL;
	h->anchored = r->anchored;
	h->hosts = r->hosts;
	h->anchor_err_ns = r->anchor_err_ns;
	h->drift_ns = r->drift_ns;
	h->twice = r->twice;
	h->dup_procs = r->nr_dups;
	h->dup_samples = st->duplicate;
}

void readings_release(struct readings *r)
{
	for (size_t k = 0; r->in && k < r->nr; k++) {
		free(r->in[k].host);
		free(r->in[k].cmdline);
		proc_table_release(&r->in[k].procs);
		u64map_release(&r->in[k].skip);
	}
	free(r->dups);
	free(r->aligned);
	free(r->twice);
	free(r->in);
	free(r->cmdline);
	for (size_t i = 0; i < r->nr_warnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->files);
	memset(r, 0, sizeof(*r));
}
