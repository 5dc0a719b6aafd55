/* ksyms.c - kernel symbol table (see ksyms.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <fcntl.h>
#include <unistd.h>

#include "ksyms.h"
#include "paths.h"
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
	int core_only;			/* from the boot's cache: the core kernel's text alone */
	int whole_tried;		/* ksyms_need read /proc/kallsyms whole (once) */
	uint64_t core_lo, core_hi;	/* where that text is (_stext to _etext) */
	struct { uint64_t addr; uint32_t at; } cache[KSYMS_CACHE];	/* at: index + 1,
									   UINT32_MAX none */
	struct strpool pool;
	char **texts;		/* whole /proc/kallsyms reads: their names are used in place */
	size_t nr_texts, alloc_texts;
	void *cache_map;	/* the boot's cache file, mapped (ksyms_load_core): its names
				   are used in place */
	size_t cache_len;
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
	if (k->cache_map)
		munmap(k->cache_map, k->cache_len);
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
		k->core_only = 0;	/* (loaded from the cache before: all of it now) */
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

/*
 * A boot's core kernel symbols, kept in dlprof's cache: a record's end would otherwise
 * read all of /proc/kallsyms (122,000 lines the kernel formats one by one, about 60 ms of
 * CPU a record).  Only the core kernel's text (_stext to _etext) is kept: it stays where
 * it is until the next boot, where modules, BPF programs and trampolines come and go, so
 * an address outside it is looked up in a whole read (ksyms_need).
 *
 * The file, named by the boot's id (those of other boots are removed as it is written):
 * a header (magic, format, the kernel's release, the core's bounds, counts), each symbol
 * (start, size, its name's offset) in address order, then the names, each ending in a
 * NUL.  Written through a temporary file and a rename; a file whose header does not say
 * this kernel and format, or whose sizes do not add up, is not one.
 */
#define KSYMS_MAGIC	"DLPKSYM\0"
#define KSYMS_FORMAT	1u

struct ksyms_head {
	char magic[8];
	uint32_t format, nr;
	uint64_t core_lo, core_hi, names_len;
	char release[72];
};

struct ksyms_rec {
	uint64_t start;
	uint32_t size, name;
};

static char *ksyms_cache_path(void)
{
	const char *env = getenv("DLPROF_KSYMS_DIR");
	char *dir = env && *env ? xstrdup(env) : dlprof_cache_dir("kallsyms"), *p = NULL;
	char id[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");

	if (dir && f && fgets(id, sizeof(id), f)) {
		id[strcspn(id, "\n")] = '\0';
		if (*id && !strchr(id, '/'))
			p = xasprintf("%s/%s", dir, id);
	}
	if (f)
		fclose(f);
	free(dir);
	return p;
}

/* The core kernel's text: _stext and _etext among k's (sorted) symbols */
static int core_bounds(const struct ksyms *k, uint64_t *lo, uint64_t *hi)
{
	*lo = *hi = 0;
	for (size_t i = 0; i < k->nr; i++) {
		if (k->syms[i].module)
			continue;
		if (!strcmp(k->syms[i].name, "_stext"))
			*lo = k->syms[i].start;
		else if (!strcmp(k->syms[i].name, "_etext"))
			*hi = k->syms[i].start;
	}
	return *lo && *hi > *lo ? 0 : -1;
}

/* The files of earlier boots beside this boot's path (those of this boot, its own
 * temporary files among them, stay) */
static void drop_other_boots(const char *path)
{
	char *dir = xstrdup(path), *base = strrchr(dir, '/');
	struct dirent *e;
	DIR *d;

	if (!base)
		goto out;
	*base++ = '\0';
	d = opendir(*dir ? dir : "/");
	if (!d)
		goto out;
	while ((e = readdir(d))) {
		char *f;

		if (e->d_name[0] == '.' || !strncmp(e->d_name, base, strlen(base)))
			continue;
		f = xasprintf("%s/%s", dir, e->d_name);
		unlink(f);
		free(f);
	}
	closedir(d);
out:
	free(dir);
}

static int ksyms_save_core(struct ksyms *k, const char *path)
{
	struct ksyms_head h;
	struct ksyms_rec *recs;
	struct strbuf names = STRBUF_INIT;
	struct utsname u;
	char *tmp = NULL;
	size_t nr = 0;
	FILE *f;
	int ret = -1;

	if (!k->sorted)
		ksyms_sort(k);
	if (k->core_only || core_bounds(k, &h.core_lo, &h.core_hi) || uname(&u))
		return -1;
	recs = xmalloc(k->nr * sizeof(*recs) + 1);
	for (size_t i = 0; i < k->nr; i++) {
		const struct ksym *y = &k->syms[i];

		if (y->module || y->start < h.core_lo || y->start >= h.core_hi ||
		    y->end - y->start > UINT32_MAX || names.len > UINT32_MAX)
			continue;
		recs[nr].start = y->start;
		recs[nr].size = (uint32_t)(y->end - y->start);
		recs[nr].name = (uint32_t)names.len;
		strbuf_add(&names, y->name, strlen(y->name) + 1);
		nr++;
	}
	memset(h.magic, 0, sizeof(h.magic));
	memcpy(h.magic, KSYMS_MAGIC, sizeof(h.magic));
	h.format = KSYMS_FORMAT;
	h.nr = (uint32_t)nr;
	h.names_len = names.len;
	memset(h.release, 0, sizeof(h.release));
	snprintf(h.release, sizeof(h.release), "%s", u.release);
	if (nr && (f = dlprof_cache_file_begin(path, &tmp, "wb")))
		ret = dlprof_cache_file_end(f, fwrite(&h, sizeof(h), 1, f) == 1 &&
					    fwrite(recs, sizeof(*recs), nr, f) == nr &&
					    fwrite(names.buf, 1, names.len, f) == names.len,
					    tmp, path);
	if (!ret)
		drop_other_boots(path);
	free(tmp);
	free(recs);
	strbuf_release(&names);
	return ret;
}

/* Mapped, not read: of its 4.9 MB (here) only the records are read whole, and the names
 * of the symbols met; read into memory, the copy and the fresh pages cost each record
 * 3 ms */
static int ksyms_load_core(struct ksyms *k, const char *path)
{
	const struct ksyms_head *h;
	const struct ksyms_rec *recs;
	const char *names, *buf = MAP_FAILED;
	struct ksym *syms = NULL;
	struct utsname u;
	struct stat st;
	size_t need, len = 0;
	int fd = -1;

	if (k->nr || k->cache_map || uname(&u) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) ||
	    st.st_size < (off_t)sizeof(*h) || (uint64_t)st.st_size > SIZE_MAX)
		goto bad;
	len = (size_t)st.st_size;
	buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (buf == MAP_FAILED)
		goto bad;
	h = (const struct ksyms_head *)buf;
	if (memcmp(h->magic, KSYMS_MAGIC, sizeof(h->magic)) || h->format != KSYMS_FORMAT ||
	    strncmp(h->release, u.release, sizeof(h->release)) || !h->nr ||
	    h->core_lo >= h->core_hi)
		goto bad;
	need = sizeof(*h) + (size_t)h->nr * sizeof(*recs);
	if (len < need || len - need != h->names_len || !h->names_len || buf[len - 1] != '\0')
		goto bad;
	recs = (const struct ksyms_rec *)(buf + sizeof(*h));
	names = buf + need;
	syms = xmalloc(h->nr * sizeof(*syms));
	for (uint32_t i = 0; i < h->nr; i++) {
		if (recs[i].name >= h->names_len || (i && recs[i].start < recs[i - 1].start))
			goto bad;
		syms[i].start = recs[i].start;
		syms[i].end = recs[i].start + (recs[i].size ? recs[i].size : 1);
		syms[i].name = names + recs[i].name;
		syms[i].module = NULL;
	}
	k->syms = syms;
	k->alloc = k->nr = h->nr;
	k->core_only = 1;
	k->core_lo = h->core_lo;
	k->core_hi = h->core_hi;
	k->sorted = 1;
	memset(k->cache, 0, sizeof(k->cache));
	k->cache_map = (void *)buf;	/* ours now: the names live there */
	k->cache_len = len;
	close(fd);
	return (int)h->nr;
bad:
	free(syms);
	if (buf != MAP_FAILED)
		munmap((void *)buf, len);
	if (fd >= 0)
		close(fd);
	return 0;
}

void ksyms_need(struct ksyms *k, uint64_t addr, const char *release)
{
	if (!k->core_only || k->whole_tried || (addr >= k->core_lo && addr < k->core_hi))
		return;
	k->whole_tried = 1;
	ksyms_load_kallsyms(k, NULL, release);	/* (added: the names met so far stay) */
}

int ksyms_load_running(struct ksyms *k, int keep)
{
	char *cache = ksyms_cache_path();
	int n = cache ? ksyms_load_core(k, cache) : 0;

	if (n <= 0 && (n = ksyms_load_kallsyms(k, NULL, NULL)) > 0) {
		ksyms_sort(k);
		if (cache && keep)
			(void)ksyms_save_core(k, cache);
	}
	free(cache);
	return n;
}
