/* timeline.c - the recording as a Chrome Trace Event file (timeline.h). */
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "itt.h"
#include "memprof.h"
#include "steps.h"
#include "switches.h"
#include "timeline.h"
#include "util.h"

/* One sample, as the tracks need it */
struct tl_sample {
	uint64_t time;
	uint32_t pid, tid;
	const char *op, *pyline, *family;
};

struct tl_thread {
	uint32_t pid, tid;
	const char *comm;
};

struct tl_off {
	uint32_t pid, tid;
	uint64_t start, end;
	int preempted;
};


struct timeline {
	struct attr_stream *as;
	struct tl_sample *s;
	size_t nr, alloc;
	struct tl_thread *th;
	size_t nr_th, alloc_th;
	struct tl_off *off;
	size_t nr_off, alloc_off;
	struct switches sw;	/* sorted before pairing (switches.h) */
	char *cmdline;
	FILE *out;
	long events;
	uint64_t t0;
	int err;
	struct steps *steps;	/* --step FUNC, NULL: none */
	/* record --memory: the heap's live bytes per process (timeline_set_heap) */
	struct heap_step { uint64_t time; int64_t delta; uint32_t pid; } *heap;
	size_t nr_heap;
	struct proc_table procs;	/* each process's command line: its track's name */
};

static void timeline_set_heap(struct timeline *tl, const struct mem_alloc *al, size_t nr)
{
	size_t n = 0;

	free(tl->heap);
	tl->heap = xcalloc(2 * nr + 1, sizeof(*tl->heap));
	for (size_t i = 0; i < nr; i++) {
		tl->heap[n++] = (struct heap_step){ al[i].time, (int64_t)al[i].weight, al[i].pid };
		if (al[i].free_time)
			tl->heap[n++] = (struct heap_step){ al[i].free_time, -(int64_t)al[i].weight,
							    al[i].pid };
	}
	tl->nr_heap = n;
}

static void timeline_set_steps(struct timeline *tl, const char *func)
{
	steps_free(tl->steps);
	tl->steps = func ? steps_new(func) : NULL;
}

static void timeline_free(struct timeline *tl)
{
	if (!tl)
		return;
	attr_stream_free(tl->as);
	steps_free(tl->steps);
	free(tl->heap);
	switches_release(&tl->sw);
	free(tl->s);
	free(tl->th);
	free(tl->off);
	free(tl->cmdline);
	proc_table_release(&tl->procs);
	free(tl);
}

static struct tl_thread *get_thread(struct timeline *tl, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < tl->nr_th; i++)
		if (tl->th[i].tid == tid && tl->th[i].pid == pid)
			return &tl->th[i];
	ALLOC_GROW(tl->th, tl->nr_th + 1, tl->alloc_th);
	memset(&tl->th[tl->nr_th], 0, sizeof(tl->th[0]));
	tl->th[tl->nr_th].pid = pid;
	tl->th[tl->nr_th].tid = tid;
	return &tl->th[tl->nr_th++];
}

static int tl_sample(void *ctx, const struct attributed *as)
{
	struct timeline *tl = ctx;
	const struct dlp_sample *s = as->s;
	const struct sample_attr *a = as->a;
	struct tl_thread *t = get_thread(tl, s->pid, s->tid);
	const char *comm = as->m ? machine_comm_at(as->m, s->pid, s->tid, s->time) : NULL;

	if (tl->steps)
		steps_sample(tl->steps, s, as->frames, as->nr, a->family);
	if (comm)
		t->comm = str_intern(comm, strlen(comm));
	ALLOC_GROW(tl->s, tl->nr + 1, tl->alloc);
	tl->s[tl->nr++] = (struct tl_sample){ s->time, s->pid, s->tid, a->op, a->pyline, a->family };
	return 0;
}

/* Kept, and paired once sorted (off_intervals): see switches.h. */
static int tl_switch(void *ctx, struct machine *m, uint32_t pid, uint32_t tid, uint32_t cpu,
		     uint64_t time, int out, int preempt)
{
	struct timeline *tl = ctx;

	get_thread(tl, pid, tid);
	switches_add(&tl->sw, pid, tid, time, out, preempt);
	(void)m;
	(void)cpu;
	return 0;
}

/* Off-CPU intervals: each switch-out to the thread's next switch-in, in time order. */
static void off_intervals(struct timeline *tl)
{
	uint64_t out_at = 0;
	int preempted = 0;

	switches_sort(&tl->sw);
	for (size_t i = 0; i < tl->sw.nr; i++) {
		const struct switch_ev *e = &tl->sw.v[i];

		if (i && (e->pid != tl->sw.v[i - 1].pid || e->tid != tl->sw.v[i - 1].tid))
			out_at = 0;
		if (e->out) {
			if (!out_at) {
				out_at = e->time;
				preempted = e->preempt;
			}
		} else if (out_at && e->time > out_at) {
			ALLOC_GROW(tl->off, tl->nr_off + 1, tl->alloc_off);
			tl->off[tl->nr_off++] = (struct tl_off){ e->pid, e->tid, out_at, e->time, preempted };
			out_at = 0;
		}
	}
}

static int tl_meta(void *ctx, const char *key, const char *value)
{
	struct timeline *tl = ctx;

	if (!strcmp(key, "cmdline")) {
		free(tl->cmdline);
		tl->cmdline = xstrdup(value);
	}
	return 0;
}

/* The command lines of the processes (their tracks' names), from the process model */
static int tl_end(void *ctx, struct machine *m)
{
	struct timeline *tl = ctx;

	proc_table_copy(&tl->procs, machine_procs(m));
	return 0;
}

static struct timeline *timeline_new(const struct family_rules *rules)
{
	struct timeline *tl = xcalloc(1, sizeof(*tl));
	struct attr_view v = { .sample = tl_sample, .context_switch = tl_switch,
			       .meta = tl_meta, .end = tl_end, .ctx = tl };

	tl->as = attr_stream_new(rules, &v);
	return tl;
}

static int timeline_read(struct timeline *tl, const char *path, struct profile_opts *po,
			 struct sample_filter *filt, struct profile_stats *st, struct session_info *info)
{
	return attr_stream_run_filtered(tl->as, path, po, filt, st, info);
}

/* ---- writing ---- */

/* Track kinds beside a thread's own: synthetic tids above any real one */
enum { TRACK_OWN, TRACK_OPS, TRACK_PY, TRACK_SCHED, TRACK_STEPS };
#define TRACK_TID(tid, k) ((uint64_t)(tid) + ((uint64_t)(k) << 24))

static void ev_begin(struct timeline *tl)
{
	fputs(tl->events++ ? ",\n" : "\n", tl->out);
}

static double us(const struct timeline *tl, uint64_t t)
{
	return t > tl->t0 ? (t - tl->t0) / 1000.0 : 0.0;
}

static void thread_meta(struct timeline *tl, const struct tl_thread *t, int kind, const char *what)
{
	char name[128];

	snprintf(name, sizeof(name), "%s%s%s", t->comm ? t->comm : "?", what ? " " : "",
		 what ? what : "");
	ev_begin(tl);
	fprintf(tl->out, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %u, \"tid\": %llu, "
		"\"args\": {\"name\": ", t->pid, (unsigned long long)TRACK_TID(t->tid, kind));
	fput_json_str(tl->out, name);
	fputs("}}", tl->out);
	ev_begin(tl);
	fprintf(tl->out, "{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": %u, "
		"\"tid\": %llu, \"args\": {\"sort_index\": %llu}}", t->pid,
		(unsigned long long)TRACK_TID(t->tid, kind),
		(unsigned long long)t->tid * 8 + (unsigned)kind);
}

static void slice(struct timeline *tl, uint32_t pid, uint64_t tid, const char *name,
		  const char *cat, uint64_t start, uint64_t end, const char *args)
{
	ev_begin(tl);
	fprintf(tl->out, "{\"ph\": \"X\", \"name\": ");
	fput_json_str(tl->out, name);
	fprintf(tl->out, ", \"cat\": \"%s\", \"pid\": %u, \"tid\": %llu, \"ts\": %.3f, "
		"\"dur\": %.3f, \"args\": {%s}}", cat, pid, (unsigned long long)tid, us(tl, start),
		end > start ? (end - start) / 1000.0 : 0.0, args);
}

static void itt_event(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv)
{
	struct timeline *tl = ctx;
	char args[96];

	snprintf(args, sizeof(args), "\"call\": %s, \"depth\": %u",
		 iv->worker ? "false" : "true", iv->depth);
	slice(tl, pid, tid, iv->name, "dnnl", iv->start, iv->end, args);
}

static void find_t0(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv)
{
	struct timeline *tl = ctx;

	if (iv->start < tl->t0)
		tl->t0 = iv->start;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct tl_sample *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* Slices of one thread's consecutive samples with the same key (op or Python line): a
 * slice runs from its first sample to one period after its last (at most up to the
 * thread's next sample), and ends at a change or a gap of more than three periods. */
static void sampled_slices(struct timeline *tl, size_t from, size_t to, int kind,
			   uint64_t period)
{
	size_t i = from;

	while (i < to) {
		const char *key = kind == TRACK_OPS ? tl->s[i].op : tl->s[i].pyline;
		size_t j = i + 1;
		char args[64];

		while (j < to && (kind == TRACK_OPS ? tl->s[j].op : tl->s[j].pyline) == key &&
		       tl->s[j].time - tl->s[j - 1].time <= 3 * period)
			j++;
		if (key) {
			/* to one period after its last sample, or up to the next sample */
			uint64_t end = tl->s[j - 1].time + period;

			if (j < to && tl->s[j].time < end)
				end = tl->s[j].time;
			snprintf(args, sizeof(args), "\"samples\": %zu", j - i);
			slice(tl, tl->s[i].pid, TRACK_TID(tl->s[i].tid, kind),
			      kind == TRACK_OPS ? attr_op_name(key, NULL) : key, kind == TRACK_OPS ?
			      "op,sampled" : "python,sampled", tl->s[i].time, end, args);
		}
		i = j;
	}
}

static int cmp_ptr_time(const void *a, const void *b)
{
	const struct tl_sample *x = *(const struct tl_sample * const *)a;
	const struct tl_sample *y = *(const struct tl_sample * const *)b;

	return x->time < y->time ? -1 : x->time > y->time;
}

static int cmp_heap(const void *a, const void *b)
{
	const struct heap_step *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static void heap_point(struct timeline *tl, uint32_t pid, uint64_t t, int64_t v)
{
	ev_begin(tl);
	fprintf(tl->out, "{\"ph\": \"C\", \"name\": \"heap\", \"pid\": %u, \"ts\": %.3f, "
		"\"args\": {\"live bytes\": %lld}}", pid, us(tl, t), (long long)v);
}

/* The "heap" counter of each process: its live bytes, the highest of each millisecond
 * (so the peak shows however the points are drawn), then where the millisecond ended */
static void heap_counters(struct timeline *tl)
{
	qsort(tl->heap, tl->nr_heap, sizeof(*tl->heap), cmp_heap);
	for (size_t i = 0; i < tl->nr_heap;) {
		uint32_t pid = tl->heap[i].pid;
		int64_t live = 0;

		while (i < tl->nr_heap && tl->heap[i].pid == pid) {
			uint64_t ms = tl->heap[i].time / 1000000;
			int64_t top = live;

			for (; i < tl->nr_heap && tl->heap[i].pid == pid &&
			       tl->heap[i].time / 1000000 == ms; i++) {
				live += tl->heap[i].delta;
				if (live > top)
					top = live;
			}
			heap_point(tl, pid, ms * 1000000, top);
			if (live != top)
				heap_point(tl, pid, ms * 1000000 + 999999, live);
		}
	}
}

/* The family counter of one process: shares of its samples per bucket. */
static void family_counter(struct timeline *tl, uint32_t pid)
{
	const char *fams[64];
	uint64_t cnt[64];
	size_t nf = 0, n = 0, k;
	uint64_t bucket = UINT64_MAX;
	/* the process's samples in time order: merge its threads' runs */
	struct tl_sample **v = NULL;
	size_t nv = 0, alloc = 0;

	for (size_t i = 0; i < tl->nr; i++)
		if (tl->s[i].pid == pid) {
			ALLOC_GROW(v, nv + 1, alloc);
			v[nv++] = &tl->s[i];
		}
	if (nv)
		qsort(v, nv, sizeof(*v), cmp_ptr_time);
	for (size_t i = 0; i <= nv; i++) {
		uint64_t b = i < nv ? v[i]->time / TIMELINE_BUCKET_NS : UINT64_MAX;

		if (b != bucket && n) {
			ev_begin(tl);
			fprintf(tl->out, "{\"ph\": \"C\", \"name\": \"families\", \"pid\": %u, "
				"\"ts\": %.3f, \"args\": {", pid, us(tl, bucket * TIMELINE_BUCKET_NS));
			for (k = 0; k < nf; k++) {
				fprintf(tl->out, "%s", k ? ", " : "");
				fput_json_str(tl->out, fams[k]);
				fprintf(tl->out, ": %.3f", (double)cnt[k] / n);
			}
			fputs("}}", tl->out);
		}
		if (i == nv)
			break;
		if (b != bucket) {
			bucket = b;
			n = 0;
			for (k = 0; k < nf; k++)
				cnt[k] = 0;
		}
		for (k = 0; k < nf && fams[k] != v[i]->family; k++)
			;
		if (k == nf && nf < ARRAY_SIZE(fams)) {
			fams[nf] = v[i]->family;
			cnt[nf++] = 0;
		}
		if (k < nf)
			cnt[k]++;
		n++;
	}
	free(v);
}

static long timeline_write(struct timeline *tl, FILE *out, const struct profile_stats *st)
{
	const struct itt_data *itt;
	uint64_t period = st->sample_period_ns ? st->sample_period_ns : 1000000;
	size_t i, j, nr_steps = 0;

	tl->out = out;
	tl->events = 0;
	if (tl->nr)
		qsort(tl->s, tl->nr, sizeof(*tl->s), cmp_sample);
	itt = attr_itt(attr_stream_attr(tl->as));
	off_intervals(tl);
	if (tl->steps)
		nr_steps = steps_finish(tl->steps, period);
	tl->t0 = UINT64_MAX;
	for (i = 0; i < tl->nr; i++)
		if (tl->s[i].time < tl->t0)
			tl->t0 = tl->s[i].time;
	itt_each_interval(itt, find_t0, tl);
	if (tl->t0 == UINT64_MAX)
		tl->t0 = 0;

	fputs("{\"traceEvents\": [", out);
	/* names: processes, threads and their tracks */
	for (i = 0; i < tl->nr_th; i++) {
		const struct tl_thread *t = &tl->th[i];
		int first = 1;

		for (j = 0; j < i; j++)
			first &= tl->th[j].pid != t->pid;
		if (first) {
			/* its command line, else its main thread's name, else any thread's */
			const struct proc_entry *e = proc_table_find(&tl->procs, t->pid);
			const char *name = e ? e->cmdline : NULL;
			char cut[201];

			if (name && strlen(name) >= sizeof(cut)) {	/* a name, not the whole line */
				memcpy(cut, name, sizeof(cut) - 1);
				cut[sizeof(cut) - 1] = '\0';
				name = cut;
			}
			for (j = 0; j < tl->nr_th && !name; j++)
				if (tl->th[j].pid == t->pid && tl->th[j].tid == t->pid)
					name = tl->th[j].comm;
			for (j = 0; j < tl->nr_th && !name; j++)
				if (tl->th[j].pid == t->pid)
					name = tl->th[j].comm;
			ev_begin(tl);
			fprintf(out, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %u, "
				"\"args\": {\"name\": ", t->pid);
			fput_json_str(out, name ? name : "?");
			fputs("}}", out);
		}
		thread_meta(tl, t, TRACK_OWN, NULL);
		thread_meta(tl, t, TRACK_OPS, "[ops, sampled]");
		thread_meta(tl, t, TRACK_PY, "[python, sampled]");
		thread_meta(tl, t, TRACK_SCHED, "[sched]");
		if (nr_steps && t->tid == steps_tid(tl->steps))
			thread_meta(tl, t, TRACK_STEPS, "[steps]");
	}
	/* oneDNN primitives: every ITT task, exact */
	itt_each_interval(itt, itt_event, tl);
	/* operators and Python lines: from the samples, thread by thread */
	for (i = 0; i < tl->nr; i = j) {
		for (j = i + 1; j < tl->nr && tl->s[j].tid == tl->s[i].tid && tl->s[j].pid == tl->s[i].pid; j++)
			;
		sampled_slices(tl, i, j, TRACK_OPS, period);
		sampled_slices(tl, i, j, TRACK_PY, period);
	}
	/* training steps: the invocations of --step FUNC on the thread that has the most */
	if (nr_steps) {
		const struct step *sv = steps_get(tl->steps, &nr_steps);
		uint32_t stid = steps_tid(tl->steps);
		size_t k = 0;

		for (i = 0; i < nr_steps; i++) {
			char name[64], args[96];

			if (sv[i].tid != stid)
				continue;
			snprintf(name, sizeof(name), "step %zu", ++k);
			snprintf(args, sizeof(args), "\"samples\": %llu", (unsigned long long)sv[i].samples);
			slice(tl, sv[i].pid, TRACK_TID(sv[i].tid, TRACK_STEPS), name, "step,sampled",
			      sv[i].start, sv[i].end, args);
		}
	}
	/* off the CPU */
	for (i = 0; i < tl->nr_off; i++)
		slice(tl, tl->off[i].pid, TRACK_TID(tl->off[i].tid, TRACK_SCHED),
		      tl->off[i].preempted ? "off-CPU (preempted)" : "off-CPU (waiting)", "sched",
		      tl->off[i].start, tl->off[i].end, "");
	/* family shares per process */
	for (i = 0; i < tl->nr_th; i++) {
		int first = 1;

		for (j = 0; j < i; j++)
			first &= tl->th[j].pid != tl->th[i].pid;
		if (first)
			family_counter(tl, tl->th[i].pid);
	}
	heap_counters(tl);
	fputs("\n], \"displayTimeUnit\": \"ms\", \"otherData\": {\"command\": ", out);
	fput_json_str(out, tl->cmdline ? tl->cmdline : "");
	fputs(", \"event\": ", out);
	fput_json_str(out, st->event);
	fprintf(out, ", \"samples\": %llu, \"first_ns\": %llu, \"clock\": \"CLOCK_MONOTONIC\"}}\n",
		(unsigned long long)st->samples, (unsigned long long)tl->t0);
	return ferror(out) ? -1 : tl->events;
}

/* record --memory: the heap's live bytes, a counter track per process */
static void add_heap(struct timeline *tl, const struct timeline_opts *o)
{
	struct memprof *mp = memprof_new(o->rules, NULL);
	struct filter_args none = { 0 };
	struct sample_filter all;
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	const struct mem_alloc *al;

	memset(&po, 0, sizeof(po));
	filter_init(&all, &none);
	if (memprof_run(mp, o->input, &po, &all, &st, &info) >= 0) {
		size_t nr = memprof_allocs(mp, &al);

		timeline_set_heap(tl, al, nr);	/* copied */
	}
	filter_release(&all);
	memprof_free(mp);
}

int timeline_run(const struct timeline_opts *o)
{
	struct timeline *tl = timeline_new(o->rules);
	struct profile_opts po = o->po;
	struct profile_stats st;
	struct session_info sinfo;
	FILE *out;
	long n;
	int ret;

	if (o->step)
		timeline_set_steps(tl, o->step);
	memset(&sinfo, 0, sizeof(sinfo));
	ret = timeline_read(tl, o->input, &po, o->filt, &st, &sinfo);
	if (ret >= 0 && strstr(st.other_events, "mem-alloc"))
		add_heap(tl, o);
	if (ret >= 0) {
		out = out_open(o->output, "w");
		n = out ? timeline_write(tl, out, &st) : -1;
		if (!out || out_close(out, o->output, n < 0) < 0)
			ret = -1;
		else if (strcmp(o->output, "-"))
			fprintf(stderr, "dlprof: wrote %s: %ld events from %llu samples\n", o->output,
				n, (unsigned long long)st.samples);
		if (ret >= 0 && filter_active(o->filt))
			info("timeline: %s: %llu of %llu samples kept", o->filt->desc,
			     (unsigned long long)st.samples,
			     (unsigned long long)(st.samples + st.filtered_out));
	}
	timeline_free(tl);
	return profile_result(ret, &sinfo);
}
