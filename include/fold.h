/* fold.h - folded stacks, as flamegraph.pl reads them: "root;...;leaf COUNT", one line
 * per distinct stack, the thread name (or the roots a view gives: family, operator,
 * recording) outermost. */
#ifndef DLPROF_FOLD_H
#define DLPROF_FOLD_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"

struct fold;

struct fold_opts {
	int no_kernel;		/* drop kernel frames */
	int comm_root;		/* put the thread name as the outermost frame */
};

struct fold *fold_new(const struct fold_opts *o);
void fold_free(struct fold *f);
/* Add a stack (frames leaf first); roots[0..nr_roots-1] are extra outermost frames
 * (e.g. a family or operator, outermost first, before the thread name), each may be NULL. */
void fold_add(struct fold *f, const struct frame *frames, size_t nr, const char *comm,
	      const char *const *roots, size_t nr_roots, uint64_t weight);
/* fold_add() in two steps, for a stack whose roots are known only later: the text below
 * the roots ("comm;outermost;...;leaf", malloc'd), then that text under its roots. */
char *fold_text(struct fold *f, const struct frame *frames, size_t nr, const char *comm);
void fold_add_text(struct fold *f, const char *const *roots, size_t nr_roots, const char *text,
		   uint64_t weight);
/* Call cb for every unique stack ("root;...;leaf"), sorted by stack text. */
void fold_each(struct fold *f, void (*cb)(void *ctx, const char *stack, uint64_t count), void *ctx);
/* Append a frame name to sb with ';' and control characters replaced. */
struct strbuf;
void fold_sanitize(struct strbuf *sb, const char *name);

#endif
