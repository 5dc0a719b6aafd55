/* dlview-table.c - the DL view's tables: families, operators (with the oneDNN primitives
 * beneath them and the ITT task summary), threads, and symbols by family. */
#include <stdlib.h>
#include <string.h>

#include "dlview-priv.h"
#include "family-rules.h"
#include "itt.h"
#include "output.h"
#include "rephash.h"
#include "util.h"

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
			fput_csv_str(out, rows[i]->k1);
			fprintf(out, ",%.2f,%llu,%.0f,", pct(rows[i]->n, v->samples),
				(unsigned long long)rows[i]->n, rows[i]->n * v->ns_per_sample);
			fput_csv_str(out, top_symbol(v, rows[i]->k1, NULL));
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

/* c before d: more samples, then the second key in byte order (the table's slots follow
 * interned addresses, which differ from run to run) */
static int cnt_before(const struct cnt *c, const struct cnt *d)
{
	if (c->n != d->n)
		return c->n > d->n;
	return strcmp(c->k2 ? c->k2 : "", d->k2 ? d->k2 : "") < 0;
}

/* The k2 of m's entries with k1 == key, by samples, at most max. */
static size_t top_of(const struct cmap *m, const char *key, const struct cnt **out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->size; i++) {
		const struct cnt *c = &m->tab[i];
		size_t j;

		if (c->k1 != key || !c->n)
			continue;
		for (j = n; j > 0 && cnt_before(c, out[j - 1]); j--)
			if (j < max)
				out[j] = out[j - 1];
		if (j < max) {
			out[j] = c;
			if (n < max)
				n++;
		}
	}
	return n;
}

/* The ITT task summary: per oneDNN primitive kind, calls, summed task time (wall, all
 * threads) and its share of the sampled CPU time, and the samples taken inside such tasks
 * (innermost task of the sample's thread); beneath each, where those samples ran. */
static void print_itt_tasks(struct dlview *v, FILE *out, enum dlview_format fmt)
{
	const struct itt_data *itt = attr_itt(v->attr);
	const char *name;
	uint64_t calls, ns, call_ns;
	double cpu_ns = v->samples * v->ns_per_sample;
	char b1[32];
	size_t i;

	if (!itt)
		return;
	if (fmt == DLVIEW_TABLE)
		fprintf(out, "\n%-30s %7s %9s %8s %8s %7s\n", "ITT task (oneDNN primitive)",
			"Calls", "Task time", "% of CPU", "Samples", "%");
	else if (fmt == DLVIEW_JSON)
		fprintf(out, "\"itt_tasks\": [");
	for (i = 0; (name = itt_name_stats(itt, i, &calls, &ns, &call_ns)); i++) {
		struct cnt tot = { name, NULL, 0, 0 }, *c = &tot;
		const struct cnt *fams[64];
		size_t j, nf;

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
			fprintf(out, ", \"calls\": %llu, \"call_ns\": %llu, \"task_ns\": %llu, "
				"\"task_cpu_pct\": %.2f, \"samples\": %llu, \"samples_pct\": %.2f",
				(unsigned long long)calls, (unsigned long long)call_ns,
				(unsigned long long)ns, cpu_ns > 0 ? 100.0 * ns / cpu_ns : 0.0,
				(unsigned long long)c->n, pct(c->n, v->samples));
			/* by samples, most first */
			fprintf(out, ", \"families\": {");
			nf = top_of(&v->itt_samp, name, fams, ARRAY_SIZE(fams));
			for (j = 0; j < nf; j++) {
				fprintf(out, "%s", j ? ", " : "");
				fput_json_str(out, fams[j]->k2);
				fprintf(out, ": %llu", (unsigned long long)fams[j]->n);
			}
			fprintf(out, "}");
			json_prim_parts(v, out, name);
			fprintf(out, "}");
		} else {
			fprintf(out, "itt,");
			fput_csv_str(out, name);
			fprintf(out, ",%llu,%llu,%llu\n", (unsigned long long)calls,
				(unsigned long long)ns, (unsigned long long)c->n);
		}
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "], ");
}

static const char *py_path_of(struct dlview *v, const char *sym)
{
	for (size_t i = 0; i < v->py_path.size; i++)
		if (v->py_path.tab[i].k1 == sym)
			return v->py_path.tab[i].k2;
	return NULL;
}

/* "func (file.py:12)" -> function, line */
static void py_parts(const char *sym, char *fn, size_t fnsz, int *line)
{
	const char *open = strrchr(sym, '('), *colon = open ? strrchr(open, ':') : NULL;

	*line = colon ? atoi(colon + 1) : 0;
	snprintf(fn, fnsz, "%.*s", open && open > sym ? (int)(open - 1 - sym) : (int)strlen(sym), sym);
}

#define NOT_COUNTED "\u2014"	/* em dash: the op table's "no call count" */

/* A row of the op table: an operator, or a oneDNN primitive beneath its operator. */
struct op_row {
	const char *key;	/* the attribution's op (with overload); a primitive row: its parent's */
	const char *name;	/* as shown: the overload only where two of one op appear */
	const char *base, *overload;
	const char *prim;	/* a primitive row: the primitive kind */
	uint64_t self, total, calls, call_ns;
};

/* oneDNN calls of PRIM inside operator OP; PRIM NULL: OP is "dnnl:PRIM" itself. */
static void op_calls(struct dlview *v, const char *op, const char *prim, uint64_t *calls,
		     uint64_t *ns)
{
	const char *o, *p;
	uint64_t c, t;

	*calls = *ns = 0;
	if (!prim && strncmp(op, "dnnl:", 5))
		return;
	for (size_t i = 0; attr_calls(v->attr, i, &o, &p, &c, &t); i++)
		if (o == op && (!prim || p == prim)) {
			*calls += c;
			*ns += t;
		}
}

static int cmp_prim_row(const void *a, const void *b)
{
	const struct op_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->prim, y->prim);
}

/* Rows for the oneDNN calls of top's primitives that no row from first on shows yet
 * (calls no sample caught). */
static void add_call_rows(struct dlview *v, struct op_row **r, size_t *nr, size_t *alloc,
			  const struct op_row *top, size_t first)
{
	const char *o, *p;
	uint64_t c, t;

	for (size_t j = 0; attr_calls(v->attr, j, &o, &p, &c, &t); j++) {
		size_t k;

		if (o != top->key)
			continue;
		for (k = first; k < *nr && (*r)[k].prim != p; k++)
			;
		if (k < *nr)
			continue;
		ALLOC_GROW(*r, *nr + 1, *alloc);
		(*r)[*nr] = *top;
		(*r)[*nr].prim = p;
		(*r)[*nr].self = (*r)[*nr].total = 0;
		(*r)[*nr].calls = c;
		(*r)[*nr].call_ns = t;
		(*nr)++;
	}
}

/* The rows: operators by self samples (then total), each followed by the primitives that
 * ran inside it (samples or calls), by samples.  limit counts operators. */
static size_t op_rows(struct dlview *v, size_t limit, struct op_row **out)
{
	struct cnt **ops;
	size_t n = cmap_sorted(&v->op_total, &ops), i, j, nr = 0, alloc = 0;
	struct op_row *r = NULL;

	/* order by self: self counts into n2, then by self and total */
	for (i = 0; i < n; i++)
		ops[i]->n2 = cmap_get(&v->op_self, ops[i]->k1, NULL)->n;
	for (i = 1; i < n; i++) {
		struct cnt *c = ops[i];

		for (j = i; j > 0 && (ops[j - 1]->n2 < c->n2 ||
				      (ops[j - 1]->n2 == c->n2 && ops[j - 1]->n < c->n)); j--)
			ops[j] = ops[j - 1];
		ops[j] = c;
	}
	for (i = 0; i < n && (!limit || i < limit); i++) {
		struct op_row top = { .key = ops[i]->k1, .self = ops[i]->n2, .total = ops[i]->n };
		size_t first;

		top.base = attr_op_name(top.key, &top.overload);
		top.name = top.base;
		for (j = 0; j < n && top.overload; j++)
			if (ops[j]->k1 != top.key && attr_op_name(ops[j]->k1, NULL) == top.base)
				top.name = top.key;	/* "aten::add.Tensor" beside "aten::add.Scalar" */
		op_calls(v, top.key, NULL, &top.calls, &top.call_ns);
		ALLOC_GROW(r, nr + 1, alloc);
		r[nr++] = top;
		if (!strncmp(top.key, "dnnl:", 5))
			continue;	/* a primitive outside any operator: the row is its own */
		first = nr;
		for (j = 0; j < v->op_prim.size; j++) {
			const struct cnt *pc = &v->op_prim.tab[j];

			if (pc->k1 != top.key)
				continue;
			ALLOC_GROW(r, nr + 1, alloc);
			r[nr] = top;
			r[nr].prim = pc->k2;
			r[nr].self = r[nr].total = pc->n;
			op_calls(v, top.key, pc->k2, &r[nr].calls, &r[nr].call_ns);
			nr++;
		}
		/* primitives called inside the operator that no sample caught */
		add_call_rows(v, &r, &nr, &alloc, &top, first);
		if (nr > first)
			qsort(r + first, nr - first, sizeof(*r), cmp_prim_row);
	}
	free(ops);
	/* operators that no sample caught but oneDNN calls ran in (the calls of short ops
	 * are told by the samples around them): their rows, so that every call is shown */
	for (j = 0; !limit || i < limit; j++) {
		const char *o, *p;
		uint64_t c, t;
		size_t k, first;
		struct op_row top = { 0 };

		if (!attr_calls(v->attr, j, &o, &p, &c, &t))
			break;
		for (k = 0; k < nr && r[k].key != o; k++)
			;
		if (k < nr)
			continue;
		top.key = o;
		top.base = attr_op_name(o, &top.overload);
		top.name = top.base;
		op_calls(v, o, NULL, &top.calls, &top.call_ns);
		ALLOC_GROW(r, nr + 1, alloc);
		r[nr++] = top;
		i++;
		if (!strncmp(o, "dnnl:", 5))
			continue;
		first = nr;
		add_call_rows(v, &r, &nr, &alloc, &top, first);
		if (nr > first)
			qsort(r + first, nr - first, sizeof(*r), cmp_prim_row);
		(void)p;
	}
	*out = r;
	return nr;
}

static void json_op_row(struct dlview *v, FILE *out, const struct op_row *r, int first)
{
	fprintf(out, "%s\n  {\"name\": ", first ? "" : ",");
	if (r->prim) {
		fput_json_str(out, attr_prim_op(r->prim));
		fprintf(out, ", \"overload\": null, \"primitive\": ");
		fput_json_str(out, r->prim);
		fprintf(out, ", \"parent\": ");
		fput_json_str(out, r->base);
		fprintf(out, ", \"parent_overload\": ");
	} else {
		fput_json_str(out, r->base);
		fprintf(out, ", \"overload\": ");
	}
	if (r->overload)
		fput_json_str(out, r->overload);
	else
		fputs("null", out);
	fprintf(out, ", \"self_pct\": %.2f, \"self_samples\": %llu, \"self_ns\": %.0f, "
		"\"total_pct\": %.2f, \"total_samples\": %llu, \"total_ns\": %.0f",
		pct(r->self, v->samples), (unsigned long long)r->self, r->self * v->ns_per_sample,
		pct(r->total, v->samples), (unsigned long long)r->total,
		r->total * v->ns_per_sample);
	if (r->calls)
		fprintf(out, ", \"calls\": %llu, \"avg_ns\": %.0f", (unsigned long long)r->calls,
			(double)r->call_ns / r->calls);
	if (!r->prim) {
		const struct cnt *pl[1];
		char fn[512];
		int line;

		if (top_of(&v->op_pyline, r->key, pl, 1)) {
			const char *path = py_path_of(v, pl[0]->k2);

			py_parts(pl[0]->k2, fn, sizeof(fn), &line);
			fprintf(out, ", \"python_line\": {\"function\": ");
			fput_json_str(out, fn);
			fprintf(out, ", \"file\": ");
			fput_json_str(out, path ? path : "");
			fprintf(out, ", \"line\": %d, \"samples\": %llu}", line,
				(unsigned long long)pl[0]->n);
		}
	}
	fprintf(out, "}");
}

static void csv_op_row(struct dlview *v, FILE *out, const struct op_row *r)
{
	fput_csv_str(out, r->prim ? attr_prim_op(r->prim) : r->base);
	fputc(',', out);
	if (!r->prim && r->overload)
		fput_csv_str(out, r->overload);
	fputc(',', out);
	if (r->prim)
		fput_csv_str(out, r->name);
	fprintf(out, ",%.2f,%.0f,%.2f,%.0f,", pct(r->self, v->samples), r->self * v->ns_per_sample,
		pct(r->total, v->samples), r->total * v->ns_per_sample);
	if (r->calls)
		fprintf(out, "%llu,%.0f\n", (unsigned long long)r->calls, (double)r->call_ns / r->calls);
	else
		fprintf(out, ",\n");
}

/* 79 columns: the operator name gets 30, cut in the middle when longer; a primitive's
 * row is indented beneath its operator */
static void table_op_row(struct dlview *v, FILE *out, const struct op_row *r)
{
	char b1[32], b2[32], b3[32], cb[24] = NOT_COUNTED, nb[64];

	if (r->calls)
		snprintf(cb, sizeof(cb), "%llu", (unsigned long long)r->calls);
	if (r->prim)
		snprintf(nb, sizeof(nb), "  dnnl:%s", r->prim);
	put_cell(out, r->prim ? nb : r->name, 30, 0);
	fprintf(out, " %5.1f%% %8s %5.1f%% %8s ", pct(r->self, v->samples),
		fmt_ns(b1, sizeof(b1), r->self * v->ns_per_sample), pct(r->total, v->samples),
		fmt_ns(b2, sizeof(b2), r->total * v->ns_per_sample));
	put_cell(out, cb, 7, 1);
	fputc(' ', out);
	put_cell(out, r->calls ? fmt_ns(b3, sizeof(b3), (double)r->call_ns / r->calls) : NOT_COUNTED,
		 8, 1);
	fputc('\n', out);
}

/* Why the operators have no call counts. */
static void print_uncounted(struct dlview *v, FILE *out, int nested, int loose)
{
	fprintf(out, "\n" NOT_COUNTED ": not counted.  Calls and time per call come from oneDNN's ITT\n"
		"   tasks, so only oneDNN primitives (dnnl:*) have them; the others are sampled.\n");
	if (nested)
		fprintf(out, "   A dnnl:* row beneath an operator is the part of it spent in that\n"
			"   primitive, and its calls from within it.\n");
	if (nested && loose)
		fprintf(out, "   A dnnl:* row of its own: calls no sample of the calling thread\n"
			"   placed in an operator (shorter than the sampling period).\n");
	if (attr_itt(v->attr))
		;	/* there are */
	else if (v->attached)
		fprintf(out, "   (no ITT data: a process attached to with -p has no collector)\n");
	else if (v->itt_warn) {
		char *t = xasprintf("%s)", v->itt_warn);

		fput_wrapped(out, "   (no ITT data:", t, 4, 79);
		free(t);
	} else if (v->itt_meta == 0)
		fprintf(out, "   (no ITT data: recorded with --no-itt)\n");
	else if (v->itt_meta == 1)
		fprintf(out, "   (no ITT data: the workload ran no oneDNN primitive)\n");
	else
		fprintf(out, "   (no ITT data: only dlprof record's recordings carry it)\n");
}

/* Each operator's Python line: the one most of its samples ran under. */
static void print_op_callers(struct dlview *v, FILE *out, const struct op_row *rows, size_t n)
{
	int head = 0;

	for (size_t i = 0; i < n; i++) {
		const struct cnt *pl[1];

		if (rows[i].prim || !rows[i].self || !top_of(&v->op_pyline, rows[i].key, pl, 1))
			continue;
		if (!head++)
			fprintf(out, "\n%-30s %-40s %6s\n", "Operator", "called from (Python line)", "share");
		put_cell(out, rows[i].name, 30, 0);
		fputc(' ', out);
		put_cell(out, pl[0]->k2, 40, 0);
		fprintf(out, " %5.1f%%\n", pct(pl[0]->n, rows[i].self));
	}
}

static void print_op(struct dlview *v, FILE *out, enum dlview_format fmt, size_t limit)
{
	struct op_row *rows;
	size_t n = op_rows(v, limit, &rows), i;
	int uncounted = 0, nested = 0, loose = 0;

	if (fmt == DLVIEW_JSON) {
		fprintf(out, "{\"kind\": \"op\", \"samples\": %llu, \"op_coverage_pct\": %.2f, "
			"\"fw_samples\": %llu, \"op_by_stack_pct\": %.2f, \"op_by_itt_pct\": %.2f, "
			"\"op_by_master_pct\": %.2f, \"op_by_phase_pct\": %.2f, ",
			(unsigned long long)v->samples, pct(v->op_samples_in_fw, v->fw_samples),
			(unsigned long long)v->fw_samples, pct(v->fw_by[ATTR_STACK], v->fw_samples),
			pct(v->fw_by[ATTR_ITT], v->fw_samples), pct(v->fw_by[ATTR_MASTER], v->fw_samples),
			pct(v->fw_by[ATTR_PHASE], v->fw_samples));
		print_itt_tasks(v, out, fmt);
		fprintf(out, "\"rows\": [");
	} else if (fmt == DLVIEW_CSV) {
		fprintf(out, "name,overload,parent,self_pct,self_ns,total_pct,total_ns,calls,avg_ns\n");
	} else {
		fprintf(out, "%-30s %6s %8s %6s %8s %7s %8s\n", "Operator", "Self%", "Self",
			"Total%", "Total", "Calls", "Avg/call");
	}
	for (i = 0; i < n; i++) {
		if (fmt == DLVIEW_JSON)
			json_op_row(v, out, &rows[i], i == 0);
		else if (fmt == DLVIEW_CSV)
			csv_op_row(v, out, &rows[i]);
		else
			table_op_row(v, out, &rows[i]);
		uncounted += !rows[i].calls;
		nested += rows[i].prim != NULL;
		loose += !rows[i].prim && !strncmp(rows[i].key, "dnnl:", 5);
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "\n]}\n");
	if (fmt == DLVIEW_TABLE && v->op_pyline.nr)
		print_op_callers(v, out, rows, n);
	if (fmt == DLVIEW_TABLE && uncounted)
		print_uncounted(v, out, nested, loose);
	if (fmt == DLVIEW_TABLE && v->fw_samples)
		fprintf(out, "\noperator coverage: %.1f%% of %llu samples in libtorch, libdnnl and JIT\n"
			"   code carry an operator (stack %.1f%%, ITT %.1f%%, OpenMP master %.1f%%,\n"
			"   library init/exit %.1f%%)\n",
			pct(v->op_samples_in_fw, v->fw_samples), (unsigned long long)v->fw_samples,
			pct(v->fw_by[ATTR_STACK], v->fw_samples), pct(v->fw_by[ATTR_ITT], v->fw_samples),
			pct(v->fw_by[ATTR_MASTER], v->fw_samples), pct(v->fw_by[ATTR_PHASE], v->fw_samples));
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

void dlview_on_off(const struct dlview *v, const struct thread_stat *t, double *on, double *off)
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

		dlview_on_off(v, t, &on, &off);
		if (fmt == DLVIEW_JSON) {
			fprintf(out, "%s\n  {\"pid\": %u, \"tid\": %u, \"comm\": ", i ? "," : "", t->pid, t->tid);
			fput_json_str(out, t->comm ? t->comm : "[unknown]");
			fprintf(out, ", \"samples\": %llu, \"on_cpu_ns\": %.0f, \"off_cpu_ns\": %.0f, "
				"\"voluntary\": %llu, \"involuntary\": %llu, \"omp_spin_pct\": %.2f}",
				(unsigned long long)t->samples, on, off, (unsigned long long)t->vol,
				(unsigned long long)t->invol, pct(t->spin, t->samples));
		} else if (fmt == DLVIEW_CSV) {
			fprintf(out, "%u,%u,", t->pid, t->tid);
			fput_csv_str(out, t->comm ? t->comm : "[unknown]");
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

static void print_process(struct dlview *v, FILE *out, enum dlview_format fmt, size_t limit)
{
	struct proc_row *rows = NULL;
	size_t nr = 0, alloc = 0, i, j, nf;
	struct cnt **fams;

	for (i = 0; i < v->nr_threads; i++) {
		const struct thread_stat *t = &v->threads[i];
		double on, off;

		for (j = 0; j < nr && rows[j].pid != t->pid; j++)
			;
		if (j == nr) {
			ALLOC_GROW(rows, nr + 1, alloc);
			memset(&rows[nr], 0, sizeof(rows[nr]));
			rows[nr].pid = t->pid;
			rows[nr].pidkey = t->pidkey;
			nr++;
		}
		dlview_on_off(v, t, &on, &off);
		rows[j].samples += t->samples;
		rows[j].on_ns += on;
		rows[j].threads++;
		if (t->comm && (!rows[j].comm || t->tid == t->pid))
			rows[j].comm = t->comm;	/* the main thread's name first */
	}
	nf = cmap_sorted(&v->proc_fam, &fams);
	for (i = 0; i < nr; i++) {
		rows[i].info = proc_table_find(&v->procs, rows[i].pid);
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
	if (fmt == DLVIEW_JSON)
		fprintf(out, "{\"kind\": \"process\", \"samples\": %llu, \"rows\": [",
			(unsigned long long)v->samples);
	else if (fmt == DLVIEW_CSV)
		fprintf(out, "pid,samples,pct,on_cpu_ns,threads,rank,local_rank,world_size,family,family_pct,comm,cmdline\n");
	else
		fprintf(out, "%7s %8s %9s %7s %7s %5s  %-26s %s\n", "Share", "Samples", "On-CPU",
			"Threads", "Pid", "Rank", "Top families", "Command");
	for (i = 0; i < nr; i++) {
		const struct proc_row *r = &rows[i];
		const char *rank = r->info && r->info->rank ? r->info->rank : NULL;
		const char *cmd = r->info && r->info->cmdline ? r->info->cmdline : NULL;
		const char *comm = r->comm ? r->comm : "[unknown]";
		char b1[32], fb[64], nb[96];

		if (fmt == DLVIEW_JSON) {
			fprintf(out, "%s\n  {\"pid\": %u, \"samples\": %llu, \"pct\": %.2f, "
				"\"on_cpu_ns\": %.0f, \"threads\": %u, \"comm\": ", i ? "," : "",
				r->pid, (unsigned long long)r->samples, pct(r->samples, v->samples),
				r->on_ns, r->threads);
			fput_json_str(out, comm);
			fputs(", \"cmdline\": ", out);
			if (cmd)
				fput_json_str(out, cmd);
			else
				fputs("null", out);
			if (r->info && r->info->rank)
				fprintf(out, ", \"rank\": %s", r->info->rank);
			if (r->info && r->info->local_rank)
				fprintf(out, ", \"local_rank\": %s", r->info->local_rank);
			if (r->info && r->info->world_size)
				fprintf(out, ", \"world_size\": %s", r->info->world_size);
			fputs(", \"families\": [", out);
			for (j = 0; j < 2 && r->fam[j]; j++) {
				fprintf(out, "%s{\"family\": ", j ? ", " : "");
				fput_json_str(out, r->fam[j]->k2 ? r->fam[j]->k2 : "(none)");
				fprintf(out, ", \"pct\": %.2f}", pct(r->fam[j]->n, r->samples));
			}
			fputs("]}", out);
		} else if (fmt == DLVIEW_CSV) {
			fprintf(out, "%u,%llu,%.2f,%.0f,%u,%s,%s,%s,", r->pid,
				(unsigned long long)r->samples, pct(r->samples, v->samples), r->on_ns,
				r->threads, rank ? rank : "",
				r->info && r->info->local_rank ? r->info->local_rank : "",
				r->info && r->info->world_size ? r->info->world_size : "");
			fput_csv_str(out, r->fam[0] && r->fam[0]->k2 ? r->fam[0]->k2 : "");
			fprintf(out, ",%.2f,", r->fam[0] ? pct(r->fam[0]->n, r->samples) : 0.0);
			fput_csv_str(out, comm);
			fputc(',', out);
			fput_csv_str(out, cmd ? cmd : "");
			fputc('\n', out);
		} else {
			fb[0] = '\0';
			for (j = 0; j < 2 && r->fam[j]; j++)
				snprintf(fb + strlen(fb), sizeof(fb) - strlen(fb), "%s%s %.0f%%",
					 j ? ", " : "", r->fam[j]->k2 ? r->fam[j]->k2 : "(none)",
					 pct(r->fam[j]->n, r->samples));
			fprintf(out, "%6.2f%% %8llu %9s %7u %7u %5s  %-26.26s %s\n",
				pct(r->samples, v->samples), (unsigned long long)r->samples,
				fmt_ns(b1, sizeof(b1), r->on_ns), r->threads, r->pid, rank ? rank : "-",
				fb, trunc_name(nb, 80, cmd ? cmd : comm));
		}
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "\n]}\n");
	free(rows);
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
		if (fmt == DLVIEW_JSON)
			fprintf(out, "]}");
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "\n]}\n");
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
			cmap_get(&pl->lines, f[j], NULL)->n += c->n;
		if (leaf)
			cmap_get(&pl->lines, leaf, NULL)->n2 += c->n;
	}
	for (int k = 0; k < 2; k++) {
		const struct cmap *src = k ? &v->py_chain_fam : &v->py_chain_op;

		for (i = 0; i < src->size; i++) {
			const struct cnt *c = &src->tab[i];

			if (!c->k1)
				continue;
			n = chain_lines(c->k1, f, ARRAY_SIZE(f), &leaf);
			for (j = 0; j < n; j++)
				cmap_get(k ? &pl->fams : &pl->ops, f[j], c->k2)->n += c->n;
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

static void print_lines(struct dlview *v, FILE *out, enum dlview_format fmt, size_t limit)
{
	struct py_lines pl;
	struct cnt **rows;
	size_t n, i, k;
	char b1[32], b2[32], fn[512];

	py_lines_build(v, &pl);
	n = cmap_sorted(&pl.lines, &rows);
	qsort(rows, n, sizeof(*rows), cmp_line_self);
	if (limit && n > limit)
		n = limit;
	if (fmt == DLVIEW_JSON)
		fprintf(out, "{\"kind\": \"line\", \"samples\": %llu, \"rows\": [",
			(unsigned long long)v->samples);
	else if (fmt == DLVIEW_CSV)
		fprintf(out, "function,file,line,self_pct,self_samples,total_pct,total_samples,top_ops,top_families\n");
	else if (!n)
		fprintf(out, "No Python frames in this recording (dlprof record reads them for CPython 3.11).\n");
	else
		fprintf(out, "%6s %8s %6s %8s  %s\n", "Self%", "Self", "Total%", "Total", "Python line");
	for (i = 0; i < n; i++) {
		const struct cnt *r = rows[i], *ops[3], *fams[2];
		size_t nops = top_of(&pl.ops, r->k1, ops, 3), nfams = top_of(&pl.fams, r->k1, fams, 2);
		const char *path = py_path_of(v, r->k1);
		int line;

		py_parts(r->k1, fn, sizeof(fn), &line);
		if (fmt == DLVIEW_JSON) {
			fprintf(out, "%s\n  {\"function\": ", i ? "," : "");
			fput_json_str(out, fn);
			fprintf(out, ", \"file\": ");
			fput_json_str(out, path ? path : "");
			fprintf(out, ", \"line\": %d, \"name\": ", line);
			fput_json_str(out, r->k1);
			fprintf(out, ", \"self_pct\": %.2f, \"self_samples\": %llu, \"self_ns\": %.0f, "
				"\"total_pct\": %.2f, \"total_samples\": %llu, \"total_ns\": %.0f, \"ops\": [",
				pct(r->n2, v->samples), (unsigned long long)r->n2, r->n2 * v->ns_per_sample,
				pct(r->n, v->samples), (unsigned long long)r->n, r->n * v->ns_per_sample);
			for (k = 0; k < nops; k++) {
				fprintf(out, "%s{\"name\": ", k ? ", " : "");
				fput_json_str(out, attr_op_name(ops[k]->k2, NULL));
				fprintf(out, ", \"samples\": %llu}", (unsigned long long)ops[k]->n);
			}
			fprintf(out, "], \"families\": [");
			for (k = 0; k < nfams; k++) {
				fprintf(out, "%s{\"name\": ", k ? ", " : "");
				fput_json_str(out, fams[k]->k2);
				fprintf(out, ", \"samples\": %llu}", (unsigned long long)fams[k]->n);
			}
			fprintf(out, "]}");
		} else if (fmt == DLVIEW_CSV) {
			fput_csv_str(out, fn);
			fputc(',', out);
			fput_csv_str(out, path ? path : "");
			fprintf(out, ",%d,%.2f,%llu,%.2f,%llu,", line, pct(r->n2, v->samples),
				(unsigned long long)r->n2, pct(r->n, v->samples), (unsigned long long)r->n);
			fput_csv_str(out, nops ? attr_op_name(ops[0]->k2, NULL) : "");
			fputc(',', out);
			fput_csv_str(out, nfams ? fams[0]->k2 : "");
			fputc('\n', out);
		} else {
			struct strbuf sb = STRBUF_INIT;

			fprintf(out, "%5.1f%% %8s %5.1f%% %8s  %s\n", pct(r->n2, v->samples),
				fmt_ns(b1, sizeof(b1), r->n2 * v->ns_per_sample), pct(r->n, v->samples),
				fmt_ns(b2, sizeof(b2), r->n * v->ns_per_sample), r->k1);
			/* what it ran: the operators and families of at least 0.5% of samples */
			for (k = 0; k < nops; k++)
				if (ops[k]->n * 200 >= v->samples)
					strbuf_addf(&sb, "%s%s %.1f%%", sb.len ? ", " : "ops: ",
						    attr_op_name(ops[k]->k2, NULL), pct(ops[k]->n, v->samples));
			for (k = 0; k < nfams; k++)
				if (fams[k]->n * 200 >= v->samples)
					strbuf_addf(&sb, "%s%s %.1f%%", !k ? (sb.len ? "; families: " : "families: ") : ", ",
						    fams[k]->k2, pct(fams[k]->n, v->samples));
			if (sb.len)
				fput_wrapped(out, "                                ", sb.buf, 33, 79);
			strbuf_release(&sb);
		}
	}
	if (fmt == DLVIEW_JSON)
		fprintf(out, "\n]}\n");
	free(rows);
	free(pl.lines.tab);
	free(pl.ops.tab);
	free(pl.fams.tab);
}

int dlview_print(struct dlview *v, enum dlview_kind kind, FILE *out,
		 enum dlview_format format, size_t limit)
{
	dlview_resolve(v);
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
	case DLVIEW_LINE:
		print_lines(v, out, format, limit);
		return 0;
	case DLVIEW_PROCESS:
		print_process(v, out, format, limit);
		return 0;
	}
	return error("unknown view %d", (int)kind);
}

