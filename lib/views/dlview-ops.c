/* dlview-ops.c - the DL view's operator table (report --sort op): each framework
 * operator's self and total samples, calls and time per call, the oneDNN primitives
 * beneath it, the operators' callers, and the ITT task summary. */
#include <stdlib.h>
#include <string.h>
#include "dlview-priv.h"
#include "itt.h"
#include "util.h"

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
		dlview_put_cell(out, kn->name, 36, 0);
		fputc(' ', out);
		dlview_put_cell(out, kn->desc, 18, 0);
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

/* The ITT tasks' table; JSON: the "itt_tasks" array of j's object */
static void print_itt_tasks(struct dlview *v, FILE *out, enum out_format fmt, struct json *j)
{
	static const int part[] = { FP_JIT, FP_LIB, FP_OTHER, FP_WAIT, FP_KERNEL };
	static const char *const part_keys[] = { "jit_samples", "non_jit_samples", "other_samples",
						 "wait_samples", "kernel_samples" };
	const struct itt_data *itt = attr_itt(v->attr);
	const char *name;
	uint64_t calls, ns, call_ns;
	double cpu_ns = v->samples * v->ns_per_sample;
	struct tabw *t;
	size_t i;

	if (!itt)
		return;
	t = tabw_new();
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ NULL, "kind", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ "ITT task (oneDNN primitive)", "name", TABW_TEXT,
					    .width = 30 });
	tabw_add(t, &(struct tabw_colspec){ "Calls", "calls", TABW_NUM, .width = 7 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "call_ns", TABW_NUM, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ "Task time", "task_ns", TABW_NUM, .width = 9 });
	tabw_add(t, &(struct tabw_colspec){ "% of CPU", "task_cpu_pct", TABW_NUM,
					    .in = TABW_IN_TEXT | TABW_IN_JSON, .width = 8 });
	tabw_add(t, &(struct tabw_colspec){ "Samples", "samples", TABW_NUM, .width = 8 });
	tabw_add(t, &(struct tabw_colspec){ "%", "samples_pct", TABW_NUM,
					    .in = TABW_IN_TEXT | TABW_IN_JSON, .width = 7 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "families", TABW_TEXT, .in = TABW_IN_JSON });
	for (size_t k = 0; k < ARRAY_SIZE(part_keys); k++)
		tabw_add(t, &(struct tabw_colspec){ NULL, part_keys[k], TABW_NUM, .in = TABW_IN_JSON,
						    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "kernels", TABW_TEXT, .in = TABW_IN_JSON, .omit = 1 });
	for (i = 0; (name = itt_name_stats(itt, i, &calls, &ns, &call_ns)); i++) {
		const struct fp_prim *p = fastpath_prim(v->fp, name);
		uint64_t n = 0;
		const struct cnt *fams[64];
		char text[32], val[32], *cell, *note = NULL;
		size_t k, nf, len = 0;
		struct json_mem m;
		struct json *jm;
		FILE *f;

		for (k = 0; k < v->itt_samp.size; k++)
			if (v->itt_samp.tab[k].k1 == name)
				n += v->itt_samp.tab[k].n;
		tabw_row(t);
		tabw_cell(t, "", "itt");
		cell = dlview_fit(name, 30, 0);
		tabw_cell_str(t, cell, name);
		free(cell);
		tabw_count(t, calls);
		tabw_count(t, call_ns);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)ns);
		tabw_cell(t, output_duration_ns(text, sizeof(text), ns), val);
		tabw_pct(t, cpu_ns > 0 ? 100.0 * ns / cpu_ns : 0.0, 1);
		tabw_count(t, n);
		tabw_pct(t, pct(n, v->samples), 1);
		/* by samples, most first */
		jm = json_mem_open(&m, JSON_SPACED);
		json_obj(jm);
		nf = dlview_top_of(&v->itt_samp, name, fams, ARRAY_SIZE(fams));
		for (k = 0; k < nf; k++)
			json_ku64(jm, fams[k]->k2 ? fams[k]->k2 : "", fams[k]->n);
		json_end(jm);
		cell = json_mem_close(&m);
		tabw_cell(t, "", cell);
		free(cell);
		for (k = 0; k < ARRAY_SIZE(part); k++) {
			snprintf(val, sizeof(val), "%llu", p ? (unsigned long long)p->part[part[k]] : 0ULL);
			tabw_cell(t, "", p ? val : NULL);
		}
		if (p) {
			jm = json_mem_open(&m, JSON_SPACED);
			json_arr(jm);
			for (k = 0; k < p->nr_kernels; k++) {
				const struct fp_kernel *kn = &p->kernels[k];

				json_obj(jm);
				json_kstr(jm, "name", kn->name ? kn->name : "");
				json_kstr(jm, "isa", kn->isa ? kn->isa : "");
				json_kstr(jm, "class", kn->tier);
				json_ku64(jm, "samples", kn->samples);
				json_end(jm);
			}
			json_end(jm);
			cell = json_mem_close(&m);
			tabw_cell(t, "", cell);
			free(cell);
		} else {
			tabw_none(t);
		}
		f = open_memstream(&note, &len);
		if (!f)
			die("out of memory");
		print_prim_parts(v, f, name);
		fclose(f);
		if (len)
			tabw_note(t, note);
		free(note);
	}
	if (fmt == OUT_JSON) {
		json_key(j, "itt_tasks");
		tabw_json_rows(t, TABW_ROWS_INLINE, NULL);
		tabw_json(t, j);
	} else {
		if (fmt == OUT_TEXT)
			fputc('\n', out);
		tabw_print(t, out, fmt);
	}
	tabw_free(t);
}


#define NOT_COUNTED "\u2014"	/* em dash: the op table's "no call count" */

/* A row of the op table: an operator, or a oneDNN primitive beneath its operator. */
struct op_row {
	const char *key;	/* the attribution's op (with overload); a primitive row: its parent's */
	const char *name;	/* as shown: the overload only where two of one op appear */
	const char *base, *overload;
	const char *prim;	/* a primitive row: the primitive kind */
	uint64_t self, total, calls, call_ns;
	uint64_t wait_ns;	/* an operator's row: its threads' time off the CPU in it */
};

/* oneDNN calls of PRIM inside operator OP; PRIM NULL: OP is "dnnl:PRIM" itself, or an
 * operator whose calls record --op-calls counted. */
static void op_calls(struct dlview *v, const char *op, const char *prim, uint64_t *calls,
		     uint64_t *ns)
{
	const char *o, *p;
	uint64_t c, t;

	*calls = *ns = 0;
	if (!prim && strncmp(op, "dnnl:", 5)) {
		/* record --op-calls: its calls; their time, the operator's CPU time (every
		 * thread's samples in it) */
		*calls = opcounts_get(&v->opc, op);
		if (*calls)
			*ns = (uint64_t)((double)dlview_cmap_get(&v->op_total, op, NULL)->n *
					 v->ns_per_sample);
		return;
	}
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

static int cmp_calls_row(const void *a, const void *b)
{
	const struct op_row *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return strcmp(x->key, y->key);
}

static int cmp_wait_row(const void *a, const void *b)
{
	const struct op_row *x = a, *y = b;

	if (x->wait_ns != y->wait_ns)
		return x->wait_ns > y->wait_ns ? -1 : 1;
	return strcmp(x->key, y->key);
}

/* Operators record --op-calls counted that no sample caught (shorter than the sampling
 * period: aten::empty, aten::detach, ...): rows of their calls alone, most first, as
 * torch.profiler lists them; room: how many more rows the limit leaves */
static void add_counted_rows(struct dlview *v, struct op_row **r, size_t *nr, size_t *alloc,
			     size_t room)
{
	const struct u64map *h = &v->opc.exact;
	size_t first = *nr;

	for (size_t k = 0; k < h->cap && room; k++) {
		const char *o = (const char *)(uintptr_t)h->keys[k], *ov;
		const char *base;
		size_t j;

		if (!h->used[k] || !h->vals[k])
			continue;
		base = attr_op_name(o, &ov);
		/* a row of it already, or of its operator without an overload (which counts
		 * every overload's calls) */
		for (j = 0; j < first && (*r)[j].key != o && (*r)[j].key != base; j++)
			;
		if (j < first)
			continue;
		ALLOC_GROW(*r, *nr + 1, *alloc);
		memset(&(*r)[*nr], 0, sizeof((*r)[*nr]));
		(*r)[*nr].key = o;
		(*r)[*nr].base = base;
		(*r)[*nr].overload = ov;
		(*r)[*nr].name = base;
		(*r)[*nr].calls = (uintptr_t)h->vals[k];
		(*nr)++;
	}
	if (*nr > first)
		qsort(*r + first, *nr - first, sizeof(**r), cmp_calls_row);
	if (*nr - first > room)
		*nr = first + room;
	/* two overloads of one operator: each row names its own (a sampled row's too) */
	for (size_t a = 0; a < *nr; a++)
		for (size_t b = 0; b < *nr && !(*r)[a].prim && (*r)[a].overload; b++)
			if (b != a && !(*r)[b].prim && (a >= first || b >= first) &&
			    (*r)[b].base == (*r)[a].base) {
				(*r)[a].name = (*r)[a].key;
				break;
			}
}

/* The rows: operators by self samples (then total), each followed by the primitives that
 * ran inside it (samples or calls), by samples; then the operators only counted.  limit
 * counts operators. */
static size_t op_rows(struct dlview *v, size_t limit, struct op_row **out)
{
	struct cnt **ops;
	size_t n = dlview_cmap_sorted(&v->op_total, &ops), i, j, nr = 0, alloc = 0;
	struct op_row *r = NULL;

	/* order by self: self counts into n2, then by self and total */
	for (i = 0; i < n; i++)
		ops[i]->n2 = dlview_cmap_get(&v->op_self, ops[i]->k1, NULL)->n;
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

		{
			const struct cnt *w = dlview_cmap_find(&v->op_wait, top.key, NULL);

			top.wait_ns = w ? w->n : 0;
		}
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
	/* operators no sample caught whose threads waited in them for 1 ms or more (a
	 * blocking call: torch.profiler counts that time), most first */
	{
		size_t first = nr;

		for (j = 0; j < v->op_wait.size; j++) {
			const struct cnt *w = &v->op_wait.tab[j];
			struct op_row top = { 0 };
			size_t k;

			if (!w->k1 || w->n < 1000000 || dlview_cmap_find(&v->op_total, w->k1, NULL))
				continue;
			for (k = 0; k < nr && r[k].key != w->k1; k++)
				;
			if (k < nr)
				continue;
			top.key = w->k1;
			top.base = attr_op_name(w->k1, &top.overload);
			top.name = top.base;
			for (k = 0; k < nr && top.overload; k++)
				if (!r[k].prim && r[k].base == top.base)
					top.name = top.key;	/* two overloads of it */
			top.wait_ns = w->n;
			op_calls(v, w->k1, NULL, &top.calls, &top.call_ns);
			ALLOC_GROW(r, nr + 1, alloc);
			r[nr++] = top;
		}
		if (nr > first)
			qsort(r + first, nr - first, sizeof(*r), cmp_wait_row);
		if (limit && i + (nr - first) > limit)
			nr = first + (i < limit ? limit - i : 0);
		i += nr - first;
	}
	add_counted_rows(v, &r, &nr, &alloc, !limit ? SIZE_MAX : i < limit ? limit - i : 0);
	*out = r;
	return nr;
}


/* The operator table's columns: one list for the three formats.  A primitive's row
 * names its parent in JSON by base name and overload, in CSV as the table shows it. */
static struct tabw *op_table(int waits)
{
	struct tabw *t = tabw_new();

	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "Operator", "name", TABW_TEXT, .width = 30 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "overload", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "primitive", TABW_TEXT, .in = TABW_IN_JSON, .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "parent", TABW_TEXT, .in = TABW_IN_JSON, .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "parent", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "parent_overload", TABW_TEXT, .in = TABW_IN_JSON,
					    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Self%", "self_pct", TABW_NUM, .width = 6 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "self_samples", TABW_NUM, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ "Self", "self_ns", TABW_NUM, .width = 8 });
	tabw_add(t, &(struct tabw_colspec){ "Total%", "total_pct", TABW_NUM, .width = 6 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "total_samples", TABW_NUM, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ "Total", "total_ns", TABW_NUM, .width = 8 });
	/* where the switch-outs were recorded (the default): an operator's threads' time
	 * off the CPU in it, what torch.profiler's wall time has beside the CPU time (the
	 * table's text keeps to 80 columns: print_op_waits) */
	tabw_add(t, &(struct tabw_colspec){ NULL, "off_cpu_ns", TABW_NUM, .omit = 1,
					    .in = waits ? TABW_IN_JSON | TABW_IN_CSV : TABW_IN_NONE });
	tabw_add(t, &(struct tabw_colspec){ "Calls", "calls", TABW_NUM, .width = 7, .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Avg/call", "avg_ns", TABW_NUM, .width = 8, .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "python_line", TABW_TEXT, .in = TABW_IN_JSON,
					    .omit = 1 });
	return t;
}

static void add_op_row(struct dlview *v, struct tabw *t, const struct op_row *r)
{
	char *cell, b[32], nb[64];
	const struct cnt *pl[1];

	tabw_row(t);
	if (r->prim)
		snprintf(nb, sizeof(nb), "  dnnl:%s", r->prim);
	cell = dlview_fit(r->prim ? nb : r->name, 30, 0);
	tabw_cell_str(t, cell, r->prim ? attr_prim_op(r->prim) : r->base ? r->base : "");
	free(cell);
	/* a primitive's overload is its parent's */
	if (r->prim)
		tabw_cell_str(t, "", NULL);
	else
		tabw_cell_str(t, "", r->overload);
	if (r->prim) {
		tabw_cell_str(t, "", r->prim);
		tabw_cell_str(t, "", r->base ? r->base : "");
		tabw_cell_str(t, "", r->name);
		if (r->overload)
			tabw_cell_str(t, "", r->overload);
		else
			tabw_cell(t, "", "null");
	} else {
		tabw_none(t);
		tabw_none(t);
		tabw_cell_str(t, "", NULL);
		tabw_none(t);
	}
	dlview_share_cells(v, t, r->self, 1);
	dlview_share_cells(v, t, r->total, 1);
	if (r->prim)
		tabw_none(t);
	else
		tabw_ns(t, (double)r->wait_ns);
	if (r->calls) {
		char ns[32];

		snprintf(b, sizeof(b), "%llu", (unsigned long long)r->calls);
		cell = dlview_fit(b, 7, 1);
		tabw_cell(t, cell, b);
		free(cell);
		if (r->call_ns) {
			snprintf(b, sizeof(b), "%.0f", (double)r->call_ns / r->calls);
			cell = dlview_fit(output_duration_ns(ns, sizeof(ns),
							     (double)r->call_ns / r->calls), 8, 1);
			tabw_cell(t, cell, b);
		} else {	/* (counted calls, no sample: no time known) */
			cell = dlview_fit(NOT_COUNTED, 8, 1);
			tabw_cell(t, cell, NULL);
		}
		free(cell);
	} else {
		cell = dlview_fit(NOT_COUNTED, 7, 1);
		tabw_cell(t, cell, NULL);
		free(cell);
		cell = dlview_fit(NOT_COUNTED, 8, 1);
		tabw_cell(t, cell, NULL);
		free(cell);
	}
	if (!r->prim && dlview_top_of(&v->op_pyline, r->key, pl, 1)) {
		const char *path = dlview_py_path(v, pl[0]->k2);
		struct json_mem m;
		struct json *j = json_mem_open(&m, JSON_SPACED);
		char fn[512], *buf;
		int line;

		dlview_py_parts(pl[0]->k2, fn, sizeof(fn), &line);
		json_obj(j);
		json_kstr(j, "function", fn);
		json_kstr(j, "file", path ? path : "");
		json_ki64(j, "line", line);
		json_ku64(j, "samples", pl[0]->n);
		json_end(j);
		buf = json_mem_close(&m);
		tabw_cell(t, "", buf);
		free(buf);
	} else {
		tabw_none(t);
	}
}

/* Why the operators have no call counts. */
static void print_uncounted(struct dlview *v, FILE *out, int nested, int loose)
{
	if (v->opc.calls)
		fprintf(out, "\n" NOT_COUNTED ": not counted.  Operators' calls were counted (record\n"
			"   --op-calls), their Avg/call their CPU time in every thread per call (those\n"
			"   no sample caught last, with no time); oneDNN primitives' (dnnl:*) come\n"
			"   from its ITT tasks, with their time.\n");
	else if (v->opc.present)
		fprintf(out, "\n" NOT_COUNTED ": not counted.  record --op-calls counted no operator's\n"
			"   calls (its warning says why); oneDNN primitives' (dnnl:*) come from\n"
			"   its ITT tasks.\n");
	else
		fprintf(out, "\n" NOT_COUNTED ": not counted.  Calls and time per call come from oneDNN's ITT\n"
			"   tasks, so only oneDNN primitives (dnnl:*) have them; the others are\n"
			"   sampled (record --op-calls counts the operators' calls).\n");
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

		if (rows[i].prim || !rows[i].self || !dlview_top_of(&v->op_pyline, rows[i].key, pl, 1))
			continue;
		if (!head++)
			fprintf(out, "\n%-30s %-40s %6s\n", "Operator", "called from (Python line)", "share");
		dlview_put_cell(out, rows[i].name, 30, 0);
		fputc(' ', out);
		dlview_put_cell(out, pl[0]->k2, 40, 0);
		fprintf(out, " %5.1f%%\n", pct(pl[0]->n, rows[i].self));
	}
}

/* An operator's name as the table shows it: without its overload, unless another
 * overload of it was sampled or waited in too */
static const char *op_shown(struct dlview *v, const char *key)
{
	const char *ov, *base = attr_op_name(key, &ov);
	const struct cmap *maps[] = { &v->op_total, &v->op_wait };

	for (size_t m = 0; ov && m < ARRAY_SIZE(maps); m++)
		for (size_t i = 0; i < maps[m]->size; i++)
			if (maps[m]->tab[i].k1 && maps[m]->tab[i].k1 != key &&
			    attr_op_name(maps[m]->tab[i].k1, NULL) == base)
				return key;
	return base;
}

/* The operators whose threads were off the CPU in them for a share of their time worth
 * saying, the table's rows or not (torch.profiler's Self CPU counts that time: an op
 * that waits at the OpenMP barrier for a worker held up has more of it than of CPU),
 * most first. */
static void print_op_waits(struct dlview *v, FILE *out)
{
	struct cnt **ws;
	size_t n = dlview_cmap_sorted(&v->op_wait, &ws), shown = 0;

	for (size_t i = 0; i < n && shown < 5; i++) {
		const struct cnt *c = dlview_cmap_find(&v->op_self, ws[i]->k1, NULL);
		double cpu = c ? (double)c->n * v->ns_per_sample : 0, off = (double)ws[i]->n;
		char d[32];

		/* (not "(no op)" and the like: idle threads wait there) */
		if (ws[i]->k1[0] == '(' || off < 1e6 || off < 0.05 * (cpu + off))
			continue;
		if (!shown++)
			fprintf(out, "\n%-30s %9s  %s\n", "Operator", "off-CPU",
				"of its time: its threads off the CPU");
		dlview_put_cell(out, op_shown(v, ws[i]->k1), 30, 0);
		fprintf(out, " %9s %6.1f%%\n", output_duration_ns(d, sizeof(d), off),
			100.0 * off / (cpu + off));
	}
	free(ws);
}

void dlview_print_op(struct dlview *v, FILE *out, enum out_format fmt, size_t limit)
{
	struct op_row *rows;
	size_t n = op_rows(v, limit, &rows), i;
	int uncounted = 0, nested = 0, loose = 0;
	struct tabw *t = op_table(v->waits_seen);
	struct json j;

	if (fmt == OUT_JSON) {
		dlview_json_begin(&j, out, "op", v->samples);
		json_knum(&j, "op_coverage_pct", "%.2f", pct(v->op_samples_in_fw, v->fw_samples));
		json_ku64(&j, "fw_samples", v->fw_samples);
		json_knum(&j, "op_by_stack_pct", "%.2f", pct(v->fw_by[ATTR_STACK], v->fw_samples));
		json_knum(&j, "op_by_itt_pct", "%.2f", pct(v->fw_by[ATTR_ITT], v->fw_samples));
		json_knum(&j, "op_by_master_pct", "%.2f", pct(v->fw_by[ATTR_MASTER], v->fw_samples));
		json_knum(&j, "op_by_phase_pct", "%.2f", pct(v->fw_by[ATTR_PHASE], v->fw_samples));
		print_itt_tasks(v, out, fmt, &j);
	}
	for (i = 0; i < n; i++) {
		add_op_row(v, t, &rows[i]);
		uncounted += !rows[i].calls;
		nested += rows[i].prim != NULL;
		loose += !rows[i].prim && !strncmp(rows[i].key, "dnnl:", 5);
	}
	if (fmt == OUT_JSON) {
		tabw_json_last(t, &j, "rows");
	} else {
		tabw_print(t, out, fmt);
	}
	tabw_free(t);
	if (fmt == OUT_TEXT && v->op_pyline.nr)
		print_op_callers(v, out, rows, n);
	if (fmt == OUT_TEXT && v->waits_seen)
		print_op_waits(v, out);
	if (fmt == OUT_TEXT && uncounted)
		print_uncounted(v, out, nested, loose);
	if (fmt == OUT_TEXT && v->fw_samples)
		fprintf(out, "\noperator coverage: %.1f%% of %llu samples in libtorch, libdnnl and JIT\n"
			"   code carry an operator (stack %.1f%%, ITT %.1f%%, OpenMP master %.1f%%,\n"
			"   library init, import, exit %.1f%%)\n",
			pct(v->op_samples_in_fw, v->fw_samples), (unsigned long long)v->fw_samples,
			pct(v->fw_by[ATTR_STACK], v->fw_samples), pct(v->fw_by[ATTR_ITT], v->fw_samples),
			pct(v->fw_by[ATTR_MASTER], v->fw_samples), pct(v->fw_by[ATTR_PHASE], v->fw_samples));
	if (fmt != OUT_JSON)
		print_itt_tasks(v, out, fmt, NULL);
	free(rows);
}
