/* tabw.c - a small table writer (tabw.h) */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "tabw.h"
#include "util.h"

struct tabw_cell {
	char *text;	/* as the text table and CSV show it */
	char *json;	/* its JSON value, NULL: the text as a JSON string */
	int none;
};

struct tabw {
	struct tabw_colspec {
		const char *head, *key;
		int kind;
	} *cols;
	size_t nr_cols, alloc_cols;
	struct tabw_cell *cells;	/* row-major */
	size_t nr_cells, alloc_cells;
};

struct tabw *tabw_new(void)
{
	return xcalloc(1, sizeof(struct tabw));
}

void tabw_free(struct tabw *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr_cells; i++) {
		free(t->cells[i].text);
		free(t->cells[i].json);
	}
	free(t->cells);
	free(t->cols);
	free(t);
}

void tabw_col(struct tabw *t, const char *head, const char *key, int kind)
{
	ALLOC_GROW(t->cols, t->nr_cols + 1, t->alloc_cols);
	t->cols[t->nr_cols++] = (struct tabw_colspec){ head, key, kind };
}

void tabw_row(struct tabw *t)
{
	/* a row left short is padded with empty cells */
	while (t->nr_cols && t->nr_cells % t->nr_cols)
		tabw_none(t);
}

static void add_cell(struct tabw *t, char *text, char *json, int none)
{
	ALLOC_GROW(t->cells, t->nr_cells + 1, t->alloc_cells);
	t->cells[t->nr_cells++] = (struct tabw_cell){ text, json, none };
}

void tabw_str(struct tabw *t, const char *s)
{
	add_cell(t, xstrdup(s ? s : ""), NULL, 0);
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
	add_cell(t, xstrdup(buf), xstrdup(digits), 0);
}

void tabw_num(struct tabw *t, double v, int decimals)
{
	add_cell(t, xasprintf("%.*f", decimals, v), xasprintf("%.6g", v), 0);
}

void tabw_none(struct tabw *t)
{
	add_cell(t, xstrdup("-"), xstrdup("null"), 1);
}

void tabw_json(struct tabw *t, struct json *j)
{
	size_t nc = t->nr_cols, nr = nc ? (t->nr_cells + nc - 1) / nc : 0;

	tabw_row(t);
	json_arr(j);
	for (size_t r = 0; r < nr; r++) {
		if (r)
			json_pre(j, "\n ");
		json_obj(j);
		for (size_t c = 0; c < nc; c++) {
			const struct tabw_cell *x = &t->cells[r * nc + c];

			json_key(j, t->cols[c].key);
			if (x->json)
				json_lit(j, x->json);
			else
				json_str(j, x->text);
		}
		json_end(j);
	}
	json_end(j);
}

void tabw_print(struct tabw *t, FILE *out, enum tabw_as as)
{
	size_t nc = t->nr_cols, nr = nc ? (t->nr_cells + nc - 1) / nc : 0;

	tabw_row(t);
	if (as == TABW_AS_JSON) {
		struct json j;

		json_init(&j, out, JSON_SPACED);
		tabw_json(t, &j);
		return;
	}
	if (as == TABW_AS_CSV) {
		for (size_t c = 0; c < nc; c++)
			fprintf(out, "%s%s", c ? "," : "", t->cols[c].key);
		fputc('\n', out);
		for (size_t r = 0; r < nr; r++) {
			for (size_t c = 0; c < nc; c++) {
				const struct tabw_cell *x = &t->cells[r * nc + c];

				if (c)
					fputc(',', out);
				if (x->none)
					continue;
				if (t->cols[c].kind == TABW_NUM)
					fputs(x->json ? x->json : x->text, out);
				else
					fput_csv_str(out, x->text);
			}
			fputc('\n', out);
		}
		return;
	}
	{
		size_t *w = xcalloc(nc ? nc : 1, sizeof(*w));

		for (size_t c = 0; c < nc; c++)
			w[c] = strlen(t->cols[c].head);
		for (size_t i = 0; i < nr * nc; i++) {
			size_t l = strlen(t->cells[i].text);

			if (l > w[i % nc])
				w[i % nc] = l;
		}
		for (size_t r = 0; r <= nr; r++) {
			for (size_t c = 0; c < nc; c++) {
				const char *s = r ? t->cells[(r - 1) * nc + c].text : t->cols[c].head;
				int last = c + 1 == nc;

				if (t->cols[c].kind == TABW_NUM)
					fprintf(out, "%s%*s", c ? "  " : "", (int)w[c], s);
				else if (last)
					fprintf(out, "%s%s", c ? "  " : "", s);
				else
					fprintf(out, "%s%-*s", c ? "  " : "", (int)w[c], s);
			}
			fputc('\n', out);
		}
		free(w);
	}
}
