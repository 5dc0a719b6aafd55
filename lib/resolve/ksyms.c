/* ksyms.c - kernel symbol table (see ksyms.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "ksyms.h"
#include "rephash.h"
#include "util.h"

#define KSYM_SIZELESS_MAX (1u << 20)

/* The last answers, by address: a sample's kernel frames are mostly the same few return
 * addresses (the interrupt and syscall paths), each a binary search of 122,000 symbols
 * (2.1% of dlprof top's CPU); cleared when the table is sorted again */
#define KSYMS_CACHE	1024

struct ksyms {
	struct ksym *syms;
	size_t nr, alloc;
	int sorted;
	struct { uint64_t addr; uint32_t at; } cache[KSYMS_CACHE];	/* at: index + 1,
									   UINT32_MAX none */
	struct strpool pool;
	char **texts;		/* whole /proc/kallsyms reads: their names are used in place */
	size_t nr_texts, alloc_texts;
};

struct ksyms *ksyms_new(void)
{
	struct ksyms *k = xcalloc(1, sizeof(*k));

	strpool_init(&k->pool);
	return k;
}

void ksyms_free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	strpool_release(&k->pool);
	for (size_t i = 0; i < k->nr_texts; i++)
		free(k->texts[i]);
	free(k->texts);
	free(k);
}

size_t ksyms_count(const struct ksyms *k)
{
	return k->nr;
}

static void add(struct ksyms *k, uint64_t start, uint64_t size, const char *name, size_t nlen,
		const char *mod, size_t mlen)
{
	struct ksym *y;

	ALLOC_GROW(k->syms, k->nr + 1, k->alloc);
	y = &k->syms[k->nr++];
	y->start = start;
	y->end = size ? start + size : 0;	/* 0: up to the next symbol */
	y->name = strpool_intern_len(&k->pool, name, nlen);
	y->module = mlen ? strpool_intern_len(&k->pool, mod, mlen) : NULL;
	k->sorted = 0;
}

/* add() for names that stay valid as long as k: no copy (a whole kallsyms is ~200k). */
static void add_in_place(struct ksyms *k, uint64_t start, const char *name, const char *mod)
{
	struct ksym *y;

	ALLOC_GROW(k->syms, k->nr + 1, k->alloc);
	y = &k->syms[k->nr++];
	y->start = start;
	y->end = 0;	/* up to the next symbol */
	y->name = name;
	y->module = mod;
	k->sorted = 0;
}

/* Split one line into up to 4 whitespace-separated words. */
static int words(const char *p, const char *end, const char **w, size_t *wl, int max)
{
	int n = 0;

	while (p < end && n < max) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end)
			break;
		w[n] = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		wl[n] = p - w[n];
		n++;
	}
	return n;
}

static int parse_hex(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		len -= 2;
	}
	if (!len || len > 16)
		return -1;
	for (size_t i = 0; i < len; i++) {
		int d = hexval(s[i]);

		if (d < 0)
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

static void strip_brackets(const char **m, size_t *ml)
{
	if (*ml >= 2 && (*m)[0] == '[' && (*m)[*ml - 1] == ']') {
		(*m)++;
		*ml -= 2;
	}
}

int ksyms_add_text(struct ksyms *k, const char *text, size_t len)
{
	const char *p = text, *end = text + len;
	int added = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end;
		const char *w[4];
		size_t wl[4];
		uint64_t a, sz;
		int n = words(p, le, w, wl, 4);

		p = nl ? nl + 1 : end;
		if (n < 3 || parse_hex(w[0], wl[0], &a) || parse_hex(w[1], wl[1], &sz) || !a)
			continue;
		if (n == 4)
			strip_brackets(&w[3], &wl[3]);
		add(k, a, sz, w[2], wl[2], n == 4 ? w[3] : NULL, n == 4 ? wl[3] : 0);
		added++;
	}
	return added;
}

int ksyms_load_kallsyms(struct ksyms *k, const char *path, const char *release)
{
	struct strbuf sb = STRBUF_INIT;
	struct utsname u;
	const char *p, *end;
	int added = 0, nonzero = 0;

	if (release && *release && (uname(&u) || strcmp(u.release, release)))
		return 0;
	if (strbuf_read_file(&sb, path ? path : "/proc/kallsyms", 0) < 0) {
		strbuf_release(&sb);
		return -1;
	}
	p = sb.buf;
	end = sb.buf + sb.len;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);
		const char *le = nl ? nl : end;
		const char *w[4];
		size_t wl[4];
		uint64_t a;
		int n = words(p, le, w, wl, 4);

		p = nl ? nl + 1 : end;
		if (n < 3 || wl[1] != 1 || parse_hex(w[0], wl[0], &a))
			continue;
		if (!strchr("tTwW", w[1][0]))
			continue;
		if (!a)
			continue;
		nonzero = 1;
		if (n == 4)
			strip_brackets(&w[3], &wl[3]);
		/* the words end at a space, tab, ']' or newline of this buffer: cut there */
		((char *)w[2])[wl[2]] = '\0';
		if (n == 4)
			((char *)w[3])[wl[3]] = '\0';
		add_in_place(k, a, w[2], n == 4 ? w[3] : NULL);
		added++;
	}
	if (added) {
		ALLOC_GROW(k->texts, k->nr_texts + 1, k->alloc_texts);
		k->texts[k->nr_texts++] = sb.buf;	/* ours now */
		sb.buf = NULL;
		sb.len = sb.alloc = 0;
	}
	strbuf_release(&sb);
	return nonzero ? added : 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

void ksyms_sort(struct ksyms *k)
{
	if (k->nr)
		qsort(k->syms, k->nr, sizeof(*k->syms), cmp_ksym);
	for (size_t i = 0; i < k->nr; i++) {
		struct ksym *y = &k->syms[i];
		uint64_t next = i + 1 < k->nr ? k->syms[i + 1].start : y->start + KSYM_SIZELESS_MAX;

		if (!y->end || y->end <= y->start)
			y->end = next > y->start ? next : y->start + 1;
		if (y->end - y->start > KSYM_SIZELESS_MAX)
			y->end = y->start + KSYM_SIZELESS_MAX;
	}
	memset(k->cache, 0, sizeof(k->cache));
	k->sorted = 1;
}

const struct ksym *ksyms_find(struct ksyms *k, uint64_t addr)
{
	size_t lo = 0, hi, c = (size_t)(hash_u64(addr) & (KSYMS_CACHE - 1));
	const struct ksym *y = NULL;

	if (!k->sorted)
		ksyms_sort(k);
	if (k->cache[c].at && k->cache[c].addr == addr)
		return k->cache[c].at == UINT32_MAX ? NULL : &k->syms[k->cache[c].at - 1];
	hi = k->nr;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (k->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, n = 0; i-- > 0 && n < 4; n++)
		if (addr < k->syms[i].end) {
			y = &k->syms[i];
			break;
		}
	if (k->nr < UINT32_MAX - 1) {
		k->cache[c].addr = addr;
		k->cache[c].at = y ? (uint32_t)(y - k->syms) + 1 : UINT32_MAX;
	}
	return y;
}
