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

static void json_row(struct dlview *v, struct json *j, const struct prim_row *r)
{
	const struct fp_prim *fp = fastpath_prim(v->fp_prims, r->key);
	const char *op, *line;
	uint64_t n;

	json_pre(j, "\n  ");
	json_obj(j);
	json_kstr(j, "kind", row_kind(r));
	json_kstr(j, "impl", r->p ? r->p->impl : NULL);
	json_kstr(j, "prop", r->p ? r->p->prop : NULL);
	json_kstr(j, "shape", r->p ? r->p->shape : NULL);
	json_kstr(j, "data_type", r->p ? r->p->dtype : NULL);
	json_kobj(j, "tensors");
	for (int m = 0; r->p && m < ITT_MD_NR; m++) {
		char dt[256], fmt[256], dims[256];

		if (!r->p->md[m])
			continue;
		md_parts(r->p->md[m], dt, fmt, dims, sizeof(dt));
		json_kobj(j, itt_md_names[m]);
		json_kstr(j, "data_type", dt);
		json_kstr(j, "format", fmt);
		json_kstr(j, "dims", dims);
		json_end(j);
	}
	json_end(j);
	json_ku64(j, "calls", r->calls);
	json_ku64(j, "total_ns", r->ns);
	json_knum(j, "avg_ns", "%.0f", r->calls ? (double)r->ns / r->calls : 0.0);
	json_ku64(j, "samples", r->samples);
	json_knum(j, "samples_pct", "%.2f", pct(r->samples, v->samples));
	if (fp) {
		json_ku64(j, "jit_samples", fp->part[FP_JIT]);
		json_ku64(j, "non_jit_samples", fp->part[FP_LIB]);
		json_ku64(j, "other_samples", fp->part[FP_OTHER]);
		json_ku64(j, "wait_samples", fp->part[FP_WAIT]);
		json_ku64(j, "kernel_samples", fp->part[FP_KERNEL]);
	}
	json_karr(j, "kernels");
	for (size_t k = 0; fp && k < fp->nr_kernels; k++) {
		json_obj(j);
		json_kstr(j, "name", fp->kernels[k].name ? fp->kernels[k].name : "");
		json_kstr(j, "isa", fp->kernels[k].isa ? fp->kernels[k].isa : "");
		json_ku64(j, "samples", fp->kernels[k].samples);
		json_end(j);
	}
	json_end(j);
	if ((op = top_of(v, &v->prim_op, r->key, &n))) {
		const char *name = attr_op_name(op, NULL);

		json_kobj(j, "op");
		json_kstr(j, "name", name ? name : "");
		json_ku64(j, "samples", n);
		json_end(j);
	} else {
		json_knull(j, "op");
	}
	if ((line = top_of(v, &v->prim_line, r->key, &n))) {
		json_kobj(j, "python_line");
		json_kstr(j, "line", line);
		json_ku64(j, "samples", n);
		json_end(j);
	} else {
		json_knull(j, "python_line");
	}
	json_end(j);
}

static void csv_row(struct dlview *v, FILE *out, const struct prim_row *r)
{
	const struct fp_prim *fp = fastpath_prim(v->fp_prims, r->key);
	const char *op, *line;
	uint64_t n;

	fput_csv_str(out, row_kind(r));
	fputc(',', out);
	if (r->p) {
		const char *f[] = { r->p->impl, r->p->prop, r->p->shape, r->p->dtype,
				    r->p->md[ITT_MD_SRC] ? r->p->md[ITT_MD_SRC] : r->p->md[ITT_MD_DIFF_SRC],
				    r->p->md[ITT_MD_WEI] ? r->p->md[ITT_MD_WEI] : r->p->md[ITT_MD_DIFF_WEI],
				    r->p->md[ITT_MD_DST] ? r->p->md[ITT_MD_DST] : r->p->md[ITT_MD_DIFF_DST] };

		for (size_t i = 0; i < ARRAY_SIZE(f); i++) {
			if (f[i])
				fput_csv_str(out, f[i]);
			fputc(',', out);
		}
	} else {
		fputs(",,,,,,,", out);
	}
	fprintf(out, "%llu,%llu,%.0f,%llu,%.2f,", (unsigned long long)r->calls,
		(unsigned long long)r->ns, r->calls ? (double)r->ns / r->calls : 0.0,
		(unsigned long long)r->samples, pct(r->samples, v->samples));
	if (fp && fp->nr_kernels)
		fput_csv_str(out, fp->kernels[0].name);
	fputc(',', out);
	if ((op = top_of(v, &v->prim_op, r->key, &n)))
		fput_csv_str(out, attr_op_name(op, NULL));
	fputc(',', out);
	if ((line = top_of(v, &v->prim_line, r->key, &n)))
		fput_csv_str(out, line);
	fputc('\n', out);
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
	op = top_of(v, &v->prim_op, r->key, &n);
	if (op && r->samples) {
		strbuf_addf(&sb, "in %s %.0f%%", attr_op_name(op, NULL), pct(n, r->samples));
		if ((line = top_of(v, &v->prim_line, r->key, &n)))
			strbuf_addf(&sb, ", from %s %.0f%%", line, pct(n, r->samples));
		fput_wrapped(out, " ", sb.buf, 4, 79);
	}
	strbuf_release(&sb);
}

static void table_row(struct dlview *v, FILE *out, const struct prim_row *r)
{
	char name[160], b1[32], b2[32], cb[24] = "\u2014";

	if (r->p)
		snprintf(name, sizeof(name), "%s %s %s", r->p->kind, r->p->impl ? r->p->impl : "?",
			 r->p->dtype ? r->p->dtype : "");
	else
		snprintf(name, sizeof(name), "%s (not described)", r->key);
	if (r->calls)
		snprintf(cb, sizeof(cb), "%llu", (unsigned long long)r->calls);
	dlview_put_cell(out, name, 36, 0);
	fputc(' ', out);
	dlview_put_cell(out, cb, 7, 1);
	fputc(' ', out);
	dlview_put_cell(out, r->calls ? output_duration_ns(b1, sizeof(b1), (double)r->ns / r->calls) : "\u2014", 9, 1);
	fputc(' ', out);
	dlview_put_cell(out, r->calls ? output_duration_ns(b2, sizeof(b2), (double)r->ns) : "\u2014", 9, 1);
	fprintf(out, " %7llu %6.1f%%\n", (unsigned long long)r->samples, pct(r->samples, v->samples));
	table_details(v, out, r);
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

	for (i = 0; i < n; i++) {
		described += rows[i].p != NULL;
		in_prims += rows[i].samples;
	}
	why = undescribed_why(v, described);
	if (limit && n > limit)
		n = limit;
	if (fmt == OUT_JSON) {
		struct json j;

		dlview_json_begin(&j, out, "prim", v->samples);
		json_ku64(&j, "prim_samples", in_prims);
		json_kbool(&j, "described", described);
		json_kstr(&j, "note", why);
		json_karr(&j, "rows");
		for (i = 0; i < n; i++)
			json_row(v, &j, &rows[i]);
		dlview_json_end(&j);
	} else if (fmt == OUT_CSV) {
		fprintf(out, "kind,impl,prop,shape,data_type,src,wei,dst,calls,total_ns,avg_ns,samples,"
			"samples_pct,top_kernel,op,python_line\n");
		for (i = 0; i < n; i++)
			csv_row(v, out, &rows[i]);
	} else {
		fprintf(out, "%-36s %7s %9s %9s %7s %7s\n", "Primitive (kind, impl, data type)",
			"Calls", "Avg/call", "Time", "Samples", "%");
		for (i = 0; i < n; i++)
			table_row(v, out, &rows[i]);
		if (why)
			fprintf(out, "\n%s\n", why);
		else
			fprintf(out, "\n%.1f%% of samples ran inside oneDNN primitives; calls and time from\n"
				"their executions, the rest from the samples inside each.\n",
				pct(in_prims, v->samples));
	}
	free(rows);
}
