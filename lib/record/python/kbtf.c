/* kbtf.c - a struct member's offset in the running kernel's BTF (kbtf.h).
 *
 * The format is the kernel's (Documentation/bpf/btf.rst, <linux/btf.h>): a header, then
 * the types, each a struct btf_type followed by what its kind carries, numbered from 1
 * in order, then the strings.  One pass indexes the types; a member is then looked up
 * by name in the struct's own list, and in its unnamed structs and unions.
 */
#include "kbtf.h"

#include <fcntl.h>
#include <linux/btf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

struct kbtf {
	unsigned char *raw;
	size_t len;
	int mapped;			/* raw is the file mapped, else read */
	const char *str;
	uint32_t str_len;
	const unsigned char *type0;	/* the types' section */
	uint32_t *types;		/* by id, its offset in that section; [0]: void */
	uint32_t nr;
};

/* Bytes after a type's header, by its kind; -1: a kind this reader does not know */
static long trailing(const struct btf_type *t)
{
	uint32_t vlen = BTF_INFO_VLEN(t->info);

	switch (BTF_INFO_KIND(t->info)) {
	case BTF_KIND_INT:
		return 4;
	case BTF_KIND_PTR: case BTF_KIND_FWD: case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST: case BTF_KIND_RESTRICT: case BTF_KIND_FUNC: case BTF_KIND_FLOAT:
	case 18:	/* BTF_KIND_TYPE_TAG */
		return 0;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT: case BTF_KIND_UNION:
		return (long)vlen * (long)sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return (long)vlen * (long)sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return (long)vlen * (long)sizeof(struct btf_param);
	case BTF_KIND_VAR:
		return sizeof(struct btf_var);
	case BTF_KIND_DATASEC:
		return (long)vlen * (long)sizeof(struct btf_var_secinfo);
	case 17:	/* BTF_KIND_DECL_TAG: a u32 component index */
		return 4;
	case 19:	/* BTF_KIND_ENUM64: name, lo32, hi32 */
		return (long)vlen * 12;
	default:
		return -1;
	}
}

/* The file's bytes: mapped (Linux 6.16 maps the kernel's BTF: 2 ms here, where its
 * 1,352 reads of 4 KiB took 10), else read whole */
static int load_raw(struct kbtf *k, const char *path)
{
	struct stat st;
	size_t alloc = 0;
	ssize_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p != MAP_FAILED) {
			k->raw = p;
			k->len = (size_t)st.st_size;
			k->mapped = 1;
			close(fd);
			return 0;
		}
		alloc = (size_t)st.st_size + 1;	/* (+1: the end is seen in one more read) */
	}
	for (;;) {
		if (k->len == alloc) {
			alloc = alloc ? alloc * 2 : 8u << 20;
			k->raw = xrealloc(k->raw, alloc);
		}
		got = read(fd, k->raw + k->len, alloc - k->len);
		if (got <= 0)
			break;
		k->len += (size_t)got;
	}
	close(fd);
	return got < 0 ? -1 : 0;
}

struct kbtf *kbtf_open(const char *path)
{
	struct kbtf *k = xcalloc(1, sizeof(*k));
	const struct btf_header *h;
	size_t off, end;

	if (load_raw(k, path) || k->len < sizeof(*h))
		goto bad;
	h = (const void *)k->raw;
	if (h->magic != BTF_MAGIC || h->hdr_len < sizeof(*h) ||
	    (size_t)h->hdr_len + h->type_off + h->type_len > k->len ||
	    (size_t)h->hdr_len + h->str_off + h->str_len > k->len || h->type_off % 4)
		goto bad;
	k->str = (const char *)k->raw + h->hdr_len + h->str_off;
	k->str_len = h->str_len;
	k->type0 = k->raw + h->hdr_len + h->type_off;
	/* each type at least its header long: room for all, in one allocation */
	k->types = xmalloc((h->type_len / sizeof(struct btf_type) + 1) * sizeof(*k->types));
	k->nr = 1;
	off = 0;
	end = h->type_len;
	while (off + sizeof(struct btf_type) <= end) {
		const struct btf_type *t = (const void *)(k->type0 + off);
		long more = trailing(t);

		if (more < 0 || off + sizeof(*t) + (size_t)more > end)
			goto bad;
		k->types[k->nr++] = (uint32_t)off;
		off += sizeof(*t) + (size_t)more;
	}
	return k;
bad:
	kbtf_close(k);
	return NULL;
}

void kbtf_close(struct kbtf *k)
{
	if (!k)
		return;
	free(k->types);
	if (k->mapped)
		munmap(k->raw, k->len);
	else
		free(k->raw);
	free(k);
}

static const char *name_of(const struct kbtf *k, uint32_t off)
{
	return off < k->str_len ? k->str + off : "";
}

static const struct btf_type *type_of(const struct kbtf *k, uint32_t id)
{
	return id && id < k->nr ? (const void *)(k->type0 + k->types[id]) : NULL;
}

/* A type's size in bytes, through typedefs and qualifiers; 0: unknown */
static uint32_t size_of(const struct kbtf *k, uint32_t id)
{
	for (int depth = 0; depth < 16; depth++) {
		const struct btf_type *t = type_of(k, id);

		if (!t)
			return 0;
		switch (BTF_INFO_KIND(t->info)) {
		case BTF_KIND_INT: case BTF_KIND_STRUCT: case BTF_KIND_UNION: case BTF_KIND_ENUM:
		case BTF_KIND_FLOAT: case 19:
			return t->size;
		case BTF_KIND_PTR:
			return sizeof(void *);
		case BTF_KIND_ARRAY: {
			const struct btf_array *a = (const void *)(t + 1);
			uint32_t each = size_of(k, a->type);

			return each && a->nelems <= UINT32_MAX / each ? each * a->nelems : 0;
		}
		case BTF_KIND_TYPEDEF: case BTF_KIND_VOLATILE: case BTF_KIND_CONST:
		case BTF_KIND_RESTRICT: case 18:
			id = t->type;
			break;
		default:
			return 0;
		}
	}
	return 0;
}

static long member_in(const struct kbtf *k, const struct btf_type *t, const char *member,
		      uint32_t size, int depth)
{
	const struct btf_member *m = (const void *)(t + 1);
	int kflag = BTF_INFO_KFLAG(t->info);

	for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++, m++) {
		uint32_t bits = kflag ? BTF_MEMBER_BIT_OFFSET(m->offset) : m->offset;
		const struct btf_type *mt;
		long off;

		if (bits % 8 || (kflag && BTF_MEMBER_BITFIELD_SIZE(m->offset)))
			continue;
		if (*name_of(k, m->name_off)) {
			if (!strcmp(name_of(k, m->name_off), member))
				return size_of(k, m->type) == size ? (long)(bits / 8) : -1;
			continue;
		}
		mt = type_of(k, m->type);
		while (mt && depth < 8 && (BTF_INFO_KIND(mt->info) == BTF_KIND_TYPEDEF ||
					   BTF_INFO_KIND(mt->info) == BTF_KIND_VOLATILE ||
					   BTF_INFO_KIND(mt->info) == BTF_KIND_CONST))
			mt = type_of(k, mt->type);
		if (!mt || depth >= 8 || (BTF_INFO_KIND(mt->info) != BTF_KIND_STRUCT &&
					  BTF_INFO_KIND(mt->info) != BTF_KIND_UNION))
			continue;
		off = member_in(k, mt, member, size, depth + 1);
		if (off >= 0)
			return off + (long)(bits / 8);
	}
	return -1;
}

long kbtf_member(const struct kbtf *k, const char *strct, const char *member, uint32_t size)
{
	for (uint32_t id = 1; k && id < k->nr; id++) {
		const struct btf_type *t = type_of(k, id);

		if (BTF_INFO_KIND(t->info) == BTF_KIND_STRUCT && BTF_INFO_VLEN(t->info) &&
		    !strcmp(name_of(k, t->name_off), strct))
			return member_in(k, t, member, size, 0);
	}
	return -1;
}
