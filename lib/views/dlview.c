/* dlview.c - the DL view's aggregation: each sample's attribution (attr.h), counted by
 * family, operator, primitive and thread; context-switch times per thread.  The tables
 * are in dlview-table.c, the findings in dlview-findings.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlview-priv.h"
#include "pygil.h"
#include "pyrec.h"
#include "family-rules.h"
#include "itt.h"
#include "recfile.h"
#include "rephash.h"
#include "util.h"

struct cnt *dlview_cmap_get(struct cmap *m, const char *k1, const char *k2)
{
	size_t i;

	if (m->nr * 2 >= m->size) {
		struct cmap nm = { NULL, 0, m->size ? m->size * 2 : 64 };

		nm.tab = xcalloc(nm.size, sizeof(*nm.tab));
		for (i = 0; i < m->size; i++)
			if (m->tab[i].k1) {
				struct cnt *c = dlview_cmap_get(&nm, m->tab[i].k1, m->tab[i].k2);

				c->n = m->tab[i].n;
				c->n2 = m->tab[i].n2;
			}
		free(m->tab);
		*m = nm;
	}
	i = (((uintptr_t)k1 >> 3) * 31 + ((uintptr_t)k2 >> 3)) * 0x9E3779B97F4A7C15ull >> 7;
	i &= m->size - 1;
	while (m->tab[i].k1 && (m->tab[i].k1 != k1 || m->tab[i].k2 != k2))
		i = (i + 1) & (m->size - 1);
	if (!m->tab[i].k1) {
		m->tab[i].k1 = k1;
		m->tab[i].k2 = k2;
		m->nr++;
	}
	return &m->tab[i];
}

struct cnt *dlview_cmap_find(const struct cmap *m, const char *k1, const char *k2)
{
	size_t i;

	if (!m->size)
		return NULL;
	i = (((uintptr_t)k1 >> 3) * 31 + ((uintptr_t)k2 >> 3)) * 0x9E3779B97F4A7C15ull >> 7;
	i &= m->size - 1;
	while (m->tab[i].k1 && (m->tab[i].k1 != k1 || m->tab[i].k2 != k2))
		i = (i + 1) & (m->size - 1);
	return m->tab[i].k1 ? &m->tab[i] : NULL;
}

/* Entries sorted by n descending (then name). */
static int cmp_cnt(const void *a, const void *b)
{
	const struct cnt *x = *(const struct cnt * const *)a, *y = *(const struct cnt * const *)b;

	int c;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	c = strcmp(x->k1, y->k1);
	if (c || x->k2 == y->k2)
		return c;
	/* equal counts under one key (a family's symbols): by the second name, so the
	 * order does not depend on the hash table's */
	return !x->k2 ? -1 : !y->k2 ? 1 : strcmp(x->k2, y->k2);
}

size_t dlview_cmap_sorted(const struct cmap *m, struct cnt ***out)
{
	struct cnt **v = xcalloc(m->nr + 1, sizeof(*v));
	size_t n = 0;

	for (size_t i = 0; i < m->size; i++)
		if (m->tab[i].k1)
			v[n++] = &m->tab[i];
	qsort(v, n, sizeof(*v), cmp_cnt);
	*out = v;
	return n;
}

static int dv_sample(void *ctx, const struct attributed *as);
static int dv_exit(void *ctx, uint32_t pid, uint32_t tid, uint64_t time);
static int dv_switch(void *ctx, struct machine *m, uint32_t pid, uint32_t tid, uint32_t cpu,
		     uint64_t time, int out, int preempt);
static int dv_other(void *ctx, uint32_t type, const void *data, size_t len);
static int dv_meta(void *ctx, const struct recmeta *m);
static int dv_other_sample(void *ctx, const struct dlp_sample *s);

/* The command lines and ranks of the processes, from the process model */
static int dv_end(void *ctx, struct machine *m)
{
	struct dlview *v = ctx;

	proc_table_copy(&v->procs, machine_procs(m));
	return v->also.end ? v->also.end(v->also.ctx, m) : 0;
}

struct dlview *dlview_new(const struct family_rules *rules, const struct attr_view *also)
{
	struct dlview *v = xcalloc(1, sizeof(*v));
	struct attr_view own = { .sample = dv_sample, .context_switch = dv_switch,
				 .thread_exit = dv_exit,
				 .other = dv_other, .meta = dv_meta, .end = dv_end, .ctx = v,
				 .want_ops = 1 };

	if (also) {
		v->also = *also;
		if (also->other_sample)
			own.other_sample = dv_other_sample;
	}
	v->rules = rules;
	v->as = attr_stream_new(rules, &own);
	v->attr = attr_stream_attr(v->as);
	v->f_spin = str_intern("omp-spin", 8);
	v->f_reorder = str_intern("jit-reorder", 11);
	v->f_fault = str_intern("kernel-fault", 12);
	v->f_gil = str_intern("wait-gil", 8);
	v->fp = fastpath_new();
	v->fp_prims = fastpath_new();
	v->itt_meta = -1;
	opcounts_init(&v->opc);
	u64map_init(&v->import_at);
	u64map_init(&v->exits);
	return v;
}

void dlview_free(struct dlview *v)
{
	if (!v)
		return;
	attr_stream_free(v->as);
	opcounts_release(&v->opc);
	u64map_release(&v->import_at);
	u64map_release(&v->exits);
	fastpath_free(v->fp);
	fastpath_free(v->fp_prims);
	free(v->prim_samp.tab);
	free(v->prim_op.tab);
	free(v->prim_line.tab);
	switches_release(&v->sw);
	free(v->itt_warn);
	free(v->free_threaded);
	free(v->fam.tab);
	free(v->famsym.tab);
	free(v->op_self.tab);
	free(v->op_wait.tab);
	free(v->op_total.tab);
	free(v->op_prim.tab);
	free(v->itt_samp.tab);
	free(v->py_chain.tab);
	free(v->py_chain_op.tab);
	free(v->py_chain_fam.tab);
	free(v->op_pyline.tab);
	free(v->py_path.tab);
	free(v->op_faults.tab);
	free(v->line_faults.tab);
	for (size_t i = 0; i < v->nr_threads; i++)
		free(v->threads[i].gil_at);
	free(v->threads);
	proc_table_release(&v->procs);
	free(v->proc_fam.tab);
	free(v);
}

struct fastpath *dlview_fastpath(struct dlview *v)
{
	return v->fp;
}

void dlview_set_stats(struct dlview *v, const struct profile_stats *st)
{
	if (st->sample_no_time)
		v->ns_per_sample = 0;	/* page-faults and the like: times show "-" */
	else if (st->sample_period_ns)
		v->ns_per_sample = st->sample_period_ns;
	else if (st->samples && st->last_time > st->first_time)
		v->ns_per_sample = (double)(st->last_time - st->first_time) / st->samples;
	snprintf(v->event, sizeof(v->event), "%s", st->event);
	v->clock = st->sample_is_time;
	if (st->last_time > st->first_time)
		v->duration_ns = st->last_time - st->first_time;
	v->end_ns = st->last_time;
}

static int dv_meta(void *ctx, const struct recmeta *m)
{
	struct dlview *v = ctx;
	const char *cpus = recmeta_get(m, "nr_cpus"), *itt = recmeta_get(m, "itt");

	if (v->also.meta && v->also.meta(v->also.ctx, m) < 0)
		return -1;
	if (cpus) {
		int n = atoi(cpus);

		if (n > 0 && n < 1 << 20)
			v->rec_cpus = n;
	}
	if (m->attach)
		v->attached = 1;
	if (recmeta_get(m, "system_wide") || recmeta_get(m, "cgroup_events"))
		v->cpu_wide = 1;
	if (itt)
		v->itt_meta = !strcmp(itt, "on");
	if (m->metrics)	/* record --metrics: where page-faults is in each sample's counts */
		v->fault_read = list_index(m->metrics, "page-faults");
	if (m->metrics_switch_outs)
		v->fault_switch_outs = 1;
	opcounts_meta(&v->opc, m);
	for (size_t i = 0; i < m->nr_warn && !v->itt_warn; i++)
		if (strstr(m->warn[i], "ITT collector"))
			v->itt_warn = xstrdup(m->warn[i]);
	fastpath_meta(v->fp, m);
	fastpath_meta(v->fp_prims, m);
	return 0;
}

static struct thread_stat *get_thread(struct dlview *v, uint32_t pid, uint32_t tid)
{
	size_t i = v->last_thread;	/* consecutive samples are often of one thread */

	if (i < v->nr_threads && v->threads[i].tid == tid && v->threads[i].pid == pid)
		return &v->threads[i];
	for (i = 0; i < v->nr_threads; i++)
		if (v->threads[i].tid == tid && v->threads[i].pid == pid)
			return &v->threads[v->last_thread = i];
	ALLOC_GROW(v->threads, v->nr_threads + 1, v->alloc_threads);
	memset(&v->threads[v->nr_threads], 0, sizeof(v->threads[0]));
	v->threads[v->nr_threads].pid = pid;
	v->threads[v->nr_threads].tid = tid;
	{
		char pb[16];

		snprintf(pb, sizeof(pb), "%u", pid);
		v->threads[v->nr_threads].pidkey = str_intern(pb, strlen(pb));
	}
	v->last_thread = v->nr_threads;
	return &v->threads[v->nr_threads++];
}

static int dv_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct dlview *v = ctx;

	return v->also.other ? v->also.other(v->also.ctx, type, data, len) : 0;
}

static int dv_other_sample(void *ctx, const struct dlp_sample *s)
{
	struct dlview *v = ctx;

	return v->also.other_sample(v->also.ctx, s);
}

static void count(struct dlview *v, const struct attributed *as);

void dlview_waits_apart(struct dlview *v, int pass_on)
{
	v->waits_apart = 1 + !!pass_on;
}

/* A switch-out: its thread's wait for the GIL */
static void count_wait(struct dlview *v, const struct attributed *as)
{
	struct thread_stat *t = get_thread(v, as->s->pid, as->s->tid);

	v->waits_seen = 1;
	if (as->a->op)
		dlview_cmap_get(&v->op_wait, as->a->op, NULL)->n += as->s->period;
	if (as->s->pyflags & DLP_PYSTACK_GIL) {
		/* it went off the CPU holding the GIL (blocked, or preempted: in take_gil
		 * too, once it has it): every other Python thread waits meanwhile, it does
		 * not wait for the GIL */
		t->held_off_ns += as->s->period;
		v->gil_known = 1;
	} else if (as->a->family == v->f_gil) {
		t->gil_ns += as->s->period;
		t->gil_waits++;
		ALLOC_GROW(t->gil_at, t->nr_gil_at + 1, t->alloc_gil_at);
		t->gil_at[t->nr_gil_at++] = as->s->time;
	}
}

/* A free-threaded interpreter in the stack of one of t's samples (once a thread) */
static void note_interpreter(struct dlview *v, struct thread_stat *t, const struct attributed *as)
{
	int ft;

	t->interp_seen = 1;
	for (size_t i = 0; i < as->nr; i++)
		if (as->frames[i].dso_path && !(as->frames[i].flags & FRAME_PYTHON) &&
		    pygil_interpreter(as->frames[i].dso_path, &ft)) {
			/* (a copy: a frame's strings live as long as its sample) */
			if (ft && !v->free_threaded)
				v->free_threaded = xstrdup(as->frames[i].dso_path);
			return;
		}
}

/* The view's count of a sample, then the reader's own (also) */
static int dv_sample(void *ctx, const struct attributed *as)
{
	struct dlview *v = ctx;

	if (v->fault_read && as->s->read && as->s->nr_read > (uint32_t)v->fault_read) {
		/* the page faults read with it (record --metrics), by operator */
		uint64_t f = as->s->read[v->fault_read];

		if (as->a->op)
			dlview_cmap_get(&v->op_faults, as->a->op, NULL)->n += f;
		if (as->a->pyline)
			dlview_cmap_get(&v->line_faults, as->a->pyline, NULL)->n += f;
		v->faults_read += f;
		if (attr_is_switch(as->s))
			v->fault_switch_seen = 1;
	}
	if (as->s->counts_only) {
		/* a counter's own sample: its counts (FP width by primitive; metview.h) */
		if (as->a->prim)
			fastpath_counts(v->fp_prims, as->s, as->a->prim_desc ?
					as->a->prim_desc->key : attr_prim_op(as->a->prim));
		fastpath_counts(v->fp, as->s, as->a->prim);
		return v->waits_apart == 2 && v->also.sample ? v->also.sample(v->also.ctx, as) : 0;
	}
	if (attr_is_switch(as->s)) {
		count_wait(v, as);
		if (v->waits_apart == 2 && v->also.sample)
			return v->also.sample(v->also.ctx, as);	/* (its counters: metview.h) */
		if (v->waits_apart)
			return 0;
	}
	if (as->nr)
		count(v, as);
	return v->also.sample ? v->also.sample(v->also.ctx, as) : 0;
}

/* An import's "called from" (or a library's an import loads): the line outside the
 * outermost _find_and_load of the chain (root first, ';' between frames), the import
 * statement that started it (the user's "import torch"), not importlib's innermost
 * frame; where there is none, line */
static const char *import_line(struct dlview *v, const char *chain, const char *line)
{
	void **slot = u64map_slot(&v->import_at, (uint64_t)(uintptr_t)chain);
	const char *at, *start;

	if (*slot)
		return *slot;
	*slot = (void *)line;
	for (at = strstr(chain, "_find_and_load (<frozen importlib._bootstrap"); at;
	     at = strstr(at + 1, "_find_and_load (<frozen importlib._bootstrap")) {
		const char *end = at;

		if (at == chain || at[-1] != ';')
			continue;	/* (no caller on the chain, or inside another name) */
		/* the caller; past importlib's own (importlib.import_module's _gcd_import) */
		while (end > chain) {
			for (start = end - 1; start > chain && start[-1] != ';'; start--)
				;
			if (!memmem(start, (size_t)(end - 1 - start), "(<frozen importlib", 18)) {
				*slot = (void *)str_intern(start, (size_t)(end - 1 - start));
				break;
			}
			end = start;
		}
		break;
	}
	return *slot;
}

/* The operator's share of a sample: self, self by primitive, and operator coverage; its
 * Python chain's. */
static void count_op(struct dlview *v, const struct sample_attr *a)
{
	if (a->pychain) {
		const char *line = a->pyline;

		/* (a library an import loads: its constructors too) */
		if (a->op && (!strcmp(a->op, "(import)") || !strcmp(a->op, "(library init)")))
			line = import_line(v, a->pychain, line);
		dlview_cmap_get(&v->py_chain, a->pychain, NULL)->n++;
		dlview_cmap_get(&v->py_chain_op, a->pychain, a->op)->n++;
		dlview_cmap_get(&v->py_chain_fam, a->pychain, a->family)->n++;
		dlview_cmap_get(&v->op_pyline, a->op, line)->n++;
	}
	dlview_cmap_get(&v->op_self, a->op, NULL)->n++;
	if (a->prim)
		dlview_cmap_get(&v->op_prim, a->op, a->prim)->n++;
	if (a->fw) {
		if (a->src != ATTR_NONE)
			v->op_samples_in_fw++;
		v->fw_by[a->src]++;
	}
}

static void count(struct dlview *v, const struct attributed *as)
{
	const struct dlp_sample *s = as->s;
	const struct frame *frames = as->frames;
	const struct sample_attr *a = as->a;
	struct machine *m = as->m;
	size_t nr = as->nr;
	const char *seen[32];
	size_t nseen = 0, i, j;
	struct thread_stat *t;

	v->samples++;
	dlview_cmap_get(&v->fam, a->family, NULL)->n++;
	dlview_cmap_get(&v->famsym, a->family, a->sym)->n++;
	if (a->prim) {
		const char *k = a->prim_desc ? a->prim_desc->key : attr_prim_op(a->prim);

		dlview_cmap_get(&v->itt_samp, a->prim, a->family)->n++;
		dlview_cmap_get(&v->prim_samp, k, NULL)->n++;
		dlview_cmap_get(&v->prim_op, k, a->op)->n++;
		if (a->pyline)
			dlview_cmap_get(&v->prim_line, k, a->pyline)->n++;
		fastpath_sample(v->fp_prims, m, s, frames, nr, a->sym, a->family, k);
	}
	fastpath_sample(v->fp, m, s, frames, nr, a->sym, a->family, a->prim);
	if (a->prim_desc)
		fastpath_prim_desc(v->fp, a->prim, a->prim_desc);
	if (a->fw)
		v->fw_samples++;
	count_op(v, a);
	seen[nseen++] = a->op;
	/* total: every distinct operator on the stack */
	for (i = 0; i < as->nr_ops && nseen < ARRAY_SIZE(seen); i++) {
		for (j = 0; j < nseen && seen[j] != as->ops[i]; j++)
			;
		if (j == nseen)
			seen[nseen++] = as->ops[i];
	}
	for (j = 0; j < nseen; j++)
		dlview_cmap_get(&v->op_total, seen[j], NULL)->n++;
	if (a->pychain)
		for (i = 0; i < nr; i++)
			if ((frames[i].flags & FRAME_PYTHON) && frames[i].dso_path)
				dlview_cmap_get(&v->py_path, frames[i].sym, frames[i].dso_path)->n++;	/* interned */
	t = get_thread(v, s->pid, s->tid);
	t->samples++;
	if (!attr_is_switch(s))
		t->clock_ns += s->period;	/* (ns where the event is a clock) */
	if (a->pychain) {
		t->py_samples++;
		if (!t->interp_seen)
			note_interpreter(v, t, as);
	}
	if (s->pyflags & DLP_PYSTACK_GIL) {
		t->held_samples++;
		v->gil_known = 1;
	}
	dlview_cmap_get(&v->proc_fam, t->pidkey, a->family)->n++;
	if (a->family == v->f_spin)
		t->spin++;
	if (m) {
		const char *c = machine_comm_at(m, s->pid, s->tid, s->time);

		if (c)
			t->comm = str_intern(c, strlen(c));
	}
	if (s->cpu < 256)
		v->cpus_seen[s->cpu / 64] |= 1ull << (s->cpu % 64);
}

static void thread_switches(struct dlview *v);

void dlview_resolve(struct dlview *v)
{
	if (v->resolved)
		return;
	v->resolved = 1;
	thread_switches(v);
}

/* Kept, and counted in time order (thread_switches): see switches.h. */
static int dv_switch(void *ctx, struct machine *m, uint32_t pid, uint32_t tid, uint32_t cpu,
		     uint64_t time, int out, int preempt)
{
	struct dlview *v = ctx;

	if (v->also.context_switch &&
	    v->also.context_switch(v->also.ctx, m, pid, tid, cpu, time, out, preempt) < 0)
		return -1;
	get_thread(v, pid, tid)->have_switch = 1;
	switches_add(&v->sw, pid, tid, time, out, preempt);
	(void)m;
	(void)cpu;
	return 0;
}

static int dv_exit(void *ctx, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct dlview *v = ctx;
	uint64_t was = (uintptr_t)u64map_get(&v->exits, tid);

	if (time > was)
		u64map_put(&v->exits, tid, (void *)(uintptr_t)time);
	(void)pid;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A GIL wait of t's at about time (its switch-out sample and the switch record are
 * written at the same switch, microseconds apart) */
#define GIL_AT_NS 100000
static int gil_wait_at(const struct thread_stat *t, uint64_t time)
{
	size_t lo = 0, hi = t->nr_gil_at;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->gil_at[mid] < time)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (lo < t->nr_gil_at && t->gil_at[lo] - time <= GIL_AT_NS) ||
	       (lo && time - t->gil_at[lo - 1] <= GIL_AT_NS);
}

/* Each thread's time on and off the CPU, voluntary and involuntary switches. */
static void thread_switches(struct dlview *v)
{
	struct thread_stat *t = NULL;

	switches_sort(&v->sw);
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i].nr_gil_at > 1)
			qsort(v->threads[i].gil_at, v->threads[i].nr_gil_at, 8, cmp_u64);
	for (size_t i = 0; i < v->sw.nr; i++) {
		const struct switch_ev *e = &v->sw.v[i];

		if (!t || t->pid != e->pid || t->tid != e->tid)
			t = get_thread(v, e->pid, e->tid);
		if (e->out) {
			if (t->last_in && e->time > t->last_in)
				t->on_ns += e->time - t->last_in;
			t->last_in = 0;
			t->last_out = e->time;
			t->out_preempted = e->preempt;
			if (e->preempt)
				t->invol++;
			else
				t->vol++;
			if (e->preempt && t->nr_gil_at && gil_wait_at(t, e->time))
				t->gil_preempted++;
		} else {
			if (t->last_out && e->time > t->last_out) {
				t->off_ns += e->time - t->last_out;
				if (t->out_preempted)
					t->preempt_ns += e->time - t->last_out;
			}
			t->last_out = 0;
			t->last_in = e->time;
		}
	}
	/* A thread's last stretch on the CPU has no switch-out: it ran until its exit, or
	 * the end of the recording.  Left out, it was taken from its time off the CPU
	 * (dlview_on_off: the clock's time past the switches' is the thread's on the CPU):
	 * t8008's zlib thread, alone on the CPU for 72-431 ms once the others were done,
	 * had that much less off the CPU than its own wall - CPU time. */
	for (size_t i = 0; i < v->nr_threads; i++) {
		struct thread_stat *th = &v->threads[i];
		uint64_t end = (uintptr_t)u64map_get(&v->exits, th->tid);

		if (!th->last_in)
			continue;
		if (end < th->last_in)
			end = v->end_ns;
		if (end > th->last_in)
			th->on_ns += end - th->last_in;
		th->last_in = 0;
	}
}

void dlview_consumer(struct dlview *v, struct profile_consumer *c)
{
	attr_stream_consumer(v->as, c);
}

int dlview_run(struct dlview *v, const char *path, struct profile_opts *po,
	       struct sample_filter *filt, struct profile_stats *st, struct session_info *info)
{
	return attr_stream_run_filtered(v->as, path, po, filt, st, info);
}

void dlview_each(struct dlview *v, enum dlview_kind kind,
		 void (*fn)(void *ctx, const char *key, uint64_t samples), void *ctx)
{
	const struct cmap *m = kind == DLVIEW_OP ? &v->op_self : &v->fam;

	dlview_resolve(v);
	for (size_t i = 0; i < m->size; i++)
		if (m->tab[i].k1 && m->tab[i].n)
			fn(ctx, kind == DLVIEW_OP ? attr_op_name(m->tab[i].k1, NULL) : m->tab[i].k1,
			   m->tab[i].n);
}
