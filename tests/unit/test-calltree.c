/* test-calltree.c - self/total with recursion, folded stacks of known stacks, name
 * shortening for the table.  TAP output. */
#include <stdio.h>
#include <string.h>

#include "calltree.h"
#include "output.h"
#include "util.h"

static int nr_tests, nr_failed;

static void ok(int cond, const char *what, const char *got)
{
	nr_tests++;
	if (!cond)
		nr_failed++;
	printf("%sok %d - %s", cond ? "" : "not ", nr_tests, what);
	if (!cond && got)
		printf(" (got '%s')", got);
	printf("\n");
}

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

	shorten_name("at::native::(anonymous namespace)::conv<float, 3>(at::Tensor const&, long)", 40,
		     buf, sizeof(buf));
	ok(!strcmp(buf, "at::native::(anon)::conv<\xe2\x80\xa6>()"), "shorten: templates and params collapse", buf);
	shorten_name("short_name", 40, buf, sizeof(buf));
	ok(!strcmp(buf, "short_name"), "shorten: short names untouched", buf);
	shorten_name("a_very_long_plain_c_function_name_without_templates", 20, buf, sizeof(buf));
	ok(strstr(buf, "\xe2\x80\xa6") && !strncmp(buf, "a_very_lo", 9), "shorten: middle cut", buf);

	printf("1..%d\n", nr_tests);
	return nr_failed ? 1 : 0;
}
