/* opcounts.c - the operators' calls of META op_calls (opcounts.h). */
#include <stdlib.h>
#include <string.h>

#include "opcounts.h"
#include "util.h"

void opcounts_init(struct opcounts *c)
{
	memset(c, 0, sizeof(*c));
	u64map_init(&c->exact);
	u64map_init(&c->base);
}

static void add(struct u64map *h, const char *key, uint64_t n)
{
	void **slot = u64map_slot(h, (uint64_t)(uintptr_t)key);

	*slot = (void *)((uintptr_t)*slot + (uintptr_t)n);
}

void opcounts_meta(struct opcounts *c, const struct recmeta *m)
{
	const char *p = recmeta_get(m, "op_calls");

	if (!p)
		return;
	c->present = 1;
	while (*p) {
		size_t len = strcspn(p, ","), eq;
		const char *dot;
		char *end;
		uint64_t n;

		for (eq = len; eq && p[eq - 1] != '='; eq--)
			;
		if (eq > 1) {
			n = strtoull(p + eq, &end, 10);
			if (end == p + len && n) {
				add(&c->exact, str_intern(p, eq - 1), n);
				c->calls += n;
				dot = memchr(p, '.', eq - 1);
				add(&c->base, str_intern(p, dot ? (size_t)(dot - p) : eq - 1), n);
			}
		}
		p += len + (p[len] == ',');
	}
}

uint64_t opcounts_get(const struct opcounts *c, const char *op)
{
	uint64_t n;

	if (!c->present || !op)
		return 0;
	n = (uintptr_t)u64map_get(&c->exact, (uint64_t)(uintptr_t)op);
	if (!n && !strchr(op, '.'))
		n = (uintptr_t)u64map_get(&c->base, (uint64_t)(uintptr_t)op);
	return n;
}

void opcounts_release(struct opcounts *c)
{
	u64map_release(&c->exact);
	u64map_release(&c->base);
	c->present = 0;
}
