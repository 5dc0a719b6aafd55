/* calltree.c - self/total aggregation of resolved stacks by key (calltree.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calltree.h"
#include "rephash.h"
#include "unwind.h"
#include "util.h"

/* Named callers of an unnamed row: a few exact counts; a caller that finds no free
 * entry is dropped (the most frequent ones arrive early and often). */
#define CT_CALLERS 8
struct ct_callers {
	const char *name[CT_CALLERS];
	uint64_t count[CT_CALLERS];
};

struct calltree {
	enum ct_key key;
	struct strpool pool;
	struct u64map rowmap;	/* hash(name ptr, dso ptr) -> row index + 1, probing by +1 */
	struct ct_row **rows;
	size_t nr, alloc;
	uint64_t gen, samples;
};

struct calltree *calltree_new(enum ct_key key)
{
	struct calltree *t = xcalloc(1, sizeof(*t));

	t->key = key;
	strpool_init(&t->pool);
	u64map_init(&t->rowmap);
	return t;
}

void calltree_free(struct calltree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr; i++) {
		free(t->rows[i]->callers);
		free(t->rows[i]->lines);
		free(t->rows[i]);
	}
	free(t->rows);
	u64map_release(&t->rowmap);
	strpool_release(&t->pool);
	free(t);
}

uint64_t calltree_samples(const struct calltree *t)
{
	return t->samples;
}

static struct ct_row *get_row(struct calltree *t, const char *name, const char *dso, unsigned flags)
{
	const char *n = strpool_intern(&t->pool, name ? name : "[unknown]");
	const char *d = dso ? strpool_intern(&t->pool, dso) : NULL;
	uint64_t h = hash_u64((uintptr_t)n ^ hash_u64((uintptr_t)d));
	struct ct_row *r;

	for (;; h++) {
		void **slot = u64map_slot(&t->rowmap, h);

		if (*slot) {
			r = t->rows[(uintptr_t)*slot - 1];
			if (r->name == n && r->dso == d)
				return r;
			continue;
		}
		r = xcalloc(1, sizeof(*r));
		r->name = n;
		r->dso = d;
		r->flags = flags;
		ALLOC_GROW(t->rows, t->nr + 1, t->alloc);
		t->rows[t->nr++] = r;
		*slot = (void *)(uintptr_t)t->nr;
		return r;
	}
}

/* returns 1 when this stack counts toward the row's total for the first time */
static int count(struct calltree *t, struct ct_row *r, int leaf, uint64_t w)
{
	if (leaf)
		r->self += w;
	if (r->gen != t->gen) {
		r->gen = t->gen;
		r->total += w;
		return 1;
	}
	return 0;
}

#define UNNAMED (FRAME_FDE | FRAME_ANON | FRAME_UNKNOWN)


static int is_named(const struct frame *f)
{
	return !(f->flags & UNNAMED) && f->sym && strcmp(f->sym, "[unknown]");
}

static void count_name(struct ct_callers **cp, const char *name, uint64_t w)
{
	struct ct_callers *c = *cp;

	if (!c)
		*cp = c = xcalloc(1, sizeof(*c));
	for (size_t k = 0; k < CT_CALLERS; k++) {
		if (!c->name[k])
			c->name[k] = name;
		if (c->name[k] == name) {
			c->count[k] += w;
			return;
		}
	}
}

/* the most frequent name (ties: the smaller string) */
static void best_name(const struct ct_callers *c, const char **name, uint64_t *count)
{
	*name = NULL;
	*count = 0;
	for (size_t k = 0; c && k < CT_CALLERS && c->name[k]; k++)
		if (c->count[k] > *count || (c->count[k] == *count && strcmp(c->name[k], *name) < 0)) {
			*name = c->name[k];
			*count = c->count[k];
		}
}

/* frames[i] is unnamed: count the nearest named frame above it as its caller */
static void count_caller(struct calltree *t, struct ct_row *r, const struct frame *frames,
			 size_t i, size_t nr, uint64_t w)
{
	const char *name = NULL;

	for (size_t k = i + 1; k < nr; k++)
		if (is_named(&frames[k])) {
			if (unwind_thread_root_name(frames[k].sym))	/* every thread starts there */
				return;
			name = strpool_intern(&t->pool, frames[k].sym);
			break;
		}
	if (name)
		count_name(&r->callers, name, w);
}

void calltree_add(struct calltree *t, const struct frame *frames, size_t nr,
		  const char *comm, uint32_t tid, uint64_t w)
{
	char buf[300];

	t->gen++;
	t->samples += w;
	switch (t->key) {
	case CT_KEY_SYM:
		for (size_t i = 0; i < nr; i++) {
			struct ct_row *r = get_row(t, frames[i].sym, frames[i].dso, frames[i].flags);

			if ((frames[i].flags & FRAME_PYTHON) && !r->path && frames[i].dso_path)
				r->path = strpool_intern(&t->pool, frames[i].dso_path);

			if (i == 0 && frames[0].srcline)
				count_name(&r->lines, strpool_intern(&t->pool, frames[0].srcline), w);
			/* a row's caller is counted once per sample, at its innermost frame */
			if (count(t, r, i == 0, w) && (frames[i].flags & UNNAMED) &&
			    !(frames[i].flags & FRAME_KERNEL))
				count_caller(t, r, frames, i, nr, w);
		}
		if (!nr)
			count(t, get_row(t, "[unknown]", "[unknown]", FRAME_UNKNOWN), 1, w);
		break;
	case CT_KEY_DSO:
		for (size_t i = 0; i < nr; i++)
			count(t, get_row(t, frames[i].dso, NULL, frames[i].flags), i == 0, w);
		if (!nr)
			count(t, get_row(t, "[unknown]", NULL, FRAME_UNKNOWN), 1, w);
		break;
	case CT_KEY_COMM:
		count(t, get_row(t, comm, NULL, 0), 1, w);
		break;
	case CT_KEY_TID:
		snprintf(buf, sizeof(buf), "%u (%s)", tid, comm ? comm : "[unknown]");
		count(t, get_row(t, buf, NULL, 0), 1, w);
		break;
	case CT_KEY_CUSTOM:
		break;
	}
}

void calltree_add_keys(struct calltree *t, const char *const *keys, size_t nr, uint64_t w)
{
	t->gen++;
	t->samples += w;
	for (size_t i = 0; i < nr; i++)
		if (keys[i])
			count(t, get_row(t, keys[i], NULL, 0), i == 0, w);
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int cmp_name(const struct ct_row *a, const struct ct_row *b)
{
	int c = strcmp(a->name, b->name);

	if (c)
		return c;
	return strcmp(a->dso ? a->dso : "", b->dso ? b->dso : "");
}

static int cmp_self(const void *x, const void *y)
{
	const struct ct_row *a = *(const struct ct_row **)x, *b = *(const struct ct_row **)y;
	int c = cmp_u64_desc(a->self, b->self);

	if (!c)
		c = cmp_u64_desc(a->total, b->total);
	return c ? c : cmp_name(a, b);
}

static int cmp_total(const void *x, const void *y)
{
	const struct ct_row *a = *(const struct ct_row **)x, *b = *(const struct ct_row **)y;
	int c = cmp_u64_desc(a->total, b->total);

	if (!c)
		c = cmp_u64_desc(a->self, b->self);
	return c ? c : cmp_name(a, b);
}

static int cmp_sym(const void *x, const void *y)
{
	return cmp_name(*(const struct ct_row **)x, *(const struct ct_row **)y);
}

static int cmp_dso(const void *x, const void *y)
{
	const struct ct_row *a = *(const struct ct_row **)x, *b = *(const struct ct_row **)y;
	int c = strcmp(a->dso ? a->dso : "", b->dso ? b->dso : "");

	return c ? c : cmp_self(x, y);
}

size_t calltree_rows(struct calltree *t, enum ct_sort sort, struct ct_row ***out)
{
	int (*cmp)(const void *, const void *) = cmp_self;

	if (sort == CT_SORT_TOTAL)
		cmp = cmp_total;
	else if (sort == CT_SORT_NAME)
		cmp = cmp_sym;
	else if (sort == CT_SORT_DSO)
		cmp = cmp_dso;
	for (size_t i = 0; i < t->nr; i++) {
		struct ct_row *r = t->rows[i];

		best_name(r->callers, &r->caller, &r->caller_count);
		best_name(r->lines, &r->srcline, &r->srcline_count);
	}
	if (t->nr)	/* no samples: rows is NULL, which qsort must not get */
		qsort(t->rows, t->nr, sizeof(*t->rows), cmp);
	*out = t->rows;
	return t->nr;
}
