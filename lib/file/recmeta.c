/* recmeta.c - a recording's META record, parsed once (recmeta.h). */
#include "recmeta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *recmeta_get(const struct recmeta *m, const char *key)
{
	for (size_t i = m->nr; i-- > 0;)
		if (!strcmp(m->pairs[i].key, key))
			return m->pairs[i].value;
	return NULL;
}

static void clock_of(struct recmeta_clock *c, const char *value)
{
	unsigned long long mono, real, err;

	if (sscanf(value, "%llu %llu %llu", &mono, &real, &err) == 3 && real) {
		c->set = 1;
		c->mono = mono;
		c->real = real;
		c->err = err;
	}
}

int recmeta_parse(struct recmeta *m, const void *data, size_t len)
{
	const char *end, *p;

	memset(m, 0, sizeof(*m));
	end = (const char *)data + len;
	for (p = data; p < end;) {
		const char *k = p, *v, *e = memchr(k, '\0', (size_t)(end - k));

		if (!e || e + 1 >= end)
			break;
		v = e + 1;
		e = memchr(v, '\0', (size_t)(end - v));
		if (!e)
			break;
		ALLOC_GROW(m->pairs, m->nr + 1, m->alloc);
		m->pairs[m->nr].key = k;
		m->pairs[m->nr++].value = v;
		p = e + 1;
	}
	for (size_t i = 0; i < m->nr; i++) {
		const char *k = m->pairs[i].key, *v = m->pairs[i].value;

		if (!strcmp(k, "cmdline"))
			m->cmdline = v;
		else if (!strcmp(k, "hostname"))
			m->hostname = v;
		else if (!strcmp(k, "event"))
			m->event = v;
		else if (!strcmp(k, "metrics"))
			m->metrics = v;
		else if (!strcmp(k, "metrics_switch_outs"))
			m->metrics_switch_outs = 1;
		else if (!strcmp(k, "system_wide"))
			m->system_wide = 1;
		else if (!strcmp(k, "attach"))
			m->attach = 1;
		else if (!strcmp(k, "clock_start") || !strcmp(k, "clock_end"))
			clock_of(&m->clock[k[6] == 'e'], v);
		else if (!strncmp(k, "warn.", 5)) {
			ALLOC_GROW(m->warn, m->nr_warn + 1, m->alloc_warn);
			m->warn[m->nr_warn++] = v;
		}
	}
	return 0;
}

void recmeta_release(struct recmeta *m)
{
	free(m->pairs);
	free(m->warn);
	memset(m, 0, sizeof(*m));
}
