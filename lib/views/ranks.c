/* ranks.c - report --sort rank: the ranks of a distributed job and its straggler
 * (ranks.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "dlview-priv.h"
#include "json.h"
#include "output.h"
#include "process.h"
#include "ranks.h"
#include "readings.h"
#include "rephash.h"
#include "tabw.h"
#include "util.h"

/* An on-CPU sample of a rank: when, its weight, where it ran (Python line -> op) */
struct rk_sample {
	uint64_t time, ns;
	const char *where, *family;
};

struct rk_proc {
	uint32_t pid;
	size_t input;			/* the recording it is in */
	int rank;			/* -1: none */
	const char *host;		/* its recording's, or NULL */
	const char *cmdline;		/* its PROC record's (interned), or its comm's */
	uint64_t samples, on_ns, coll_cpu_ns, coll_wait_ns, rdv_wait_ns;
	struct rk_sample *s;
	size_t nr_s, alloc_s;
	struct rank_wait *w;		/* its main thread's waits in collectives and samples */
	size_t nr_w, alloc_w;
	struct cmap wait_in;		/* its main thread's collective frame -> wait ns */
	/* its steps (ranks.h): the span they cover, on its own clock */
	uint64_t win_lo, win_hi;
	size_t steps;
	int borrowed;			/* its own step ends were fewer than the job's */
	uint64_t win_wait_ns;
	struct cmap where, fam;		/* on-CPU ns inside the span */
	double wait_ps, busy_ps, step_ns;	/* per step */
};

struct rk_ctx {
	const struct report_opts *o;
	struct readings rd;
	struct rk_proc *p;
	size_t nr, alloc;
	uint64_t waits;			/* switch-outs read (none: not recorded) */
	const char *f_wait, *f_cpu, *f_rdv;
};

static struct rk_proc *proc_of(struct rk_ctx *c, uint32_t pid)
{
	size_t k = c->rd.cur;

	for (size_t i = c->nr; i-- > 0 && c->p[i].input == k;)
		if (c->p[i].pid == pid)
			return &c->p[i];
	ALLOC_GROW(c->p, c->nr + 1, c->alloc);
	memset(&c->p[c->nr], 0, sizeof(c->p[0]));
	c->p[c->nr].pid = pid;
	c->p[c->nr].input = k;
	c->p[c->nr].rank = -1;
	return &c->p[c->nr++];
}

static const char *where_of(const struct sample_attr *a)
{
	char buf[512];

	if (!a->pyline)
		return a->op;
	snprintf(buf, sizeof(buf), "%s -> %s", a->pyline, a->op ? a->op : "(no op)");
	return str_intern(buf, strlen(buf));
}

static int rk_sample(void *ctx, const struct attributed *as)
{
	struct rk_ctx *c = ctx;
	const struct dlp_sample *s = as->s;
	const struct sample_attr *a = as->a;
	struct rk_proc *p = proc_of(c, s->pid);

	if (attr_is_switch(s)) {
		c->waits++;
		if (a->family == c->f_rdv) {
			p->rdv_wait_ns += s->period;
		} else if (a->family == c->f_wait && s->tid == s->pid) {
			const char *f = attr_collective_frame(as->frames, as->nr);

			p->coll_wait_ns += s->period;
			ALLOC_GROW(p->w, p->nr_w + 1, p->alloc_w);
			p->w[p->nr_w++] = (struct rank_wait){ s->time, s->period, f, a->pychain, 1 };
			if (f)
				dlview_cmap_get(&p->wait_in, f, NULL)->n += s->period;
		}
		return 0;
	}
	p->samples++;
	p->on_ns += s->period;
	if (s->tid == s->pid && a->pychain) {
		ALLOC_GROW(p->w, p->nr_w + 1, p->alloc_w);
		p->w[p->nr_w++] = (struct rank_wait){ s->time, 0, NULL, a->pychain, 0 };
	}
	if (a->family == c->f_cpu)
		p->coll_cpu_ns += s->period;
	if (!p->cmdline && as->m) {
		const char *comm = machine_comm_at(as->m, s->pid, s->pid, s->time);

		if (comm)
			p->cmdline = str_intern(comm, strlen(comm));
	}
	ALLOC_GROW(p->s, p->nr_s + 1, p->alloc_s);
	p->s[p->nr_s++] = (struct rk_sample){ s->time, s->period, where_of(a), a->family };
	return 0;
}

/* The ranks and command lines of the recording's processes (its PROC records) */
static int rk_end(void *ctx, struct machine *m)
{
	struct rk_ctx *c = ctx;
	const struct proc_table *t = machine_procs(m);

	for (size_t i = 0; i < c->nr; i++) {
		struct rk_proc *p = &c->p[i];
		const struct proc_entry *e;

		if (p->input != c->rd.cur || !(e = proc_table_find(t, p->pid)))
			continue;
		if (e->rank)
			p->rank = atoi(e->rank);
		if (e->cmdline && *e->cmdline)
			p->cmdline = str_intern(e->cmdline, strlen(e->cmdline));
	}
	return 0;
}

static int rk_meta(void *ctx, const struct recmeta *m)
{
	struct rk_ctx *c = ctx;

	readings_meta(&c->rd, m);
	return 0;
}

static int read_one(void *ctx, struct readings *rd, size_t k, struct profile_stats *st,
		    struct session_info *info)
{
	struct rk_ctx *c = ctx;
	struct profile_opts po = c->o->po;
	struct attr_view v = { .sample = rk_sample, .meta = rk_meta, .end = rk_end, .ctx = c };

	po.wall = 2;	/* the waits too, each weighing its time off the CPU */
	po.off_cpu = 0;
	readings_opts(rd, &po);	/* a process in two recordings: counted in the first */
	return attr_stream_run(rd->in[k].file, &po, c->o->filt, c->o->rules, &v, st, info);
}

static int cmp_wait(const void *a, const void *b)
{
	const struct rank_wait *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The ends of the waits (sorted) in frame, those less than gap apart one, into v */
static size_t episode_ends(const struct rank_wait *w, size_t nr, const char *frame,
			   uint64_t gap, struct rank_end *v)
{
	uint64_t end = 0;
	size_t n = 0;

	for (size_t i = 0; i < nr; i++) {
		if (!w[i].wait || w[i].frame != frame)
			continue;
		if (n && w[i].time > end + gap)
			v[n - 1].time = end;
		if (!n || w[i].time > end + gap)
			v[n++].wait = 1;
		if (w[i].time + w[i].ns > end)
			end = w[i].time + w[i].ns;
	}
	if (n)
		v[n - 1].time = end;
	return n;
}

/* Whether chain (interned) is call or runs under it: call's frames, then more */
static int under_call(const char *chain, const char *call)
{
	size_t n;

	if (chain == call)
		return 1;
	n = strlen(call);
	return !strncmp(chain, call, n) && chain[n] == ';';
}

/* The Python calls that waited in frame (their chains, interned) into calls[0..max);
 * how many */
static size_t waiting_calls(const struct rank_wait *w, size_t nr, const char *frame,
			    const char **calls, size_t max)
{
	size_t n = 0, k;

	for (size_t i = 0; i < nr; i++) {
		if (!w[i].wait || w[i].frame != frame || !w[i].chain)
			continue;
		for (k = 0; k < n && calls[k] != w[i].chain; k++)
			;
		if (k == n && n < max)
			calls[n++] = w[i].chain;
	}
	return n;
}

/* The ends of the runs (ranks.h) of w (sorted): waits in frame and samples under one of
 * calls[0..nc), apart where a sample of other Python code comes between, into v */
static size_t call_ends(const struct rank_wait *w, size_t nr, const char *frame,
			const char **calls, size_t nc, struct rank_end *v)
{
	size_t n = 0;
	int apart = 1;

	for (size_t i = 0; i < nr; i++) {
		int in = 0;

		if (w[i].wait) {
			if (w[i].frame != frame)
				continue;
			in = 1;
		} else if (w[i].chain) {
			for (size_t k = 0; k < nc && !in; k++)
				in = under_call(w[i].chain, calls[k]);
		} else {
			continue;	/* no Python frames read: it tells nothing */
		}
		if (!in) {
			apart = 1;
			continue;
		}
		if (apart)
			v[n++] = (struct rank_end){ 0, 0 };
		apart = 0;
		if (w[i].wait) {
			uint64_t end = w[i].time + w[i].ns;

			if (!v[n - 1].wait || end > v[n - 1].time)
				v[n - 1].time = end;
			v[n - 1].wait = 1;
		} else if (!v[n - 1].wait) {
			v[n - 1].time = w[i].time;
		}
	}
	return n;
}

size_t ranks_step_ends(struct rank_wait *w, size_t nr, struct rank_end **ends)
{
	struct { const char *frame; size_t n; } seen[16];
	const char *calls[16];
	size_t nr_seen = 0, n, nc;
	const char *frame = NULL;
	struct rank_end *v = xcalloc(nr + 1, sizeof(*v));

	for (size_t i = 0; i < nr; i++) {
		size_t k;

		if (!w[i].wait)
			continue;
		for (k = 0; k < nr_seen && seen[k].frame != w[i].frame; k++)
			;
		if (k == nr_seen && nr_seen < ARRAY_SIZE(seen)) {
			seen[k].frame = w[i].frame;
			seen[k].n = 0;
			nr_seen++;
		}
		if (k < nr_seen)
			seen[k].n++;
	}
	for (size_t k = 0, most = 0; k < nr_seen; k++)
		if (seen[k].frame && seen[k].n > most) {
			most = seen[k].n;
			frame = seen[k].frame;
		}
	qsort(w, nr, sizeof(*w), cmp_wait);
	nc = frame ? waiting_calls(w, nr, frame, calls, ARRAY_SIZE(calls)) : 0;
	if (nc)
		n = call_ends(w, nr, frame, calls, nc, v);
	else
		n = episode_ends(w, nr, frame, RANKS_EPISODE_GAP_NS, v);
	*ends = v;
	return n;
}

/* The median of the intervals between consecutive ends v[0..n), 0 with fewer than 2 */
static uint64_t median_interval(const struct rank_end *v, size_t n)
{
	uint64_t *iv, m;

	if (n < 2)
		return 0;
	iv = xcalloc(n, sizeof(*iv));
	for (size_t i = 1; i < n; i++)
		iv[i - 1] = v[i].time - v[i - 1].time;
	qsort(iv, n - 1, sizeof(*iv), cmp_u64);
	m = iv[(n - 1) / 2];
	free(iv);
	return m;
}

struct job_end {
	struct rank_end e;
	size_t rank;
};

static int cmp_end(const void *a, const void *b)
{
	const struct job_end *x = a, *y = b;

	return x->e.time < y->e.time ? -1 : x->e.time > y->e.time;
}

size_t ranks_job_step_ends(struct rank_waits *r, size_t nr, uint64_t **ends)
{
	struct job_end *all = NULL;
	uint64_t *v, step = 0, first = 0;
	size_t n = 0, alloc = 0, out = 0, most = 0;
	unsigned char *in = xcalloc(nr + 1, 1);
	int by_wait = 0;

	for (size_t k = 0; k < nr; k++) {
		struct rank_end *e;
		uint64_t m;
		size_t c = ranks_step_ends(r[k].w, r[k].nr, &e);

		/* the step: the median interval of the rank with the most ends */
		m = median_interval(e, c);
		if (c > most || (c == most && m < step)) {
			most = c;
			step = m;
		}
		for (size_t i = 0; i < c; i++) {
			ALLOC_GROW(all, n + 1, alloc);
			all[n] = (struct job_end){ e[i], k };
			all[n++].e.time = (uint64_t)((int64_t)e[i].time + r[k].shift);
		}
		free(e);
	}
	if (!step)
		step = RANKS_EPISODE_GAP_NS;	/* no rank blocked twice: no step to go by */
	if (n)
		qsort(all, n, sizeof(*all), cmp_end);
	/* One end a rank a step: a rank's next end opens the next step.  Another rank's end
	 * joins the step of the first until most of a step has gone by: the ranks leave one
	 * all-reduce at once, but a rank woken while the CPUs are busy may run again most of
	 * a step later (ranks.h); the step ends at its earliest wait's end, else its
	 * earliest end. */
	v = xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		if (!out || in[all[i].rank] || all[i].e.time > first + step * 4 / 5) {
			memset(in, 0, nr);
			first = all[i].e.time;
			v[out++] = first;
			by_wait = all[i].e.wait;
		} else if (all[i].e.wait && !by_wait) {
			v[out - 1] = all[i].e.time;
			by_wait = 1;
		}
		in[all[i].rank] = 1;
	}
	free(all);
	free(in);
	*ends = v;
	return out;
}

/* Each rank's steps, on its clock: the job's (ranks_job_step_ends) where its recordings
 * are on one axis (one recording, or anchored ones), else its own */
static void find_steps(struct rk_ctx *c, struct rk_proc **rows, size_t n)
{
	struct rank_waits *rw = xcalloc(n + 1, sizeof(*rw));
	uint64_t *job = NULL;
	struct rank_end *ends;
	size_t nr_job = 0;
	int one_axis = 1, anchored;

	for (size_t i = 0; i < n; i++) {
		rw[i] = (struct rank_waits){ rows[i]->w, rows[i]->nr_w,
					     readings_shift(&c->rd, rows[i]->input, &anchored) };
		one_axis &= anchored || rows[i]->input == rows[0]->input;
	}
	if (one_axis)
		nr_job = ranks_job_step_ends(rw, n, &job);
	for (size_t i = 0; i < n; i++) {
		struct rk_proc *p = rows[i];
		size_t own = ranks_step_ends(p->w, p->nr_w, &ends);
		/* the job's, on this rank's clock, else its own */
		size_t m = one_axis ? nr_job : own;

		if (m >= 2 && one_axis) {
			p->win_lo = (uint64_t)((int64_t)job[0] - rw[i].shift);
			p->win_hi = (uint64_t)((int64_t)job[m - 1] - rw[i].shift);
		} else if (m >= 2) {
			p->win_lo = ends[0].time;
			p->win_hi = ends[m - 1].time;
		}
		if (m >= 2) {
			p->steps = m - 1;
			p->borrowed = own != m;
		}
		free(ends);
	}
	free(job);
	free(rw);
}

/* What falls in the span: the waits that end in it, the on-CPU samples */
static void count_span(struct rk_proc *p)
{
	for (size_t i = 0; i < p->nr_w; i++) {
		const struct rank_wait *w = &p->w[i];

		if (w->wait && w->time >= p->win_lo && w->time + w->ns <= p->win_hi)
			p->win_wait_ns += w->ns;
	}
	for (size_t i = 0; i < p->nr_s; i++) {
		const struct rk_sample *s = &p->s[i];

		if (s->time < p->win_lo || s->time >= p->win_hi)
			continue;
		if (s->where)
			dlview_cmap_get(&p->where, s->where, NULL)->n += s->ns;
		if (s->family)
			dlview_cmap_get(&p->fam, s->family, NULL)->n += s->ns;
	}
	if (p->steps) {
		p->step_ns = (double)(p->win_hi - p->win_lo) / p->steps;
		p->wait_ps = (double)p->win_wait_ns / p->steps;
		p->busy_ps = p->step_ns - p->wait_ps;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The ranks in order: rank, then recording, then pid */
static int cmp_proc(const void *a, const void *b)
{
	const struct rk_proc *x = *(const struct rk_proc * const *)a;
	const struct rk_proc *y = *(const struct rk_proc * const *)b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->input != y->input)
		return x->input < y->input ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* key's ns per step in p */
static double per_step(const struct cmap *m, const char *key, const struct rk_proc *p)
{
	const struct cnt *c = dlview_cmap_find(m, key, NULL);

	return c && p->steps ? (double)c->n / p->steps : 0;
}

static const struct cmap *row_map(const struct rk_proc *p, size_t off)
{
	return (const struct cmap *)((const char *)p + off);
}

/* What p spends per step on c (an entry of its map at off: where or fam) more than the
 * median of the others (rows[] but p, with steps); v: room for n values */
static double over_median(struct rk_proc **rows, size_t n, const struct rk_proc *p,
			  size_t off, const struct cnt *c, double *v)
{
	size_t nv = 0;

	for (size_t k = 0; k < n; k++)
		if (rows[k] != p && rows[k]->steps)
			v[nv++] = per_step(row_map(rows[k], off), c->k1, rows[k]);
	return (double)c->n / p->steps - median(v, nv);
}

/* Of p's keys in its map at off, the one it spends most time in per step more than the
 * median of the others, its excess in *ex; and (sum, when not NULL) the sum of its
 * excesses where it spends more */
static const char *most_over(struct rk_proc **rows, size_t n, const struct rk_proc *p,
			     size_t off, double *ex, double *sum)
{
	const struct cmap *m = row_map(p, off);
	const char *best = NULL;
	double *v = xcalloc(n + 1, sizeof(*v));

	*ex = 0;
	if (sum)
		*sum = 0;
	for (size_t i = 0; i < m->size; i++) {
		const char *key = m->tab[i].k1;
		double e;

		if (!key)
			continue;
		e = over_median(rows, n, p, off, &m->tab[i], v);
		if (sum && e > 0)
			*sum += e;
		if (e > *ex || (e == *ex && best && strcmp(key, best) < 0)) {
			*ex = e;
			best = key;
		}
	}
	free(v);
	return best;
}

struct straggler {
	const struct rk_proc *p;
	double extra, held, others_wait;
	const char *where, *wait_in;
	double where_ns;
};

/* The straggler among the rows with steps, if any (ranks.h) */
static int find_straggler(struct rk_proc **rows, size_t n, struct straggler *sg)
{
	struct rk_proc *s = NULL;
	double *v = xcalloc(n + 1, sizeof(*v)), *st = xcalloc(n + 1, sizeof(*st)), fam_ex;
	size_t nv = 0, with = 0;
	struct cmap in = { NULL, 0, 0 };
	struct cnt **sorted;

	memset(sg, 0, sizeof(*sg));
	for (size_t i = 0; i < n; i++)
		if (rows[i]->steps) {
			with++;
			if (!s || rows[i]->wait_ps < s->wait_ps)
				s = rows[i];
		}
	if (with < 2) {
		free(v);
		free(st);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (rows[i] != s && rows[i]->steps) {
			st[nv] = rows[i]->step_ns;
			v[nv++] = rows[i]->wait_ps;
		}
	sg->others_wait = median(v, nv);
	sg->held = sg->others_wait - s->wait_ps;
	{
		double step = median(st, nv);

		if (sg->held < RANKS_STRAGGLER_MIN_NS ||
		    sg->held < step * RANKS_STRAGGLER_PCT / 100 ||
		    s->wait_ps > sg->others_wait * RANKS_STRAGGLER_WAIT_FRAC) {
			free(v);
			free(st);
			return 0;
		}
	}
	/* what it runs more a step: the CPU time it spends per step in each family over
	 * the median of the others, summed where it is more.  Neither the others' wait
	 * (less what the extra work slows them down too: on 2 shared cores, 54 ms of wait
	 * for 60 ms of extra work) nor its whole CPU time over theirs (less what another
	 * rank does more, rank 0's page faults: 53.7 ms for 60.1 ms) is the work it does
	 * that they do not.  Where it is not CPU time (the straggler waits for I/O), the
	 * others' wait */
	most_over(rows, n, s, offsetof(struct rk_proc, fam), &fam_ex, &sg->extra);
	if (sg->extra < sg->held / 2)
		sg->extra = sg->held;
	free(v);
	free(st);
	sg->p = s;
	sg->where = most_over(rows, n, s, offsetof(struct rk_proc, where), &sg->where_ns, NULL);
	/* what the others wait in */
	for (size_t i = 0; i < n; i++)
		if (rows[i] != s)
			for (size_t k = 0; k < rows[i]->wait_in.size; k++)
				if (rows[i]->wait_in.tab[k].k1)
					dlview_cmap_get(&in, rows[i]->wait_in.tab[k].k1, NULL)->n +=
						rows[i]->wait_in.tab[k].n;
	if (dlview_cmap_sorted(&in, &sorted)) {
		sg->wait_in = sorted[0]->k1;
	}
	free(sorted);
	free(in.tab);
	return 1;
}

static void print_ms(FILE *out, double ns)
{
	char b[32];

	output_duration(b, sizeof(b), ns < 0 ? 0 : (uint64_t)(ns + 0.5));
	fputs(b, out);
}

/* "gemm +58.2 ms, python +1.2 ms": the families p spends more time in per step than the
 * median of the other ranks (1 ms at least), at most two; with j, as JSON objects */
static void families_over(struct rk_proc **rows, size_t n, struct rk_proc *p, FILE *out,
			  struct json *j)
{
	double *v = xcalloc(n + 1, sizeof(*v));
	struct { const char *f; double ex; } top[2] = { { NULL, 0 }, { NULL, 0 } };
	int said = 0;

	for (size_t i = 0; p->steps && i < p->fam.size; i++) {
		const char *f = p->fam.tab[i].k1;
		double ex;

		if (!f)
			continue;
		ex = over_median(rows, n, p, offsetof(struct rk_proc, fam), &p->fam.tab[i], v);
		if (ex < 1e6)
			continue;
		if (ex > top[0].ex) {
			top[1] = top[0];
			top[0].f = f;
			top[0].ex = ex;
		} else if (ex > top[1].ex) {
			top[1].f = f;
			top[1].ex = ex;
		}
	}
	free(v);
	for (int k = 0; k < 2 && top[k].f; k++) {
		if (j) {
			json_obj(j);
			json_kstr(j, "family", top[k].f);
			json_knum(j, "ns_per_step", "%.0f", top[k].ex);
			json_end(j);
		} else {
			fprintf(out, "%s%s +", k ? ", " : "", top[k].f);
			print_ms(out, top[k].ex);
		}
		said = 1;
	}
	if (!said && !j)
		fputc('-', out);
}

/* Nanoseconds: shown as a duration in text, ns as a number in JSON and CSV */
static void dur_cell(struct tabw *t, uint64_t shown, double ns)
{
	char text[32], val[32];

	output_duration(text, sizeof(text), shown);
	snprintf(val, sizeof(val), "%.0f", ns);
	tabw_cell(t, text, val);
}

/* The ranks' table for the three formats */
static struct tabw *rank_table(struct rk_ctx *c, struct rk_proc **rows, size_t n)
{
	struct tabw *t = tabw_new();
	unsigned jc = TABW_IN_JSON | TABW_IN_CSV;

	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "Rank", "rank", TABW_NUM, .width = 5 });
	tabw_add(t, &(struct tabw_colspec){ "Host", "host", TABW_TEXT, .width = 14, .cut = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Pid", "pid", TABW_NUM, .width = 8 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "input", TABW_TEXT, .in = jc });
	tabw_add(t, &(struct tabw_colspec){ NULL, "samples", TABW_NUM, .in = jc });
	tabw_add(t, &(struct tabw_colspec){ "On-CPU", "on_cpu_ns", TABW_NUM, .width = 9 });
	tabw_add(t, &(struct tabw_colspec){ "Coll.CPU", "collective_cpu_ns", TABW_NUM, .width = 9 });
	tabw_add(t, &(struct tabw_colspec){ "Coll.wait", "collective_wait_ns", TABW_NUM, .width = 9 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "rendezvous_wait_ns", TABW_NUM, .in = jc });
	tabw_add(t, &(struct tabw_colspec){ "Steps", "steps", TABW_NUM, .width = 6 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "steps_from", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ "Step", "step_ns", TABW_NUM, .width = 9, .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Wait/step", "wait_per_step_ns", TABW_NUM, .width = 9,
					    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Busy/step", "busy_per_step_ns", TABW_NUM, .width = 9,
					    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Over the median rank", "families_over_median", TABW_TEXT,
					    .in = TABW_IN_TEXT | TABW_IN_JSON, .gap = 2 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "cmdline", TABW_TEXT, .in = TABW_IN_JSON });
	for (size_t i = 0; i < n; i++) {
		struct rk_proc *p = rows[i];
		char text[32], val[32], *over, *list = NULL;
		size_t len = 0;
		FILE *f;
		struct json_mem m;
		struct json *j;

		tabw_row(t);
		if (p->rank >= 0) {
			snprintf(val, sizeof(val), "%d", p->rank);
			tabw_cell(t, val, val);
		} else {
			tabw_none(t);
		}
		tabw_cell_str(t, p->host ? p->host : "?", p->host);
		tabw_count(t, p->pid);
		tabw_str(t, c->rd.in[p->input].file);
		tabw_count(t, p->samples);
		dur_cell(t, p->on_ns, p->on_ns);
		dur_cell(t, p->coll_cpu_ns, p->coll_cpu_ns);
		dur_cell(t, p->coll_wait_ns, p->coll_wait_ns);
		tabw_count(t, p->rdv_wait_ns);
		snprintf(val, sizeof(val), "%zu", p->steps);
		if (p->steps)
			snprintf(text, sizeof(text), "%5zu%s", p->steps, p->borrowed ? "*" : " ");
		tabw_cell(t, p->steps ? text : "-", val);
		tabw_str(t, !p->steps ? "none" : p->borrowed ? "other-rank" : "waits");
		if (p->steps) {
			dur_cell(t, (uint64_t)p->step_ns, p->step_ns);
			dur_cell(t, (uint64_t)(p->wait_ps + 0.5), p->wait_ps);
			dur_cell(t, (uint64_t)(p->busy_ps > 0 ? p->busy_ps : 0), p->busy_ps);
		} else {
			tabw_none(t);
			tabw_none(t);
			tabw_none(t);
		}
		/* the families over the median: text, and a JSON list */
		f = open_memstream(&list, &len);
		if (!f)
			die("out of memory");
		if (p->steps)
			families_over(rows, n, p, f, NULL);
		else
			fputc('-', f);
		fclose(f);
		j = json_mem_open(&m, JSON_SPACED);
		json_arr(j);
		families_over(rows, n, p, NULL, j);
		json_end(j);
		over = json_mem_close(&m);
		tabw_cell(t, list, over);
		free(list);
		free(over);
		tabw_str(t, p->cmdline ? p->cmdline : "");
	}
	return t;
}

static void print_json(struct rk_ctx *c, struct rk_proc **rows, size_t n,
		       const struct straggler *sg, FILE *out)
{
	struct tabw *t = rank_table(c, rows, n);
	struct json j;

	json_init(&j, out, JSON_SPACED);
	json_obj(&j);
	json_kstr(&j, "kind", "rank");
	json_key(&j, "ranks");
	tabw_json_rows(t, "\n  ", "\n");
	tabw_json(t, &j);
	tabw_free(t);
	if (!sg->p) {
		json_knull(&j, "straggler");
	} else {
		json_kobj(&j, "straggler");
		json_ki64(&j, "rank", sg->p->rank);
		json_kstr(&j, "host", sg->p->host);
		json_ku64(&j, "pid", sg->p->pid);
		json_knum(&j, "extra_per_step_ns", "%.0f", sg->extra);
		json_knum(&j, "held_per_step_ns", "%.0f", sg->held);
		json_knum(&j, "others_wait_per_step_ns", "%.0f", sg->others_wait);
		json_kstr(&j, "where", sg->where);
		json_knum(&j, "where_per_step_ns", "%.0f", sg->where_ns);
		json_kstr(&j, "wait_in", sg->wait_in);
		json_end(&j);
	}
	json_end(&j);
	json_raw(&j, "\n");
}

static void print_table(struct rk_ctx *c, struct rk_proc **rows, size_t n,
			const struct straggler *sg, FILE *out, int findings)
{
	struct tabw *t = rank_table(c, rows, n);

	fputc('\n', out);
	tabw_print(t, out, OUT_TEXT);
	tabw_free(t);
	if (n && rows[0]->steps == 0)
		fputs("\nNo rank waited in a collective more than once: no steps found\n", out);
	for (size_t i = 0; i < n; i++)
		if (rows[i]->borrowed) {
			fputs("* the job's steps: the rank's own waits and calls did not end every one\n", out);
			break;
		}
	if (!findings || !sg->p)
		return;
	fputs("\nFindings:\n  * [straggler] ", out);
	fprintf(out, "rank %d%s%s is the straggler: each step it runs ", sg->p->rank,
		sg->p->host ? " on " : "", sg->p->host ? sg->p->host : "");
	print_ms(out, sg->extra);
	fputs(" more than the median rank", out);
	if (sg->where && sg->where_ns >= sg->extra * 0.3) {
		fputs(", ", out);
		print_ms(out, sg->where_ns);
		fprintf(out, " of it in %s", sg->where);
	}
	fputs("; the other ranks wait ", out);
	print_ms(out, sg->others_wait);
	fputs(" a step", out);
	if (sg->wait_in && !strncmp(sg->wait_in, "c10d::Reducer::", 15))
		fprintf(out, " in the gradient all-reduce (%s)", sg->wait_in);
	else if (sg->wait_in)
		fprintf(out, " in collectives (%s)", sg->wait_in);
	fputs("\n", out);
}

static void rk_release(struct rk_ctx *c)
{
	for (size_t i = 0; i < c->nr; i++) {
		free(c->p[i].s);
		free(c->p[i].w);
		free(c->p[i].wait_in.tab);
		free(c->p[i].where.tab);
		free(c->p[i].fam.tab);
	}
	free(c->p);
	readings_release(&c->rd);
}

int ranks_report(const struct report_opts *o)
{
	struct rk_ctx c;
	struct rk_proc **rows;
	struct straggler sg;
	struct report_header h;
	char sampling[128];
	size_t n = 0;
	int ret, ranked = 0;
	uint64_t total = 0;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.f_wait = str_intern("wait-collective", 15);
	c.f_cpu = str_intern("collective", 10);
	c.f_rdv = str_intern("wait-rendezvous", 15);
	ret = readings_run(&c.rd, o->inputs, o->nr_inputs, read_one, &c);
	if (ret == DLP_FAILED) {
		rk_release(&c);
		return ret;
	}
	/* the rows: the processes with a rank, else (no launcher said one) every process
	 * with 1% of the samples at least (one recorded twice has samples in the first
	 * recording only: readings_opts) */
	for (size_t i = 0; i < c.nr; i++) {
		struct rk_proc *p = &c.p[i];

		p->host = c.rd.in[p->input].host;
		total += p->samples;
		ranked |= p->rank >= 0;
	}
	rows = xcalloc(c.nr + 1, sizeof(*rows));
	for (size_t i = 0; i < c.nr; i++) {
		struct rk_proc *p = &c.p[i];

		if (ranked ? p->rank < 0 : p->samples * 100 < total)
			continue;
		rows[n++] = p;
	}
	find_steps(&c, rows, n);
	for (size_t i = 0; i < n; i++)
		count_span(rows[i]);
	qsort(rows, n, sizeof(*rows), cmp_proc);
	find_straggler(rows, n, &sg);

	if (o->format == OUT_JSON) {
		print_json(&c, rows, n, &sg, stdout);
	} else if (o->format == OUT_CSV) {
		struct tabw *t = rank_table(&c, rows, n);

		tabw_print(t, stdout, OUT_CSV);
		tabw_free(t);
	} else {
		readings_header(&c.rd, &h, 0, c.waits ? 1 : 0, sampling, sizeof(sampling));
		h.weight_total = 0;
		output_header(stdout, &h);
		if (!c.waits)
			fputs("\nNo switch-outs in the recording (record --off-cpu): the waits in "
			      "collectives and the steps are unknown\n", stdout);
		if (!ranked)
			fputs("\nNo process has a rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or "
			      "SLURM_PROCID in its environment): a row per process\n", stdout);
		print_table(&c, rows, n, &sg, stdout, !o->no_findings);
	}
	fflush(stdout);
	free(rows);
	rk_release(&c);
	return ret;
}
