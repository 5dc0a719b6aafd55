/* timeline.c - the recording as a Chrome Trace Event file (timeline.h). */
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "itt.h"
#include "json.h"
#include "metview.h"
#include "memprof.h"
#include "ranks.h"
#include "readings.h"
#include "steps.h"
#include "switches.h"
#include "timeline.h"
#include "util.h"

/* One sample, as the tracks need it */
struct tl_sample {
	uint64_t time;
	uint32_t pid, tid;
	const char *op, *pyline, *family;
	const char *pychain;	/* its Python frames (attr.h), NULL: none */
};

struct tl_thread {
	uint32_t pid, tid;
	const char *comm;
	int rank_steps;		/* a main thread that waited in collectives (job_steps) */
};

struct tl_off {
	uint32_t pid, tid;
	uint64_t start, end;
	int preempted;
};

/* A switch-out sample (recorded with its stack): what the thread went to wait for */
struct tl_wait {
	uint32_t pid, tid;
	uint64_t time, ns;
	const char *family, *frame;
	const char *pyline;	/* the innermost Python frame of its own stack, NULL: none */
	const char *pychain;	/* the Python frames of its attribution (a main thread's own) */
};


struct timeline {
	struct attr_stream *as;
	struct tl_sample *s;
	size_t nr, alloc;
	struct tl_thread *th;
	size_t nr_th, alloc_th;
	struct tl_off *off;
	size_t nr_off, alloc_off;
	struct tl_wait *waits;
	size_t nr_waits, alloc_waits;
	/* a distributed job's step ends (ranks_job_step_ends), on this recording's clock */
	uint64_t *job_ends;
	size_t nr_job_ends;
	struct switches sw;	/* sorted before pairing (switches.h) */
	char *cmdline;
	struct json *j;		/* the trace being written */
	long events;
	uint64_t t0;
	int err;
	struct steps *steps;	/* --step FUNC, NULL: none */
	/* record --memory: the heap's live bytes per process (timeline_set_heap) */
	struct heap_step { uint64_t time; int64_t delta; uint32_t pid; } *heap;
	size_t nr_heap;
	struct proc_table procs;	/* each process's command line: its track's name */
	/* record --metrics: each read (a sample's, a switch-out's) and its counts, the
	 * counters' names (META metrics) */
	struct tl_read { uint64_t time; uint32_t pid, tid; size_t at; } *reads;
	size_t nr_reads, alloc_reads;
	uint64_t *read_vals;
	size_t nr_vals, alloc_vals;
	char *met_names[16];
	int nr_met;
	double met_scale[16];		/* where a counter shared the PMU (metview.h) */
	/* several recordings on one axis: this one's pids are shown as pid + pid_base,
	 * named with its host; those another recording has are left out */
	const struct readings *rd;
	size_t k;
	uint64_t pid_base;
	int several;
};

/* The trace's pid of one of the recording's processes */
static unsigned long long cpid(const struct timeline *tl, uint32_t pid)
{
	return pid + tl->pid_base;
}

/* Left out: recorded by an earlier recording too (counted there) */
static int dup_pid(const struct timeline *tl, uint32_t pid)
{
	return tl->rd && readings_skipped(tl->rd, tl->k, pid);
}

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
	free(tl->waits);
	free(tl->job_ends);
	free(tl->cmdline);
	free(tl->reads);
	free(tl->read_vals);
	for (int i = 0; i < tl->nr_met; i++)
		free(tl->met_names[i]);
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

	if (s->read && s->nr_read > (uint32_t)tl->nr_met && tl->nr_met) {
		/* its counters' counts (the members', after the sampling event's own) */
		ALLOC_GROW(tl->reads, tl->nr_reads + 1, tl->alloc_reads);
		tl->reads[tl->nr_reads++] = (struct tl_read){ s->time, s->pid, s->tid, tl->nr_vals };
		ALLOC_GROW(tl->read_vals, tl->nr_vals + (size_t)tl->nr_met, tl->alloc_vals);
		memcpy(tl->read_vals + tl->nr_vals, s->read + 1, (size_t)tl->nr_met * 8);
		tl->nr_vals += (size_t)tl->nr_met;
	}
	if (s->counts_only)
		return 0;	/* (a counter's own sample: its counts only) */
	if (attr_is_switch(s)) {
		/* names the off-CPU slice that starts here (off_name); its Python line is
		 * its own stack's (not the one an OpenMP worker's attribution borrows) */
		const char *py = NULL;

		for (size_t i = 0; i < as->nr && !py; i++)
			if (as->frames[i].flags & FRAME_PYTHON)
				py = as->frames[i].sym;
		ALLOC_GROW(tl->waits, tl->nr_waits + 1, tl->alloc_waits);
		tl->waits[tl->nr_waits++] = (struct tl_wait){ s->pid, s->tid, s->time, s->period,
			a->family, attr_collective_frame(as->frames, as->nr), py, a->pychain };
		return 0;
	}
	if (tl->steps)
		steps_sample(tl->steps, s, as->frames, as->nr, a->family);
	if (comm)
		t->comm = str_intern(comm, strlen(comm));
	ALLOC_GROW(tl->s, tl->nr + 1, tl->alloc);
	tl->s[tl->nr++] = (struct tl_sample){ s->time, s->pid, s->tid, a->op, a->pyline, a->family,
					      a->pychain };
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
			/* sorted by thread and time: a thread's intervals follow each other */
			ALLOC_GROW(tl->off, tl->nr_off + 1, tl->alloc_off);
			tl->off[tl->nr_off++] = (struct tl_off){ e->pid, e->tid, out_at, e->time,
								 preempted };
			out_at = 0;
		}
	}
}

static int tl_meta(void *ctx, const struct recmeta *m)
{
	struct timeline *tl = ctx;

	if (m->cmdline) {
		free(tl->cmdline);
		tl->cmdline = xstrdup(m->cmdline);
	}
	if (m->metrics && !tl->nr_met) {
		tl->nr_met = (int)list_split(m->metrics, tl->met_names, ARRAY_SIZE(tl->met_names));
		for (int k = 0; k < tl->nr_met; k++)
			tl->met_scale[k] = metview_meta_scale(m, k + 1);
	}
	if (tl->rd)
		readings_meta((struct readings *)tl->rd, m);
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


static int cmp_wait(const void *a, const void *b)
{
	const struct tl_wait *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* The switch-out sample of an off-CPU interval: its thread's, taken at the switch that
 * starts it.  The sample and the switch record are written in the same switch, most a few
 * microseconds apart, but the Python stack read in the kernel at the sample can hold it
 * up longer on a busy guest: the one nearest the start, after the thread's last switch-in
 * (after) and before it ran again (one switch-out sample a switch-out). */
#define WAIT_MATCH_NS 100000
static const struct tl_wait *wait_at(const struct timeline *tl, const struct tl_off *o,
				     uint64_t after)
{
	uint64_t from = o->start > WAIT_MATCH_NS ? o->start - WAIT_MATCH_NS : 0, best_d = 0;
	const struct tl_wait *best = NULL;
	size_t lo = 0, hi = tl->nr_waits;

	/* after the thread's last switch-in there is one switch-out sample, this one's,
	 * however long before the switch the kernel timed it (a sample's own time, read
	 * before the program walks its stacks: more than WAIT_MATCH_NS, at times) */
	if (after)
		from = after;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tl_wait *w = &tl->waits[mid];

		if (w->tid < o->tid || (w->tid == o->tid && w->time < from))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < tl->nr_waits && tl->waits[lo].tid == o->tid && tl->waits[lo].time < o->end;
	     lo++) {
		const struct tl_wait *w = &tl->waits[lo];
		uint64_t d = w->time > o->start ? w->time - o->start : o->start - w->time;

		if (w->pid != o->pid)
			continue;
		if (best && d >= best_d)
			break;	/* further from the start from here on */
		best = w;
		best_d = d;
	}
	return best;
}

/* The waits pid's main thread made in a collective and its samples with Python frames
 * (ranks.h), copied into *w, how many in *nr; how many waits */
static size_t collective_waits(const struct timeline *tl, uint32_t pid, struct rank_wait **w,
			       size_t *nr)
{
	const char *coll = str_intern("wait-collective", 15);
	size_t n = 0, waits;

	*w = xcalloc(tl->nr_waits + tl->nr + 1, sizeof(**w));
	for (size_t i = 0; i < tl->nr_waits; i++) {
		const struct tl_wait *x = &tl->waits[i];

		if (x->pid == pid && x->tid == pid && x->family == coll)
			(*w)[n++] = (struct rank_wait){ x->time, x->ns, x->frame, x->pychain, 1 };
	}
	waits = n;
	for (size_t i = 0; waits && i < tl->nr; i++) {
		const struct tl_sample *x = &tl->s[i];

		if (x->pid == pid && x->tid == pid && x->pychain)
			(*w)[n++] = (struct rank_wait){ x->time, 0, NULL, x->pychain, 0 };
	}
	*nr = n;
	return waits;
}

/* The job's step ends (ranks_job_step_ends) from the main threads' waits in collectives
 * and samples of the recordings tls[0..n), each at shift[k] on one axis; each recording keeps them
 * on its own clock */
static void job_steps(struct timeline **tls, size_t n, const int64_t *shift)
{
	struct rank_waits *rw = NULL;
	size_t nr = 0, alloc = 0, m;
	uint64_t *ends;

	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < tls[k]->nr_th; i++) {
			struct tl_thread *t = &tls[k]->th[i];
			struct rank_wait *w;
			size_t nw;

			if (t->tid != t->pid)
				continue;
			t->rank_steps = collective_waits(tls[k], t->pid, &w, &nw) > 0;
			if (!t->rank_steps) {
				free(w);
				continue;
			}
			ALLOC_GROW(rw, nr + 1, alloc);
			rw[nr++] = (struct rank_waits){ w, nw, shift[k] };
		}
	m = ranks_job_step_ends(rw, nr, &ends);
	for (size_t k = 0; k < n; k++) {
		free(tls[k]->job_ends);
		tls[k]->job_ends = xcalloc(m + 1, sizeof(uint64_t));
		for (size_t i = 0; i < m; i++)
			tls[k]->job_ends[i] = (uint64_t)((int64_t)ends[i] - shift[k]);
		tls[k]->nr_job_ends = m;
	}
	for (size_t i = 0; i < nr; i++)
		free(rw[i].w);
	free(rw);
	free(ends);
}

/* ---- writing ---- */

/* Track kinds beside a thread's own: synthetic tids above any real one */
enum { TRACK_OWN, TRACK_OPS, TRACK_PY, TRACK_SCHED, TRACK_STEPS };
#define TRACK_TID(tid, k) ((uint64_t)(tid) + ((uint64_t)(k) << 24))

/* The next event of the trace, an object on a line of its own */
static struct json *ev_begin(struct timeline *tl)
{
	tl->events++;
	json_pre(tl->j, "\n");
	json_obj(tl->j);
	return tl->j;
}

static double us(const struct timeline *tl, uint64_t t)
{
	return t > tl->t0 ? (t - tl->t0) / 1000.0 : 0.0;
}

static void thread_meta(struct timeline *tl, const struct tl_thread *t, int kind, const char *what)
{
	char name[128];
	struct json *j;

	snprintf(name, sizeof(name), "%s%s%s", t->comm ? t->comm : "?", what ? " " : "",
		 what ? what : "");
	j = ev_begin(tl);
	json_kstr(j, "ph", "M");
	json_kstr(j, "name", "thread_name");
	json_ku64(j, "pid", cpid(tl, t->pid));
	json_ku64(j, "tid", TRACK_TID(t->tid, kind));
	json_kobj(j, "args");
	json_kstr(j, "name", name);
	json_end(j);
	json_end(j);
	j = ev_begin(tl);
	json_kstr(j, "ph", "M");
	json_kstr(j, "name", "thread_sort_index");
	json_ku64(j, "pid", cpid(tl, t->pid));
	json_ku64(j, "tid", TRACK_TID(t->tid, kind));
	json_kobj(j, "args");
	json_ku64(j, "sort_index", (uint64_t)t->tid * 8 + (unsigned)kind);
	json_end(j);
	json_end(j);
}

/* A slice [start, end), its args object left open for the caller's (slice_end closes
 * it); NULL where it is not written.  What lies before the trace's time 0 is cut off,
 * never moved: moved, its end would pass the next slice of its track (a thread
 * switched out while record set up, before the workload's first sample). */
static struct json *slice(struct timeline *tl, uint32_t pid, uint64_t tid, const char *name,
			  const char *cat, uint64_t start, uint64_t end)
{
	uint64_t from = start > tl->t0 ? start : tl->t0;
	struct json *j;

	if (end < from)
		return NULL;
	j = ev_begin(tl);
	json_kstr(j, "ph", "X");
	json_kstr(j, "name", name);
	json_kstr(j, "cat", cat);
	json_ku64(j, "pid", cpid(tl, pid));
	json_ku64(j, "tid", tid);
	json_knum(j, "ts", "%.3f", us(tl, from));
	json_knum(j, "dur", "%.3f", end > from ? (end - from) / 1000.0 : 0.0);
	json_kobj(j, "args");
	return j;
}

static void slice_end(struct json *j)
{
	json_end(j);	/* args */
	json_end(j);
}

/* A oneDNN task: named by the primitive it ran (the execution around its middle, as
 * the samples in it are attributed), "convolution jit:avx2 mb2_ic32oc64_..." (task,
 * implementation, shape), the primitive's description in args; by its task name alone
 * where none was recorded */
static void itt_event(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv)
{
	struct timeline *tl = ctx;
	const struct itt_prim *p;
	struct strbuf name = STRBUF_INIT;
	struct json *j;

	if (dup_pid(tl, pid))
		return;
	p = itt_prim_in(attr_itt(attr_stream_attr(tl->as)), pid, tid, iv,
			iv->start + (iv->end - iv->start) / 2);
	strbuf_addstr(&name, iv->name);
	if (p) {
		strbuf_addf(&name, " %s", p->impl ? p->impl : "?");
		if (p->shape)
			strbuf_addf(&name, " %s", p->shape);
	}
	j = slice(tl, pid, tid, name.buf, "dnnl", iv->start, iv->end);
	strbuf_release(&name);
	if (!j)
		return;
	json_kbool(j, "call", !iv->worker);
	json_ku64(j, "depth", iv->depth);
	json_kstr(j, "task", iv->name ? iv->name : "");
	if (p) {
		if (p->impl)
			json_kstr(j, "impl", p->impl);
		if (p->prop)
			json_kstr(j, "prop", p->prop);
		if (p->shape)
			json_kstr(j, "shape", p->shape);
		for (int m = 0; m < ITT_MD_NR; m++)
			if (p->md[m])
				json_kstr(j, itt_md_names[m], p->md[m]);
	}
	slice_end(j);
}

static void find_t0(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv)
{
	struct timeline *tl = ctx;

	if (!dup_pid(tl, pid) && iv->start < tl->t0)
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
		struct json *js;

		while (j < to && (kind == TRACK_OPS ? tl->s[j].op : tl->s[j].pyline) == key &&
		       tl->s[j].time - tl->s[j - 1].time <= 3 * period)
			j++;
		if (key) {
			/* to one period after its last sample, or up to the next sample */
			uint64_t end = tl->s[j - 1].time + period;

			if (j < to && tl->s[j].time < end)
				end = tl->s[j].time;
			js = slice(tl, tl->s[i].pid, TRACK_TID(tl->s[i].tid, kind),
				   kind == TRACK_OPS ? attr_op_name(key, NULL) : key, kind == TRACK_OPS ?
				   "op,sampled" : "python,sampled", tl->s[i].time, end);
			if (js) {
				json_ku64(js, "samples", j - i);
				slice_end(js);
			}
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
	struct json *j;

	if (dup_pid(tl, pid))
		return;
	j = ev_begin(tl);
	json_kstr(j, "ph", "C");
	json_kstr(j, "name", "heap");
	json_ku64(j, "pid", cpid(tl, pid));
	json_knum(j, "ts", "%.3f", us(tl, t));
	json_kobj(j, "args");
	json_ki64(j, "live bytes", v);
	json_end(j);
	json_end(j);
}

/* The "heap" counter of each process: its live bytes, the highest of each millisecond
 * (so the peak shows however the points are drawn), then where the millisecond ended */
static void heap_counters(struct timeline *tl)
{
	if (tl->nr_heap)	/* (qsort of no array: undefined) */
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

static int cmp_read(const void *a, const void *b)
{
	const struct tl_read *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static void metric_point(struct timeline *tl, uint32_t pid, uint32_t tid, int k, uint64_t bucket,
			 uint64_t v)
{
	struct json *j = ev_begin(tl);
	char name[128];

	snprintf(name, sizeof(name), "%s (tid %u)", tl->met_names[k], tid);
	if (tl->met_scale[k] != 1)	/* (a counter that shared the PMU: as report scales it) */
		v = (uint64_t)((double)v * tl->met_scale[k] + 0.5);
	json_kstr(j, "ph", "C");
	json_kstr(j, "name", name);
	json_ku64(j, "pid", cpid(tl, pid));
	json_knum(j, "ts", "%.3f", us(tl, bucket * TIMELINE_BUCKET_NS));
	json_kobj(j, "args");
	json_ku64(j, "per 10 ms", v);
	json_end(j);
	json_end(j);
}

/* record --metrics: a counter track per thread and counter that counted anything, its
 * counts per 10 ms (by when they were read), back to 0 where it counted none */
static void metric_counters(struct timeline *tl)
{
	if (tl->nr_reads)
		qsort(tl->reads, tl->nr_reads, sizeof(*tl->reads), cmp_read);
	for (size_t i = 0; i < tl->nr_reads;) {
		size_t j = i;

		while (j < tl->nr_reads && tl->reads[j].tid == tl->reads[i].tid &&
		       tl->reads[j].pid == tl->reads[i].pid)
			j++;
		for (int k = 0; k < tl->nr_met && !dup_pid(tl, tl->reads[i].pid); k++) {
			uint64_t bucket = UINT64_MAX, sum = 0, total = 0;

			for (size_t r = i; r < j; r++)
				total += tl->read_vals[tl->reads[r].at + (size_t)k];
			if (!total)
				continue;
			for (size_t r = i; r <= j; r++) {
				uint64_t b = r < j ? tl->reads[r].time / TIMELINE_BUCKET_NS : UINT64_MAX;

				if (b != bucket && bucket != UINT64_MAX) {
					metric_point(tl, tl->reads[i].pid, tl->reads[i].tid, k, bucket, sum);
					if (b != bucket + 1 && sum)
						metric_point(tl, tl->reads[i].pid, tl->reads[i].tid, k,
							     bucket + 1, 0);
					sum = 0;
				}
				if (r == j)
					break;
				bucket = b;
				sum += tl->read_vals[tl->reads[r].at + (size_t)k];
			}
		}
		i = j;
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
			struct json *j = ev_begin(tl);

			json_kstr(j, "ph", "C");
			json_kstr(j, "name", "families");
			json_ku64(j, "pid", cpid(tl, pid));
			json_knum(j, "ts", "%.3f", us(tl, bucket * TIMELINE_BUCKET_NS));
			json_kobj(j, "args");
			for (k = 0; k < nf; k++)
				json_knum(j, fams[k] ? fams[k] : "", "%.3f", (double)cnt[k] / n);
			json_end(j);
			json_end(j);
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

/* The name of a process's track: its command line, else its main thread's name, else any
 * thread's; with several recordings, its rank and host first */
static void process_name(struct timeline *tl, uint32_t pid)
{
	const struct proc_entry *e = proc_table_find(&tl->procs, pid);
	const char *name = e ? e->cmdline : NULL, *host;
	struct strbuf sb = STRBUF_INIT;
	struct json *js;
	size_t j;

	for (j = 0; j < tl->nr_th && !name; j++)
		if (tl->th[j].pid == pid && tl->th[j].tid == pid)
			name = tl->th[j].comm;
	for (j = 0; j < tl->nr_th && !name; j++)
		if (tl->th[j].pid == pid)
			name = tl->th[j].comm;
	if (tl->several) {
		/* "rank 1 (host-b) pid 123 python3 train.py": pids of two hosts may be equal */
		host = tl->rd->in[tl->k].host ? tl->rd->in[tl->k].host : "?";
		if (e && e->rank)
			strbuf_addf(&sb, "rank %s (%s) ", e->rank, host);
		else
			strbuf_addf(&sb, "%s ", host);
		strbuf_addf(&sb, "pid %u ", pid);
	}
	strbuf_addf(&sb, "%.200s", name ? name : "?");	/* a name, not the whole line */
	js = ev_begin(tl);
	json_kstr(js, "ph", "M");
	json_kstr(js, "name", "process_name");
	json_ku64(js, "pid", cpid(tl, pid));
	json_kobj(js, "args");
	json_kstr(js, "name", sb.buf);
	json_end(js);
	json_end(js);
	strbuf_release(&sb);
}

/* Sort the recording's samples, pair its switches, settle its steps; the first event's
 * time into *first (UINT64_MAX: none) */
static size_t timeline_prepare(struct timeline *tl, const struct profile_stats *st,
			       uint64_t *first)
{
	uint64_t period = st->sample_period_ns ? st->sample_period_ns : 1000000;
	size_t nr_steps = 0;

	if (tl->nr)
		qsort(tl->s, tl->nr, sizeof(*tl->s), cmp_sample);
	off_intervals(tl);
	if (tl->steps)
		nr_steps = steps_finish(tl->steps, period);
	tl->t0 = UINT64_MAX;
	for (size_t i = 0; i < tl->nr; i++)
		if (tl->s[i].time < tl->t0)
			tl->t0 = tl->s[i].time;
	itt_each_interval(attr_itt(attr_stream_attr(tl->as)), find_t0, tl);
	*first = tl->t0;
	return nr_steps;
}

/* The recording's events, after *events others (tl->t0: its time 0) */
static void timeline_events(struct timeline *tl, struct json *out, const struct profile_stats *st,
			    size_t nr_steps, long *events)
{
	const struct itt_data *itt = attr_itt(attr_stream_attr(tl->as));
	uint64_t period = st->sample_period_ns ? st->sample_period_ns : 1000000;
	size_t i, j;

	tl->j = out;
	tl->events = *events;
	/* names: processes, threads and their tracks */
	for (i = 0; i < tl->nr_th; i++) {
		const struct tl_thread *t = &tl->th[i];
		int first = 1;

		if (dup_pid(tl, t->pid))
			continue;
		for (j = 0; j < i; j++)
			first &= tl->th[j].pid != t->pid;
		if (first)
			process_name(tl, t->pid);
		thread_meta(tl, t, TRACK_OWN, NULL);
		thread_meta(tl, t, TRACK_OPS, "[ops, sampled]");
		thread_meta(tl, t, TRACK_PY, "[python, sampled]");
		thread_meta(tl, t, TRACK_SCHED, "[sched]");
		if ((nr_steps && t->tid == steps_tid(tl->steps)) ||
		    (!tl->steps && t->rank_steps))
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
			char name[64];
			struct json *js;

			if (sv[i].tid != stid)
				continue;
			snprintf(name, sizeof(name), "step %zu", ++k);
			js = slice(tl, sv[i].pid, TRACK_TID(sv[i].tid, TRACK_STEPS), name, "step,sampled",
				   sv[i].start, sv[i].end);
			if (js) {
				json_ku64(js, "samples", sv[i].samples);
				slice_end(js);
			}
		}
	}
	/* a distributed job's steps, without --step: on each rank's main thread, from one
	 * end of the job's step-closing waits in a collective to the next (ranks.h) */
	for (i = 0; !tl->steps && i < tl->nr_th; i++) {
		const struct tl_thread *t = &tl->th[i];

		if (!t->rank_steps || dup_pid(tl, t->pid))
			continue;
		for (j = 1; j < tl->nr_job_ends; j++) {
			char name[64];
			struct json *js;

			snprintf(name, sizeof(name), "step %zu", j);
			js = slice(tl, t->pid, TRACK_TID(t->tid, TRACK_STEPS), name, "step,collective",
				   tl->job_ends[j - 1], tl->job_ends[j]);
			if (js)
				slice_end(js);
		}
	}
	/* off the CPU, named by what the thread waited for where its switch-out has a
	 * stack: "wait-collective c10d::Reducer::finalize_backward", else by the Python
	 * line it blocked on, "wait-sleep sleep_here (py_waits.py:20)", else "wait-io" */
	if (tl->nr_waits)
		qsort(tl->waits, tl->nr_waits, sizeof(*tl->waits), cmp_wait);
	for (i = 0; i < tl->nr_off; i++) {
		/* the thread's last switch-in: its previous interval's end */
		uint64_t after = i && tl->off[i - 1].tid == tl->off[i].tid &&
				 tl->off[i - 1].pid == tl->off[i].pid ? tl->off[i - 1].end : 0;
		const struct tl_wait *w = tl->off[i].preempted ? NULL :
					  wait_at(tl, &tl->off[i], after);
		struct strbuf name = STRBUF_INIT;
		struct json *js;

		if (dup_pid(tl, tl->off[i].pid))
			continue;
		if (w) {
			const char *what = w->frame ? w->frame : w->pyline;

			strbuf_addstr(&name, w->family);
			if (what)
				strbuf_addf(&name, " %s", what);
		} else {
			strbuf_addstr(&name, tl->off[i].preempted ? "off-CPU (preempted)" :
				      "off-CPU (waiting)");
		}
		js = slice(tl, tl->off[i].pid, TRACK_TID(tl->off[i].tid, TRACK_SCHED), name.buf,
			   "sched", tl->off[i].start, tl->off[i].end);
		strbuf_release(&name);
		if (!js)
			continue;
		if (w) {
			json_kstr(js, "family", w->family);
			if (w->pyline)
				json_kstr(js, "python", w->pyline);
		}
		slice_end(js);
	}
	/* family shares per process */
	for (i = 0; i < tl->nr_th; i++) {
		int first = 1;

		for (j = 0; j < i; j++)
			first &= tl->th[j].pid != tl->th[i].pid;
		if (first && !dup_pid(tl, tl->th[i].pid))
			family_counter(tl, tl->th[i].pid);
	}
	heap_counters(tl);
	metric_counters(tl);
	*events = tl->events;
}

/* The trace's start: its events follow */
static void trace_begin(struct json *j, FILE *out)
{
	json_init(j, out, JSON_SPACED);
	json_obj(j);
	json_karr(j, "traceEvents");
}

/* After the events: what the trace is of, in otherData, left open for more */
static void trace_end(struct json *j, const char *cmdline, const struct profile_stats *st,
		      uint64_t first_ns, const char *clock)
{
	json_raw(j, "\n");
	json_end(j);
	json_kstr(j, "displayTimeUnit", "ms");
	json_kobj(j, "otherData");
	json_kstr(j, "command", cmdline ? cmdline : "");
	json_kstr(j, "event", st->event);
	json_ku64(j, "samples", st->samples);
	json_ku64(j, "first_ns", first_ns);
	json_kstr(j, "clock", clock);
}

static long timeline_write(struct timeline *tl, FILE *out, const struct profile_stats *st)
{
	uint64_t first;
	size_t nr_steps = timeline_prepare(tl, st, &first);
	long events = 0;
	int64_t none = 0;
	struct json j;

	job_steps(&tl, 1, &none);
	if (tl->t0 == UINT64_MAX)
		tl->t0 = 0;
	trace_begin(&j, out);
	timeline_events(tl, &j, st, nr_steps, &events);
	trace_end(&j, tl->cmdline, st, tl->t0, "CLOCK_MONOTONIC");
	json_end(&j);
	json_end(&j);
	json_raw(&j, "\n");
	return ferror(out) ? -1 : events;
}

/* record --memory: the heap's live bytes, a counter track per process */
static void add_heap(struct timeline *tl, const struct timeline_opts *o, const char *input)
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
	if (memprof_run(mp, input, &po, &all, &st, &info) >= 0) {
		size_t nr = memprof_allocs(mp, &al);

		timeline_set_heap(tl, al, nr);	/* copied */
	}
	filter_release(&all);
	memprof_free(mp);
}

struct tl_reader {
	const struct timeline_opts *o;
	struct timeline **tls;		/* one per recording */
};

/* Recording k into a timeline of its own (its pids, threads, clock and attribution) */
static int tl_one(void *ctx, struct readings *rd, size_t k, struct profile_stats *st,
		  struct session_info *info)
{
	struct tl_reader *tr = ctx;
	struct timeline *tl = timeline_new(tr->o->rules);
	struct profile_opts po = tr->o->po;
	int ret;

	tr->tls[k] = tl;
	tl->rd = rd;
	tl->k = k;
	tl->several = rd->nr > 1;
	/* pid collisions across recordings (hosts): a block of pids for each */
	tl->pid_base = tl->several ? k * TIMELINE_PID_BLOCK : 0;
	if (tr->o->step)
		timeline_set_steps(tl, tr->o->step);
	readings_opts(rd, &po);
	if (!po.off_cpu && !po.wall)
		po.wall = 2;	/* the switch-outs' stacks, where recorded: what a wait is for */
	po.metric_samples = 1;	/* (the counter tracks: a counter sampled on its own) */
	ret = attr_stream_run_filtered(tl->as, rd->in[k].file, &po, tr->o->filt, st, info);
	if (po.wall == 2)
		st->samples -= st->off_samples;	/* the trace's samples: the CPU's */
	if (ret >= 0 && strstr(st->other_events, "mem-alloc"))
		add_heap(tl, tr->o, rd->in[k].file);
	return ret;
}

/* Several recordings: each one's events on the wall clock through its start anchor, time
 * 0 the earliest anchored start; one without an anchor is put at time 0 */
static long timeline_write_several(struct tl_reader *tr, const struct readings *rd,
				   FILE *out, struct strbuf *none)
{
	size_t nr = rd->nr, *steps = xcalloc(nr, sizeof(*steps));
	uint64_t zero = UINT64_MAX, *first = xcalloc(nr, sizeof(*first));
	long events = 0;
	int anchored;
	struct json j;

	int64_t *shifts = xcalloc(nr, sizeof(*shifts)), zero_shift = 0;
	int all_anchored = 1;

	for (size_t k = 0; k < nr; k++) {
		steps[k] = timeline_prepare(tr->tls[k], &rd->in[k].st, &first[k]);
		shifts[k] = readings_shift(rd, k, &anchored);
		all_anchored &= anchored;
		if (anchored && rd->in[k].real[0] < zero)
			zero = rd->in[k].real[0];
	}
	/* one job's steps for all, where the recordings are on one axis */
	if (all_anchored)
		job_steps(tr->tls, nr, shifts);
	else
		for (size_t k = 0; k < nr; k++)
			job_steps(&tr->tls[k], 1, &zero_shift);
	free(shifts);
	trace_begin(&j, out);
	for (size_t k = 0; k < nr; k++) {
		struct timeline *tl = tr->tls[k];
		int64_t shift = readings_shift(rd, k, &anchored);

		if (anchored && zero != UINT64_MAX) {
			/* its monotonic time of the trace's 0 */
			tl->t0 = (uint64_t)((int64_t)zero - shift);
		} else {
			tl->t0 = first[k] == UINT64_MAX ? 0 : first[k];
			strbuf_addf(none, "%s%s", none->len ? ", " : "", rd->in[k].file);
		}
		timeline_events(tl, &j, &rd->in[k].st, steps[k], &events);
	}
	trace_end(&j, rd->cmdline, &rd->st, zero == UINT64_MAX ? 0 : zero,
		  zero == UINT64_MAX ? "CLOCK_MONOTONIC" : "CLOCK_REALTIME");
	json_karr(&j, "recordings");
	for (size_t k = 0; k < nr; k++) {
		int64_t shift = readings_shift(rd, k, &anchored);

		json_obj(&j);
		json_kstr(&j, "file", rd->in[k].file ? rd->in[k].file : "");
		json_kstr(&j, "host", rd->in[k].host);
		json_kbool(&j, "anchored", anchored);
		json_ki64(&j, "shift_ns", shift);
		json_ku64(&j, "pid_base", tr->tls[k]->pid_base);
		json_ku64(&j, "t0_ns", tr->tls[k]->t0);
		json_end(&j);
	}
	json_end(&j);
	json_end(&j);
	json_end(&j);
	json_raw(&j, "\n");
	free(steps);
	free(first);
	return ferror(out) ? -1 : events;
}

int timeline_run(const struct timeline_opts *o)
{
	struct tl_reader tr = { o, xcalloc(o->nr_inputs ? o->nr_inputs : 1, sizeof(*tr.tls)) };
	struct strbuf none = STRBUF_INIT;
	struct readings rd;
	FILE *out;
	long n = -1;
	int ret;

	memset(&rd, 0, sizeof(rd));
	ret = readings_run(&rd, o->inputs, o->nr_inputs, tl_one, &tr);
	if (ret >= 0) {
		out = out_open(o->output, "w");
		if (out)
			n = o->nr_inputs > 1 ? timeline_write_several(&tr, &rd, out, &none) :
			    timeline_write(tr.tls[0], out, &rd.in[0].st);
		if (!out || out_close(out, o->output, n < 0) < 0)
			ret = DLP_FAILED;
		else if (strcmp(o->output, "-"))
			fprintf(stderr, "dlprof: wrote %s: %ld events from %llu samples%s\n",
				o->output, n, (unsigned long long)rd.st.samples,
				o->nr_inputs > 1 ? " (pid + 10000000 * recording)" : "");
		if (ret >= 0 && none.len)
			info("timeline: no clock anchor in %s (recorded by an older dlprof, or "
			     "perf.data): each put at the trace's start", none.buf);
		if (ret >= 0 && rd.nr_dups)
			info("timeline: %s", rd.twice);
		if (ret >= 0 && filter_active(o->filt))
			info("timeline: %s: %llu of %llu samples kept", o->filt->desc,
			     (unsigned long long)rd.st.samples,
			     (unsigned long long)(rd.st.samples + rd.st.filtered_out));
	}
	for (size_t k = 0; k < o->nr_inputs; k++)
		timeline_free(tr.tls[k]);
	free(tr.tls);
	strbuf_release(&none);
	readings_release(&rd);
	return ret;
}
