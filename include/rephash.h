/* rephash.h - small hash tables for the report side: u64 -> pointer maps and a string pool.
 *
 * Open addressing, power-of-two sizes, grown at 50% load.  Keys are never removed.
 */
#ifndef DLPROF_REPHASH_H
#define DLPROF_REPHASH_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
	uint64_t *keys;
	void **vals;
	unsigned char *used;
	size_t nr, cap;
};

void u64map_init(struct u64map *h);
void u64map_release(struct u64map *h);
/* The value stored for key, or NULL. */
void *u64map_get(const struct u64map *h, uint64_t key);
/* Store val under key (replacing). */
void u64map_put(struct u64map *h, uint64_t key, void *val);
/* Address of the value slot for key, inserting NULL when new. */
void **u64map_slot(struct u64map *h, uint64_t key);
/* The map as a set of keys */
static inline void u64map_add(struct u64map *h, uint64_t key)
{
	u64map_put(h, key, (void *)1);
}
static inline int u64map_has(const struct u64map *h, uint64_t key)
{
	return u64map_get(h, key) != NULL;
}

/* Interned strings: equal strings share one stable pointer until strpool_release. */
struct strpool {
	char **slots;
	size_t nr, cap;
};
void strpool_init(struct strpool *p);
void strpool_release(struct strpool *p);
const char *strpool_intern(struct strpool *p, const char *s);
const char *strpool_intern_len(struct strpool *p, const char *s, size_t len);
/* The process's interned strings (until exit; thread-safe): the names every stage
 * compares by pointer (families, operators, symbols, Python frames).  A string with a
 * NUL inside is the part before it. */
const char *str_intern(const char *s, size_t len);

uint64_t hash_bytes(const void *data, size_t len);
static inline uint64_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

#endif
