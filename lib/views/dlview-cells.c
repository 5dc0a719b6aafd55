/* dlview-cells.c - what every table of the DL view writes with: durations, cells cut
 * to a width, the top entries of a map, Python frames' parts (dlview-priv.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlview-priv.h"
#include "output.h"
#include "rephash.h"
#include "util.h"

/* Print s in exactly width columns: cut in the middle with '…' when longer (an
 * operator's name keeps its namespace and its ending), padded with blanks (right-aligned
 * when right).  Names are ASCII; '…' and '—' are one column. */
void dlview_put_cell(FILE *out, const char *s, size_t width, int right)
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

char *dlview_fit(const char *s, size_t width, int right)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		die("out of memory");
	dlview_put_cell(f, s, width, right);
	fclose(f);
	return buf;
}

/* c before d: more samples first, then by name */
static int cnt_before(const struct cnt *c, const struct cnt *d)
{
	if (c->n != d->n)
		return c->n > d->n;
	return strcmp(c->k2 ? c->k2 : "", d->k2 ? d->k2 : "") < 0;
}

/* The k2 of m's entries with k1 == key, by samples, at most max. */
size_t dlview_top_of(const struct cmap *m, const char *key, const struct cnt **out, size_t max)
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
const char *dlview_py_path(struct dlview *v, const char *sym)
{
	const struct cnt *best = NULL;

	/* files of one name ("__init__.py:1" of several packages): the one most frames of
	 * the line were in, then the first by name; not the table's order, which follows
	 * interned addresses and differs from run to run */
	for (size_t i = 0; i < v->py_path.size; i++) {
		const struct cnt *c = &v->py_path.tab[i];

		if (c->k1 == sym && (!best || c->n > best->n ||
				     (c->n == best->n && strcmp(c->k2, best->k2) < 0)))
			best = c;
	}
	return best ? best->k2 : NULL;
}

/* "func (file.py:12)" -> function, line */
void dlview_py_parts(const char *sym, char *fn, size_t fnsz, int *line)
{
	const char *open = strrchr(sym, '('), *colon = open ? strrchr(open, ':') : NULL;

	*line = colon ? atoi(colon + 1) : 0;
	snprintf(fn, fnsz, "%.*s", open && open > sym ? (int)(open - 1 - sym) : (int)strlen(sym), sym);
}

void dlview_json_begin(struct json *j, FILE *out, const char *kind, uint64_t samples)
{
	json_init(j, out, JSON_SPACED);
	json_obj(j);
	json_kstr(j, "kind", kind);
	json_ku64(j, "samples", samples);
}

void dlview_print_table(struct dlview *v, struct tabw *t, FILE *out, enum out_format fmt,
			const char *kind)
{
	struct json j;

	if (fmt != OUT_JSON) {
		tabw_print(t, out, fmt);
		return;
	}
	dlview_json_begin(&j, out, kind, v->samples);
	tabw_json_last(t, &j, "rows");
}

void dlview_share_cells(const struct dlview *v, struct tabw *t, uint64_t n, int places)
{
	tabw_pct(t, pct(n, v->samples), places);
	tabw_count(t, n);
	tabw_ns(t, (double)n * v->ns_per_sample);
}

void dlview_json_end(struct json *j)
{
	json_raw(j, "\n");
	json_end(j);
	json_end(j);
	json_raw(j, "\n");
}
