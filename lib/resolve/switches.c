/* switches.c - a recording's context switches in per-thread time order (switches.h). */
#include <stdlib.h>

#include "switches.h"
#include "util.h"

void switches_add(struct switches *s, uint32_t pid, uint32_t tid, uint64_t time, int out,
		  int preempt)
{
	ALLOC_GROW(s->v, s->nr + 1, s->alloc);
	s->v[s->nr++] = (struct switch_ev){ pid, tid, time, out, preempt };
}

static int cmp_switch(const void *a, const void *b)
{
	const struct switch_ev *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

void switches_sort(struct switches *s)
{
	if (s->nr)
		qsort(s->v, s->nr, sizeof(*s->v), cmp_switch);
}

void switches_release(struct switches *s)
{
	free(s->v);
	s->v = NULL;
	s->nr = s->alloc = 0;
}
