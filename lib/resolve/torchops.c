/* torchops.c - where an at::_ops struct name splits into operator and overload.
 *
 * PyTorch generates one struct per operator schema, named NAME_OVERLOAD ("add_Tensor" for
 * "add.Tensor", "fill__Scalar" for "fill_.Scalar", "sum_IntList_out" for "sum.IntList_out")
 * or NAME alone when the overload is empty.  The underscore is ambiguous on its own
 * ("native_batch_norm_backward" has no overload), so the split comes from the schemas
 * libtorch registers: their strings ("add.Tensor(Tensor self, Tensor other, *, Scalar
 * alpha=1) -> Tensor") sit in the .rodata of the library that holds the at::_ops code.
 * Read once per library file; without the file (a report on another machine) a list of
 * the common overload names decides.
 */
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "elffile.h"
#include "torchops.h"
#include "util.h"

struct schema_set {
	char *path;
	char **ident;		/* NAME_OVERLOAD (or NAME), with the split at split[i] */
	size_t *split;
	size_t size, nr;	/* open addressing, size a power of two */
	int ok;			/* the file was read and held schemas */
};

static pthread_mutex_t sets_lock = PTHREAD_MUTEX_INITIALIZER;
static struct schema_set *sets;
static size_t nr_sets, alloc_sets;

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static void set_put(struct schema_set *st, const char *s, size_t len, size_t split);

static void set_grow(struct schema_set *st)
{
	struct schema_set old = *st;

	st->size = old.size ? old.size * 2 : 4096;
	st->ident = xcalloc(st->size, sizeof(*st->ident));
	st->split = xcalloc(st->size, sizeof(*st->split));
	st->nr = 0;
	for (size_t i = 0; i < old.size; i++)
		if (old.ident[i]) {
			set_put(st, old.ident[i], strlen(old.ident[i]), old.split[i]);
			free(old.ident[i]);
		}
	free(old.ident);
	free(old.split);
}

static size_t set_slot(const struct schema_set *st, const char *s, size_t len)
{
	size_t i = hash_str(s, len) & (st->size - 1);

	while (st->ident[i] && (strncmp(st->ident[i], s, len) || st->ident[i][len]))
		i = (i + 1) & (st->size - 1);
	return i;
}

static void set_put(struct schema_set *st, const char *s, size_t len, size_t split)
{
	size_t i;

	if ((st->nr + 1) * 2 > st->size)
		set_grow(st);
	i = set_slot(st, s, len);
	if (st->ident[i])
		return;
	st->ident[i] = xstrndup(s, len);
	st->split[i] = split;
	st->nr++;
}

static int is_ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* One .rodata string: a schema "NAME[.OVERLOAD](ARGS) -> RET"?  Adds its struct name. */
static void scan_string(struct schema_set *st, const char *s, size_t max)
{
	size_t n = 0, dot = 0, end;
	char ident[512];

	if (!max || !((s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return;
	while (n < max && is_ident_char(s[n]))
		n++;
	if (n < max && s[n] == '.') {
		dot = n++;
		while (n < max && is_ident_char(s[n]))
			n++;
		if (n == dot + 1)
			return;
	}
	if (n >= max || s[n] != '(' || !memmem(s + n, strnlen(s + n, max - n), ") -> ", 5))
		return;
	end = n;
	if (end >= sizeof(ident))
		return;
	memcpy(ident, s, end);
	if (dot)
		ident[dot] = '_';
	set_put(st, ident, end, dot ? dot : end);
}

static void load_schemas(struct schema_set *st)
{
	const struct elffile *f = elffile_open(st->path, NULL, 0, NULL);
	Elf *e = f ? elffile_elf(f) : NULL;
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (e && !elf_getshdrstrndx(e, &shstrndx)) {
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			const char *name;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
				continue;
			name = elf_strptr(e, shstrndx, sh.sh_name);
			if (!name || strcmp(name, ".rodata"))
				continue;
			d = elf_getdata(scn, NULL);
			if (!d || !d->d_buf)
				break;
			for (size_t i = 0; i < d->d_size;) {
				const char *p = (const char *)d->d_buf + i;
				size_t left = d->d_size - i, len = strnlen(p, left);

				scan_string(st, p, len);
				i += len + 1;
			}
			break;
		}
	}
	if (e)
		elf_end(e);
	elffile_put(f);
	st->ok = st->nr > 0;
}

/* Overload names PyTorch's schemas use most, for when no schema can be read. */
static const char *const common_overloads[] = {
	"Tensor_out", "Scalar_out", "IntList_out", "dim_IntList", "Tensor_mode", "Scalar_mode",
	"out_mode", "memory_format", "using_ints", "using_names", "dtype_out", "grad_input",
	"Tensor", "Scalar", "out", "int", "dim", "dimname", "IntList", "dtype", "self",
	"other", "input", "names", "vec", "default", "correction", "values", "src", "value",
};

static size_t guess_split(const char *ident, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(common_overloads); i++) {
		size_t ol = strlen(common_overloads[i]);

		if (len > ol + 1 && ident[len - ol - 1] == '_' &&
		    !memcmp(ident + len - ol, common_overloads[i], ol))
			return len - ol - 1;
	}
	return len;
}

size_t torchops_split(const char *dso_path, const char *ident, size_t len)
{
	struct schema_set *st = NULL;
	size_t i, ret;

	pthread_mutex_lock(&sets_lock);
	if (dso_path) {
		for (i = 0; i < nr_sets; i++)
			if (!strcmp(sets[i].path, dso_path)) {
				st = &sets[i];
				break;
			}
		if (!st) {
			ALLOC_GROW(sets, nr_sets + 1, alloc_sets);
			st = &sets[nr_sets++];
			memset(st, 0, sizeof(*st));
			st->path = xstrdup(dso_path);
			load_schemas(st);
		}
	}
	if (!st || !st->ok) {
		ret = guess_split(ident, len);
	} else {
		i = set_slot(st, ident, len);
		ret = st->ident[i] ? st->split[i] : len;
	}
	pthread_mutex_unlock(&sets_lock);
	return ret;
}
