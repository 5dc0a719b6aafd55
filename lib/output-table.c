/* output-table.c - the top-style table (see output.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "util.h"

#define ELLIPSIS "\xe2\x80\xa6"

void fmt_duration(char *buf, size_t sz, uint64_t ns)
{
	if (ns < 1000000ULL)
		snprintf(buf, sz, "%.1f us", ns / 1e3);
	else if (ns < 1000000000ULL)
		snprintf(buf, sz, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, sz, "%.2f s", ns / 1e9);
}

/* display columns of a UTF-8 string (each code point one column) */
static size_t cols(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	return n;
}

/* Collapse every <...> (outermost level) into <…> and every (...) into (), and
 * "(anonymous namespace)" into "(anon)". */
static void collapse(const char *in, struct strbuf *sb)
{
	int angle = 0, paren = 0;

	for (const char *p = in; *p; p++) {
		if (!angle && !paren && !strncmp(p, "(anonymous namespace)", 21)) {
			strbuf_addstr(sb, "(anon)");
			p += 20;
			continue;
		}
		if (*p == '<' && !paren && strncmp(p, "<=", 2) && (p == in || p[-1] != '<' || angle)) {
			/* operator<< stays as is */
			if (!angle && !strncmp(p, "<<", 2) && p > in && p[-1] == 'r') {
				strbuf_addstr(sb, "<<");
				p++;
				continue;
			}
			if (!angle)
				strbuf_addstr(sb, "<" ELLIPSIS);
			angle++;
			continue;
		}
		if (*p == '>' && angle && !paren) {
			if (!--angle)
				strbuf_addch(sb, '>');
			continue;
		}
		if (angle)
			continue;
		if (*p == '(') {
			if (!paren)
				strbuf_addch(sb, '(');
			paren++;
			continue;
		}
		if (*p == ')' && paren) {
			if (!--paren)
				strbuf_addch(sb, ')');
			continue;
		}
		if (paren)
			continue;
		strbuf_addch(sb, *p);
	}
}

/* copy at most n display columns of s */
static void put_cols(struct strbuf *sb, const char *s, size_t n)
{
	for (; *s && n; n--) {
		const char *q = s + 1;

		while (*q && ((unsigned char)*q & 0xc0) == 0x80)
			q++;
		strbuf_add(sb, s, q - s);
		s = q;
	}
}

static const char *skip_cols(const char *s, size_t n)
{
	for (; *s && n; n--) {
		s++;
		while (*s && ((unsigned char)*s & 0xc0) == 0x80)
			s++;
	}
	return s;
}

void shorten_name(const char *name, size_t width, char *buf, size_t bufsz)
{
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;
	const char *src = name;
	size_t c;

	if (!bufsz)
		return;
	if (width < 4)
		width = 4;
	if (cols(name) > width) {
		collapse(name, &a);
		src = a.buf ? a.buf : name;
	}
	c = cols(src);
	if (c > width) {
		size_t head = (width - 1) / 2, tail = width - 1 - head;

		put_cols(&b, src, head);
		strbuf_addstr(&b, ELLIPSIS);
		strbuf_addstr(&b, skip_cols(src, c - tail));
		src = b.buf;
	}
	snprintf(buf, bufsz, "%s", src);
	strbuf_release(&a);
	strbuf_release(&b);
}

static void pad(FILE *out, const char *s, size_t width, int right)
{
	size_t c = cols(s);

	if (right)
		for (size_t i = c; i < width; i++)
			fputc(' ', out);
	fputs(s, out);
	if (!right)
		for (size_t i = c; i < width; i++)
			fputc(' ', out);
}

void output_header(FILE *out, const struct report_header *h)
{
	char dur[32], t[32];
	uint64_t n = h->samples ? h->samples : 1;

	fmt_duration(dur, sizeof(dur), h->duration_ns);
	fprintf(out, "# file:    %s%s\n", h->file, h->truncated ? " (truncated)" : "");
	if (h->cmdline)
		fprintf(out, "# command: %s\n", h->cmdline);
	fprintf(out, "# event:   %s%s%s%s\n", h->event, h->sampling ? " (" : "",
		h->sampling ? h->sampling : "", h->sampling ? ")" : "");
	fprintf(out, "# samples: %llu in %s, lost: %llu\n", (unsigned long long)h->samples, dur,
		(unsigned long long)h->lost);
	fprintf(out, "# stacks:  %.1f%% reach the thread root, %.1f%% of samples named\n",
		100.0 * h->complete_stacks / n, 100.0 * h->named / n);
	fmt_duration(t, sizeof(t), h->ns_per_sample);
	fprintf(out, "# time:    %s per sample%s\n", t,
		h->sample_is_time ? "" : " (estimated from the duration)");
	fputc('\n', out);
}

void output_table(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		  const struct output_opts *o)
{
	char t[32], name[1024], dso[256];
	int width = o->width > 40 ? o->width : 80;
	const char *key = h->key ? h->key : "symbol";
	int symkey = !strcmp(key, "symbol");
	uint64_t n = h->samples ? h->samples : 1;
	/* fixed columns: Self% 7, Self 7, time 9, Total% 7, Total 7, separators */
	int fixed = 7 + 1 + 7 + 1 + 9 + 1 + (o->no_children ? 0 : 7 + 1 + 7 + 1);
	int rest = width - fixed - 1;
	int dso_w = 0, sym_w;
	int short_kernel = 0;

	if (symkey) {
		size_t mx = 3;

		for (size_t i = 0; i < nr && (!o->limit || i < o->limit); i++)
			if (rows[i]->dso && cols(rows[i]->dso) > mx)
				mx = cols(rows[i]->dso);
		if (rest < 60 && mx >= 17) {
			/* "[kernel.kallsyms]" is the widest usual name: "[kernel]" says the same */
			short_kernel = 1;
			mx = 3;
			for (size_t i = 0; i < nr && (!o->limit || i < o->limit); i++) {
				const char *d = rows[i]->dso ? rows[i]->dso : "";
				size_t c = strcmp(d, "[kernel.kallsyms]") ? cols(d) : 8;

				if (c > mx)
					mx = c;
			}
		}
		dso_w = (int)mx < rest * 35 / 100 ? (int)mx : rest * 35 / 100;
	}
	sym_w = rest - (symkey ? dso_w + 1 : 0);
	const char *bold = o->color ? "\033[1m" : "", *off = o->color ? "\033[0m" : "";
	const char *red = o->color ? "\033[31m" : "";

	output_header(out, h);

	fprintf(out, "%s", bold);
	pad(out, "Self%", 7, 1);
	fputc(' ', out);
	pad(out, "Self", 7, 1);
	fputc(' ', out);
	pad(out, h->sample_is_time ? "Time" : "~Time", 9, 1);
	fputc(' ', out);
	if (!o->no_children) {
		pad(out, "Total%", 7, 1);
		fputc(' ', out);
		pad(out, "Total", 7, 1);
		fputc(' ', out);
	}
	if (symkey) {
		pad(out, "Symbol", sym_w, 0);
		fputc(' ', out);
		fprintf(out, "DSO");
	} else {
		char cap[64];

		snprintf(cap, sizeof(cap), "%s", key);
		cap[0] = (char)(cap[0] >= 'a' && cap[0] <= 'z' ? cap[0] - 32 : cap[0]);
		fputs(cap, out);
	}
	fprintf(out, "%s\n", off);

	for (size_t i = 0; i < nr && (!o->limit || i < o->limit); i++) {
		const struct ct_row *r = rows[i];
		char pc[16];

		snprintf(pc, sizeof(pc), "%.2f%%", 100.0 * r->self / n);
		fprintf(out, "%s", r->self * 10 >= n ? red : "");
		pad(out, pc, 7, 1);
		fprintf(out, "%s ", r->self * 10 >= n ? off : "");
		snprintf(pc, sizeof(pc), "%llu", (unsigned long long)r->self);
		pad(out, pc, 7, 1);
		fputc(' ', out);
		fmt_duration(t, sizeof(t), r->self * h->ns_per_sample);
		pad(out, t, 9, 1);
		fputc(' ', out);
		if (!o->no_children) {
			snprintf(pc, sizeof(pc), "%.2f%%", 100.0 * r->total / n);
			pad(out, pc, 7, 1);
			fputc(' ', out);
			snprintf(pc, sizeof(pc), "%llu", (unsigned long long)r->total);
			pad(out, pc, 7, 1);
			fputc(' ', out);
		}
		if (symkey) {
			shorten_name(r->name, sym_w, name, sizeof(name));
			pad(out, name, sym_w, 0);
			fputc(' ', out);
			const char *d = r->dso ? r->dso : "";

			if (short_kernel && !strcmp(d, "[kernel.kallsyms]"))
				d = "[kernel]";
			shorten_name(d, dso_w, dso, sizeof(dso));
			fputs(dso, out);
		} else {
			shorten_name(r->name, rest, name, sizeof(name));
			fputs(name, out);
		}
		fputc('\n', out);
	}
}
