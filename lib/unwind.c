/* unwind.c - placeholder: returns the sample IP only (real CFI unwinder follows) */
#include <stdlib.h>

#include "unwind.h"

struct unwinder {
	struct machine *m;
};

struct unwinder *unwinder_new(struct machine *m)
{
	struct unwinder *u = calloc(1, sizeof(*u));

	if (u)
		u->m = m;
	return u;
}

void unwinder_free(struct unwinder *u)
{
	free(u);
}

size_t unwind_sample(struct unwinder *u, const struct dlp_sample *s, uint64_t *ips,
		     unsigned *flags, size_t max, int *complete)
{
	*complete = 0;
	if (!max)
		return 0;
	ips[0] = s->ip;
	if (flags)
		flags[0] = 0;
	return 1;
}
