/* isa/code-hits.c - ISA tier of the functions samples landed in, decoding only those functions.
 *
 * check-isa scans whole files (code-scan.c: every function, cached per build-id; a cold
 * scan of libtorch_cpu takes seconds).  The report's DL view needs the tier of the few
 * hundred functions its samples hit, so it reads just their bytes: the bounds come from
 * the .eh_frame FDE covering the address (what names stripped code func@0x.. too), else
 * from the symbol table, and each function is decoded once.
 */
#include <stdlib.h>
#include <string.h>

#include <elfutils/libdw.h>
#include <gelf.h>

#include "elfcheck.h"
#include "elffile.h"
#include "elfsyms.h"
#include "isa.h"
#include "rephash.h"
#include "util.h"

#define HIT_MAX_FUNC (4u << 20)		/* decode at most this much of one function */

struct hit_seg {
	uint64_t vaddr, off, filesz;
};

struct hit_dso {
	const struct elffile *file;
	int bad;		/* unreadable, not ELF, or changed since the recording */
	Elf *elf;
	Dwarf_CFI *cfi;
	struct fde_index fdes;	/* its functions' bounds where its CFI is read */
	int fdes_built;
	struct hit_seg *segs;
	size_t nr_segs;
	struct u64map funcs;	/* function start vaddr -> struct hit_func */
	struct u64map by_addr;	/* vaddr -> struct hit_func (repeated addresses) */
};

struct hit_func {
	int tier;		/* enum isa_tier, -1 unknown */
	struct isa_counts c;
};

struct isa_hits {
	struct u64map dsos;	/* key -> struct hit_dso */
	struct u64map jit;	/* JIT code bytes (pointer) -> tier + 1 */
	struct isa_decoder *dec;
	uint64_t decoded_funcs, decoded_bytes;
};

struct isa_hits *isa_hits_new(void)
{
	struct isa_hits *h = xcalloc(1, sizeof(*h));

	u64map_init(&h->dsos);
	u64map_init(&h->jit);
	return h;
}

static void free_map_vals(struct u64map *m, int free_vals)
{
	for (size_t i = 0; free_vals && i < m->cap; i++)
		if (m->used[i])
			free(m->vals[i]);
	u64map_release(m);
}

void isa_hits_free(struct isa_hits *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->dsos.cap; i++) {
		struct hit_dso *d;

		if (!h->dsos.used[i])
			continue;
		d = h->dsos.vals[i];
		free_map_vals(&d->funcs, 1);
		free_map_vals(&d->by_addr, 0);	/* points into funcs */
		if (d->cfi)
			dwarf_cfi_end(d->cfi);
		fde_index_release(&d->fdes);
		if (d->elf)
			elf_end(d->elf);
		elffile_put(d->file);
		free(d->segs);
		free(d);
	}
	u64map_release(&h->dsos);
	u64map_release(&h->jit);
	if (h->dec)
		isa_decoder_free(h->dec);
	free(h);
}

static struct hit_dso *hit_dso_get(struct isa_hits *h, const void *key, const char *path,
				   const uint8_t *build_id, size_t build_id_size)
{
	void **slot = u64map_slot(&h->dsos, (uintptr_t)key);
	struct hit_dso *d = *slot;
	unsigned unsafe;

	if (d)
		return d->bad ? NULL : d;
	d = xcalloc(1, sizeof(*d));
	d->bad = 1;
	u64map_init(&d->funcs);
	u64map_init(&d->by_addr);
	*slot = d;
	if (!path || path[0] != '/')
		return NULL;
	/* a changed file is refused: the symbolizer already said so */
	d->file = elffile_open(path, build_id, build_id_size, NULL);
	d->elf = d->file ? elffile_elf(d->file) : NULL;
	if (!d->elf)
		return NULL;
	unsafe = elf_check_warn(d->elf, ELF_CHECK_FILE | ELF_CHECK_EH_FRAME, path);
	if (unsafe & ELF_CHECK_FILE)
		return NULL;
	for (size_t i = 0; i < d->file->nr_segs; i++) {
		const struct elffile_seg *ph = &d->file->segs[i];

		if (!(ph->flags & PF_X))
			continue;
		d->segs = xrealloc(d->segs, (d->nr_segs + 1) * sizeof(*d->segs));
		d->segs[d->nr_segs++] = (struct hit_seg){ ph->vaddr, ph->offset, ph->filesz };
	}
	if (!(unsafe & ELF_CHECK_EH_FRAME))
		d->cfi = dwarf_getcfi_elf(d->elf);	/* else bounds from symbols alone */
	d->bad = 0;
	return d;
}

static const struct hit_seg *seg_of_off(const struct hit_dso *d, uint64_t off)
{
	for (size_t i = 0; i < d->nr_segs; i++)
		if (off >= d->segs[i].off && off - d->segs[i].off < d->segs[i].filesz)
			return &d->segs[i];
	return NULL;
}

/* A sized function symbol around ((uint64_t *)ctx)[0]: its bounds in [1] and [2]. */
static int sym_around(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	uint64_t *v = ctx;

	if (!sym->st_size || v[0] < sym->st_value || v[0] - sym->st_value >= sym->st_size)
		return 0;
	v[1] = sym->st_value;
	v[2] = sym->st_value + sym->st_size;
	return 1;
}

/* [start, end) of the function around vaddr: its FDE, else a sized FUNC symbol. */
static int func_bounds(struct hit_dso *d, uint64_t vaddr, uint64_t *start, uint64_t *end)
{
	uint64_t v[3] = { vaddr, 0, 0 };
	const struct fde_range *f;

	if (d->cfi && !d->fdes_built) {
		fde_index_build(d->elf, &d->fdes);
		d->fdes_built = 1;
	}
	if (d->cfi && (f = fde_index_find(&d->fdes, vaddr))) {
		*start = f->start;
		*end = f->start + f->len;
		return 0;
	}
	if (!elf_each_func(d->elf, sym_around, v))
		return -1;
	*start = v[1];
	*end = v[2];
	return 0;
}

static struct hit_func *decode_func(struct isa_hits *h, struct hit_dso *d, uint64_t vaddr)
{
	uint64_t start, end, foff;
	const struct hit_seg *g = NULL;
	struct hit_func *f;
	void **slot;
	size_t r;

	if (func_bounds(d, vaddr, &start, &end))
		return NULL;
	slot = u64map_slot(&d->funcs, start);
	if (*slot)
		return *slot;
	f = xcalloc(1, sizeof(*f));
	f->tier = -1;
	*slot = f;
	for (size_t i = 0; i < d->nr_segs; i++)
		if (start >= d->segs[i].vaddr && start - d->segs[i].vaddr < d->segs[i].filesz)
			g = &d->segs[i];
	if (!g)
		return f;
	if (end - start > HIT_MAX_FUNC)
		end = start + HIT_MAX_FUNC;
	if (end - g->vaddr > g->filesz)
		end = g->vaddr + g->filesz;
	foff = start - g->vaddr + g->off;
	r = foff < d->file->size ? d->file->size - foff : 0;
	if (r > end - start)
		r = end - start;
	if (r > 0) {
		if (!h->dec)
			h->dec = isa_decoder_new();
		if (h->dec) {
			isa_decode(h->dec, d->file->data + foff, r, start, &f->c);
			f->tier = isa_counts_tier(f->c.n);
			h->decoded_funcs++;
			h->decoded_bytes += (uint64_t)r;
		}
	}
	return f;
}

int isa_hits_tier(struct isa_hits *h, const void *key, const char *path, const uint8_t *build_id,
		  size_t build_id_size, uint64_t off, struct isa_counts *counts)
{
	struct hit_dso *d = hit_dso_get(h, key, path, build_id, build_id_size);
	const struct hit_seg *g;
	struct hit_func *f;
	uint64_t vaddr;
	void **slot;

	if (!d || !(g = seg_of_off(d, off)))
		return -1;
	vaddr = off - g->off + g->vaddr;
	slot = u64map_slot(&d->by_addr, vaddr);
	if (!*slot)
		*slot = decode_func(h, d, vaddr);
	f = *slot;
	if (!f) {
		/* no bounds: remember the miss (a static sentinel is not freed) */
		static struct hit_func none = { -1, { { 0 }, 0 } };

		*slot = &none;
		return -1;
	}
	if (counts)
		*counts = f->c;
	return f->tier;
}

int isa_hits_code_tier(struct isa_hits *h, const uint8_t *code, size_t len, uint64_t addr)
{
	void **slot;

	if (!code || !len)
		return -1;
	slot = u64map_slot(&h->jit, (uintptr_t)code);
	if (!*slot) {
		struct isa_counts c;

		if (!h->dec && !(h->dec = isa_decoder_new()))
			return -1;
		memset(&c, 0, sizeof(c));
		isa_decode(h->dec, code, len, addr, &c);
		*slot = (void *)(uintptr_t)(isa_counts_tier(c.n) + 1);
		h->decoded_funcs++;
		h->decoded_bytes += len;
	}
	return (int)(uintptr_t)*slot - 1;
}

void isa_hits_stats(const struct isa_hits *h, uint64_t *funcs, uint64_t *bytes)
{
	*funcs = h->decoded_funcs;
	*bytes = h->decoded_bytes;
}
