/* rephash.c - u64 maps and a string pool (see rephash.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rephash.h"
#include "util.h"

/* A word at a time (the inputs are mostly arrays of addresses: a byte at a time, each
 * step a multiply that waits on the one before, hashing an unwound stack of ~50 addresses
 * was 3% of record's CPU); each word folded in by an odd multiply and a shift, both
 * one-to-one, so inputs of one length that differ in a single word never collide; the
 * length in the seed; hash_u64 at the end, so that the low bits (the tables' index) hang
 * on every input bit. */
uint64_t hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)len * 0x9e3779b97f4a7c15ULL);
	uint64_t w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 32;
	}
	if (len) {
		w = 0;
		memcpy(&w, p, len);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	return hash_u64(h);
}

void u64map_init(struct u64map *h)
{
	memset(h, 0, sizeof(*h));
}

void u64map_release(struct u64map *h)
{
	free(h->keys);
	free(h->vals);
	free(h->used);
	memset(h, 0, sizeof(*h));
}

static size_t u64map_find(const struct u64map *h, uint64_t key)
{
	size_t mask = h->cap - 1, i = hash_u64(key) & mask;

	while (h->used[i] && h->keys[i] != key)
		i = (i + 1) & mask;
	return i;
}

static void u64map_grow(struct u64map *h)
{
	struct u64map n;

	n.cap = h->cap ? h->cap * 2 : 64;
	n.nr = 0;
	n.keys = xcalloc(n.cap, sizeof(*n.keys));
	n.vals = xcalloc(n.cap, sizeof(*n.vals));
	n.used = xcalloc(n.cap, 1);
	for (size_t i = 0; i < h->cap; i++) {
		if (!h->used[i])
			continue;
		size_t j = u64map_find(&n, h->keys[i]);
		n.used[j] = 1;
		n.keys[j] = h->keys[i];
		n.vals[j] = h->vals[i];
		n.nr++;
	}
	u64map_release(h);
	*h = n;
}

void *u64map_get(const struct u64map *h, uint64_t key)
{
	size_t i;

	if (!h->cap)
		return NULL;
	i = u64map_find(h, key);
	return h->used[i] ? h->vals[i] : NULL;
}

void **u64map_slot(struct u64map *h, uint64_t key)
{
	size_t i;

	if ((h->nr + 1) * 2 > h->cap)
		u64map_grow(h);
	i = u64map_find(h, key);
	if (!h->used[i]) {
		h->used[i] = 1;
		h->keys[i] = key;
		h->vals[i] = NULL;
		h->nr++;
	}
	return &h->vals[i];
}

void u64map_put(struct u64map *h, uint64_t key, void *val)
{
	*u64map_slot(h, key) = val;
}

void strpool_init(struct strpool *p)
{
	memset(p, 0, sizeof(*p));
}

void strpool_release(struct strpool *p)
{
	for (size_t i = 0; i < p->cap; i++)
		free(p->slots[i]);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}

static size_t strpool_find(const struct strpool *p, const char *s, size_t len, uint64_t h)
{
	size_t mask = p->cap - 1, i = h & mask;

	while (p->slots[i] && (strncmp(p->slots[i], s, len) || p->slots[i][len]))
		i = (i + 1) & mask;
	return i;
}

const char *strpool_intern_len(struct strpool *p, const char *s, size_t len)
{
	size_t i;

	if ((p->nr + 1) * 2 > p->cap) {
		struct strpool n;

		n.cap = p->cap ? p->cap * 2 : 256;
		n.nr = p->nr;
		n.slots = xcalloc(n.cap, sizeof(*n.slots));
		for (size_t k = 0; k < p->cap; k++) {
			char *e = p->slots[k];

			if (e)
				n.slots[strpool_find(&n, e, strlen(e), hash_bytes(e, strlen(e)))] = e;
		}
		free(p->slots);
		*p = n;
	}
	i = strpool_find(p, s, len, hash_bytes(s, len));
	if (!p->slots[i]) {
		p->slots[i] = xstrndup(s, len);
		p->nr++;
	}
	return p->slots[i];
}

const char *strpool_intern(struct strpool *p, const char *s)
{
	return strpool_intern_len(p, s, strlen(s));
}

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strpool interned;

const char *str_intern(const char *s, size_t len)
{
	const char *ret;

	len = strnlen(s, len);
	pthread_mutex_lock(&intern_lock);
	ret = strpool_intern_len(&interned, s, len);
	pthread_mutex_unlock(&intern_lock);
	return ret;
}
