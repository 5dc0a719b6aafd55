/* dlview-table.c - the DL view's tables: families, threads, processes, symbols by
 * family and Python lines (the operators' is dlview-ops.c), and dlview_print(). */
#include <stdlib.h>
#include <string.h>

#include "dlview-priv.h"
#include "output.h"
#include "rephash.h"
#include "util.h"

static const char *trunc_name(char *buf, size_t width, const char *s)
{
	size_t len = strlen(s);

	if (len <= width)
		return s;
	snprintf(buf, width + 1, "%.*s...", (int)(width - 3), s);
	return buf;
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

static void print_family(struct dlview *v, FILE *out, enum out_format fmt, size_t limit)
{
	struct cnt **rows;
	size_t n = dlview_cmap_sorted(&v->fam, &rows), i;
	struct tabw *t = tabw_new();
	char nb[64];

	if (limit && n > limit)
		n = limit;
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "Family", "family", TABW_TEXT, .width = 15 });
	tabw_add(t, &(struct tabw_colspec){ "Self %", "self_pct", TABW_NUM, .width = 7 });
	tabw_add(t, &(struct tabw_colspec){ "Samples", "samples", TABW_NUM, .width = 9 });
	tabw_add(t, &(struct tabw_colspec){ "Est. time", "time_ns", TABW_NUM, .width = 11 });
	tabw_add(t, &(struct tabw_colspec){ "Top symbol", "top_symbol", TABW_TEXT, .gap = 2 });
	for (i = 0; i < n; i++) {
		const char *top = top_symbol(v, rows[i]->k1, NULL);

		tabw_row(t);
		tabw_str(t, rows[i]->k1);
		dlview_share_cells(v, t, rows[i]->n, 2);
		tabw_cell_str(t, trunc_name(nb, 60, top), top);
	}
	dlview_print_table(v, t, out, fmt, "family");
	tabw_free(t);
	free(rows);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct thread_stat *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

void dlview_on_off(const struct dlview *v, const struct thread_stat *t, double *on, double *off)
{
	/* without switch records the samples are all we know */
	*on = t->have_switch && t->on_ns ? (double)t->on_ns : t->samples * v->ns_per_sample;
	*off = t->off_ns;
	/* (not where the clock is a cpu's, -a or --cgroup: its samples fall to whichever
	 * thread runs, a thread's count of them is a sample of its time, the switches
	 * are its time: 400-430 samples of 1 ms for 405 ms on the CPU, t1016) */
	if (v->clock && !v->cpu_wide && t->have_switch && t->on_ns && t->clock_ns > t->on_ns) {
		/* A switch's records are written inside it: the thread runs a little before
		 * its switch-in record and after its switch-out one (its counters started
		 * and stopped, the switch-out's own sample), on its CPU clock and on the
		 * sampling clock, not between the records.  For a thread that switches often
		 * it adds up (a zlib thread handing the GIL over 600 times a second: 538 ms
		 * between the records, 580 ms on the clock, 578 ms of CPU by its own count):
		 * the clock's time is the thread's on the CPU, taken from its time off it. */
		double gap = (double)(t->clock_ns - t->on_ns);

		*on = (double)t->clock_ns;
		*off = *off > gap ? *off - gap : 0;
	}
}

void dlview_gil_split(const struct dlview *v, const struct thread_stat *t, double *py,
		      double *gil, double *other_off)
{
	double on, off;

	dlview_on_off(v, t, &on, &off);
	*py = t->samples ? on * t->py_samples / t->samples : 0;
	*gil = (double)t->gil_ns;
	*other_off = off > *gil ? off - *gil : 0;
}

double dlview_gil_held(const struct dlview *v, const struct thread_stat *t)
{
	double on, off;

	dlview_on_off(v, t, &on, &off);
	return (t->samples ? on * t->held_samples / t->samples : 0) + (double)t->held_off_ns;
}

/* Whether the table has the GIL's columns: Python ran, and the switch-outs were read */
static int gil_columns(const struct dlview *v)
{
	if (!v->waits_seen)
		return 0;
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i].py_samples || v->threads[i].gil_ns)
			return 1;
	return 0;
}

/* A free-threaded interpreter ran with its GIL off: no thread waited in take_gil or
 * drop_gil (PYTHON_GIL=1, or an extension module without free-threading support, turns
 * it on as the process runs: then it is reported as any).  Its main thread may be seen
 * holding it a moment: the import of an extension module turns it on while the module
 * starts (0.1 ms in gil_contend.py).  A thread preempted in take_gil does not say it is
 * on: with it off, take_gil returns at once, but a thread can be preempted before it
 * does (1.6 ms once in 6 runs of gil_contend.py under a spinner per core: zlib_compress,
 * _PyThreadState_Attach, take_gil, then an interrupt's return to user mode). */
static int gil_off(const struct dlview *v)
{
	if (!v->free_threaded)
		return 0;
	for (size_t i = 0; i < v->nr_threads; i++)
		if (v->threads[i].gil_waits > v->threads[i].gil_preempted)
			return 0;
	return 1;
}

static void print_thread(struct dlview *v, FILE *out, enum out_format fmt, size_t limit)
{
	size_t n = v->nr_threads, i;
	int gil = gil_columns(v), no_gil = gil_off(v);
	/* Python and the GIL in the text table where Python ran; GIL-held where it was read */
	unsigned py_in = gil ? 0 : TABW_IN_JSON | TABW_IN_CSV;
	unsigned held_in = !v->gil_known ? TABW_IN_NONE : gil ? 0 : TABW_IN_JSON | TABW_IN_CSV;
	struct tabw *t = tabw_new();
	struct json j;

	if (v->nr_threads)
		qsort(v->threads, v->nr_threads, sizeof(*v->threads), cmp_thread);
	if (limit && n > limit)
		n = limit;
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "pid", "pid", TABW_NUM, .width = 7, .text_at = 1 });
	tabw_add(t, &(struct tabw_colspec){ "tid", "tid", TABW_NUM, .width = 7, .text_at = 2 });
	tabw_add(t, &(struct tabw_colspec){ "comm", "comm", TABW_TEXT, .width = 16, .cut = 1,
					    .text_at = 3 });
	tabw_add(t, &(struct tabw_colspec){ "samples", "samples", TABW_NUM, .width = 8, .text_at = 4 });
	tabw_add(t, &(struct tabw_colspec){ "on-CPU", "on_cpu_ns", TABW_NUM, .width = 11,
					    .text_at = 5 });
	tabw_add(t, &(struct tabw_colspec){ "off-CPU", "off_cpu_ns", TABW_NUM, .width = 11,
					    .text_at = 6 });
	tabw_add(t, &(struct tabw_colspec){ "vol", "voluntary", TABW_NUM, .width = 7, .text_at = 10 });
	tabw_add(t, &(struct tabw_colspec){ "invol", "involuntary", TABW_NUM, .width = 7,
					    .text_at = 11 });
	tabw_add(t, &(struct tabw_colspec){ "omp-spin", "omp_spin_pct", TABW_NUM, .width = 9,
					    .text_at = 12 });
	tabw_add(t, &(struct tabw_colspec){ "Python", "python_ns", TABW_NUM, .in = py_in, .width = 11,
					    .text_at = 7 });
	/* a build without a GIL: no wait for it, rather than zero waits */
	tabw_add(t, &(struct tabw_colspec){ "GIL-wait", "gil_wait_ns", TABW_NUM, .in = py_in,
					    .width = 11, .text_at = 9 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "gil_waits", TABW_NUM, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, "other_off_cpu_ns", TABW_NUM, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ "GIL-held", "gil_held_ns", TABW_NUM, .in = held_in,
					    .width = 11, .text_at = 8 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "gil_held_off_cpu_ns", TABW_NUM,
					    .in = v->gil_known ? TABW_IN_JSON : TABW_IN_NONE });
	for (i = 0; i < n; i++) {
		struct thread_stat *th = &v->threads[i];
		double on, off, py, gw, other;
		char b[32];

		dlview_on_off(v, th, &on, &off);
		dlview_gil_split(v, th, &py, &gw, &other);
		if (no_gil) {
			other += gw;	/* (preempted in take_gil: gil_off) */
			gw = 0;
		}
		tabw_row(t);
		tabw_count(t, th->pid);
		tabw_count(t, th->tid);
		tabw_str(t, th->comm ? th->comm : "[unknown]");
		tabw_count(t, th->samples);
		tabw_ns(t, on);
		tabw_ns(t, off);
		tabw_count(t, th->vol);
		tabw_count(t, th->invol);
		tabw_pct(t, pct(th->spin, th->samples), 1);
		tabw_ns(t, py);
		if (no_gil) {
			tabw_none(t);
			tabw_none(t);
		} else {
			tabw_ns(t, gw);
			tabw_count(t, th->gil_waits);
		}
		snprintf(b, sizeof(b), "%.0f", other);
		tabw_cell(t, "", b);
		tabw_ns(t, dlview_gil_held(v, th));
		tabw_count(t, th->held_off_ns);
	}
	if (fmt != OUT_JSON) {
		tabw_print(t, out, fmt);
	} else {
		dlview_json_begin(&j, out, "thread", v->samples);
		json_key(&j, "rows");
		tabw_json_rows(t, "\n  ", "\n");
		tabw_json(t, &j);
	}
	tabw_free(t);
	if (fmt == OUT_JSON) {
		json_kstr(&j, "free_threaded", v->free_threaded);
		json_end(&j);
		json_raw(&j, "\n");
	} else if (fmt == OUT_TEXT && no_gil) {
		fprintf(out, "\n%s is a free-threaded build: no thread waited for a GIL (it has "
			"none unless PYTHON_GIL=1 or an extension module turns it on)\n",
			v->free_threaded);
	} else if (fmt == OUT_TEXT && gil) {
		if (v->free_threaded)
			fprintf(out, "\n%s is a free-threaded build whose GIL was turned on as it "
				"ran (PYTHON_GIL=1, or an extension module without free-threading "
				"support)", v->free_threaded);
		fputs("\nPython: on the CPU with Python frames; GIL-wait: off the CPU taking the GIL "
		      "or handing it over (wait-gil)\n", out);
		if (v->gil_known)
			fputs("GIL-held: holding the GIL, read in the kernel at each sample (on the "
			      "CPU, or blocked holding it)\n", out);
	}
}

/* ---- processes (--sort pid) ---- */
struct proc_row {
	uint32_t pid;
	const char *pidkey, *comm;
	uint64_t samples;
	double on_ns;
	unsigned threads;
	const struct proc_entry *info;
	const struct cnt *fam[2];	/* its two largest families */
};

static int cmp_proc_row(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* A number the environment gave (RANK=3): "-" in text where none; a JSON number, or a
 * string where it is not one */
static void env_number(struct tabw *t, const char *s)
{
	const char *p = s ? s + (*s == '-') : NULL;

	if (!s)
		tabw_none(t);
	else if (*p && strspn(p, "0123456789") == strlen(p) && (*p != '0' || !p[1]))
		tabw_cell(t, s, s);
	else
		tabw_cell_str(t, s, s);
}

/* The process's two largest families as JSON: [{"family": "gemm", "pct": 61.20}, ...] */
static char *families_json(const struct proc_row *r)
{
	struct json_mem m;
	struct json *j = json_mem_open(&m, JSON_SPACED);

	json_arr(j);
	for (size_t k = 0; k < 2 && r->fam[k]; k++) {
		json_obj(j);
		json_kstr(j, "family", r->fam[k]->k2 ? r->fam[k]->k2 : "(none)");
		json_knum(j, "pct", "%.2f", pct(r->fam[k]->n, r->samples));
		json_end(j);
	}
	json_end(j);
	return json_mem_close(&m);
}

static void print_process(struct dlview *v, FILE *out, enum out_format fmt, size_t limit)
{
	struct proc_row *rows = NULL;
	size_t nr = 0, alloc = 0, i, j, nf, ct_width = 0;	/* 0: no row in a container */
	struct cnt **fams;
	struct tabw *t = tabw_new();

	for (i = 0; i < v->nr_threads; i++) {
		const struct thread_stat *th = &v->threads[i];
		double on, off;

		for (j = 0; j < nr && rows[j].pid != th->pid; j++)
			;
		if (j == nr) {
			ALLOC_GROW(rows, nr + 1, alloc);
			memset(&rows[nr], 0, sizeof(rows[nr]));
			rows[nr].pid = th->pid;
			rows[nr].pidkey = th->pidkey;
			nr++;
		}
		dlview_on_off(v, th, &on, &off);
		rows[j].samples += th->samples;
		rows[j].on_ns += on;
		rows[j].threads++;
		if (th->comm && (!rows[j].comm || th->tid == th->pid))
			rows[j].comm = th->comm;	/* the main thread's name first */
	}
	nf = dlview_cmap_sorted(&v->proc_fam, &fams);
	for (i = 0; i < nr; i++) {
		rows[i].info = proc_table_find(&v->procs, rows[i].pid);
		if (rows[i].info && rows[i].info->container &&
		    strlen(rows[i].info->container) > ct_width)
			ct_width = strlen(rows[i].info->container);
		for (j = 0; j < nf; j++) {
			if (fams[j]->k1 != rows[i].pidkey)
				continue;
			if (!rows[i].fam[0])
				rows[i].fam[0] = fams[j];
			else if (!rows[i].fam[1])
				rows[i].fam[1] = fams[j];
		}
	}
	free(fams);
	if (nr)
		qsort(rows, nr, sizeof(*rows), cmp_proc_row);
	if (limit && nr > limit)
		nr = limit;
	if (ct_width > 24)
		ct_width = 24;
	if (ct_width && ct_width < 9)
		ct_width = 9;
	/* JSON and CSV in one order; the text table in its own */
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "Pid", "pid", TABW_NUM, .width = 7, .text_at = 5 });
	tabw_add(t, &(struct tabw_colspec){ "Samples", "samples", TABW_NUM, .width = 8, .text_at = 2 });
	tabw_add(t, &(struct tabw_colspec){ "Share", "pct", TABW_NUM, .width = 7, .text_at = 1 });
	tabw_add(t, &(struct tabw_colspec){ "On-CPU", "on_cpu_ns", TABW_NUM, .width = 9, .text_at = 3 });
	tabw_add(t, &(struct tabw_colspec){ "Threads", "threads", TABW_NUM, .width = 7, .text_at = 4 });
	tabw_add(t, &(struct tabw_colspec){ "Rank", "rank", TABW_NUM, .width = 5, .text_at = 6,
					    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "local_rank", TABW_NUM,
					    .in = TABW_IN_JSON | TABW_IN_CSV, .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "world_size", TABW_NUM,
					    .in = TABW_IN_JSON | TABW_IN_CSV, .omit = 1 });
	/* the top family in CSV, the two largest in JSON and the text */
	tabw_add(t, &(struct tabw_colspec){ NULL, "family", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "family_pct", TABW_NUM, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "comm", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "cmdline", TABW_TEXT,
					    .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ "Container", "container", TABW_TEXT,
					    .in = ct_width ? 0 : TABW_IN_NONE, .width = (int)ct_width,
					    .cut = 1, .text_at = 8, .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "families", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ "Top families", NULL, TABW_TEXT, .in = TABW_IN_TEXT,
					    .width = 26, .cut = 1, .gap = 2, .text_at = 7 });
	tabw_add(t, &(struct tabw_colspec){ "Command", NULL, TABW_TEXT, .in = TABW_IN_TEXT,
					    .text_at = 9 });
	for (i = 0; i < nr; i++) {
		const struct proc_row *r = &rows[i];
		const struct proc_entry *e = r->info;
		const char *cmd = e && e->cmdline ? e->cmdline : NULL;
		const char *comm = r->comm ? r->comm : "[unknown]";
		char fb[64], nb[96], b[32];

		tabw_row(t);
		tabw_count(t, r->pid);
		tabw_count(t, r->samples);
		tabw_pct(t, pct(r->samples, v->samples), 2);
		tabw_ns(t, r->on_ns);
		tabw_count(t, r->threads);
		env_number(t, e ? e->rank : NULL);
		env_number(t, e ? e->local_rank : NULL);
		env_number(t, e ? e->world_size : NULL);
		tabw_cell_str(t, "", r->fam[0] && r->fam[0]->k2 ? r->fam[0]->k2 : "");
		snprintf(b, sizeof(b), "%.2f", r->fam[0] ? pct(r->fam[0]->n, r->samples) : 0.0);
		tabw_cell(t, "", b);
		tabw_str(t, comm);
		tabw_cell_str(t, "", cmd);
		tabw_cell_str(t, e && e->container ? e->container : "-", e ? e->container : NULL);
		tabw_cell(t, "", families_json(r));
		fb[0] = '\0';
		for (j = 0; j < 2 && r->fam[j]; j++)
			snprintf(fb + strlen(fb), sizeof(fb) - strlen(fb), "%s%s %.0f%%",
				 j ? ", " : "", r->fam[j]->k2 ? r->fam[j]->k2 : "(none)",
				 pct(r->fam[j]->n, r->samples));
		tabw_str(t, fb);
		tabw_str(t, trunc_name(nb, 80, cmd ? cmd : comm));
	}
	dlview_print_table(v, t, out, fmt, "process");
	tabw_free(t);
	free(rows);
}

static void print_group(struct dlview *v, FILE *out, enum out_format fmt, size_t limit)
{
	struct cnt **fams, **syms;
	size_t nf = dlview_cmap_sorted(&v->fam, &fams), ns = dlview_cmap_sorted(&v->famsym, &syms), i, j, k;
	char nb[96];
	struct json js;

	if (limit && nf > limit)
		nf = limit;
	if (fmt == OUT_JSON) {
		dlview_json_begin(&js, out, "group-family", v->samples);
		json_karr(&js, "rows");
	} else if (fmt == OUT_CSV)
		fprintf(out, "family,family_pct,symbol,self_pct,samples\n");
	for (i = 0; i < nf; i++) {
		if (fmt == OUT_JSON) {
			json_pre(&js, "\n  ");
			json_obj(&js);
			json_kstr(&js, "family", fams[i]->k1 ? fams[i]->k1 : "");
			json_knum(&js, "self_pct", "%.2f", pct(fams[i]->n, v->samples));
			json_ku64(&js, "samples", fams[i]->n);
			json_karr(&js, "symbols");
		} else if (fmt == OUT_TEXT) {
			fprintf(out, "%s%-15s %6.2f%%  (%llu samples)\n", i ? "\n" : "", fams[i]->k1,
				pct(fams[i]->n, v->samples), (unsigned long long)fams[i]->n);
		}
		for (j = 0, k = 0; j < ns && k < 5; j++) {
			if (syms[j]->k1 != fams[i]->k1)
				continue;
			if (fmt == OUT_JSON) {
				json_obj(&js);
				json_kstr(&js, "symbol", syms[j]->k2 ? syms[j]->k2 : "");
				json_knum(&js, "self_pct", "%.2f", pct(syms[j]->n, v->samples));
				json_ku64(&js, "samples", syms[j]->n);
				json_end(&js);
			} else if (fmt == OUT_CSV) {
				fput_csv_str(out, fams[i]->k1);
				fprintf(out, ",%.2f,", pct(fams[i]->n, v->samples));
				fput_csv_str(out, syms[j]->k2);
				fprintf(out, ",%.2f,%llu\n", pct(syms[j]->n, v->samples),
					(unsigned long long)syms[j]->n);
			} else {
				fprintf(out, "    %6.2f%% %8llu  %s\n", pct(syms[j]->n, v->samples),
					(unsigned long long)syms[j]->n, trunc_name(nb, 90, syms[j]->k2));
			}
			k++;
		}
		if (fmt == OUT_JSON) {
			json_end(&js);
			json_end(&js);
		}
	}
	if (fmt == OUT_JSON)
		dlview_json_end(&js);
	free(fams);
	free(syms);
}

/* ---- Python lines (--sort line) ----
 * A line's Self: the samples whose innermost Python frame it is (the time it spent in
 * what it called, down to the next Python line); its Total: the samples with it anywhere
 * on the Python stack (once per sample, recursion or not).  Beneath each, the operators
 * and families of its Total samples, in percent of all samples. */
struct py_lines {
	struct cmap lines;	/* (line, NULL): n total, n2 self */
	struct cmap ops, fams;	/* (line, op|family) -> samples */
};

/* The distinct frames of an interned chain "f1;f2;...", interned; *leaf the last. */
static size_t chain_lines(const char *chain, const char **out, size_t max, const char **leaf)
{
	size_t n = 0;

	*leaf = NULL;
	for (const char *p = chain; *p;) {
		size_t len = strcspn(p, ";"), i;
		const char *f = str_intern(p, len);

		for (i = 0; i < n && out[i] != f; i++)
			;
		if (i == n && n < max)
			out[n++] = f;
		*leaf = f;
		p += len + (p[len] == ';');
	}
	return n;
}

static void py_lines_build(struct dlview *v, struct py_lines *pl)
{
	const char *f[512], *leaf;
	size_t n, i, j;

	memset(pl, 0, sizeof(*pl));
	for (i = 0; i < v->py_chain.size; i++) {
		const struct cnt *c = &v->py_chain.tab[i];

		if (!c->k1)
			continue;
		n = chain_lines(c->k1, f, ARRAY_SIZE(f), &leaf);
		for (j = 0; j < n; j++)
			dlview_cmap_get(&pl->lines, f[j], NULL)->n += c->n;
		if (leaf)
			dlview_cmap_get(&pl->lines, leaf, NULL)->n2 += c->n;
	}
	for (int k = 0; k < 2; k++) {
		const struct cmap *src = k ? &v->py_chain_fam : &v->py_chain_op;

		for (i = 0; i < src->size; i++) {
			const struct cnt *c = &src->tab[i];

			if (!c->k1)
				continue;
			n = chain_lines(c->k1, f, ARRAY_SIZE(f), &leaf);
			for (j = 0; j < n; j++)
				dlview_cmap_get(k ? &pl->fams : &pl->ops, f[j], c->k2)->n += c->n;
		}
	}
}

static int cmp_line_self(const void *a, const void *b)
{
	const struct cnt *x = *(const struct cnt * const *)a, *y = *(const struct cnt * const *)b;

	if (x->n2 != y->n2)
		return x->n2 > y->n2 ? -1 : 1;
	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->k1, y->k1);
}

/* [{"name": ..., "samples": N}, ...] of the counts' second keys (op: operator names) */
static char *named_counts_json(const struct cnt *const *c, size_t n, int op)
{
	struct json_mem m;
	struct json *j = json_mem_open(&m, JSON_SPACED);

	json_arr(j);
	for (size_t k = 0; k < n; k++) {
		const char *name = op ? attr_op_name(c[k]->k2, NULL) : c[k]->k2;

		json_obj(j);
		json_kstr(j, "name", name ? name : "");
		json_ku64(j, "samples", c[k]->n);
		json_end(j);
	}
	json_end(j);
	return json_mem_close(&m);
}

/* The text table's note under a row: text wrapped under the Python line */
static void note_wrapped(struct tabw *t, const char *text)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		die("out of memory");
	fput_wrapped(f, "                                ", text, 33, 79);
	fclose(f);
	tabw_note(t, buf);
	free(buf);
}

static void print_lines(struct dlview *v, FILE *out, enum out_format fmt, size_t limit)
{
	struct py_lines pl;
	struct cnt **rows;
	size_t n, i, k;
	char fn[512];
	struct tabw *t = tabw_new();

	py_lines_build(v, &pl);
	n = dlview_cmap_sorted(&pl.lines, &rows);
	qsort(rows, n, sizeof(*rows), cmp_line_self);
	if (limit && n > limit)
		n = limit;
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ NULL, "function", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "file", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "line", TABW_NUM, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ "Python line", "name", TABW_TEXT,
					    .in = TABW_IN_TEXT | TABW_IN_JSON, .gap = 2, .text_at = 5 });
	tabw_add(t, &(struct tabw_colspec){ "Self%", "self_pct", TABW_NUM, .width = 6, .text_at = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "self_samples", TABW_NUM,
					    .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ "Self", "self_ns", TABW_NUM,
					    .in = TABW_IN_TEXT | TABW_IN_JSON, .width = 8, .text_at = 2 });
	tabw_add(t, &(struct tabw_colspec){ "Total%", "total_pct", TABW_NUM, .width = 6, .text_at = 3 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "total_samples", TABW_NUM,
					    .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ "Total", "total_ns", TABW_NUM,
					    .in = TABW_IN_TEXT | TABW_IN_JSON, .width = 8, .text_at = 4 });
	/* what it ran: all in JSON, the first in CSV, those of 0.5% of samples in the text */
	tabw_add(t, &(struct tabw_colspec){ NULL, "ops", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, "families", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, "top_ops", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "top_families", TABW_TEXT, .in = TABW_IN_CSV });
	for (i = 0; i < n; i++) {
		const struct cnt *r = rows[i], *ops[3], *fams[2];
		size_t nops = dlview_top_of(&pl.ops, r->k1, ops, 3), nfams = dlview_top_of(&pl.fams, r->k1, fams, 2);
		const char *path = dlview_py_path(v, r->k1);
		struct strbuf sb = STRBUF_INIT;
		char b[32], *list;
		int line;

		dlview_py_parts(r->k1, fn, sizeof(fn), &line);
		tabw_row(t);
		tabw_str(t, fn);
		tabw_str(t, path ? path : "");
		snprintf(b, sizeof(b), "%d", line);
		tabw_cell(t, b, b);
		tabw_str(t, r->k1);
		dlview_share_cells(v, t, r->n2, 1);
		dlview_share_cells(v, t, r->n, 1);
		list = named_counts_json(ops, nops, 1);
		tabw_cell(t, "", list);
		free(list);
		list = named_counts_json(fams, nfams, 0);
		tabw_cell(t, "", list);
		free(list);
		tabw_cell_str(t, "", nops ? attr_op_name(ops[0]->k2, NULL) : "");
		tabw_cell_str(t, "", nfams ? fams[0]->k2 : "");
		for (k = 0; k < nops; k++)
			if (ops[k]->n * 200 >= v->samples)
				strbuf_addf(&sb, "%s%s %.1f%%", sb.len ? ", " : "ops: ",
					    attr_op_name(ops[k]->k2, NULL), pct(ops[k]->n, v->samples));
		for (k = 0; k < nfams; k++)
			if (fams[k]->n * 200 >= v->samples)
				strbuf_addf(&sb, "%s%s %.1f%%", !k ? (sb.len ? "; families: " : "families: ") : ", ",
					    fams[k]->k2, pct(fams[k]->n, v->samples));
		if (sb.len)
			note_wrapped(t, sb.buf);
		strbuf_release(&sb);
	}
	if (fmt == OUT_TEXT && !n)
		fprintf(out, "No Python frames in this recording (dlprof record reads them for CPython 3.11).\n");
	else
		dlview_print_table(v, t, out, fmt, "line");
	tabw_free(t);
	free(rows);
	free(pl.lines.tab);
	free(pl.ops.tab);
	free(pl.fams.tab);
}

int dlview_print(struct dlview *v, enum dlview_kind kind, FILE *out,
		 enum out_format format, size_t limit)
{
	dlview_resolve(v);
	switch (kind) {
	case DLVIEW_FAMILY:
		print_family(v, out, format, limit);
		return 0;
	case DLVIEW_OP:
		dlview_print_op(v, out, format, limit);
		return 0;
	case DLVIEW_THREAD:
		print_thread(v, out, format, limit);
		return 0;
	case DLVIEW_GROUP_FAMILY:
		print_group(v, out, format, limit);
		return 0;
	case DLVIEW_LINE:
		print_lines(v, out, format, limit);
		return 0;
	case DLVIEW_PROCESS:
		print_process(v, out, format, limit);
		return 0;
	case DLVIEW_PRIM:
		dlview_print_prim(v, out, format, limit);
		return 0;
	case DLVIEW_RANK:	/* its own reading: ranks_report() */
		break;
	}
	return error("unknown view %d", (int)kind);
}

