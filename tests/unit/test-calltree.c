/* test-calltree.c - self/total with recursion, folded stacks of known stacks, name
 * shortening for the table.  TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "fold.h"
#include "output.h"
#include "util.h"

#include "unit/tap.h"

static struct frame F(const char *sym, unsigned flags)
{
	struct frame f = { 0x1000, 0, sym, "bin", NULL, NULL, flags, 0 };
	return f;
}

static const struct ct_row *row(struct ct_row **rows, size_t nr, const char *name)
{
	for (size_t i = 0; i < nr; i++)
		if (!strcmp(rows[i]->name, name))
			return rows[i];
	return NULL;
}

static char folded[4096];

static void collect(void *ctx, const char *stack, uint64_t count)
{
	size_t l = strlen(folded);

	snprintf(folded + l, sizeof(folded) - l, "%s %llu\n", stack, (unsigned long long)count);
}

static struct frame FD(const char *sym, const char *dso, unsigned flags)
{
	struct frame f = { 0x1000, 0, sym, dso, NULL, NULL, flags, 0 };
	return f;
}

/* DSO shortening, FDE display names and the named caller of unnamed code */
static void test_names(void)
{
	struct frame w1[] = { FD("libgomp.so.1.0.0!func@0x1f5e0", "libgomp.so.1.0.0", FRAME_FDE),
			      FD("libgomp.so.1.0.0!func@0x1f790", "libgomp.so.1.0.0", FRAME_FDE),
			      FD("GOMP_parallel", "libgomp.so.1.0.0", 0), FD("main", "bin", 0),
			      FD("_start", "bin", 0) };
	struct frame w2[] = { FD("libgomp.so.1.0.0!func@0x1f5e0", "libgomp.so.1.0.0", FRAME_FDE),
			      FD("[unknown]", "//anon", FRAME_ANON | FRAME_UNKNOWN),
			      FD("omp_fn.0", "bin", 0), FD("start_thread", "libc.so.6", 0) };
	struct frame w3[] = { FD("libgomp.so.1.0.0!func@0x1f5e0", "libgomp.so.1.0.0", FRAME_FDE),
			      FD("start_thread", "libc.so.6", 0) };
	struct calltree *t = calltree_new(CT_KEY_SYM);
	struct ct_row **rows, fake;
	const struct ct_row *r;
	size_t nr;
	char buf[256];

	output_shorten_dso("libgomp.so.1.0.0", 12, buf, sizeof(buf));
	ok(!strcmp(buf, "libgomp.so.1"), "dso: version tail dropped to the soname", buf);
	output_shorten_dso("libgomp.so.1.0.0", 11, buf, sizeof(buf));
	ok(!strcmp(buf, "libgomp.so"), "dso: then all version numbers", buf);
	output_shorten_dso("libgomp.so.1.0.0", 40, buf, sizeof(buf));
	ok(!strcmp(buf, "libgomp.so.1.0.0"), "dso: untouched when it fits", buf);
	output_shorten_dso("libopenblasp-r0.3.21.so", 12, buf, sizeof(buf));
	ok(!strcmp(buf, "libopenblas\xe2\x80\xa6"), "dso: otherwise cut at the end", buf);
	output_shorten_dso("[kernel.kallsyms]", 12, buf, sizeof(buf));
	ok(!strcmp(buf, "[kernel]"), "dso: [kernel]", buf);

	/* func@0x1f5e0 under GOMP_parallel twice (once through an unnamed frame), under
	 * start_thread only once: a thread root is no caller */
	calltree_add(t, w1, 5, "x", 1, 1);
	calltree_add(t, w2, 4, "x", 1, 1);
	calltree_add(t, w2, 4, "x", 1, 1);
	calltree_add(t, w1, 5, "x", 1, 1);
	calltree_add(t, w1, 5, "x", 1, 1);
	calltree_add(t, w3, 2, "x", 1, 1);
	nr = calltree_rows(t, CT_SORT_SELF, &rows);
	r = row(rows, nr, "libgomp.so.1.0.0!func@0x1f5e0");
	ok(r && r->caller && !strcmp(r->caller, "GOMP_parallel") && r->caller_count == 3,
	   "caller: the most frequent named one, past unnamed frames", r && r->caller ? r->caller : "(none)");
	ok(r && !strcmp(output_row_name(r), "func@0x1f5e0"), "display name drops dso!", r ? output_row_name(r) : NULL);
	output_table_symbol(r, 40, buf, sizeof(buf));
	ok(!strcmp(buf, "func@0x1f5e0 \xe2\x86\x90 GOMP_parallel"), "table symbol with caller", buf);
	output_table_symbol(r, 16, buf, sizeof(buf));
	ok(!strcmp(buf, "func@0x1f5e0"), "no room: the caller goes, the name stays whole", buf);
	r = row(rows, nr, "[unknown]");
	ok(r && r->caller && !strcmp(r->caller, "omp_fn.0"), "unknown code has a caller too", r ? r->caller : NULL);
	r = row(rows, nr, "GOMP_parallel");
	ok(r && !r->caller, "named rows have no caller", r ? r->caller : NULL);
	memset(&fake, 0, sizeof(fake));
	fake.name = "other.so!func@0x10";
	fake.dso = "libx.so";
	fake.flags = FRAME_FDE;
	ok(!strcmp(output_row_name(&fake), "other.so!func@0x10"), "display name keeps a foreign dso!", NULL);
	calltree_free(t);
}

/* Every line of the table for one row holding all n samples at ns_per_sample fits width. */
static int table_fits(uint64_t n, uint64_t ns_per_sample, int width, char *widest, size_t sz)
{
	struct ct_row row = { .name = "only_function", .dso = "libx.so", .self = n, .total = n };
	struct ct_row *rows[] = { &row };
	struct report_header h = { .file = "f", .event = "cpu-clock", .samples = n,
				   .duration_ns = n * ns_per_sample, .sample_is_time = 1,
				   .ns_per_sample = ns_per_sample, .key = "symbol" };
	struct output_opts oo = { .width = width };
	char *text = NULL, *line, *save;
	size_t len = 0, most = 0;
	FILE *f = open_memstream(&text, &len);

	output_table(f, &h, rows, 1, &oo);
	fclose(f);
	widest[0] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t c = 0;

		for (const char *p = line; *p; p++)
			c += ((unsigned char)*p & 0xc0) != 0x80;
		if (c > most && strncmp(line, "# ", 2)) {
			most = c;
			snprintf(widest, sz, "%s", line);
		}
	}
	free(text);
	return most <= (size_t)width;
}

int main(void)
{
	/* leaf first: fib recursion three deep under main, and a plain leaf */
	struct frame rec[] = { F("fib", 0), F("fib", 0), F("fib", 0), F("main", 0), F("_start", 0) };
	struct frame plain[] = { F("leaf", 0), F("main", 0), F("_start", 0) };
	struct frame kern[] = { F("do_page_fault", FRAME_KERNEL), F("leaf", 0), F("main", 0), F("_start", 0) };
	struct frame odd[] = { F("a;b\nc", 0), F("main", 0) };
	struct calltree *t = calltree_new(CT_KEY_SYM);
	struct ct_row **rows;
	const struct ct_row *r;
	size_t nr;
	struct fold *fo;
	struct fold_opts fopt = { 0, 0 };
	char buf[256];

	calltree_add(t, rec, 5, "x", 1, 1);
	calltree_add(t, rec, 5, "x", 1, 1);
	calltree_add(t, plain, 3, "x", 1, 1);
	nr = calltree_rows(t, CT_SORT_SELF, &rows);
	r = row(rows, nr, "fib");
	ok(r && r->self == 2 && r->total == 2, "recursion: total counted once per stack", NULL);
	r = row(rows, nr, "main");
	ok(r && r->self == 0 && r->total == 3, "main: total 3, self 0", NULL);
	ok(!strcmp(rows[0]->name, "fib"), "sorted by self", rows[0]->name);
	nr = calltree_rows(t, CT_SORT_TOTAL, &rows);
	ok(rows[0]->total == 3, "sorted by total", rows[0]->name);
	ok(calltree_samples(t) == 3, "sample count", NULL);
	calltree_free(t);

	t = calltree_new(CT_KEY_DSO);
	calltree_add(t, kern, 4, "x", 1, 1);
	nr = calltree_rows(t, CT_SORT_SELF, &rows);
	ok(nr == 1 && rows[0]->self == 1 && rows[0]->total == 1, "dso key: one row, counted once", NULL);
	calltree_free(t);

	fo = fold_new(&fopt);
	fold_add(fo, rec, 5, "x", NULL, 0, 1);
	fold_add(fo, plain, 3, "x", NULL, 0, 1);
	fold_add(fo, rec, 5, "x", NULL, 0, 1);
	fold_add(fo, odd, 2, "x", NULL, 0, 1);
	fold_each(fo, collect, NULL);
	ok(!strcmp(folded, "_start;main;fib;fib;fib 2\n_start;main;leaf 1\nmain;a:b c 1\n"),
	   "folded stacks: root first, merged, sanitized", folded);
	fold_free(fo);

	folded[0] = 0;
	fopt.no_kernel = 1;
	fopt.comm_root = 1;
	fo = fold_new(&fopt);
	{
		const char *roots[] = { "conv" };

		fold_add(fo, kern, 4, "python3", roots, 1, 5);
	}
	fold_each(fo, collect, NULL);
	ok(!strcmp(folded, "conv;python3;_start;main;leaf 5\n"), "extra root, comm root, no kernel", folded);
	fold_free(fo);

	output_shorten_name("at::native::(anonymous namespace)::conv<float, 3>(at::Tensor const&, long)", 40,
		     buf, sizeof(buf));
	ok(!strcmp(buf, "at::native::(anon)::conv<\xe2\x80\xa6>()"), "shorten: templates and params collapse", buf);
	output_shorten_name("short_name", 40, buf, sizeof(buf));
	ok(!strcmp(buf, "short_name"), "shorten: short names untouched", buf);
	output_shorten_name("a_very_long_plain_c_function_name_without_templates", 20, buf, sizeof(buf));
	ok(strstr(buf, "\xe2\x80\xa6") && !strncmp(buf, "a_very_lo", 9), "shorten: middle cut", buf);

	test_names();

	output_duration(buf, sizeof(buf), 999960000ULL);
	ok(!strcmp(buf, "1.00 s"), "duration: the unit follows the rounded value (999.96 ms)", buf);
	output_duration(buf, sizeof(buf), 999940000ULL);
	ok(!strcmp(buf, "999.9 ms"), "duration: just below a second stays in ms", buf);
	ok(table_fits(999, 1001000, 80, buf, sizeof(buf)),
	   "table: a 100% row of ~1 s fits 80 columns", buf);
	ok(table_fits(1234560, 1000000, 80, buf, sizeof(buf)),
	   "table: a 100% row of 1234.56 s fits 80 columns", buf);
	return tap_done();
}
