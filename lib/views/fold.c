/* fold.c - folded stacks ("root;...;leaf COUNT"): one entry per distinct stack text,
 * counts summed (fold.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "rephash.h"
#include "util.h"

struct fold_ent {
	char *stack;
	uint64_t count;
};

struct fold {
	struct fold_opts opts;
	struct u64map map;	/* hash(stack) -> entry index + 1, probing by +1 */
	struct fold_ent *ents;
	size_t nr, alloc;
	struct strbuf sb;
};

struct fold *fold_new(const struct fold_opts *o)
{
	struct fold *f = xcalloc(1, sizeof(*f));

	if (o)
		f->opts = *o;
	u64map_init(&f->map);
	strbuf_init(&f->sb, 256);
	return f;
}

void fold_free(struct fold *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->nr; i++)
		free(f->ents[i].stack);
	free(f->ents);
	u64map_release(&f->map);
	strbuf_release(&f->sb);
	free(f);
}

void fold_sanitize(struct strbuf *sb, const char *name)
{
	if (!name || !*name)
		name = "[unknown]";
	for (const char *p = name; *p; p++) {
		unsigned char c = *p;

		if (c == ';')
			strbuf_addch(sb, ':');
		else if (c < 0x20 || c == 0x7f)
			strbuf_addch(sb, ' ');
		else
			strbuf_addch(sb, c);
	}
}

static void sep(struct strbuf *sb)
{
	if (sb->len)
		strbuf_addch(sb, ';');
}

/* Append the stack's text below the roots to sb: "comm;outermost;...;leaf". */
static void stack_text(struct fold *f, struct strbuf *sb, const struct frame *frames, size_t nr,
		       const char *comm)
{
	if (f->opts.comm_root && comm) {
		sep(sb);
		fold_sanitize(sb, comm);
	}
	for (size_t i = nr; i-- > 0; ) {
		if (f->opts.no_kernel && (frames[i].flags & FRAME_KERNEL))
			continue;
		sep(sb);
		fold_sanitize(sb, frames[i].sym);
	}
}

/* Count the text in f->sb as one more stack of weight. */
static void count_text(struct fold *f, uint64_t weight)
{
	struct strbuf *sb = &f->sb;
	uint64_t h;

	if (!sb->len)
		strbuf_addstr(sb, "[unknown]");
	h = hash_bytes(sb->buf, sb->len);
	for (;; h++) {
		void **slot = u64map_slot(&f->map, h);

		if (*slot) {
			struct fold_ent *e = &f->ents[(uintptr_t)*slot - 1];

			if (strcmp(e->stack, sb->buf))
				continue;
			e->count += weight;
			return;
		}
		ALLOC_GROW(f->ents, f->nr + 1, f->alloc);
		f->ents[f->nr].stack = xstrndup(sb->buf, sb->len);
		f->ents[f->nr].count = weight;
		f->nr++;
		*slot = (void *)(uintptr_t)f->nr;
		return;
	}
}

static void add_roots(struct strbuf *sb, const char *const *roots, size_t nr_roots)
{
	/* family / operator outermost, so a flame graph splits by them first */
	for (size_t i = 0; i < nr_roots; i++)
		if (roots[i]) {
			sep(sb);
			fold_sanitize(sb, roots[i]);
		}
}

void fold_add(struct fold *f, const struct frame *frames, size_t nr, const char *comm,
	      const char *const *roots, size_t nr_roots, uint64_t weight)
{
	strbuf_reset(&f->sb);
	add_roots(&f->sb, roots, nr_roots);
	stack_text(f, &f->sb, frames, nr, comm);
	count_text(f, weight);
}

char *fold_text(struct fold *f, const struct frame *frames, size_t nr, const char *comm)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_init(&sb, 256);
	stack_text(f, &sb, frames, nr, comm);
	return sb.buf;	/* the caller's */
}

void fold_add_text(struct fold *f, const char *const *roots, size_t nr_roots, const char *text,
		   uint64_t weight)
{
	strbuf_reset(&f->sb);
	add_roots(&f->sb, roots, nr_roots);
	if (*text) {
		sep(&f->sb);
		strbuf_addstr(&f->sb, text);
	}
	count_text(f, weight);
}

static int cmp_fold(const void *a, const void *b)
{
	return strcmp(((const struct fold_ent *)a)->stack, ((const struct fold_ent *)b)->stack);
}

void fold_each(struct fold *f, void (*cb)(void *ctx, const char *stack, uint64_t count), void *ctx)
{
	/* sorting moves entries: the hash index is rebuilt lazily never (adds after this
	 * are not expected), so drop it */
	if (f->nr)
		qsort(f->ents, f->nr, sizeof(*f->ents), cmp_fold);
	u64map_release(&f->map);
	u64map_init(&f->map);
	for (size_t i = 0; i < f->nr; i++)
		if (f->ents[i].stack)
			cb(ctx, f->ents[i].stack, f->ents[i].count);
}
