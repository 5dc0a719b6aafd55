/* output-table.c - the top-style table (see output.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "frame.h"
#include "output.h"
#include "util.h"

#define ELLIPSIS "\xe2\x80\xa6"

void output_duration(char *buf, size_t sz, uint64_t ns)
{
	/* the unit is chosen on the rounded value: 999.96 ms is "1.00 s", not "1000.0 ms" */
	if (ns < 999950ULL)
		snprintf(buf, sz, "%.1f us", ns / 1e3);
	else if (ns < 999950000ULL)
		snprintf(buf, sz, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, sz, "%.2f s", ns / 1e9);
}

const char *output_duration_ns(char *buf, size_t sz, double ns)
{
	if (ns <= 0)
		snprintf(buf, sz, "-");
	else if (ns < 1e3)
		snprintf(buf, sz, "%.0f ns", ns);
	else
		output_duration(buf, sz, (uint64_t)(ns + 0.5));
	return buf;
}

/* display columns of a UTF-8 string (each code point one column) */
static size_t cols(const char *s)
{
	return utf8_cols(s, strlen(s));
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

void output_shorten_name(const char *name, size_t width, char *buf, size_t bufsz)
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

int output_width(void)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	int w = 0;

	if (isatty(1) && !ioctl(1, TIOCGWINSZ, &ws) && ws.ws_col)
		w = ws.ws_col;
	else if (c && atoi(c) > 0)
		w = atoi(c);
	if (w <= 0)
		w = 80;
	if (w < 60)
		w = 60;
	if (w > 200)
		w = 200;
	return w;
}

void output_header(FILE *out, const struct report_header *h)
{
	char dur[32], t[32];
	uint64_t n = h->samples ? h->samples : 1;

	output_duration(dur, sizeof(dur), h->duration_ns);
	fprintf(out, "# file:    %s%s\n", h->file, h->truncated ? " (truncated)" : "");
	if (h->cmdline)
		fprintf(out, "# command: %s\n", h->cmdline);
	fprintf(out, "# event:   %s%s%s%s\n", h->event, h->sampling ? " (" : "",
		h->sampling ? h->sampling : "", h->sampling ? ")" : "");
	if (h->other_events && *h->other_events) {
		/* the switch-outs (record's default off-CPU event) have their own options */
		char rest[160];
		const char *cs = strstr(h->other_events, "context-switches");
		int only_cs = cs && !strcmp(h->other_events, "context-switches");

		if (cs && !h->off_cpu)
			fprintf(out, "#          switch-outs recorded too: --off-cpu (where threads "
				"waited), --wall\n");
		if (!only_cs) {
			/* the list without context-switches (said above) */
			size_t at = cs ? (size_t)(cs - h->other_events) : 0;

			snprintf(rest, sizeof(rest), "%s", h->other_events);
			if (cs && !h->off_cpu) {
				size_t len = strlen("context-switches");

				if (rest[at + len] == ',')
					len++;
				else if (at && rest[at - 1] == ',')
					at--, len++;
				memmove(rest + at, rest + at + len, strlen(rest + at + len) + 1);
			}
			fprintf(out, "#          also recorded, not counted here: %s (--event NAME)\n",
				rest);
		}
	}
	fprintf(out, "# samples: %llu in %s, lost: %llu\n", (unsigned long long)h->samples, dur,
		(unsigned long long)h->lost);
	if (h->filter)
		fprintf(out, "# filter:  %s: %llu of %llu samples kept\n", h->filter,
			(unsigned long long)h->samples, (unsigned long long)h->filter_total);
	if (h->no_stacks)
		fprintf(out, "# stacks:  none recorded (%.1f%% named): sampled functions only, no "
			"callers, operators or flame graph; %s\n", 100.0 * h->named / n,
			h->perf_data ? "perf record --call-graph dwarf (or dlprof record) records them" :
			"record without --call-graph none");
	else if (h->leaf_only)
		fprintf(out, "# stacks:  not walked (--no-children: the sampled functions only), "
			"%.1f%% named\n", 100.0 * h->named / n);
	else {
		fprintf(out, "# stacks:  %.1f%% reach the thread root, %.1f%% named",
			100.0 * h->complete_stacks / n, 100.0 * h->named / n);
		if (h->unwound)
			fprintf(out, ", %.1f%% recovered by scan", 100.0 * h->recovered_stacks / n);
		/* of the samples with a user stack (one taken in a kernel thread has none) */
		if (h->recorded_stacks)
			fprintf(out, ";\n#          %.1f%% unwound while recording",
				100.0 * h->recorded_stacks / (h->recorded_stacks + h->copied_stacks));
		if (h->past_copy_stacks)
			fprintf(out, ";\n#          %.1f%% deeper than their copy, rooted by the "
				"thread's last walk", 100.0 * h->past_copy_stacks / n);
		fputc('\n', out);
	}
	if (h->unwind_checked) {
		fprintf(out, "# unwind check: %llu stacks unwound again from their copies: %llu the "
			"same, %llu\n#          differ after a frame found by a stack scan, %llu "
			"differ", (unsigned long long)h->unwind_checked,
			(unsigned long long)h->unwind_same, (unsigned long long)h->unwind_scan_differs,
			(unsigned long long)h->unwind_differs);
		if (h->unwind_past_copy)
			fprintf(out, ", %llu deeper than their\n#          copy (the same as far "
				"as it reaches)", (unsigned long long)h->unwind_past_copy);
		fputc('\n', out);
	}
	output_duration(t, sizeof(t), h->ns_per_sample);
	if (h->off_cpu == 2)
		fprintf(out, "# wall:    on-CPU samples and switch-outs, each weighing its time on or off\n"
			"#          the CPU: a thread's total is its wall time; Self and Total count\n"
			"#          microseconds\n");
	else if (h->off_cpu)
		fprintf(out, "# off-CPU: %llu switch-outs; each stack weighs the time its thread was\n"
			"#          off the CPU until it ran again; Self and Total count microseconds\n",
			(unsigned long long)h->samples);
	else if (h->no_time)
		fprintf(out, "# time:    none: %s counts events, not time\n", h->event);
	else
		fprintf(out, "# time:    %s per sample%s\n", t,
			h->sample_is_time ? "" : " (estimated from the duration)");
	if (h->py_records) {
		uint64_t lost = h->py_moved + h->py_failed + h->py_mismatched;

		fprintf(out, "# python:  %.1f%% of samples with Python frames; of the %llu samples "
			"of Python\n#          threads %.1f%% left native (code moved on %.1f%%, "
			"unreadable %.1f%%,\n#          stacks disagree %.1f%%), ",
			100.0 * h->py_merged / n,
			(unsigned long long)h->py_records, 100.0 * lost / h->py_records,
			100.0 * h->py_moved / h->py_records, 100.0 * h->py_failed / h->py_records,
			100.0 * h->py_mismatched / h->py_records);
		if (!h->py_at_sample)
			fprintf(out, "read %.2f ms after the sample\n", h->py_delay_ns / 1e6);
		else if (h->py_at_sample == h->py_records)
			fprintf(out, "read as the sample was taken\n");
		else
			fprintf(out, "%.1f%% read as the sample\n#          was taken, the rest "
				"%.2f ms after it\n", 100.0 * h->py_at_sample / h->py_records,
				h->py_delay_ns / 1e6);
	}
	if (h->irqs_off)
		fprintf(out, "# irqs:    %.1f%% of samples fell due with interrupts off%s\n",
			100.0 * h->irqs_off / n, h->raw_irqs ?
			", shown where they\n#          came back on (--raw-irqs)" :
			": counted to the\n#          function that turned them on, marked (irqs off); "
			"--raw-irqs: as taken");
	if (h->aligned)
		fprintf(out, "# aligned: %s\n", h->aligned);
	if (h->twice)
		fprintf(out, "# twice:   %s\n", h->twice);
	if (h->skipped)
		fprintf(out, "# skipped: %llu malformed record%s\n", (unsigned long long)h->skipped,
			h->skipped == 1 ? "" : "s");
	for (size_t i = 0; i < h->nr_warnings; i++)
		fprintf(out, "# warning: %s\n", h->warnings[i]);
	fputc('\n', out);
}

/* "libgomp.so.1.0.0" -> end of "libgomp.so.1" (or of "libgomp.so" when keep_major is
 * 0); NULL when the name has no ".so." version tail */
static const char *so_version_cut(const char *d, int keep_major)
{
	const char *so = strstr(d, ".so.");
	const char *p;

	if (!so)
		return NULL;
	p = so + 3;
	if (!keep_major)
		return p;
	p++;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '.' ? p : NULL;
}

void output_shorten_dso(const char *dso, size_t width, char *buf, size_t bufsz)
{
	struct strbuf sb = STRBUF_INIT;
	const char *cut;

	if (!bufsz)
		return;
	if (!dso)
		dso = "";
	if (width < 2)
		width = 2;
	strbuf_addstr(&sb, dso);
	if (cols(sb.buf) > width && !strcmp(dso, "[kernel.kallsyms]")) {
		strbuf_reset(&sb);
		strbuf_addstr(&sb, "[kernel]");
	}
	/* drop trailing version numbers first: the soname major, then all of them */
	for (int keep = 1; keep >= 0 && cols(sb.buf) > width; keep--) {
		cut = so_version_cut(dso, keep);
		if (cut) {
			strbuf_reset(&sb);
			strbuf_add(&sb, dso, cut - dso);
		}
	}
	if (cols(sb.buf) > width) {
		/* cut at the end, never in the middle: the start says which library it is */
		struct strbuf t = STRBUF_INIT;

		put_cols(&t, sb.buf, width - 1);
		strbuf_addstr(&t, ELLIPSIS);
		strbuf_release(&sb);
		sb = t;
	}
	snprintf(buf, bufsz, "%s", sb.buf ? sb.buf : "");
	strbuf_release(&sb);
}

const char *output_row_name(const struct ct_row *r)
{
	size_t l;

	if (!(r->flags & FRAME_FDE) || !r->dso)
		return r->name;
	l = strlen(r->dso);
	if (!strncmp(r->name, r->dso, l) && r->name[l] == '!' && r->name[l + 1])
		return r->name + l + 1;
	return r->name;
}

#define CALLER_ARROW " \xe2\x86\x90 "	/* " ← " */
#define CALLER_MIN 8	/* a caller shorter than this says nothing: leave it out */

void output_table_symbol(const struct ct_row *r, size_t width, char *buf, size_t bufsz)
{
	const char *base = output_row_name(r);
	size_t bc = cols(base);

	if (r->flags & FRAME_PYTHON) {
		/* "forward (model.py:31)": no parameter list to fold; cut at the end */
		if (bc <= width) {
			snprintf(buf, bufsz, "%s", base);
		} else {
			struct strbuf t = STRBUF_INIT;

			put_cols(&t, base, width - 1);
			snprintf(buf, bufsz, "%s" ELLIPSIS, t.buf ? t.buf : "");
			strbuf_release(&t);
		}
		return;
	}
	if (r->srcline) {
		/* --srcline: "name @ file.c:12", the line whole, the name shortened */
		size_t lc = cols(r->srcline);
		char nb[512];

		if (lc + 3 + 8 <= width) {
			output_shorten_name(base, width - lc - 3, nb, sizeof(nb));
			snprintf(buf, bufsz, "%s @ %s", nb, r->srcline);
			return;
		}
	}
	if (r->caller && bc + 3 + CALLER_MIN <= width) {
		char cb[512];

		output_shorten_name(r->caller, width - bc - 3, cb, sizeof(cb));
		snprintf(buf, bufsz, "%s" CALLER_ARROW "%s", base, cb);
		return;
	}
	output_shorten_name(base, width, buf, bufsz);
}

static int digits(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

void output_table(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		  const struct output_opts *o)
{
	char t[32], name[1024], dso[256];
	int width = o->width > 40 ? o->width : 80;
	const char *key = h->key ? h->key : "symbol";
	int symkey = !strcmp(key, "symbol");
	uint64_t n = h->weight_total ? h->weight_total : h->samples ? h->samples : 1;
	size_t shown = o->limit && o->limit < nr ? o->limit : nr;
	int cw = 5, tw = 8, fixed, rest, dso_w = 0, sym_w;

	/* sample-count and time columns as wide as their widest value ("Total" and
	 * "999.9 ms" at least; a long run can have "1234.56 s") */
	for (size_t i = 0; i < shown; i++) {
		int d = digits(o->no_children ? rows[i]->self : rows[i]->total);

		if (d > cw)
			cw = d;
		if (h->no_time)
			break;
		output_duration(t, sizeof(t), rows[i]->self * h->ns_per_sample);
		if ((int)strlen(t) > tw)
			tw = (int)strlen(t);
	}
	/* Self% 7, Self cw, time tw, Total% 7, Total cw, one space after each */
	fixed = 7 + 1 + cw + 1 + tw + 1 + (o->no_children ? 0 : 7 + 1 + cw + 1);
	rest = width - fixed;
	if (symkey) {
		/* the DSO column takes at most 35% (15 columns at 80, so "libtorch_cpu.so"
		 * stays whole): names lose version numbers, then their end */
		int cap = rest * 35 / 100;

		dso_w = 3;
		for (size_t i = 0; i < shown; i++) {
			int c;

			output_shorten_dso(rows[i]->dso, cap, dso, sizeof(dso));
			c = (int)cols(dso);
			if (c > dso_w)
				dso_w = c;
		}
	}
	sym_w = rest - (symkey ? dso_w + 1 : 0);
	const char *bold = o->color ? "\033[1m" : "", *off = o->color ? "\033[0m" : "";
	const char *red = o->color ? "\033[31m" : "";

	output_header(out, h);

	fprintf(out, "%s", bold);
	pad(out, "Self%", 7, 1);
	fputc(' ', out);
	pad(out, "Self", cw, 1);
	fputc(' ', out);
	pad(out, h->sample_is_time || h->no_time ? "Time" : "~Time", tw, 1);
	fputc(' ', out);
	if (!o->no_children) {
		pad(out, "Total%", 7, 1);
		fputc(' ', out);
		pad(out, "Total", cw, 1);
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

	for (size_t i = 0; i < shown; i++) {
		const struct ct_row *r = rows[i];
		char pc[16];

		snprintf(pc, sizeof(pc), "%.2f%%", 100.0 * r->self / n);
		fprintf(out, "%s", r->self * 10 >= n ? red : "");
		pad(out, pc, 7, 1);
		fprintf(out, "%s ", r->self * 10 >= n ? off : "");
		snprintf(pc, sizeof(pc), "%llu", (unsigned long long)r->self);
		pad(out, pc, cw, 1);
		fputc(' ', out);
		if (h->no_time)
			snprintf(t, sizeof(t), "-");
		else
			output_duration(t, sizeof(t), r->self * h->ns_per_sample);
		pad(out, t, tw, 1);
		fputc(' ', out);
		if (!o->no_children) {
			snprintf(pc, sizeof(pc), "%.2f%%", 100.0 * r->total / n);
			pad(out, pc, 7, 1);
			fputc(' ', out);
			snprintf(pc, sizeof(pc), "%llu", (unsigned long long)r->total);
			pad(out, pc, cw, 1);
			fputc(' ', out);
		}
		if (symkey) {
			output_table_symbol(r, sym_w, name, sizeof(name));
			pad(out, name, sym_w, 0);
			fputc(' ', out);
			output_shorten_dso(r->dso, dso_w, dso, sizeof(dso));
			fputs(dso, out);
		} else {
			output_shorten_name(r->name, rest, name, sizeof(name));
			fputs(name, out);
		}
		fputc('\n', out);
	}
}
