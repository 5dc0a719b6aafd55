/* unwind-table.c - a file's whole CFI as the rows the kernel walk reads (kunwind.h):
 * each FDE's rows made as the unwinder makes them (unw_rule_make), turned into 8 bytes,
 * equal neighbours merged, gaps between FDEs marked, and an index by page.  The file is
 * opened here, apart from the unwinder's copy of it: record builds tables in a thread of
 * their own (libdw's handles are not shared between threads). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dwarf.h>

#include "elfcheck.h"
#include "elfsyms.h"
#include "paths.h"
#include "kunwind.h"
#include "unwind-priv.h"
#include "util.h"

struct rows {
	struct kunw_row *v;
	size_t nr, alloc;
	uint64_t base;
	int too_far;		/* an address past 4 GiB from the base */
};

/* the CFA of a PLT entry: rsp + 8, + 8 where (rip & 15) >= k (DW_OP_lit k) */
static int plt_expr(const struct expr *e, int *k)
{
	static const uint8_t shape[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and,
					 0, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };

	if (e->nops != ARRAY_SIZE(shape))
		return 0;
	for (size_t i = 0; i < e->nops; i++)
		if (i != 4 && e->ops[i].atom != shape[i])
			return 0;
	if (e->ops[0].number != 8 || e->ops[1].number != 0 ||
	    e->ops[4].atom < DW_OP_lit0 || e->ops[4].atom > DW_OP_lit15)
		return 0;
	*k = e->ops[4].atom - DW_OP_lit0;
	return 1;
}

static int in8(int64_t off, int lo, int hi, int *out)
{
	if (off % 8 || off / 8 < lo || off / 8 > hi)
		return 0;
	*out = (int)(off / 8);
	return 1;
}

/* The row for a rule */
static struct kunw_row row_of(const struct rule *ru)
{
	struct kunw_row r = { 0, KR_OTHER, KR_RBP_UNKNOWN, 0 };
	int cfa = 0, rbp = KR_RBP_UNKNOWN, k, ra_ok = 0;

	if (ru->ra_undefined) {
		r.kind = KR_ROOT;
		return r;
	}
	if (ru->cfa_unknown || ru->signal)
		return r;
	for (unsigned i = 0; i < ru->nr_steps; i++) {
		const struct reg_step *st = &ru->steps[i];

		if (st->reg == DW_RIP)
			ra_ok = st->kind == RR_AT_CFA && st->off == -8;
		else if (st->reg == DW_RBP && st->kind == RR_AT_CFA &&
			 !in8(st->off, -126, 127, &rbp))
			return r;
		else if (st->reg == DW_RBP && st->kind == RR_EXPR) {
			const struct expr *e = &ru->exprs[st->from];

			/* (libdw puts the CFA first, as the expression finds it) */
			size_t f = e->nops && e->ops[0].atom == DW_OP_call_frame_cfa;

			if (e->nops == f + 1 && e->ops[f].atom == DW_OP_breg6 && e->ops[f].number == 0)
				rbp = KR_RBP_AT_RBP;
		}
	}
	if (ru->same & (1u << DW_RBP))
		rbp = KR_RBP_SAME;
	if (!ra_ok)
		return r;
	if (ru->cfa_expr) {
		const struct expr *e = ru->cfa_expr;

		if (e->nops == 2 && e->ops[0].atom == DW_OP_breg6 && e->ops[1].atom == DW_OP_deref &&
		    in8((int64_t)e->ops[0].number, -32768, 32767, &cfa))
			r.kind = KR_RBP_DEREF;
		else if (plt_expr(e, &k) && rbp == KR_RBP_SAME) {
			r.kind = KR_PLT;
			cfa = 1;
			rbp = k;
		} else {
			return r;
		}
	} else if (ru->cfa_reg == DW_RSP && in8(ru->cfa_off, -32768, 32767, &cfa)) {
		r.kind = KR_RSP;
	} else if (ru->cfa_reg == DW_RBP && in8(ru->cfa_off, -32768, 32767, &cfa)) {
		r.kind = KR_RBP;
	} else {
		return r;
	}
	r.cfa = (int16_t)cfa;
	r.rbp = (int8_t)rbp;
	return r;
}

static void put(struct rows *t, uint64_t addr, struct kunw_row r)
{
	struct kunw_row *last = t->nr ? &t->v[t->nr - 1] : NULL;

	if (addr - t->base > UINT32_MAX) {
		t->too_far = 1;
		return;
	}
	r.addr = (uint32_t)(addr - t->base);
	if (last && last->addr == r.addr) {
		*last = r;	/* (an empty row before it) */
	} else if (!last || last->kind != r.kind || last->rbp != r.rbp || last->cfa != r.cfa) {
		ALLOC_GROW(t->v, t->nr + 1, t->alloc);
		t->v[t->nr++] = r;
	}
}

struct roots {
	struct root_range *v;
	size_t nr, alloc;
	Elf *elf;
};

static int note_root(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	struct roots *r = ctx;

	if (sym->st_size && unwind_thread_root_name(elf_strptr(r->elf, strndx, sym->st_name))) {
		ALLOC_GROW(r->v, r->nr + 1, r->alloc);
		r->v[r->nr++] = (struct root_range){ sym->st_value, sym->st_value + sym->st_size };
	}
	return 0;
}

static int in_roots(const struct roots *r, uint64_t a)
{
	for (size_t i = 0; i < r->nr; i++)
		if (a >= r->v[i].start && a < r->v[i].end)
			return 1;
	return 0;
}

/* The rows of e's .eh_frame, the thread roots' marked */
static int make_rows(Elf *e, const char *name, struct rows *t)
{
	struct roots roots = { .elf = e };
	struct fde_index x;
	Dwarf_CFI *eh;
	uint64_t end = 0;

	if (elf_check_warn(e, ELF_CHECK_FILE | ELF_CHECK_EH_FRAME, name) ||
	    !(eh = dwarf_getcfi_elf(e)))
		return -1;
	if (fde_index_build(e, &x) < 0 || !x.nr) {
		dwarf_cfi_end(eh);
		return -1;
	}
	elf_each_func(e, note_root, &roots);
	t->base = x.v[0].start & ~((1ull << KUNW_PAGE_SHIFT) - 1);
	for (size_t i = 0; i < x.nr && !t->too_far; i++) {
		uint64_t a = x.v[i].start, fend = x.v[i].start + x.v[i].len;

		if (fend <= end)
			continue;	/* inside the last (overlapping FDEs): the first kept */
		if (a < end)
			a = end;
		else if (a > end && t->nr)
			put(t, end, (struct kunw_row){ 0, KR_NONE, KR_RBP_SAME, 0 });
		while (a < fend) {
			Dwarf_Frame *frame = NULL;
			struct rule *ru;
			struct kunw_row r;
			uint64_t next;

			if (dwarf_cfi_addrframe(eh, a, &frame) || !frame) {
				put(t, a, (struct kunw_row){ 0, KR_NONE, KR_RBP_SAME, 0 });
				break;
			}
			ru = unw_rule_make(frame);
			free(frame);
			r = row_of(ru);
			next = ru->end;
			unw_rule_free(ru);
			if (in_roots(&roots, a))
				r.kind |= KR_IN_ROOT;
			put(t, a, r);
			if (next <= a)
				break;
			a = next;
		}
		if (fend > end)
			end = fend;
	}
	fde_index_release(&x);
	dwarf_cfi_end(eh);
	free(roots.v);
	if (t->nr)
		put(t, end, (struct kunw_row){ 0, KR_NONE, KR_RBP_SAME, 0 });
	return t->too_far || !t->nr ? -1 : 0;
}

int unwind_ktable_image(const void *data, size_t size, const char *name,
			struct unw_ktable *kt)
{
	struct rows t = { 0 };
	const struct elffile *f = elffile_image(data, size, name);
	Elf *e = f ? elffile_elf(f) : NULL;
	int bad = !e || make_rows(e, name, &t);

	memset(kt, 0, sizeof(*kt));
	if (e)
		elf_end(e);
	elffile_put(f);
	if (bad) {
		free(t.v);
		return -1;
	}
	kt->base = t.base;
	kt->rows = t.v;
	kt->nr_rows = t.nr;
	kt->nr_pages = (t.v[t.nr - 1].addr >> KUNW_PAGE_SHIFT) + 1;
	kt->pages = xcalloc(kt->nr_pages, sizeof(*kt->pages));
	for (size_t pg = 0, r = 0; pg < kt->nr_pages; pg++) {
		uint64_t lo = pg << KUNW_PAGE_SHIFT, hi = (pg + 1) << KUNW_PAGE_SHIFT;
		size_t x;

		/* the last row at or before the page's start, and the rows in it */
		while (r + 1 < t.nr && t.v[r + 1].addr <= lo)
			r++;
		for (x = r; x < t.nr && t.v[x].addr < hi; x++)
			;
		kt->pages[pg] = (struct kunw_page){ (uint32_t)r, (uint32_t)x };
	}
	return 0;
}

int unwind_ktable(const char *file, const uint8_t *build_id, size_t id_size,
		  struct unw_ktable *kt)
{
	/* the file that was mapped, not another at its path */
	const struct elffile *f = elffile_open(file, build_id, id_size, NULL);
	int ret;

	memset(kt, 0, sizeof(*kt));
	if (!f)
		return -1;
	ret = unwind_ktable_image(f->data, f->size, file, kt);
	elffile_put(f);
	return ret;
}

void unwind_ktable_release(struct unw_ktable *kt)
{
	free(kt->rows);
	free(kt->pages);
	memset(kt, 0, sizeof(*kt));
}

/*
 * The tables kept on disk by build-id, beside the build-id cache's files ("ab/cdef...
 * .ktab"): a header (magic, format, the page size, base, counts), the pages, the rows.
 * Written once through a temporary file and a rename; a file that does not say this
 * format, or whose sizes do not add up, is not one.
 */
#define KTAB_MAGIC	"DLPKTAB\0"
#define KTAB_FORMAT	1u

struct ktab_head {
	char magic[8];
	uint32_t format, page_shift;
	uint64_t base, nr_pages, nr_rows;
};

static char *ktab_path(const uint8_t *id, size_t id_size)
{
	char *f = buildid_cache_file(id, id_size), *p;

	if (!f)
		return NULL;
	p = xasprintf("%s.ktab", f);
	free(f);
	return p;
}

int unwind_ktable_cached(const uint8_t *id, size_t id_size)
{
	char *p = id_size ? ktab_path(id, id_size) : NULL;
	int ok = p && !access(p, R_OK);

	free(p);
	return ok;
}

int unwind_ktable_load(const uint8_t *id, size_t id_size, struct unw_ktable *kt)
{
	char *p = id_size ? ktab_path(id, id_size) : NULL;
	struct ktab_head h;
	struct stat st;
	int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;

	free(p);
	memset(kt, 0, sizeof(*kt));
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || read(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) ||
	    memcmp(h.magic, KTAB_MAGIC, 8) || h.format != KTAB_FORMAT ||
	    h.page_shift != KUNW_PAGE_SHIFT || !h.nr_rows || h.nr_pages > (1u << 28) ||
	    h.nr_rows > (1u << 28) ||
	    (uint64_t)st.st_size != sizeof(h) + 8 * (h.nr_pages + h.nr_rows))
		goto bad;
	kt->base = h.base;
	kt->nr_pages = h.nr_pages;
	kt->nr_rows = h.nr_rows;
	kt->pages = xmalloc(8 * h.nr_pages + 1);
	kt->rows = xmalloc(8 * h.nr_rows);
	if (read(fd, kt->pages, 8 * h.nr_pages) != (ssize_t)(8 * h.nr_pages) ||
	    read(fd, kt->rows, 8 * h.nr_rows) != (ssize_t)(8 * h.nr_rows))
		goto bad;
	close(fd);
	return 0;
bad:
	close(fd);
	unwind_ktable_release(kt);
	return -1;
}

void unwind_ktable_keep(const uint8_t *id, size_t id_size, const struct unw_ktable *kt)
{
	char *p = id_size ? ktab_path(id, id_size) : NULL, *tmp, *slash;
	struct ktab_head h = { KTAB_MAGIC, KTAB_FORMAT, KUNW_PAGE_SHIFT, kt->base,
			       kt->nr_pages, kt->nr_rows };
	FILE *f;
	int ok;

	if (!p)
		return;
	slash = strrchr(p, '/');
	*slash = '\0';
	ok = !mkdir_p(p);
	*slash = '/';
	tmp = xasprintf("%s.%d", p, (int)getpid());
	f = ok ? fopen(tmp, "wb") : NULL;
	if (f) {
		ok = fwrite(&h, sizeof(h), 1, f) == 1 &&
		     fwrite(kt->pages, 8, kt->nr_pages, f) == kt->nr_pages &&
		     fwrite(kt->rows, 8, kt->nr_rows, f) == kt->nr_rows;
		if (fclose(f) || !ok || rename(tmp, p))
			unlink(tmp);
	}
	free(tmp);
	free(p);
}
