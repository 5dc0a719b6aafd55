/* dlview.c - aggregate samples by family / operator / thread and print the DL tables. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlview.h"
#include "family-rules.h"
#include "fastpath.h"
#include "isa.h"
#include "itt.h"
#include "output.h"
#include "recfile.h"
#include "util.h"

/* A counter keyed by up to two interned strings (pointer identity). */
struct cnt {
	const char *k1, *k2;
	uint64_t n, n2;
};

struct cmap {
	struct cnt *tab;
	size_t nr, size;
};

static struct cnt *cmap_get(struct cmap *m, const char *k1, const char *k2)
{
	size_t i;

	if (m->nr * 2 >= m->size) {
		struct cmap nm = { NULL, 0, m->size ? m->size * 2 : 64 };

		nm.tab = xcalloc(nm.size, sizeof(*nm.tab));
		for (i = 0; i < m->size; i++)
			if (m->tab[i].k1) {
				struct cnt *c = cmap_get(&nm, m->tab[i].k1, m->tab[i].k2);

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

/* Entries sorted by n descending (then name). */
static int cmp_cnt(const void *a, const void *b)
{
	const struct cnt *x = *(const struct cnt * const *)a, *y = *(const struct cnt * const *)b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->k1, y->k1);
}

static size_t cmap_sorted(const struct cmap *m, struct cnt ***out)
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

struct thread_stat {
	uint32_t pid, tid;
	const char *comm;
	uint64_t samples, spin;
	uint64_t on_ns, off_ns;
	uint64_t vol, invol;
	uint64_t last_in, last_out;
	uint64_t preempt_ns;	/* off-CPU after an involuntary switch: runnable, waiting */
	int have_switch, out_preempted;
};

/* A sample whose op comes from another thread (see resolve_workers()). */
struct op_mark {
	uint64_t time;
	uint32_t pid, tid;
	const char *op;		/* interned; the worker's pending entry: NULL */
	int fw;			/* counts towards operator coverage */
};

struct dlview {
	const struct family_rules *rules;
	struct itt_data *itt;
	int itt_ready;
	uint64_t samples;
	struct cmap fam;	/* family -> samples */
	struct cmap famsym;	/* (family, sym) -> samples */
	struct cmap op_self;	/* op -> samples */
	struct cmap op_total;	/* op -> samples with op anywhere in the stack */
	struct cmap itt_samp;	/* (ITT task name, family) -> samples taken inside such a task */
	struct thread_stat *threads;
	size_t nr_threads, alloc_threads;
	uint64_t cpus_seen[4];	/* bitmap of sample CPUs (first 256) */
	uint64_t op_samples_in_fw;	/* samples in aten/dnnl/jit/gemm code ... */
	uint64_t fw_samples;		/* ... and how many of them got an op */
	uint64_t fw_by_stack, fw_by_itt, fw_by_master, fw_by_phase;	/* ... and how */
	/* operator of OpenMP workers: ops seen on stacks, workers waiting for one */
	struct op_mark *marks, *pending;
	size_t nr_marks, alloc_marks, nr_pending, alloc_pending;
	int resolved;
	int rec_cpus;		/* nr_cpus of the recorded machine (META), 0 unknown */
	int attached;		/* record -p: the processes ran without the ITT collector */
	char *itt_warn;		/* record's warning on why there are no ITT tasks */
	int itt_meta;		/* META itt: 1 on, 0 off (--no-itt), -1 not said (perf.data) */
	struct fastpath *fp;	/* is the fast path running: kernels per primitive, ISA facts */
	double ns_per_sample;
	uint64_t duration_ns;
	char event[64];
	const char *ph_init, *ph_exit;
	const char *no_op, *f_spin, *f_reorder, *f_fault, *f_other;
};

struct dlview *dlview_new(const struct family_rules *rules)
{
	struct dlview *v = xcalloc(1, sizeof(*v));

	v->rules = rules;
	v->no_op = family_intern("(no op)", 7);
	v->ph_init = family_intern("(library init)", 14);
	v->ph_exit = family_intern("(exit)", 6);
	v->f_spin = family_intern("omp-spin", 8);
	v->f_reorder = family_intern("jit-reorder", 11);
	v->f_fault = family_intern("kernel-fault", 12);
	v->f_other = family_intern("other", 5);
	v->fp = fastpath_new();
	v->itt_meta = -1;
	return v;
}

void dlview_free(struct dlview *v)
{
	if (!v)
		return;
	itt_data_free(v->itt);
	fastpath_free(v->fp);
	free(v->itt_warn);
	free(v->fam.tab);
	free(v->famsym.tab);
	free(v->op_self.tab);
	free(v->op_total.tab);
	free(v->itt_samp.tab);
	free(v->threads);
	free(v->marks);
	free(v->pending);
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
	if (st->last_time > st->first_time)
		v->duration_ns = st->last_time - st->first_time;
}

int dlview_meta(struct dlview *v, const char *key, const char *value)
{
	if (!strcmp(key, "nr_cpus")) {
		int n = atoi(value);

		if (n > 0 && n < 1 << 20)
			v->rec_cpus = n;
	} else if (!strcmp(key, "attach")) {
		v->attached = 1;
	} else if (!strcmp(key, "itt")) {
		v->itt_meta = !strcmp(value, "on");
	} else if (!strncmp(key, "warn.", 5) && !v->itt_warn && strstr(value, "ITT collector")) {
		v->itt_warn = xstrdup(value);
	}
	fastpath_meta(v->fp, key, value);
	return 0;
}

static struct thread_stat *get_thread(struct dlview *v, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i].tid == tid && v->threads[i].pid == pid)
			return &v->threads[i];
	ALLOC_GROW(v->threads, v->nr_threads + 1, v->alloc_threads);
	memset(&v->threads[v->nr_threads], 0, sizeof(v->threads[0]));
	v->threads[v->nr_threads].pid = pid;
	v->threads[v->nr_threads].tid = tid;
	return &v->threads[v->nr_threads++];
}

int dlview_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct dlview *v = ctx;
	const char *p = data;
	size_t off;

	if (type != DLP_REC_ITT)
		return 0;
	/* payload: the collector's file, possibly behind a small header */
	for (off = 0; off + 8 <= len && off <= 64; off += 8)
		if (!memcmp(p + off, ITT_MAGIC, 8))
			break;
	if (off + 8 > len || off > 64) {
		warning("ITT record without the collector's magic: ignored");
		return 0;
	}
	if (!v->itt)
		v->itt = itt_data_new();
	if (itt_data_add(v->itt, p + off, len - off))
		warning("ITT record ignored: %s", itt_data_error(v->itt));
	v->itt_ready = 0;
	return 0;
}

static int is_fw_code(const struct frame *f)
{
	const char *d = f->dso ? f->dso : "";

	return (f->flags & (FRAME_JIT | FRAME_ANON)) || !strncmp(d, "libtorch", 8) ||
	       !strncmp(d, "libdnnl", 7) || !strncmp(d, "libc10", 6);
}

enum op_source { OP_NONE, OP_STACK, OP_ITT, OP_PHASE };

/* Outside any operator, the phase of the process when its stack shows one: loading a
 * library (static constructors: torch registers its operators and kernels there, and
 * the Python extension's module init), or exiting (destructors deregister them). */
static const char *phase_from_stack(struct dlview *v, const struct frame *frames, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		const char *s = frames[i].sym;

		if (!s)
			continue;
		if (!strcmp(s, "_dl_init") || !strcmp(s, "call_init") ||
		    !strcmp(s, "dl_open_worker") || !strcmp(s, "initModule") ||
		    !strncmp(s, "PyInit_", 7))
			return v->ph_init;
		if (!strcmp(s, "__run_exit_handlers") || !strcmp(s, "_dl_fini"))
			return v->ph_exit;
	}
	return NULL;
}

static enum op_source classify(struct dlview *v, const struct dlp_sample *s,
			       const struct frame *frames, size_t nr, const char **family,
			       const char **op)
{
	const char *o, *f = family_classify(v->rules, frames, nr, NULL);
	enum op_source src = OP_STACK;

	*family = family_intern(f, strlen(f));
	o = op_from_stack(frames, nr);
	if (!o && v->itt) {
		const struct itt_interval *iv;

		if (!v->itt_ready) {
			itt_data_finish(v->itt);
			v->itt_ready = 1;
		}
		iv = itt_lookup(v->itt, s->pid, s->tid, s->time);
		if (iv) {
			char buf[128];
			int n = snprintf(buf, sizeof(buf), "dnnl:%s", iv->name);

			o = family_intern(buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
			src = OP_ITT;
		}
	}
	if (!o && (o = phase_from_stack(v, frames, nr)))
		src = OP_PHASE;
	*op = o ? o : v->no_op;
	return o ? src : OP_NONE;
}

/* A thread an OpenMP runtime started: its stack holds a libgomp/libiomp5/libomp frame
 * and no operator frame (the operator's frames are on the team master's stack). */
static int omp_worker_stack(const struct dlp_sample *s, const struct frame *frames, size_t nr)
{
	if (s->tid == s->pid)
		return 0;
	for (size_t i = 0; i < nr; i++) {
		const char *d = frames[i].dso;

		if (d && (!strncmp(d, "libgomp", 7) || !strncmp(d, "libiomp", 7) ||
			  !strncmp(d, "libomp", 6)))
			return 1;
	}
	return 0;
}

int dlview_stack(void *ctx, struct machine *m, const struct dlp_sample *s,
		 const struct frame *frames, size_t nr, int complete)
{
	return dlview_add(ctx, m, s, frames, nr, NULL);
}

int dlview_add(struct dlview *v, struct machine *m, const struct dlp_sample *s,
	       const struct frame *frames, size_t nr, const char **family)
{
	struct dl_attr a;
	int ret = dlview_attribute(v, m, s, frames, nr, &a);

	if (family)
		*family = a.family;
	return ret;
}

static void resolve_workers(struct dlview *v);

const char *dlview_deferred_op(struct dlview *v, uint32_t deferred)
{
	resolve_workers(v);
	if (!deferred || deferred > v->nr_pending)
		return v->no_op;
	return v->pending[deferred - 1].op;
}

int dlview_attribute(struct dlview *v, struct machine *m, const struct dlp_sample *s,
		     const struct frame *frames, size_t nr, struct dl_attr *a)
{
	const char *fam, *op, *sym, *seen[32], *prim = NULL;
	size_t nseen = 0, i, j;
	struct thread_stat *t;
	enum op_source src;
	int fw = is_fw_code(&frames[0]), defer = 0;

	memset(a, 0, sizeof(*a));
	a->family = v->f_other;
	a->op = v->no_op;
	if (!nr)
		return 0;
	src = classify(v, s, frames, nr, &fam, &op);
	a->family = fam;
	a->op = op;
	v->samples++;
	cmap_get(&v->fam, fam, NULL)->n++;
	sym = family_intern(frames[0].sym, strlen(frames[0].sym));
	cmap_get(&v->famsym, fam, sym)->n++;
	if (v->itt) {
		/* classify() finished the ITT data */
		const struct itt_interval *iv = itt_lookup(v->itt, s->pid, s->tid, s->time);

		if (iv)
			cmap_get(&v->itt_samp, iv->name, fam)->n++;
		prim = iv ? iv->name : NULL;
	}
	fastpath_sample(v->fp, m, s, frames, nr, sym, fam, prim);
	if (src == OP_STACK) {
		ALLOC_GROW(v->marks, v->nr_marks + 1, v->alloc_marks);
		v->marks[v->nr_marks++] = (struct op_mark){ s->time, s->pid, s->tid, op, 0 };
	} else if (src == OP_NONE && omp_worker_stack(s, frames, nr)) {
		/* the op comes from the team master later (resolve_workers) */
		ALLOC_GROW(v->pending, v->nr_pending + 1, v->alloc_pending);
		v->pending[v->nr_pending++] = (struct op_mark){ s->time, s->pid, s->tid, NULL, fw };
		defer = 1;
		a->op = NULL;
		a->deferred = (uint32_t)v->nr_pending;
	}
	if (!defer)
		cmap_get(&v->op_self, op, NULL)->n++;
	/* total: every distinct operator on the stack */
	if (!defer)
		seen[nseen++] = op;
	for (i = 0; i < nr && nseen < ARRAY_SIZE(seen); i++) {
		const char *o;

		if (!frames[i].sym || !strstr(frames[i].sym, "at::_ops::"))
			continue;
		o = op_from_stack(&frames[i], 1);
		if (!o)
			continue;
		for (j = 0; j < nseen; j++)
			if (seen[j] == o)
				break;
		if (j == nseen)
			seen[nseen++] = o;
	}
	for (j = 0; j < nseen; j++)
		cmap_get(&v->op_total, seen[j], NULL)->n++;
	if (fw) {
		v->fw_samples++;
		if (src != OP_NONE)
			v->op_samples_in_fw++;
		if (src == OP_STACK)
			v->fw_by_stack++;
		else if (src == OP_ITT)
			v->fw_by_itt++;
		else if (src == OP_PHASE)
			v->fw_by_phase++;
	}
	t = get_thread(v, s->pid, s->tid);
	t->samples++;
	if (fam == v->f_spin)
		t->spin++;
	if (m) {
		const char *c = machine_comm_at(m, s->pid, s->tid, s->time);

		if (c)
			t->comm = family_intern(c, strlen(c));
	}
	if (s->cpu < 256)
		v->cpus_seen[s->cpu / 64] |= 1ull << (s->cpu % 64);
	return 0;
}

int dlview_context_switch(void *ctx, struct machine *m, uint32_t pid, uint32_t tid,
			  uint32_t cpu, uint64_t time, int out, int preempt)
{
	struct dlview *v = ctx;
	struct thread_stat *t = get_thread(v, pid, tid);

	t->have_switch = 1;
	if (out) {
		if (t->last_in && time > t->last_in)
			t->on_ns += time - t->last_in;
		t->last_in = 0;
		t->last_out = time;
		t->out_preempted = preempt;
		if (preempt)
			t->invol++;
		else
			t->vol++;
	} else {
		if (t->last_out && time > t->last_out) {
			t->off_ns += time - t->last_out;
			if (t->out_preempted)
				t->preempt_ns += time - t->last_out;
		}
		t->last_out = 0;
		t->last_in = time;
	}
	(void)m;
	(void)cpu;
	return 0;
}

static int dlview_meta_cb(void *ctx, const char *key, const char *value)
{
	return dlview_meta(ctx, key, value);
}

void dlview_consumer(struct dlview *v, struct profile_consumer *c)
{
	c->stack = dlview_stack;
	c->context_switch = dlview_context_switch;
	c->other = dlview_other;
	c->meta = dlview_meta_cb;
	c->ctx = v;
}

/* ---- operators of OpenMP worker threads ----
 * A worker of an OpenMP team runs the body of a parallel region that an operator opened
 * on the team's master thread; its own stack starts at start_thread -> libgomp and holds
 * no operator frame.  While the region runs, the master executes the same operator (it
 * takes a share of the iterations, then waits at the closing barrier inside the
 * operator's frames), so the master's samples around the worker's sample time name it.
 * Method: collect every sample whose op came from its own stack (time, thread, op); for a
 * worker sample without op take the op of the nearest such sample of another thread of
 * the same process within DLVIEW_MASTER_WINDOW_NS (10 ms: on a busy 2-core machine the
 * master is often descheduled for a few ms while its worker runs; 4 ms left 4% of the
 * worker samples of the CNN run without op, 10 ms none).  Samples with an ITT task (oneDNN
 * primitives, exact per thread) keep it.  Nothing is found when the master ran outside
 * any operator (e.g. workers spinning after the region while Python runs): "(no op)". */
#define DLVIEW_MASTER_WINDOW_NS 10000000ull

static int cmp_mark(const void *a, const void *b)
{
	const struct op_mark *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static const char *master_op(struct dlview *v, const struct op_mark *w)
{
	size_t lo = 0, hi = v->nr_marks, best = SIZE_MAX, i;
	uint64_t bd = UINT64_MAX;

	/* first mark >= (pid, time) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct op_mark *m = &v->marks[mid];

		if (m->pid < w->pid || (m->pid == w->pid && m->time < w->time))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < v->nr_marks && v->marks[i].pid == w->pid; i++) {
		uint64_t d = v->marks[i].time - w->time;

		if (d > DLVIEW_MASTER_WINDOW_NS || d >= bd)
			break;
		if (v->marks[i].tid != w->tid) {
			best = i;
			bd = d;
			break;
		}
	}
	for (i = lo; i-- > 0 && v->marks[i].pid == w->pid;) {
		uint64_t d = w->time - v->marks[i].time;

		if (d > DLVIEW_MASTER_WINDOW_NS || d >= bd)
			break;
		if (v->marks[i].tid != w->tid) {
			best = i;
			bd = d;
			break;
		}
	}
	return best == SIZE_MAX ? NULL : v->marks[best].op;
}

static void resolve_workers(struct dlview *v)
{
	if (v->resolved)
		return;
	v->resolved = 1;
	if (v->nr_marks)	/* no ITT/op marks: NULL */
		qsort(v->marks, v->nr_marks, sizeof(*v->marks), cmp_mark);
	for (size_t i = 0; i < v->nr_pending; i++) {
		struct op_mark *w = &v->pending[i];
		const char *op = master_op(v, w);

		if (!op)
			op = v->no_op;
		else if (w->fw) {
			v->op_samples_in_fw++;
			v->fw_by_master++;
		}
		w->op = op;	/* dlview_deferred_op() */
		cmap_get(&v->op_self, op, NULL)->n++;
		cmap_get(&v->op_total, op, NULL)->n++;
	}
}

/* ---- printing ---- */
/* Durations read like the symbol table's: "318.3 ms", "4.62 s". */
static const char *fmt_ns(char *buf, size_t sz, double ns)
{
	if (ns <= 0)
		snprintf(buf, sz, "-");	/* the event measures no time */
	else if (ns < 1e3)
		snprintf(buf, sz, "%.0f ns", ns);
	else
		fmt_duration(buf, sz, (uint64_t)(ns + 0.5));
	return buf;
}

static void csv_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; s && *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static const char *trunc_name(char *buf, size_t width, const char *s)
{
	size_t len = strlen(s);

	if (len <= width)
		return s;
	snprintf(buf, width + 1, "%.*s...", (int)(width - 3), s);
	return buf;
}

/* Print s in exactly width columns: cut in the middle with '…' when longer (an
 * operator's name keeps its namespace and its ending), padded with blanks (right-aligned
 * when right).  Names are ASCII; '…' and '—' are one column. */
static void put_cell(FILE *out, const char *s, size_t width, int right)
{
	size_t len = strlen(s), cols = 0;

	for (const char *p = s; *p; p++)
		cols += ((unsigned char)*p & 0xc0) != 0x80;
	if (cols > width && width > 2 && cols == len) {
		size_t head = (width - 1) / 2 + (width - 1) % 2, tail = width - 1 - head;

		fprintf(out, "%.*s\u2026%s", (int)head, s, s + len - tail);
		return;
	}
	if (right)
		for (size_t i = cols; i < width; i++)
			fputc(' ', out);
	fputs(s, out);
	if (!right)
		for (size_t i = cols; i < width; i++)
			fputc(' ', out);
}

static double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * n / total : 0.0;
}

static const char *top_symbol(struct dlview *v, const char *fam, uint64_t *n)
{
	const char *best = NULL;
	uint64_t bn = 0;

	for (size_t i = 0; i < v->famsym.size; i++) {
		struct cnt *c = &v->famsym.tab[i];

		if (c->k1 == fam && (c->n > bn || (c->n == bn && best && strcmp(c->k2, best) < 0))) {
			best = c->k2;
			bn = c->n;
		}
	}
	if (n)
		*n = bn;
	return best ? best : "";
}

static void print_family(struct dlview *v, FILE *out, enum dlview_format fmt, size_t limit)
{
	struct cnt **rows;
	size_t n = cmap_sorted(&v->fam, &rows), i;
	char tb[32], nb[64];

	if (limit && n > limit)
		n = limit;
	if (fmt == DLVIEW_JSON) {
		fprintf(out, "{\"kind\": \"family\", \"samples\": %llu, \"rows\": [",
			(unsigned long long)v->samples);
		for (i = 0; i < n; i++) {
			fprintf(out, "%s\n  {\"family\": ", i ? "," : "");
			fput_json_str(out, rows[i]->k1);
			fprintf(out, ", \"self_pct\": %.2f, \"samples\": %llu, \"time_ns\": %.0f, \"top_symbol\": ",
				pct(rows[i]->n, v->samples), (unsigned long long)rows[i]->n,
				rows[i]->n * v->ns_per_sample);
			fput_json_str(out, top_symbol(v, rows[i]->k1, NULL));
			fprintf(out, "}");
		}
		fprintf(out, "\n]}\n");
	} else if (fmt == DLVIEW_CSV) {
		fprintf(out, "family,self_pct,samples,time_ns,top_symbol\n");
		for (i = 0; i < n; i++) {
			csv_str(out, rows[i]->k1);
			fprintf(out, ",%.2f,%llu,%.0f,", pct(rows[i]->n, v->samples),
				(unsigned long long)rows[i]->n, rows[i]->n * v->ns_per_sample);
			csv_str(out, top_symbol(v, rows[i]->k1, NULL));
			fputc('\n', out);
		}
	} else {
		fprintf(out, "%-15s %7s %9s %11s  %s\n", "Family", "Self %", "Samples", "Est. time",
			"Top symbol");
		for (i = 0; i < n; i++)
			fprintf(out, "%-15s %6.2f%% %9llu %11s  %s\n", rows[i]->k1,
				pct(rows[i]->n, v->samples), (unsigned long long)rows[i]->n,
				fmt_ns(tb, sizeof(tb), rows[i]->n * v->ns_per_sample),
				trunc_name(nb, 60, top_symbol(v, rows[i]->k1, NULL)));
	}
	free(rows);
}

static void op_calls(struct dlview *v, const char *op, uint64_t *calls, uint64_t *total)
{
	const char *name;
	uint64_t c, t;

	*calls = *total = 0;
	if (!v->itt || strncmp(op, "dnnl:", 5))
		return;
	for (size_t i = 0; (name = itt_name_stats(v->itt, i, &c, &t)); i++)
		if (!strcmp(name, op + 5)) {
			*calls = c;
			*total = t;
		}
}

/* Beneath a primitive's row: the JIT kernels that ran inside it (name, ISA, share of the
 * primitive's samples), then its samples in libdnnl's own code, elsewhere, waiting in
 * OpenMP and in the kernel; "no JIT kernel" when none ran. */
static void print_prim_parts(struct dlview *v, FILE *out, const char *name)
{
	const struct fp_prim *p = fastpath_prim(v->fp, name);
	static const char *const part_names[FP_NR] = {
		NULL, "(libdnnl code, not JIT)", "(other code)", "(OpenMP wait)", "(kernel)",
	};
	size_t k;

	if (!p)
		return;
	for (k = 0; k < p->nr_kernels && k < 4; k++) {
		const struct fp_kernel *kn = &p->kernels[k];

		if (kn->samples * 200 < p->samples)	/* under 0.5%: left out */
			break;
		fputs("  ", out);
		put_cell(out, kn->name, 36, 0);
		fputc(' ', out);
		put_cell(out, kn->desc, 18, 0);
		fprintf(out, " %6.1f%%\n", pct(kn->samples, p->samples));
	}
	if (k < p->nr_kernels) {
		uint64_t rest = 0;

		for (; k < p->nr_kernels; k++)
			rest += p->kernels[k].samples;
		fprintf(out, "  %-36s %-18s %6.1f%%\n", "(other JIT kernels)", "",
			pct(rest, p->samples));
	}
	for (int i = FP_LIB; i < FP_NR; i++) {
		if (!p->part[i] || p->part[i] * 200 < p->samples)
			continue;
		fprintf(out, "  %-36s %-18s %6.1f%%%s\n", part_names[i], "",
			pct(p->part[i], p->samples),
			i == FP_LIB && !p->part[FP_JIT] ? "  no JIT kernel ran" : "");
	}
}

static void json_prim_parts(struct dlview *v, FILE *out, const char *name)
{
	const struct fp_prim *p = fastpath_prim(v->fp, name);

	if (!p)
		return;
	fprintf(out, ", \"jit_samples\": %llu, \"non_jit_samples\": %llu, \"other_samples\": %llu, "
		"\"wait_samples\": %llu, \"kernel_samples\": %llu, \"kernels\": [",
		(unsigned long long)p->part[FP_JIT], (unsigned long long)p->part[FP_LIB],
		(unsigned long long)p->part[FP_OTHER], (unsigned long long)p->part[FP_WAIT],
		(unsigned long long)p->part[FP_KERNEL]);
	for (size_t k = 0; k < p->nr_kernels; k++) {
		const struct fp_kernel *kn = &p->kernels[k];

		fprintf(out, "%s{\"name\": ", k ? ", " : "");
		fput_json_str(out, kn->name);
		fprintf(out, ", \"isa\": ");
		fput_json_str(out, kn->isa);
		fprintf(out, ", \"class\": ");
		if (kn->tier)
			fput_json_str(out, kn->tier);
		else
			fputs("null", out);
		fprintf(out, ", \"samples\": %llu}", (unsigned long long)kn->samples);
	}
	fputc(']', out);
}

/* The ITT task summary: per oneDNN primitive kind, calls, summed task time (wall, all
 * threads) and its share of the sampled CPU time, and the samples taken inside such tasks
 * (innermost task of the sample's thread); beneath each, where those samples ran. */
static void print_itt_tasks(struct dlview *v, FILE *out, enum dlview_format fmt)
{
	const char *name;
	uint64_t calls, ns;
	double cpu_ns = v->samples * v->ns_per_sample;
	char b1[32];
	size_t i;

	if (!v->itt)
		return;
	if (fmt == DLVIEW_TABLE)
		fprintf(out, "\n%-30s %7s %9s %8s %8s %7s\n", "ITT task (oneDNN primitive)",
			"Calls", "Task time", "% of CPU", "Samples", "%");
	else if (fmt == DLVIEW_JSON)
		fprintf(out, "\"itt_tasks\": [");
	for (i = 0; (name = itt_name_stats(v->itt, i, &calls, &ns)); i++) {
		struct cnt tot = { name, NULL, 0, 0 }, *c = &tot;
		size_t j;

		for (j = 0; j < v->itt_samp.size; j++)
			if (v->itt_samp.tab[j].k1 == name)
				tot.n += v->itt_samp.tab[j].n;

		if (fmt == DLVIEW_TABLE) {
			put_cell(out, name, 30, 0);
			fprintf(out, " %7llu %9s %7.1f%% %8llu %6.1f%%\n",
				(unsigned long long)calls, fmt_ns(b1, sizeof(b1), ns),
				cpu_ns > 0 ? 100.0 * ns / cpu_ns : 0.0, (unsigned long long)c->n,
				pct(c->n, v->samples));
			print_prim_parts(v, out, name);
		} else if (fmt == DLVIEW_JSON) {
			fprintf(out, "%s{\"name\": ", i ? ", " : "");
			fput_json_str(out, name);
			fprintf(out, ", \"calls\": %llu, \"task_ns\": %llu, \"task_cpu_pct\": %.2f, "
				"\"samples\": %llu, \"samples_pct\": %.2f", (unsigned long long)calls,
				(unsigned long long)ns, cpu_ns > 0 ? 100.0 * ns / cpu_ns : 0.0,
				(unsigned long long)c->n, pct(c->n, v->samples));
			fprintf(out, ", \"families\": {");
			for (j = 0, tot.n2 = 0; j < v->itt_samp.size; j++) {
				if (v->itt_samp.tab[j].k1 != name)
					continue;
				fprintf(out, "%s", tot.n2++ ? ", " : "");
				fput_json_str(out, v->itt_samp.tab[j].k2);
				fprintf(out, ": %llu", (unsigned long long)v->itt_samp.tab[j].n);
			}
			fprintf(out, "}");
			json_prim_parts(v, out, name);
			fprintf(out, "}");
		} else {
			fprintf(out, "itt,");
			csv_str(out, name);
			fprintf(out, ",%llu,%llu,%llu\n", (unsigned long long)calls,
				(unsigned long long)ns, (unsigned long long)c->n);
		}
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "], ");
}

#define NOT_COUNTED "\u2014"	/* em dash: the op table's "no call count" */

static void print_op(struct dlview *v, FILE *out, enum dlview_format fmt, size_t limit)
{
	struct cnt **rows;
	size_t n = cmap_sorted(&v->op_total, &rows), i, uncounted = 0;
	char b1[32], b2[32], b3[32];

	/* sort by self: copy self counts into n2, order by self then total */
	for (i = 0; i < n; i++)
		rows[i]->n2 = cmap_get(&v->op_self, rows[i]->k1, NULL)->n;
	for (i = 1; i < n; i++) {
		struct cnt *c = rows[i];
		size_t j = i;

		while (j > 0 && (rows[j - 1]->n2 < c->n2 ||
				 (rows[j - 1]->n2 == c->n2 && rows[j - 1]->n < c->n))) {
			rows[j] = rows[j - 1];
			j--;
		}
		rows[j] = c;
	}
	if (limit && n > limit)
		n = limit;
	if (fmt == DLVIEW_JSON) {
		fprintf(out, "{\"kind\": \"op\", \"samples\": %llu, \"op_coverage_pct\": %.2f, "
			"\"fw_samples\": %llu, \"op_by_stack_pct\": %.2f, \"op_by_itt_pct\": %.2f, "
			"\"op_by_master_pct\": %.2f, \"op_by_phase_pct\": %.2f, ",
			(unsigned long long)v->samples, pct(v->op_samples_in_fw, v->fw_samples),
			(unsigned long long)v->fw_samples, pct(v->fw_by_stack, v->fw_samples),
			pct(v->fw_by_itt, v->fw_samples), pct(v->fw_by_master, v->fw_samples),
			pct(v->fw_by_phase, v->fw_samples));
		print_itt_tasks(v, out, fmt);
		fprintf(out, "\"rows\": [");
	} else if (fmt == DLVIEW_CSV) {
		fprintf(out, "name,self_pct,self_ns,total_pct,total_ns,calls,avg_ns\n");
	} else {
		/* 79 columns: the operator name gets 30, cut in the middle when longer */
		fprintf(out, "%-30s %6s %8s %6s %8s %7s %8s\n", "Operator", "Self%", "Self",
			"Total%", "Total", "Calls", "Avg/call");
	}
	for (i = 0; i < n; i++) {
		uint64_t self = rows[i]->n2, total = rows[i]->n, calls, itt_ns;
		double avg;

		op_calls(v, rows[i]->k1, &calls, &itt_ns);
		avg = calls ? (double)itt_ns / calls : 0;
		if (fmt == DLVIEW_JSON) {
			fprintf(out, "%s\n  {\"name\": ", i ? "," : "");
			fput_json_str(out, rows[i]->k1);
			fprintf(out, ", \"self_pct\": %.2f, \"self_samples\": %llu, \"self_ns\": %.0f, "
				"\"total_pct\": %.2f, \"total_samples\": %llu, \"total_ns\": %.0f",
				pct(self, v->samples), (unsigned long long)self, self * v->ns_per_sample,
				pct(total, v->samples), (unsigned long long)total, total * v->ns_per_sample);
			if (calls)
				fprintf(out, ", \"calls\": %llu, \"avg_ns\": %.0f",
					(unsigned long long)calls, avg);
			fprintf(out, "}");
		} else if (fmt == DLVIEW_CSV) {
			csv_str(out, rows[i]->k1);
			fprintf(out, ",%.2f,%.0f,%.2f,%.0f,", pct(self, v->samples), self * v->ns_per_sample,
				pct(total, v->samples), total * v->ns_per_sample);
			if (calls)
				fprintf(out, "%llu,%.0f\n", (unsigned long long)calls, avg);
			else
				fprintf(out, ",\n");
		} else {
			/* calls are counted only for ITT-traced ops: "—" and a footnote, never 0 */
			char cb[24] = NOT_COUNTED;

			if (calls)
				snprintf(cb, sizeof(cb), "%llu", (unsigned long long)calls);
			else
				uncounted++;
			put_cell(out, rows[i]->k1, 30, 0);
			fprintf(out, " %5.1f%% %8s %5.1f%% %8s ", pct(self, v->samples),
				fmt_ns(b1, sizeof(b1), self * v->ns_per_sample), pct(total, v->samples),
				fmt_ns(b2, sizeof(b2), total * v->ns_per_sample));
			put_cell(out, cb, 7, 1);
			fputc(' ', out);
			put_cell(out, calls ? fmt_ns(b3, sizeof(b3), avg) : NOT_COUNTED, 8, 1);
			fputc('\n', out);
		}
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "\n]}\n");
	if (fmt == DLVIEW_TABLE && uncounted) {
		fprintf(out, "\n" NOT_COUNTED ": not counted.  Calls and time per call come from oneDNN's ITT\n"
			"   tasks, so only dnnl:* operators have them; the others are sampled.\n");
		/* and why there are none, when there are none */
		if (v->itt)
			;	/* there are */
		else if (v->attached)
			fprintf(out, "   (no ITT data: a process attached to with -p has no collector)\n");
		else if (v->itt_warn) {
			char *t = xasprintf("%s)", v->itt_warn);

			fput_wrapped(out, "   (no ITT data:", t, 4, 79);
			free(t);
		}
		else if (v->itt_meta == 0)
			fprintf(out, "   (no ITT data: recorded with --no-itt)\n");
		else if (v->itt_meta == 1)
			fprintf(out, "   (no ITT data: the workload ran no oneDNN primitive)\n");
		else
			fprintf(out, "   (no ITT data: only dlprof record's recordings carry it)\n");
	}
	if (fmt == DLVIEW_TABLE && v->fw_samples)
		fprintf(out, "\noperator coverage: %.1f%% of %llu samples in libtorch, libdnnl and JIT\n"
			"   code carry an operator (stack %.1f%%, ITT %.1f%%, OpenMP master %.1f%%,\n"
			"   library init/exit %.1f%%)\n",
			pct(v->op_samples_in_fw, v->fw_samples), (unsigned long long)v->fw_samples,
			pct(v->fw_by_stack, v->fw_samples), pct(v->fw_by_itt, v->fw_samples),
			pct(v->fw_by_master, v->fw_samples), pct(v->fw_by_phase, v->fw_samples));
	if (fmt != DLVIEW_JSON)
		print_itt_tasks(v, out, fmt);
	free(rows);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_stat *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static void thread_on_off(struct dlview *v, const struct thread_stat *t, double *on, double *off)
{
	/* without switch records the samples are all we know */
	*on = t->have_switch && t->on_ns ? (double)t->on_ns : t->samples * v->ns_per_sample;
	*off = t->off_ns;
}

static void print_thread(struct dlview *v, FILE *out, enum dlview_format fmt, size_t limit)
{
	size_t n = v->nr_threads, i;
	char b1[32], b2[32];

	if (v->nr_threads)
		qsort(v->threads, v->nr_threads, sizeof(*v->threads), cmp_thread);
	if (limit && n > limit)
		n = limit;
	if (fmt == DLVIEW_JSON)
		fprintf(out, "{\"kind\": \"thread\", \"samples\": %llu, \"rows\": [",
			(unsigned long long)v->samples);
	else if (fmt == DLVIEW_CSV)
		fprintf(out, "pid,tid,comm,samples,on_cpu_ns,off_cpu_ns,voluntary,involuntary,omp_spin_pct\n");
	else
		fprintf(out, "%7s %7s %-16s %8s %11s %11s %7s %7s %9s\n", "pid", "tid", "comm",
			"samples", "on-CPU", "off-CPU", "vol", "invol", "omp-spin");
	for (i = 0; i < n; i++) {
		struct thread_stat *t = &v->threads[i];
		double on, off;

		thread_on_off(v, t, &on, &off);
		if (fmt == DLVIEW_JSON) {
			fprintf(out, "%s\n  {\"pid\": %u, \"tid\": %u, \"comm\": ", i ? "," : "", t->pid, t->tid);
			fput_json_str(out, t->comm ? t->comm : "[unknown]");
			fprintf(out, ", \"samples\": %llu, \"on_cpu_ns\": %.0f, \"off_cpu_ns\": %.0f, "
				"\"voluntary\": %llu, \"involuntary\": %llu, \"omp_spin_pct\": %.2f}",
				(unsigned long long)t->samples, on, off, (unsigned long long)t->vol,
				(unsigned long long)t->invol, pct(t->spin, t->samples));
		} else if (fmt == DLVIEW_CSV) {
			fprintf(out, "%u,%u,", t->pid, t->tid);
			csv_str(out, t->comm ? t->comm : "[unknown]");
			fprintf(out, ",%llu,%.0f,%.0f,%llu,%llu,%.2f\n", (unsigned long long)t->samples,
				on, off, (unsigned long long)t->vol, (unsigned long long)t->invol,
				pct(t->spin, t->samples));
		} else {
			fprintf(out, "%7u %7u %-16.16s %8llu %11s %11s %7llu %7llu %8.1f%%\n", t->pid,
				t->tid, t->comm ? t->comm : "[unknown]", (unsigned long long)t->samples,
				fmt_ns(b1, sizeof(b1), on), fmt_ns(b2, sizeof(b2), off),
				(unsigned long long)t->vol, (unsigned long long)t->invol,
				pct(t->spin, t->samples));
		}
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "\n]}\n");
}

static void print_group(struct dlview *v, FILE *out, enum dlview_format fmt, size_t limit)
{
	struct cnt **fams, **syms;
	size_t nf = cmap_sorted(&v->fam, &fams), ns = cmap_sorted(&v->famsym, &syms), i, j, k;
	char nb[96];

	if (limit && nf > limit)
		nf = limit;
	if (fmt == DLVIEW_JSON)
		fprintf(out, "{\"kind\": \"group-family\", \"samples\": %llu, \"rows\": [",
			(unsigned long long)v->samples);
	else if (fmt == DLVIEW_CSV)
		fprintf(out, "family,family_pct,symbol,self_pct,samples\n");
	for (i = 0; i < nf; i++) {
		if (fmt == DLVIEW_JSON) {
			fprintf(out, "%s\n  {\"family\": ", i ? "," : "");
			fput_json_str(out, fams[i]->k1);
			fprintf(out, ", \"self_pct\": %.2f, \"samples\": %llu, \"symbols\": [",
				pct(fams[i]->n, v->samples), (unsigned long long)fams[i]->n);
		} else if (fmt == DLVIEW_TABLE) {
			fprintf(out, "%s%-15s %6.2f%%  (%llu samples)\n", i ? "\n" : "", fams[i]->k1,
				pct(fams[i]->n, v->samples), (unsigned long long)fams[i]->n);
		}
		for (j = 0, k = 0; j < ns && k < 5; j++) {
			if (syms[j]->k1 != fams[i]->k1)
				continue;
			if (fmt == DLVIEW_JSON) {
				fprintf(out, "%s{\"symbol\": ", k ? ", " : "");
				fput_json_str(out, syms[j]->k2);
				fprintf(out, ", \"self_pct\": %.2f, \"samples\": %llu}",
					pct(syms[j]->n, v->samples), (unsigned long long)syms[j]->n);
			} else if (fmt == DLVIEW_CSV) {
				csv_str(out, fams[i]->k1);
				fprintf(out, ",%.2f,", pct(fams[i]->n, v->samples));
				csv_str(out, syms[j]->k2);
				fprintf(out, ",%.2f,%llu\n", pct(syms[j]->n, v->samples),
					(unsigned long long)syms[j]->n);
			} else {
				fprintf(out, "    %6.2f%% %8llu  %s\n", pct(syms[j]->n, v->samples),
					(unsigned long long)syms[j]->n, trunc_name(nb, 90, syms[j]->k2));
			}
			k++;
		}
		if (fmt == DLVIEW_JSON)
			fprintf(out, "]}");
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "\n]}\n");
	free(fams);
	free(syms);
}

void dlview_each(struct dlview *v, enum dlview_kind kind,
		 void (*fn)(void *ctx, const char *key, uint64_t samples), void *ctx)
{
	const struct cmap *m = kind == DLVIEW_OP ? &v->op_self : &v->fam;

	resolve_workers(v);
	for (size_t i = 0; i < m->size; i++)
		if (m->tab[i].k1 && m->tab[i].n)
			fn(ctx, m->tab[i].k1, m->tab[i].n);
}

int dlview_print(struct dlview *v, enum dlview_kind kind, FILE *out,
		 enum dlview_format format, size_t limit)
{
	resolve_workers(v);
	switch (kind) {
	case DLVIEW_FAMILY:
		print_family(v, out, format, limit);
		return 0;
	case DLVIEW_OP:
		print_op(v, out, format, limit);
		return 0;
	case DLVIEW_THREAD:
		print_thread(v, out, format, limit);
		return 0;
	case DLVIEW_GROUP_FAMILY:
		print_group(v, out, format, limit);
		return 0;
	}
	return error("unknown view %d", (int)kind);
}

/* ---- findings ---- */

static uint64_t fam_samples(struct dlview *v, const char *fam)
{
	for (size_t i = 0; i < v->fam.size; i++)
		if (v->fam.tab[i].k1 == fam)
			return v->fam.tab[i].n;
	return 0;
}

static int count_bits(const uint64_t *b, size_t n)
{
	int c = 0;

	for (size_t i = 0; i < n; i++)
		c += __builtin_popcountll(b[i]);
	return c;
}

static size_t collect_findings(struct dlview *v, struct finding *f, size_t max)
{
	size_t n = 0;
	double spin = pct(fam_samples(v, v->f_spin), v->samples);
	double reorder = pct(fam_samples(v, v->f_reorder), v->samples);
	double fault = pct(fam_samples(v, v->f_fault), v->samples);
	int cpus = count_bits(v->cpus_seen, ARRAY_SIZE(v->cpus_seen));
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int busy = 0;
	uint64_t invol = 0, maxs = 0;
	double on_ns = 0, pre_ns = 0, waitpct, runnable = 0;

	if (!v->samples)
		return 0;
	/* CPUs of the recorded machine (META nr_cpus); else those samples ran on, at
	 * least the report machine's */
	if (v->rec_cpus)
		cpus = v->rec_cpus;
	else if (online > cpus)
		cpus = online;
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i].samples > maxs)
			maxs = v->threads[i].samples;
	for (size_t i = 0; i < v->nr_threads; i++) {
		if (v->threads[i].samples * 5 >= maxs)
			busy++;	/* within 5x of the busiest thread: runnable much of the time */
		invol += v->threads[i].invol;
		if (v->threads[i].have_switch) {
			double on, off;

			thread_on_off(v, &v->threads[i], &on, &off);
			on_ns += on;
			pre_ns += v->threads[i].preempt_ns;
		}
	}
	/* share of the threads' runnable time spent preempted, and the average number of
	 * runnable threads (context-switch records; none without them) */
	waitpct = on_ns + pre_ns > 0 ? 100.0 * pre_ns / (on_ns + pre_ns) : 0;
	if (v->duration_ns)
		runnable = (on_ns + pre_ns) / v->duration_ns;
	if (spin > DLVIEW_SPIN_PCT && (busy > cpus || waitpct > DLVIEW_PREEMPT_PCT)) {
		f[n].id = "omp-oversubscription";
		f[n].figure = spin;
		snprintf(f[n].text, sizeof(f[n].text),
			 "OpenMP threads spin %.1f%% of samples while runnable threads waited "
			 "preempted %.1f%% of their runnable time (%.1f runnable threads of this "
			 "run on average, %d busy threads, %d CPUs, %llu involuntary switches): "
			 "the CPUs are oversubscribed%s. Set OMP_NUM_THREADS to the cores you own, or "
			 "let waiters sleep: OMP_WAIT_POLICY=passive, KMP_BLOCKTIME=0 (Intel/LLVM "
			 "OpenMP), GOMP_SPINCOUNT=0 (libgomp)", spin, waitpct, runnable, busy, cpus,
			 (unsigned long long)invol,
			 busy > cpus ? "" : " by other processes");
		n++;
	} else if (spin > DLVIEW_SPIN_PCT) {
		f[n].id = "omp-spin";
		f[n].figure = spin;
		snprintf(f[n].text, sizeof(f[n].text),
			 "OpenMP threads spin %.1f%% of samples waiting at barriers (%d busy threads, "
			 "%d CPUs): load imbalance between threads; OMP_WAIT_POLICY=passive or "
			 "GOMP_SPINCOUNT/KMP_BLOCKTIME shorten the spinning", spin, busy, cpus);
		n++;
	}
	if (reorder > DLVIEW_REORDER_PCT) {
		f[n].id = "jit-reorder";
		f[n].figure = reorder;
		snprintf(f[n].text, sizeof(f[n].text),
			 "oneDNN reorders take %.1f%% of samples: layout conversions around "
			 "convolutions (keep tensors in the blocked layout, e.g. channels_last / "
			 "to_mkldnn, or let weights be reordered once)", reorder);
		n++;
	}
	if (fault > DLVIEW_FAULT_PCT) {
		f[n].id = "page-faults";
		f[n].figure = fault;
		snprintf(f[n].text, sizeof(f[n].text),
			 "first-touch page faults take %.1f%% of samples: memory is freed and "
			 "re-allocated each step (allocator churn); a caching allocator "
			 "(jemalloc/tcmalloc, MALLOC_TRIM_THRESHOLD_/MALLOC_MMAP_THRESHOLD_) keeps pages mapped",
			 fault);
		n++;
	}
	/* is the fast path running: oneDNN without JIT kernels, ATen and OpenBLAS below
	 * the CPU */
	n += fastpath_findings(v->fp, v->samples, f + n, max - n);
	return n;
}

/* "  * [id] text" word-wrapped at 79 columns, continuation lines indented by 4. */
static void print_wrapped(FILE *out, const char *id, const char *text)
{
	char lead[64];

	snprintf(lead, sizeof(lead), "  * [%s]", id);
	fput_wrapped(out, lead, text, 4, 79);
}

int dlview_print_findings(struct dlview *v, FILE *out, enum dlview_format format)
{
	struct finding f[16];
	size_t n = collect_findings(v, f, ARRAY_SIZE(f)), i;

	if (format == DLVIEW_JSON) {
		fprintf(out, "{\"findings\": [");
		for (i = 0; i < n; i++) {
			fprintf(out, "%s\n  {\"id\": ", i ? "," : "");
			fput_json_str(out, f[i].id);
			fprintf(out, ", \"figure_pct\": %.2f, \"text\": ", f[i].figure);
			fput_json_str(out, f[i].text);
			fprintf(out, "}");
		}
		fprintf(out, "\n]}\n");
	} else if (format == DLVIEW_CSV) {
		for (i = 0; i < n; i++) {
			fprintf(out, "finding,%s,%.2f,", f[i].id, f[i].figure);
			csv_str(out, f[i].text);
			fputc('\n', out);
		}
	} else if (n) {
		fprintf(out, "\nFindings:\n");
		for (i = 0; i < n; i++)
			print_wrapped(out, f[i].id, f[i].text);
	}
	return (int)n;
}
