/* tabw.c - the table writer of the views (tabw.h) */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "output.h"
#include "tabw.h"
#include "util.h"

enum val { VAL_TEXT, VAL_STR, VAL_LIT, VAL_NONE };

struct tabw_cell {
	char *text;	/* as the text table shows it */
	char *val;	/* JSON and CSV: a string (VAL_STR), JSON digits (VAL_LIT) */
	enum val kind;	/* VAL_TEXT: the text is the string */
	char *note;	/* the row's note (its first cell's) */
};

struct tabw {
	struct tabw_colspec *cols;
	size_t nr_cols, alloc_cols;
	struct tabw_cell *cells;	/* row-major */
	size_t nr_cells, alloc_cells;
	int gap;
	const char *before_row, *before_end;
};

struct tabw *tabw_new(void)
{
	struct tabw *t = xcalloc(1, sizeof(struct tabw));

	t->gap = 2;
	return t;
}

void tabw_free(struct tabw *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_cells; i++) {
		free(t->cells[i].text);
		free(t->cells[i].val);
		free(t->cells[i].note);
	}
	free(t->cells);
	free(t->cols);
	free(t);
}

void tabw_add(struct tabw *t, const struct tabw_colspec *c)
{
	ALLOC_GROW(t->cols, t->nr_cols + 1, t->alloc_cols);
	t->cols[t->nr_cols++] = *c;
}

void tabw_col(struct tabw *t, const char *head, const char *key, int kind)
{
	tabw_add(t, &(struct tabw_colspec){ .head = head, .key = key, .kind = kind });
}

void tabw_gap(struct tabw *t, int gap)
{
	t->gap = gap;
}

void tabw_json_rows(struct tabw *t, const char *before_row, const char *before_end)
{
	t->before_row = before_row;
	t->before_end = before_end;
}

void tabw_row(struct tabw *t)
{
	/* a row left short is padded with empty cells */
	while (t->nr_cols && t->nr_cells % t->nr_cols)
		tabw_none(t);
}

static void add_cell(struct tabw *t, char *text, char *val, enum val kind)
{
	ALLOC_GROW(t->cells, t->nr_cells + 1, t->alloc_cells);
	t->cells[t->nr_cells++] = (struct tabw_cell){ text, val, kind, NULL };
}

void tabw_str(struct tabw *t, const char *s)
{
	add_cell(t, xstrdup(s ? s : ""), NULL, VAL_TEXT);
}

void tabw_u64(struct tabw *t, uint64_t v)
{
	char digits[32], buf[48];
	size_t n = (size_t)snprintf(digits, sizeof(digits), "%llu", (unsigned long long)v), o = 0;

	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = 0;
	add_cell(t, xstrdup(buf), xstrdup(digits), VAL_LIT);
}

void tabw_num(struct tabw *t, double v, int decimals)
{
	add_cell(t, xasprintf("%.*f", decimals, v), xasprintf("%.6g", v), VAL_LIT);
}

void tabw_none(struct tabw *t)
{
	add_cell(t, xstrdup("-"), NULL, VAL_NONE);
}

void tabw_cell(struct tabw *t, const char *text, const char *json)
{
	add_cell(t, xstrdup(text ? text : ""), json ? xstrdup(json) : NULL,
		 json ? VAL_LIT : VAL_NONE);
}

void tabw_cell_str(struct tabw *t, const char *text, const char *s)
{
	add_cell(t, xstrdup(text ? text : ""), s ? xstrdup(s) : NULL, s ? VAL_STR : VAL_NONE);
}

void tabw_pct(struct tabw *t, double pct, int decimals)
{
	add_cell(t, xasprintf("%.*f%%", decimals, pct), xasprintf("%.2f", pct), VAL_LIT);
}

void tabw_count(struct tabw *t, uint64_t v)
{
	char *s = xasprintf("%llu", (unsigned long long)v);

	add_cell(t, s, xstrdup(s), VAL_LIT);
}

void tabw_ns(struct tabw *t, double ns)
{
	char b[32];

	add_cell(t, xstrdup(output_duration_ns(b, sizeof(b), ns)), xasprintf("%.0f", ns), VAL_LIT);
}

void tabw_note(struct tabw *t, const char *text)
{
	size_t nc = t->nr_cols, first = nc ? (t->nr_cells ? (t->nr_cells - 1) / nc * nc : 0) : 0;

	if (first < t->nr_cells) {
		free(t->cells[first].note);
		t->cells[first].note = xstrdup(text);
	}
}

static int in(const struct tabw_colspec *c, unsigned what)
{
	return !c->in || (c->in & what);
}

void tabw_json(struct tabw *t, struct json *j)
{
	size_t nc = t->nr_cols, nr;

	tabw_row(t);
	nr = nc ? t->nr_cells / nc : 0;
	json_arr(j);
	for (size_t r = 0; r < nr; r++) {
		if (t->before_row == TABW_ROWS_INLINE)
			;
		else if (t->before_row)
			json_pre(j, t->before_row);
		else if (r)
			json_pre(j, "\n ");
		json_obj(j);
		for (size_t c = 0; c < nc; c++) {
			const struct tabw_cell *x = &t->cells[r * nc + c];

			if (!in(&t->cols[c], TABW_IN_JSON) || (x->kind == VAL_NONE && t->cols[c].omit))
				continue;
			json_key(j, t->cols[c].key);
			if (x->kind == VAL_TEXT)
				json_str(j, x->text);
			else if (x->kind == VAL_NONE)
				json_null(j);
			else if (x->kind == VAL_STR)
				json_str(j, x->val);
			else
				json_lit(j, x->val);
		}
		json_end(j);
	}
	if (t->before_end)
		json_raw(j, t->before_end);
	json_end(j);
}

void tabw_json_last(struct tabw *t, struct json *j, const char *key)
{
	json_key(j, key);
	tabw_json_rows(t, "\n  ", "\n");
	tabw_json(t, j);
	json_end(j);
	json_raw(j, "\n");
}

static void print_csv(struct tabw *t, FILE *out, size_t nr)
{
	size_t nc = t->nr_cols;
	int first = 1;

	for (size_t c = 0; c < nc; c++)
		if (in(&t->cols[c], TABW_IN_CSV)) {
			fprintf(out, "%s%s", first ? "" : ",", t->cols[c].key);
			first = 0;
		}
	fputc('\n', out);
	for (size_t r = 0; r < nr; r++) {
		first = 1;
		for (size_t c = 0; c < nc; c++) {
			const struct tabw_cell *x = &t->cells[r * nc + c];

			if (!in(&t->cols[c], TABW_IN_CSV))
				continue;
			if (!first)
				fputc(',', out);
			first = 0;
			if (x->kind == VAL_LIT)
				fputs(x->val, out);
			else if (x->kind == VAL_STR)
				fput_csv_str(out, x->val);
			else if (x->kind == VAL_TEXT)
				fput_csv_str(out, x->text);
		}
		fputc('\n', out);
	}
}

static int cmp_text_at(const void *a, const void *b)
{
	const struct tabw_colspec *x = *(const struct tabw_colspec *const *)a;
	const struct tabw_colspec *y = *(const struct tabw_colspec *const *)b;

	if (x->text_at != y->text_at)
		return x->text_at < y->text_at ? -1 : 1;
	return x < y ? -1 : x > y;
}

static size_t cols(const char *s)
{
	return utf8_cols(s, strlen(s));
}

/* One text cell: its gap, then s in the column's width, in display columns (a cut
 * column cuts it there; the last left-aligned column is not padded) */
static void put_text(FILE *out, const struct tabw_colspec *c, int gap, size_t w, int last,
		     const char *s)
{
	size_t n = cols(s);

	fprintf(out, "%*s", gap, "");
	if (c->cut && n > w) {
		size_t len = 0;

		while (s[len] && utf8_cols(s, len + 1) <= w)
			len++;
		while (s[len] && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;	/* not inside a character */
		fwrite(s, 1, len, out);
		return;
	}
	if (c->kind == TABW_NUM && n < w)
		fprintf(out, "%*s", (int)(w - n), "");
	fputs(s, out);
	if (c->kind != TABW_NUM && !last && n < w)
		fprintf(out, "%*s", (int)(w - n), "");
}

static void print_text(struct tabw *t, FILE *out, size_t nr)
{
	size_t nc = t->nr_cols, nt = 0;
	const struct tabw_colspec **order = xcalloc(nc ? nc : 1, sizeof(*order));
	size_t *idx = xcalloc(nc ? nc : 1, sizeof(*idx)), *w = xcalloc(nc ? nc : 1, sizeof(*w));

	for (size_t c = 0; c < nc; c++)
		if (in(&t->cols[c], TABW_IN_TEXT))
			order[nt++] = &t->cols[c];
	qsort(order, nt, sizeof(*order), cmp_text_at);
	for (size_t k = 0; k < nt; k++) {
		idx[k] = (size_t)(order[k] - t->cols);
		w[k] = order[k]->width > 0 ? (size_t)order[k]->width : cols(order[k]->head);
		for (size_t r = 0; !order[k]->width && r < nr; r++) {
			size_t l = cols(t->cells[r * nc + idx[k]].text);

			if (l > w[k])
				w[k] = l;
		}
	}
	for (size_t r = 0; r <= nr; r++) {
		for (size_t k = 0; k < nt; k++) {
			const struct tabw_colspec *c = order[k];
			const char *s = r ? t->cells[(r - 1) * nc + idx[k]].text : c->head;

			put_text(out, c, k ? (c->gap ? c->gap : t->gap) : 0, w[k], k + 1 == nt, s);
		}
		fputc('\n', out);
		if (r && t->cells[(r - 1) * nc].note)
			fputs(t->cells[(r - 1) * nc].note, out);
	}
	free(order);
	free(idx);
	free(w);
}

void tabw_print(struct tabw *t, FILE *out, enum out_format as)
{
	size_t nc = t->nr_cols, nr;

	tabw_row(t);
	nr = nc ? t->nr_cells / nc : 0;
	if (as == OUT_JSON) {
		struct json j;

		json_init(&j, out, JSON_SPACED);
		tabw_json(t, &j);
	} else if (as == OUT_CSV) {
		print_csv(t, out, nr);
	} else {
		print_text(t, out, nr);
	}
}
