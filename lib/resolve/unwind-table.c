/* unwind-table.c - a file's whole CFI as the rows the kernel walk reads (kunwind.h):
 * each FDE's rows made as the unwinder makes them (unw_rule_make), turned into a rule,
 * equal neighbours merged, gaps between FDEs marked; then 4 bytes a row (its rule
 * apart), and an index by page.  The file is
 * opened here, apart from the unwinder's copy of it: record builds tables in a thread of
 * their own (libdw's handles are not shared between threads). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dwarf.h>

#include "elfcheck.h"
#include "elfsyms.h"
#include "paths.h"
#include "kunwind.h"
#include "unwind-priv.h"
#include "rephash.h"
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
	if (ru->signal) {
		r.kind = KR_SIGNAL;
		return r;
	}
	if (ru->cfa_unknown)
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

/* A rule's key: its three fields in one word */
static uint32_t rule_key(const struct kunw_row *r)
{
	return (uint32_t)r->kind | (uint32_t)(uint8_t)r->rbp << 8 | (uint32_t)(uint16_t)r->cfa << 16;
}

/* The distinct rules of a table's rows as they are met: each its key and its rows */
struct rules_met {
	struct u64map ids;	/* key -> its place in v[] + 1 */
	struct { uint32_t key, count; } *v;
	size_t nr, alloc;
};

static uint32_t rule_met(struct rules_met *rm, uint32_t key)
{
	void **slot = u64map_slot(&rm->ids, key);

	if (!*slot) {
		ALLOC_GROW(rm->v, rm->nr + 1, rm->alloc);
		rm->v[rm->nr].key = key;
		rm->v[rm->nr].count = 0;
		*slot = (void *)(uintptr_t)++rm->nr;
	}
	rm->v[(uintptr_t)*slot - 1].count++;
	return (uint32_t)((uintptr_t)*slot - 1);
}

static int by_count(const void *a, const void *b, void *arg)
{
	const struct rules_met *rm = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;

	if (rm->v[i].count != rm->v[j].count)
		return rm->v[i].count < rm->v[j].count ? 1 : -1;
	return (rm->v[i].key > rm->v[j].key) - (rm->v[i].key < rm->v[j].key);
}

/* The rows as the kernel keeps them (kunwind.h): a row again at each 1 MiB segment's
 * start where none starts there, the distinct rules apart (rule 0: KR_OTHER, for the
 * rarest where there are more than KUNW_MAX_RULES), 4 bytes a row; and the pages'
 * index over them */
static void pack(const struct rows *t, struct unw_ktable *kt)
{
	static const struct kunw_row other = { 0, KR_OTHER, KR_RBP_UNKNOWN, 0 };
	struct rules_met rm = { 0 };
	struct kunw_row *v = NULL;
	uint32_t *order, *rule_of, *idx;
	size_t n = 0, alloc = 0;

	for (size_t i = 0; i < t->nr; i++) {
		for (uint32_t sg = i ? (t->v[i - 1].addr >> KUNW_SEG_SHIFT) + 1 : 1;
		     i && sg <= t->v[i].addr >> KUNW_SEG_SHIFT; sg++) {
			if (sg << KUNW_SEG_SHIFT == t->v[i].addr)
				break;
			ALLOC_GROW(v, n + 1, alloc);
			v[n] = t->v[i - 1];
			v[n++].addr = sg << KUNW_SEG_SHIFT;
		}
		ALLOC_GROW(v, n + 1, alloc);
		v[n++] = t->v[i];
	}
	/* each row's rule, found once */
	u64map_init(&rm.ids);
	rule_met(&rm, rule_key(&other));
	rule_of = xmalloc(n * sizeof(*rule_of));
	for (size_t i = 0; i < n; i++)
		rule_of[i] = rule_met(&rm, rule_key(&v[i]));
	/* the rules, most used first (KR_OTHER first of all), each its index */
	order = xmalloc(rm.nr * sizeof(*order));
	idx = xmalloc(rm.nr * sizeof(*idx));
	for (size_t i = 0; i < rm.nr; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, rm.nr, sizeof(*order), by_count, &rm);
	kt->nr_rules = rm.nr < KUNW_MAX_RULES ? rm.nr : KUNW_MAX_RULES;
	kt->rules = xmalloc(kt->nr_rules * sizeof(*kt->rules));
	for (size_t i = 0, k = 1; i < rm.nr; i++) {
		uint32_t key = rm.v[order[i]].key;

		if (key == rule_key(&other)) {
			idx[order[i]] = 0;
			kt->rules[0] = (struct kunw_rule){ other.kind, other.rbp, other.cfa };
		} else if (k < kt->nr_rules) {
			idx[order[i]] = (uint32_t)k;
			kt->rules[k++] = (struct kunw_rule){ (uint8_t)key, (int8_t)(key >> 8),
							     (int16_t)(key >> 16) };
		} else {
			idx[order[i]] = 0;
			kt->rules_cut += rm.v[order[i]].count;
		}
	}
	kt->rows = xmalloc(n * sizeof(*kt->rows));
	for (size_t i = 0; i < n; i++)
		kt->rows[i] = KUNW_ROW(v[i].addr, idx[rule_of[i]]);
	kt->nr_rows = n;
	kt->nr_pages = (v[n - 1].addr >> KUNW_PAGE_SHIFT) + 1;
	kt->pages = xcalloc(kt->nr_pages, sizeof(*kt->pages));
	for (size_t pg = 0, r = 0; pg < kt->nr_pages; pg++) {
		uint64_t lo = pg << KUNW_PAGE_SHIFT, hi = (pg + 1) << KUNW_PAGE_SHIFT;
		size_t x;

		/* the last row at or before the page's start, and the rows in it */
		while (r + 1 < n && v[r + 1].addr <= lo)
			r++;
		for (x = r; x < n && v[x].addr < hi; x++)
			;
		kt->pages[pg] = (struct kunw_page){ (uint32_t)r, (uint32_t)x };
	}
	free(order);
	free(idx);
	free(rule_of);
	free(rm.v);
	u64map_release(&rm.ids);
	free(v);
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
	if (!bad) {
		kt->base = t.base;
		pack(&t, kt);
	}
	free(t.v);
	return bad ? -1 : 0;
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
	if (kt->map) {
		munmap(kt->map, kt->map_len);
	} else {
		free(kt->rows);
		free(kt->rules);
		free(kt->pages);
	}
	memset(kt, 0, sizeof(*kt));
}

/*
 * The tables kept on disk by build-id, beside the build-id cache's files ("ab/cdef...
 * .ktab"; under DLPROF_KTAB_DIR where it is set): a header (magic, format, the page size, base, counts), the pages, the rows.
 * Written once through a temporary file and a rename; a file that does not say this
 * format, or whose sizes do not add up, is not one.
 */
#define KTAB_MAGIC	"DLPKTAB\0"
#define KTAB_FORMAT	3u	/* (1: 8-byte rows, rules in them; 2: no KR_SIGNAL) */

struct ktab_head {
	char magic[8];
	uint32_t format, page_shift;
	uint64_t base, nr_pages, nr_rows, nr_rules;
};

/* Where the table of the file of this build-id is kept (suffix ".ktab"), or what walks
 * wanted in the processes of that executable (".wants") */
static char *ktab_file(const uint8_t *id, size_t id_size, const char *suffix)
{
	const char *dir = getenv("DLPROF_KTAB_DIR");
	char *f, *p, hex[41];

	if (dir && *dir) {
		/* kept apart from the build-id cache (the tests: one for the suite) */
		build_id_hex(id, id_size, hex);
		return xasprintf("%s/%.2s/%s%s", dir, hex, hex + 2, suffix);
	}
	f = buildid_cache_file(id, id_size);
	if (!f)
		return NULL;
	p = xasprintf("%s%s", f, suffix);
	free(f);
	return p;
}

static char *ktab_path(const uint8_t *id, size_t id_size)
{
	return ktab_file(id, id_size, ".ktab");
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
	    h.nr_rows > (1u << 28) || !h.nr_rules || h.nr_rules > KUNW_MAX_RULES ||
	    (uint64_t)st.st_size != sizeof(h) + 8 * h.nr_pages + 4 * (h.nr_rules + h.nr_rows))
		goto bad;
	/* mapped, not read: the arrays are given to the kernel in one copy from the page
	 * cache (a read() into new memory was a copy and a fault a page more) */
	kt->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (kt->map == MAP_FAILED) {
		kt->map = NULL;
		goto bad;
	}
	kt->map_len = (size_t)st.st_size;
	close(fd);
	kt->base = h.base;
	kt->nr_pages = h.nr_pages;
	kt->nr_rows = h.nr_rows;
	kt->nr_rules = h.nr_rules;
	kt->pages = (struct kunw_page *)((char *)kt->map + sizeof(h));
	kt->rules = (struct kunw_rule *)((char *)kt->pages + 8 * h.nr_pages);
	kt->rows = (uint32_t *)((char *)kt->rules + 4 * h.nr_rules);
	/* (a row's rule is one of the table's, a page's rows are rows) */
	for (size_t i = 0; i < kt->nr_rows; i++)
		if (KUNW_ROW_RULE(kt->rows[i]) >= kt->nr_rules)
			goto bad_read;
	for (size_t i = 0; i < kt->nr_pages; i++)
		if (kt->pages[i].first > kt->pages[i].end || kt->pages[i].end > kt->nr_rows)
			goto bad_read;
	return 0;
bad_read:
	unwind_ktable_release(kt);
	return -1;
bad:
	close(fd);
	unwind_ktable_release(kt);
	return -1;
}

void unwind_ktable_keep(const uint8_t *id, size_t id_size, const struct unw_ktable *kt)
{
	char *p = id_size ? ktab_path(id, id_size) : NULL, *tmp;
	struct ktab_head h = { KTAB_MAGIC, KTAB_FORMAT, KUNW_PAGE_SHIFT, kt->base,
			       kt->nr_pages, kt->nr_rows, kt->nr_rules };
	FILE *f;

	if (!p)
		return;
	f = dlprof_cache_file_begin(p, &tmp, "wb");
	if (f)
		dlprof_cache_file_end(f, fwrite(&h, sizeof(h), 1, f) == 1 &&
					 fwrite(kt->pages, 8, kt->nr_pages, f) == kt->nr_pages &&
					 fwrite(kt->rules, 4, kt->nr_rules, f) == kt->nr_rules &&
					 fwrite(kt->rows, 4, kt->nr_rows, f) == kt->nr_rows, tmp, p);
	free(tmp);
	free(p);
}

/*
 * What walks wanted in the processes of one executable: the build-ids of the files whose
 * tables they asked for or read, a line each in hex and the runs since one last did (an
 * older line, the hex alone: 0), kept beside the executable's own table.  Its next run
 * loads those tables as the executable is mapped, not every table kept (a cache that
 * every workload adds to: 201 tables, 21.9 MB, for the CNN, whose walks want 25).  One
 * interpreter runs every script: a line not used in KTAB_WANTS_RUNS runs goes (python3's
 * had grown to 116 tables, 20 MB, loaded for the CNN).
 */
static size_t read_wants(const uint8_t *exe, size_t exe_size, uint8_t (**ids)[21],
			 unsigned **runs)
{
	char *p = exe_size ? ktab_file(exe, exe_size, ".wants") : NULL, line[128];
	FILE *f = p ? fopen(p, "r") : NULL;
	size_t nr = 0, alloc = 0, ralloc = 0;

	*ids = NULL;
	if (runs)
		*runs = NULL;
	free(p);
	while (f && nr < KTAB_WANTS_MAX && fgets(line, sizeof(line), f)) {
		size_t n = strspn(line, "0123456789abcdef");
		unsigned r = 0;

		if (!n || n % 2 || n > 40 ||
		    (line[n] != '\n' && line[n] && (line[n] != ' ' || sscanf(line + n, " %u", &r) != 1)))
			continue;
		ALLOC_GROW(*ids, nr + 1, alloc);
		(*ids)[nr][0] = (uint8_t)(n / 2);
		for (size_t i = 0; i < n / 2; i++) {
			unsigned v;

			sscanf(line + 2 * i, "%2x", &v);
			(*ids)[nr][1 + i] = (uint8_t)v;
		}
		if (runs) {
			ALLOC_GROW(*runs, nr + 1, ralloc);
			(*runs)[nr] = r;
		}
		nr++;
	}
	if (f)
		fclose(f);
	return nr;
}

size_t unwind_ktable_wants(const uint8_t *exe, size_t exe_size, uint8_t (**ids)[21])
{
	return read_wants(exe, exe_size, ids, NULL);
}

void unwind_ktable_wants_keep(const uint8_t *exe, size_t exe_size, const uint8_t (*ids)[21],
			      size_t nr)
{
	uint8_t (*old)[21];
	unsigned *runs;
	size_t nold = read_wants(exe, exe_size, &old, &runs), n = 0;
	char *p = exe_size ? ktab_file(exe, exe_size, ".wants") : NULL, *tmp, hex[41];
	unsigned char *is_new = xcalloc(nr ? nr : 1, 1);
	FILE *f;
	int ok = 1;

	for (size_t i = 0; i < nr; i++) {
		size_t k;

		for (k = 0; k < nold && memcmp(old[k], ids[i], (size_t)ids[i][0] + 1); k++)
			;
		is_new[i] = k == nold;
		if (k < nold)
			runs[k] = UINT_MAX;	/* (used: 0 below) */
	}
	if (p && (nr || nold) && (f = dlprof_cache_file_begin(p, &tmp, "w"))) {
		/* the lines kept, in their order, then the new ones */
		for (size_t i = 0; i < nold && n < KTAB_WANTS_MAX; i++) {
			unsigned r = runs[i] == UINT_MAX ? 0 : runs[i] + 1;

			if (r >= KTAB_WANTS_RUNS)
				continue;
			build_id_hex(old[i] + 1, old[i][0], hex);
			ok &= fprintf(f, "%s %u\n", hex, r) > 0;
			n++;
		}
		for (size_t i = 0; i < nr && n < KTAB_WANTS_MAX; i++) {
			if (!is_new[i])
				continue;
			build_id_hex(ids[i] + 1, ids[i][0], hex);
			ok &= fprintf(f, "%s 0\n", hex) > 0;
			n++;
		}
		dlprof_cache_file_end(f, ok, tmp, p);
		free(tmp);
	}
	free(is_new);
	free(p);
	free(old);
	free(runs);
}
