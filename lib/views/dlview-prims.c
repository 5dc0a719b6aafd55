/* dlview-prims.c - the DL view's primitive table (report --sort prim): one row per
 * distinct oneDNN primitive (kind, implementation, shape, data types, as the collector
 * described it through oneDNN's C API, itt.h), with its calls and time per call (from
 * its recorded executions), its samples and their share of the run, the JIT kernels
 * they ran, and the operator and Python line most of them ran under.  The samples are
 * the attribution's (a->prim_desc, counted in dlview.c): those inside a primitive's ITT
 * task, so the rows add up to the dnnl:* rows of --sort op.  A sample in a task of no
 * recorded execution (oneDNN not reached through its shared library) counts to a row
 * "dnnl:KIND" of its kind alone. */
#include <stdlib.h>
#include <string.h>

#include "dlview-priv.h"
#include "itt.h"
#include "util.h"

struct prim_row {
	const char *key;	/* the count maps' key: the description, or "dnnl:KIND" */
	const struct itt_prim *p;	/* NULL: samples of a task no execution described */
	uint64_t samples, calls, ns;
};

static int cmp_row(const void *a, const void *b)
{
	const struct prim_row *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return strcmp(x->key, y->key);
}

static size_t prim_rows(struct dlview *v, struct prim_row **out)
{
	const struct itt_data *itt = attr_itt(v->attr);
	const struct itt_prim *p;
	struct prim_row *r = NULL;
	size_t nr = 0, alloc = 0, i, j;

	for (i = 0; (p = itt_prim_each(itt, i)); i++) {
		const struct cnt *c = dlview_cmap_find(&v->prim_samp, p->key, NULL);

		if (!p->calls && !c)
			continue;	/* of a file rejected after its descriptions */
		ALLOC_GROW(r, nr + 1, alloc);
		r[nr++] = (struct prim_row){ p->key, p, c ? c->n : 0, p->calls, p->ns };
	}
	for (i = 0; i < v->prim_samp.size; i++) {
		const struct cnt *c = &v->prim_samp.tab[i];

		if (!c->k1)
			continue;
		for (j = 0; j < nr && r[j].key != c->k1; j++)
			;
		if (j < nr)
			continue;
		ALLOC_GROW(r, nr + 1, alloc);
		r[nr++] = (struct prim_row){ c->k1, NULL, c->n, 0, 0 };
	}
	if (nr)
		qsort(r, nr, sizeof(*r), cmp_row);
	*out = r;
	return nr;
}

/* "f32:aBcd16b:1x16x14x14" -> its three parts (empty when absent) */
static void md_parts(const char *md, char *dt, char *fmt, char *dims, size_t sz)
{
	const char *a = strchr(md, ':'), *b = a ? strchr(a + 1, ':') : NULL;

	snprintf(dt, sz, "%.*s", a ? (int)(a - md) : (int)strlen(md), md);
	snprintf(fmt, sz, "%.*s", b ? (int)(b - a - 1) : 0, b ? a + 1 : "");
	snprintf(dims, sz, "%s", b ? b + 1 : "");
}

static const char *row_kind(const struct prim_row *r)
{
	return r->p ? r->p->kind : r->key + 5;	/* "dnnl:KIND" */
}

static const char *top_of(struct dlview *v, const struct cmap *m, const char *key, uint64_t *n)
{
	const struct cnt *c[1];

	if (!dlview_top_of(m, key, c, 1))
		return NULL;
	*n = c[0]->n;
	return c[0]->k2;
}

/* Why there are no described primitives, in one line; NULL when there are. */
static const char *undescribed_why(struct dlview *v, size_t nr_described)
{
	const char *off = fastpath_env(v->fp, "DLPROF_NO_DNNL_HOOK");

	if (nr_described)
		return NULL;
	if (!attr_itt(v->attr) && v->attached)
		return "no oneDNN primitive records: a process attached to with -p has no collector";
	if (!attr_itt(v->attr) && v->itt_meta == 0)
		return "no oneDNN primitive records: recorded with --no-itt";
	if (!attr_itt(v->attr))
		return "no oneDNN primitive records: the recording has no ITT data (no oneDNN primitive ran, or not recorded by dlprof record)";
	if (off && strcmp(off, "0"))
		return "no oneDNN primitive records: recorded with DLPROF_NO_DNNL_HOOK set; rows by primitive kind only";
	return "no oneDNN primitive records: oneDNN was not called through libdnnl's C API (linked statically, or another path); rows by primitive kind only";
}

/* The lines under a row: propagation kind and shape, tensors, kernels, caller; wrapped at 79 columns */
static void table_details(struct dlview *v, FILE *out, const struct prim_row *r)
{
	const struct fp_prim *fp = fastpath_prim(v->fp_prims, r->key);
	struct strbuf sb = STRBUF_INIT;
	const char *op, *line;
	uint64_t n;

	if (r->p && r->p->shape && *r->p->shape) {
		strbuf_addf(&sb, "%s %s", r->p->prop ? r->p->prop : "undef", r->p->shape);
		fput_wrapped(out, " ", sb.buf, 4, 79);
		strbuf_reset(&sb);
	}
	for (int m = 0; r->p && m < ITT_MD_NR; m++)
		if (r->p->md[m])
			strbuf_addf(&sb, "%s%s %s", sb.len ? ", " : "", itt_md_names[m], r->p->md[m]);
	if (sb.len) {
		fput_wrapped(out, " ", sb.buf, 4, 79);
		strbuf_reset(&sb);
	}
	if (fp && fp->samples) {
		size_t k;

		strbuf_addstr(&sb, "ran:");
		for (k = 0; k < fp->nr_kernels && k < 2; k++)
			if (fp->kernels[k].samples * 200 >= fp->samples)
				strbuf_addf(&sb, " %s %.1f%%,", fp->kernels[k].name,
					    pct(fp->kernels[k].samples, fp->samples));
		if (fp->part[FP_LIB] * 200 >= fp->samples)
			strbuf_addf(&sb, " libdnnl (not JIT) %.1f%%,", pct(fp->part[FP_LIB], fp->samples));
		if (fp->part[FP_WAIT] * 200 >= fp->samples)
			strbuf_addf(&sb, " OpenMP wait %.1f%%,", pct(fp->part[FP_WAIT], fp->samples));
		if (fp->part[FP_KERNEL] * 200 >= fp->samples)
			strbuf_addf(&sb, " kernel %.1f%%,", pct(fp->part[FP_KERNEL], fp->samples));
		if (sb.buf[sb.len - 1] == ',')
			sb.buf[--sb.len] = 0;
		fput_wrapped(out, " ", sb.buf, 4, 79);
		strbuf_reset(&sb);
	}
	if (fp) {
		char phrase[128];
		uint64_t all = fastpath_fp_phrase(fp, phrase, sizeof(phrase));

		if (all) {
			/* record --metrics fp: the width it really ran at */
			strbuf_addf(&sb, "FP operations: %.3g, %s", (double)all, phrase);
			fput_wrapped(out, " ", sb.buf, 4, 79);
			strbuf_reset(&sb);
		}
	}
	op = top_of(v, &v->prim_op, r->key, &n);
	if (op && r->samples) {
		strbuf_addf(&sb, "in %s %.0f%%", attr_op_name(op, NULL), pct(n, r->samples));
		if ((line = top_of(v, &v->prim_line, r->key, &n)))
			strbuf_addf(&sb, ", from %s %.0f%%", line, pct(n, r->samples));
		fput_wrapped(out, " ", sb.buf, 4, 79);
	}
	strbuf_release(&sb);
}

static char *details(struct dlview *v, const struct prim_row *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		die("out of memory");
	table_details(v, f, r);
	fclose(f);
	return buf;
}

/* The primitive table's columns: one list for the three formats; JSON's tensors,
 * kernels, operator and Python line are objects, CSV's their first or main part */
static struct tabw *prim_table(void)
{
	static const char *const parts[] = { "jit_samples", "non_jit_samples", "other_samples",
					     "wait_samples", "kernel_samples" };
	struct tabw *t = tabw_new();

	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "Primitive (kind, impl, data type)", NULL, TABW_TEXT,
					    .in = TABW_IN_TEXT, .width = 36 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "kind", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "impl", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "prop", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "shape", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "data_type", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "tensors", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, "src", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "wei", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "dst", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ "Calls", "calls", TABW_NUM, .width = 7 });
	tabw_add(t, &(struct tabw_colspec){ "Time", "total_ns", TABW_NUM, .width = 9, .text_at = 2 });
	tabw_add(t, &(struct tabw_colspec){ "Avg/call", "avg_ns", TABW_NUM, .width = 9, .text_at = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Samples", "samples", TABW_NUM, .width = 7, .text_at = 3 });
	tabw_add(t, &(struct tabw_colspec){ "%", "samples_pct", TABW_NUM, .width = 7, .text_at = 4 });
	for (size_t k = 0; k < ARRAY_SIZE(parts); k++)
		tabw_add(t, &(struct tabw_colspec){ NULL, parts[k], TABW_NUM, .in = TABW_IN_JSON,
						    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "kernels", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, "top_kernel", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "op", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, "op", TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "python_line", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, "python_line", TABW_TEXT, .in = TABW_IN_CSV });
	return t;
}

/* {"name": ..., "samples": N} of the top entry, or null */
static char *top_json(const char *key, const char *name, uint64_t n)
{
	struct json_mem m;
	struct json *j = json_mem_open(&m, JSON_SPACED);

	if (!name) {
		json_null(j);
	} else {
		json_obj(j);
		json_kstr(j, key, name);
		json_ku64(j, "samples", n);
		json_end(j);
	}
	return json_mem_close(&m);
}

static void add_prim_row(struct dlview *v, struct tabw *t, const struct prim_row *r)
{
	const struct fp_prim *fp = fastpath_prim(v->fp_prims, r->key);
	const char *op, *line, *opname;
	char name[160], b[32], ns[32], *cell;
	struct json_mem m;
	struct json *j;
	uint64_t n = 0;

	tabw_row(t);
	if (r->p)
		snprintf(name, sizeof(name), "%s %s %s", r->p->kind, r->p->impl ? r->p->impl : "?",
			 r->p->dtype ? r->p->dtype : "");
	else
		snprintf(name, sizeof(name), "%s (not described)", r->key);
	cell = dlview_fit(name, 36, 0);
	tabw_str(t, cell);
	free(cell);
	tabw_str(t, row_kind(r));
	tabw_cell_str(t, "", r->p ? r->p->impl : NULL);
	tabw_cell_str(t, "", r->p ? r->p->prop : NULL);
	tabw_cell_str(t, "", r->p ? r->p->shape : NULL);
	tabw_cell_str(t, "", r->p ? r->p->dtype : NULL);
	j = json_mem_open(&m, JSON_SPACED);
	json_obj(j);
	for (int k = 0; r->p && k < ITT_MD_NR; k++) {
		char dt[256], fmt[256], dims[256];

		if (!r->p->md[k])
			continue;
		md_parts(r->p->md[k], dt, fmt, dims, sizeof(dt));
		json_kobj(j, itt_md_names[k]);
		json_kstr(j, "data_type", dt);
		json_kstr(j, "format", fmt);
		json_kstr(j, "dims", dims);
		json_end(j);
	}
	json_end(j);
	cell = json_mem_close(&m);
	tabw_cell(t, "", cell);
	free(cell);
	tabw_cell_str(t, "", !r->p ? NULL : r->p->md[ITT_MD_SRC] ? r->p->md[ITT_MD_SRC] :
		      r->p->md[ITT_MD_DIFF_SRC]);
	tabw_cell_str(t, "", !r->p ? NULL : r->p->md[ITT_MD_WEI] ? r->p->md[ITT_MD_WEI] :
		      r->p->md[ITT_MD_DIFF_WEI]);
	tabw_cell_str(t, "", !r->p ? NULL : r->p->md[ITT_MD_DST] ? r->p->md[ITT_MD_DST] :
		      r->p->md[ITT_MD_DIFF_DST]);
	/* calls and time where oneDNN's executions counted them; an em dash where not */
	snprintf(b, sizeof(b), "%llu", (unsigned long long)r->calls);
	cell = dlview_fit(r->calls ? b : "\u2014", 7, 1);
	tabw_cell(t, cell, b);
	free(cell);
	snprintf(b, sizeof(b), "%llu", (unsigned long long)r->ns);
	cell = dlview_fit(r->calls ? output_duration_ns(ns, sizeof(ns), (double)r->ns) : "\u2014", 9, 1);
	tabw_cell(t, cell, b);
	free(cell);
	snprintf(b, sizeof(b), "%.0f", r->calls ? (double)r->ns / r->calls : 0.0);
	cell = dlview_fit(r->calls ? output_duration_ns(ns, sizeof(ns), (double)r->ns / r->calls) : "\u2014",
		   9, 1);
	tabw_cell(t, cell, b);
	free(cell);
	tabw_count(t, r->samples);
	tabw_pct(t, pct(r->samples, v->samples), 1);
	for (int k = 0; k < 5; k++) {
		static const int part[] = { FP_JIT, FP_LIB, FP_OTHER, FP_WAIT, FP_KERNEL };

		if (fp)
			tabw_count(t, fp->part[part[k]]);
		else
			tabw_none(t);
	}
	j = json_mem_open(&m, JSON_SPACED);
	json_arr(j);
	for (size_t k = 0; fp && k < fp->nr_kernels; k++) {
		json_obj(j);
		json_kstr(j, "name", fp->kernels[k].name ? fp->kernels[k].name : "");
		json_kstr(j, "isa", fp->kernels[k].isa ? fp->kernels[k].isa : "");
		json_ku64(j, "samples", fp->kernels[k].samples);
		json_end(j);
	}
	json_end(j);
	cell = json_mem_close(&m);
	tabw_cell(t, "", cell);
	free(cell);
	tabw_cell_str(t, "", fp && fp->nr_kernels ? fp->kernels[0].name : NULL);
	op = top_of(v, &v->prim_op, r->key, &n);
	opname = op ? attr_op_name(op, NULL) : NULL;
	cell = top_json("name", op ? (opname ? opname : "") : NULL, n);
	tabw_cell(t, "", cell);
	free(cell);
	tabw_cell_str(t, "", opname);
	line = top_of(v, &v->prim_line, r->key, &n);
	cell = top_json("line", line, n);
	tabw_cell(t, "", cell);
	free(cell);
	tabw_cell_str(t, "", line);
	cell = details(v, r);
	tabw_note(t, cell);
	free(cell);
}

static int cmp_impl(const void *a, const void *b)
{
	const struct dlview_impl *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->impl, y->impl);
}

/* Is word one of list's ", "-separated items? */
static int in_list(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (!p[n] || p[n] == ','))
			return 1;
	return 0;
}

size_t dlview_impls(struct dlview *v, struct dlview_impl **out, const char **why)
{
	struct prim_row *rows;
	struct dlview_impl *im = NULL;
	size_t n = prim_rows(v, &rows), nr = 0, alloc = 0, i, j;
	uint64_t in_prims = 0;

	for (i = 0; i < n; i++) {
		const struct prim_row *r = &rows[i];
		const char *impl;
		size_t kl;

		in_prims += r->samples;
		if (!r->p)
			continue;
		impl = r->p->impl ? r->p->impl : "?";
		for (j = 0; j < nr && strcmp(im[j].impl, impl); j++)
			;
		if (j == nr) {
			ALLOC_GROW(im, nr + 1, alloc);
			memset(&im[nr], 0, sizeof(*im));
			im[nr++].impl = impl;
		}
		im[j].prims++;
		im[j].calls += r->calls;
		im[j].ns += r->ns;
		im[j].samples += r->samples;
		/* its kinds, each once, as many as fit */
		kl = strlen(im[j].kinds);
		if (!in_list(im[j].kinds, r->p->kind) &&
		    kl + strlen(r->p->kind) + 3 < sizeof(im[j].kinds))
			snprintf(im[j].kinds + kl, sizeof(im[j].kinds) - kl, "%s%s", kl ? ", " : "",
				 r->p->kind);
	}
	if (nr)
		qsort(im, nr, sizeof(*im), cmp_impl);
	if (why)
		*why = !nr && in_prims ? undescribed_why(v, 0) : NULL;
	free(rows);
	*out = im;
	return nr;
}

void dlview_print_prim(struct dlview *v, FILE *out, enum out_format fmt, size_t limit)
{
	struct prim_row *rows;
	size_t n = prim_rows(v, &rows), i, described = 0;
	uint64_t in_prims = 0;
	const char *why;
	struct tabw *t = prim_table();

	for (i = 0; i < n; i++) {
		described += rows[i].p != NULL;
		in_prims += rows[i].samples;
	}
	why = undescribed_why(v, described);
	if (limit && n > limit)
		n = limit;
	for (i = 0; i < n; i++)
		add_prim_row(v, t, &rows[i]);
	if (fmt == OUT_JSON) {
		struct json j;

		dlview_json_begin(&j, out, "prim", v->samples);
		json_ku64(&j, "prim_samples", in_prims);
		json_kbool(&j, "described", described);
		json_kstr(&j, "note", why);
		tabw_json_last(t, &j, "rows");
	} else if (fmt == OUT_CSV) {
		tabw_print(t, out, fmt);
	} else {
		tabw_print(t, out, fmt);
		if (why)
			fprintf(out, "\n%s\n", why);
		else
			fprintf(out, "\n%.1f%% of samples ran inside oneDNN primitives; calls and time from\n"
				"their executions, the rest from the samples inside each.\n",
				pct(in_prims, v->samples));
	}
	tabw_free(t);
	free(rows);
}
