/* inductor.c - torch.compile's kernels named (recunwind.h).
 *
 * Inductor builds each fused C++ kernel into a .so of its own in its cache,
 * DIR/torchinductor_USER/xx/HASH.so, whose one function is "kernel"; the name
 * (cpp_fused_relu_0) is in the generated module that calls it, a .py file of the cache:
 *
 *	cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*'], '''
 *	<the kernel's C++ source>''')
 *
 * and HASH.cpp beside the .so holds that source, then the binding's own code.  So a .so
 * is named by the module source its .cpp starts with.  The module runs those lines, and
 * loads the .so, as it is imported: when the .so is mapped its module is there to read
 * (a container's cache is gone once it is removed: read then, under its root).
 *
 * The modules are read once each, into an index by their kernels' first bytes; a cache
 * of thousands of modules costs one read of each, not one per kernel.
 */
#include <dirent.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "recunwind.h"
#include "rephash.h"
#include "util.h"

#define KEY_BYTES 128		/* of a kernel's source, its key in the index */
#define FILE_MAX (8u << 20)	/* a module or .cpp read at most */
#define MODULES_MAX 20000	/* modules read at most, in all */

struct ikernel {
	char *name, *src;
	size_t len;
	struct ikernel *next;	/* same key */
};

struct inductor_index {
	struct u64map seen;	/* the modules read, by their path's hash */
	struct u64map by_key;	/* hash of KEY_BYTES -> struct ikernel chain */
	size_t modules;
};

static uint64_t hash_key(const char *s)
{
	return hash_bytes(s, KEY_BYTES);
}

/* s past blank lines and spaces */
static const char *skip_blank(const char *s, const char *end)
{
	while (s < end && (*s == '\n' || *s == '\r' || *s == ' '))
		s++;
	return s;
}

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Each "NAME = async_compile.cpp_pybinding([...], '''SOURCE''')" of a module, indexed */
static void index_module(struct inductor_index *ix, const char *py, size_t len)
{
	static const char marker[] = "= async_compile.cpp_pybinding(";
	const char *end = py + len, *p = py;

	while ((p = memmem(p, (size_t)(end - p), marker, sizeof(marker) - 1))) {
		const char *ls = p, *src, *send, *s0, *ne;
		struct ikernel *k;
		void **slot;

		while (ls > py && ls[-1] != '\n')
			ls--;
		p += sizeof(marker) - 1;
		src = memmem(p, (size_t)(end - p), "'''", 3);
		if (!src || memchr(p, '\n', (size_t)(src - p)))
			continue;
		src += 3;
		send = memmem(src, (size_t)(end - src), "'''", 3);
		if (!send)
			break;
		s0 = skip_blank(src, send);
		for (ne = ls; ne < p && is_ident(*ne); ne++)
			;
		if (ne == ls || send - s0 < KEY_BYTES)
			continue;
		k = xcalloc(1, sizeof(*k));
		k->name = xstrndup(ls, (size_t)(ne - ls));
		k->len = (size_t)(send - s0);
		k->src = xstrndup(s0, k->len);
		slot = u64map_slot(&ix->by_key, hash_key(s0));
		k->next = *slot;
		*slot = k;
	}
}

/* every module of the cache dir not read yet (DIR/xx/NAME.py) */
static void index_cache(struct inductor_index *ix, const char *dir)
{
	struct strbuf py = STRBUF_INIT;
	DIR *top = opendir(dir);
	struct dirent *e;

	while (top && (e = readdir(top)) && ix->modules < MODULES_MAX) {
		char *sub;
		DIR *d;
		struct dirent *f;

		if (e->d_name[0] == '.')
			continue;
		sub = xasprintf("%s/%s", dir, e->d_name);
		d = opendir(sub);
		while (d && (f = readdir(d)) && ix->modules < MODULES_MAX) {
			size_t n = strlen(f->d_name);
			char *path;
			uint64_t h;

			if (n < 4 || strcmp(f->d_name + n - 3, ".py"))
				continue;
			path = xasprintf("%s/%s", sub, f->d_name);
			/* (a module's name is the hash of its source: one read each) */
			h = hash_bytes(path, strlen(path)) | 1;
			if (u64map_has(&ix->seen, h)) {
				free(path);
				continue;
			}
			u64map_add(&ix->seen, h);
			ix->modules++;
			strbuf_reset(&py);
			if (strbuf_read_file(&py, path, FILE_MAX) >= 0 && py.len)
				index_module(ix, py.buf, py.len);
			free(path);
		}
		if (d)
			closedir(d);
		free(sub);
	}
	if (top)
		closedir(top);
	strbuf_release(&py);
}

static const char *find(struct inductor_index *ix, const char *c0, size_t n)
{
	struct ikernel *k;

	if (n < KEY_BYTES)
		return NULL;
	for (k = u64map_get(&ix->by_key, hash_key(c0)); k; k = k->next)
		if (k->len <= n && !memcmp(k->src, c0, k->len))
			return k->name;
	return NULL;
}

struct inductor_index *inductor_index_new(void)
{
	struct inductor_index *ix = xcalloc(1, sizeof(*ix));

	u64map_init(&ix->by_key);
	u64map_init(&ix->seen);
	return ix;
}

void inductor_index_free(struct inductor_index *ix)
{
	if (!ix)
		return;
	for (size_t i = 0; i < ix->by_key.cap; i++) {
		struct ikernel *k = ix->by_key.used[i] ? ix->by_key.vals[i] : NULL;

		while (k) {
			struct ikernel *next = k->next;

			free(k->name);
			free(k->src);
			free(k);
			k = next;
		}
	}
	u64map_release(&ix->by_key);
	u64map_release(&ix->seen);
	free(ix);
}

int inductor_file(const char *path)
{
	size_t n = strlen(path);

	return strstr(path, "/torchinductor_") && n > 3 && !strcmp(path + n - 3, ".so");
}

char *inductor_kernel_name(struct inductor_index *ix, const char *so_file)
{
	const char *at = strstr(so_file, "/torchinductor_"), *slash, *c0, *name;
	size_t flen = strlen(so_file);
	struct strbuf cpp = STRBUF_INIT;
	char *cpath, *dir, *ret = NULL;

	if (!inductor_file(so_file) || !(slash = strchr(at + 1, '/')))
		return NULL;
	cpath = xasprintf("%.*s.cpp", (int)(flen - 3), so_file);
	if (strbuf_read_file(&cpp, cpath, FILE_MAX) < 0 || !cpp.len)
		goto out;
	c0 = skip_blank(cpp.buf, cpp.buf + cpp.len);
	name = find(ix, c0, (size_t)(cpp.buf + cpp.len - c0));
	if (!name) {	/* a module not read yet */
		dir = xstrndup(so_file, (size_t)(slash - so_file));
		index_cache(ix, dir);
		free(dir);
		name = find(ix, c0, (size_t)(cpp.buf + cpp.len - c0));
	}
	if (name)
		ret = xstrdup(name);
out:
	free(cpath);
	strbuf_release(&cpp);
	return ret;
}
