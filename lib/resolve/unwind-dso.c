/* unwind-dso.c - what the unwinder reads of a file: its bytes (mapped once), the kind of
 * a code address and whether a call precedes a return address, and the CFI rule for an
 * address (libdw's row turned into a cached rule: unwind-priv.h). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dwarf.h>

#include "elfcheck.h"
#include "elffile.h"
#include "kunwind.h"
#include "unwind-priv.h"
#include "util.h"

/* ---- per-DSO file access ---- */

void unw_rule_free(struct rule *ru)
{
	if (!ru)
		return;
	if (ru->cfa_expr) {
		free(ru->cfa_expr->ops);
		free(ru->cfa_expr);
	}
	for (unsigned i = 0; i < ru->nr_exprs; i++)
		free(ru->exprs[i].ops);
	free(ru->exprs);
	free(ru);
}

void unw_dso_free(struct unw_dso *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr_rules; i++)
		unw_rule_free(d->rules[i]);
	unw_rule_free(d->spare);
	free(d->rules);
	u64map_release(&d->norow);
	free(d->roots);
	if (d->dwarf)
		dwarf_end(d->dwarf);
	if (d->eh)
		dwarf_cfi_end(d->eh);
	if (d->elf)
		elf_end(d->elf);
	elffile_put(d->file);
	free(d);
}

/* Open and validate the file behind dso (once). */
struct unw_dso *unw_dso_get(const struct dso *dso)
{
	struct unw_dso *d = dso->unwind_priv;
	const struct elffile *f;
	enum elffile_status st = ELFFILE_NOT_ELF;

	if (d)
		return d->failed ? NULL : d;
	d = xcalloc(1, sizeof(*d));
	u64map_init(&d->norow);
	((struct dso *)dso)->unwind_priv = d;
	d->failed = 1;
	if (dso->image && dso->image_size >= sizeof(Elf64_Ehdr)) {
		/* captured at record time (the [vdso]) */
		f = elffile_image(dso->image, dso->image_size, dso->path);
	} else {
		if (dso->kernel || dso->anon || dso->special || dso->path[0] != '/')
			return NULL;
		f = elffile_open(dso_file(dso), dso->build_id, dso->build_id_size, &st);
		if (st == ELFFILE_OTHER_BUILD_ID)
			warning("'%s' does not match the recorded build-id: not unwinding through it",
				dso->path);
	}
	if (!f)
		return NULL;
	d->file = f;
	d->data = f->data;
	d->size = f->size;
	d->name = f->path;
	if (!f->elf64 || f->machine != EM_X86_64 || (f->type != ET_EXEC && f->type != ET_DYN) ||
	    !f->nr_segs)
		return NULL;
	d->failed = 0;
	return d;
}

/* Load bias of the file mapped by mp: process address minus ELF virtual address. */
int unw_dso_bias(const struct unw_dso *d, const struct map *mp, uint64_t *bias)
{
	return elffile_map_bias(d->file->type, d->file->segs, d->file->nr_segs, mp->start,
				mp->pgoff, bias);
}

int unwind_map_bias(const struct map *mp, uint64_t *bias)
{
	const struct unw_dso *d = mp->dso ? unw_dso_get(mp->dso) : NULL;

	return d ? unw_dso_bias(d, mp, bias) : -1;
}

/* The mapping that covers addr at the sample's time (a few remembered per walk). */
const struct map *unw_walk_map(struct walk *w, uint64_t addr)
{
	const struct map *mp;

	for (unsigned i = 0; i < MAP_CACHE; i++) {
		mp = w->maps[i];
		if (mp && addr >= mp->start && addr < mp->end)
			return mp;
	}
	mp = machine_find_map(w->sp->u->m, w->s->pid, addr, w->s->time);
	if (mp) {
		w->maps[w->next_map] = mp;
		w->next_map = (w->next_map + 1) % MAP_CACHE;
	}
	return mp;
}

/* Copy len bytes at process address addr from the file behind its mapping. */
int unw_read_file_bytes(struct walk *w, uint64_t addr, void *buf, size_t len)
{
	const struct map *mp = unw_walk_map(w, addr);
	const struct unw_dso *d;
	uint64_t off;

	if (!mp || addr + len > mp->end || !(d = unw_dso_get(mp->dso)))
		return -1;
	off = map_file_offset(mp, addr);
	if (off > d->size || len > d->size - off)
		return -1;
	memcpy(buf, d->data + off, len);
	return 0;
}

/* ---- address classification and call decoding ---- */

int unw_page_kind(struct walk *w, uint64_t addr)
{
	uint64_t page = addr >> 12;
	struct page_ent *e = &w->sp->pages[hash_u64(page) & (PAGE_CACHE - 1)];
	const struct map *mp;
	int kind = PG_NONE;

	if (e->kind != PG_UNKNOWN && e->page == page && e->gen == w->sp->gen)
		return e->kind;
	if (addr >= 4096 && addr < 0x800000000000ULL) {
		mp = unw_walk_map(w, addr);
		if (mp && (!mp->prot || (mp->prot & PROT_EXEC)) && !mp->dso->kernel) {
			if (mp->dso->anon)
				kind = PG_ANON;
			else if (!mp->dso->special || mp->dso->image)
				kind = PG_FILE;
			else if (mp->prot & PROT_EXEC)
				kind = PG_ANON;		/* [vdso] and the like: code without a file */
		}
	}
	e->page = page;
	e->kind = kind;
	e->gen = w->sp->gen;
	return kind;
}

/* Is ra where a signal handler returns (__restore_rt), after no call?  Its CFI says so:
 * the 'S' augmentation, a frame whose saved registers are the interrupted code's. */
static int signal_return(struct walk *w, uint64_t ra)
{
	const struct map *mp = unw_walk_map(w, ra - 1);
	struct unw_dso *d;
	const struct rule *ru;
	uint64_t bias;

	if (!mp || !(d = unw_dso_get(mp->dso)) || unw_dso_bias(d, mp, &bias))
		return 0;
	ru = unw_rule_at(d, ra - 1 - bias, w->fast ? &w->bail : NULL);
	return ru && ru->signal;
}

int unw_is_return_address(struct walk *w, uint64_t ra)
{
	struct space *sp = w->sp;
	void *v;
	uint8_t b[7];
	int ok;

	if (unw_page_kind(w, ra) != PG_FILE)
		return 0;
	v = u64map_get(&sp->calls, ra);
	if (v)
		return v == (void *)1;
	ok = (!unw_read_file_bytes(w, ra - 7, b, sizeof(b)) && kunw_call_before(b)) ||
	     (!w->bail && signal_return(w, ra));
	if (w->bail)
		return 0;	/* not known: not cached */
	if (sp->calls.nr < CALL_CACHE_MAX)
		u64map_put(&sp->calls, ra, ok ? (void *)1 : (void *)2);
	return ok;
}

/* ---- CFI rules ---- */

static void expr_copy(struct expr *e, const Dwarf_Op *ops, size_t nops)
{
	e->ops = xcalloc(nops ? nops : 1, sizeof(*ops));
	memcpy(e->ops, ops, nops * sizeof(*ops));
	e->nops = nops;
}

/* The registers an expression reads */
static uint32_t expr_regs(const struct expr *e)
{
	uint32_t m = 0;

	for (size_t i = 0; i < e->nops; i++) {
		unsigned a = e->ops[i].atom;

		if (a >= DW_OP_breg0 && a <= DW_OP_breg31 && a - DW_OP_breg0 < DW_NREGS)
			m |= 1u << (a - DW_OP_breg0);
		else if (a == DW_OP_bregx && e->ops[i].number < DW_NREGS)
			m |= 1u << e->ops[i].number;
	}
	return m;
}

/* Turn libdw's description of register regno in frame into a rule. */
static void classify_reg(Dwarf_Frame *frame, unsigned regno, struct reg_rule *rr)
{
	Dwarf_Op ops_mem[3], *ops = NULL;
	size_t nops = 0;

	memset(rr, 0, sizeof(*rr));
	rr->kind = RR_UNDEF;
	if (dwarf_frame_register(frame, regno, ops_mem, &ops, &nops) != 0)
		return;
	if (!nops) {
		rr->kind = ops ? RR_UNDEF : RR_SAME;
		return;
	}
	if (ops[0].atom == DW_OP_call_frame_cfa) {
		int val = ops[nops - 1].atom == DW_OP_stack_value;
		size_t n = nops - (size_t)val;

		if (n == 1 || (n == 2 && ops[1].atom == DW_OP_plus_uconst)) {
			rr->kind = val ? RR_CFA_PLUS : RR_AT_CFA;
			rr->off = n == 2 ? (int64_t)ops[1].number : 0;
			return;
		}
	}
	if (nops == 1 && ops[0].atom == DW_OP_regx && ops[0].number < DW_NREGS) {
		rr->kind = RR_REG;
		rr->reg = (uint8_t)ops[0].number;
		return;
	}
	if (ops[nops - 1].atom == DW_OP_stack_value) {
		rr->kind = RR_VAL_EXPR;
		expr_copy(&rr->e, ops, nops - 1);
	} else {
		rr->kind = RR_EXPR;
		expr_copy(&rr->e, ops, nops);
	}
}

struct rule *unw_rule_make(Dwarf_Frame *frame)
{
	struct reg_rule rr[DW_NREGS];
	struct rule *ru;
	Dwarf_Addr start, end;
	Dwarf_Op *ops = NULL;
	size_t nops = 0;
	bool signal = false;
	int ra = dwarf_frame_info(frame, &start, &end, &signal);
	unsigned n = 0, nx = 0;

	for (unsigned r = 0; r < DW_NREGS; r++)
		classify_reg(frame, r, &rr[r]);
	if (ra >= 0 && ra != DW_RIP && ra < DW_NREGS) {
		/* the return address column, wherever it is */
		free(rr[DW_RIP].e.ops);
		rr[DW_RIP] = rr[ra];
		if (rr[ra].e.ops)
			expr_copy(&rr[DW_RIP].e, rr[ra].e.ops, rr[ra].e.nops);
	}
	for (unsigned r = 0; r < DW_NREGS; r++)
		if (rr[r].kind != RR_SAME && rr[r].kind != RR_UNDEF)
			n++;
	ru = xcalloc(1, sizeof(*ru) + n * sizeof(struct reg_step));
	ru->start = start;
	ru->end = end;
	ru->signal = signal;
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || !nops)
		ru->cfa_unknown = 1;
	else if (nops == 1 && ops[0].atom == DW_OP_bregx && ops[0].number < DW_NREGS) {
		ru->cfa_reg = (uint8_t)ops[0].number;
		ru->cfa_off = (int64_t)ops[0].number2;
	} else if (nops == 1 && ops[0].atom >= DW_OP_breg0 && ops[0].atom < DW_OP_breg0 + DW_NREGS) {
		ru->cfa_reg = (uint8_t)(ops[0].atom - DW_OP_breg0);
		ru->cfa_off = (int64_t)ops[0].number;
	} else {
		ru->cfa_expr = xcalloc(1, sizeof(*ru->cfa_expr));
		expr_copy(ru->cfa_expr, ops, nops);
	}
	for (unsigned r = 0; r < DW_NREGS; r++) {
		struct reg_step *st;

		if (rr[r].kind == RR_SAME)
			ru->same |= 1u << r;
		if (rr[r].kind == RR_SAME || rr[r].kind == RR_UNDEF)
			continue;
		st = &ru->steps[ru->nr_steps++];
		st->reg = (uint8_t)r;
		st->kind = rr[r].kind;
		st->from = rr[r].reg;
		st->off = (int32_t)rr[r].off;
		if (st->off != rr[r].off)
			ru->cfa_unknown = 1;	/* an offset past 2 GiB: not a real frame */
		if (rr[r].e.ops) {
			ru->exprs = xrealloc(ru->exprs, (nx + 1) * sizeof(*ru->exprs));
			ru->exprs[nx] = rr[r].e;
			rr[r].e.ops = NULL;
			st->from = (uint8_t)nx++;
		}
	}
	ru->nr_exprs = (uint8_t)nx;
	for (unsigned r = 0; r < DW_NREGS; r++)
		free(rr[r].e.ops);
	ru->uses = ru->cfa_expr ? expr_regs(ru->cfa_expr) : 1u << ru->cfa_reg;
	for (unsigned i = 0; i < ru->nr_steps; i++) {
		const struct reg_step *st = &ru->steps[i];

		if (st->kind == RR_REG)
			ru->uses |= 1u << st->from;
		else if (st->kind == RR_EXPR || st->kind == RR_VAL_EXPR)
			ru->uses |= expr_regs(&ru->exprs[st->from]);
	}
	ru->ra_undefined = rr[DW_RIP].kind == RR_UNDEF;
	return ru;
}

void unw_cfi_open(struct unw_dso *d)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int has_debug_frame = 0;
	unsigned unsafe;

	d->cfi_done = 1;
	d->elf = elffile_elf(d->file);
	if (!d->elf)
		return;
	unsafe = elf_check_warn(d->elf, ELF_CHECK_FILE | ELF_CHECK_EH_FRAME, d->name);
	if (unsafe & ELF_CHECK_FILE) {
		elf_end(d->elf);	/* no CFI, no thread roots: frame pointers and scans */
		d->elf = NULL;
		return;
	}
	if (!(unsafe & ELF_CHECK_EH_FRAME))
		d->eh = dwarf_getcfi_elf(d->elf);
	if (elf_getshdrstrndx(d->elf, &shstrndx) == 0) {
		while ((scn = elf_nextscn(d->elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh))
				continue;
			name = elf_strptr(d->elf, shstrndx, sh.sh_name);
			if (name && !strcmp(name, ".debug_frame") && sh.sh_type != SHT_NOBITS)
				has_debug_frame = 1;
		}
	}
	d->has_dbg = has_debug_frame;
}

/* The rule for file address a, or NULL when no CFI row covers it.  A fast walk (bail
 * not NULL) gives up where the file's .debug_frame would be read for the first time
 * (libdw reads all of its entries then, and all of the file's DWARF headers before:
 * milliseconds to seconds in a large file); opening the file's .eh_frame (its sorted
 * table, read lazily by libdw) and a row of it are microseconds. */
const struct rule *unw_rule_at(struct unw_dso *d, uint64_t a, int *bail)
{
	size_t lo = 0, hi = d->nr_rules;
	Dwarf_Frame *frame = NULL;
	struct rule *ru;
	struct rule_hit *hit = &d->hits[hash_u64(a) & (RULE_CACHE - 1)];

	/* return addresses repeat: most steps end here, one cache line instead of a
	 * binary search through thousands of rows */
	if (hit->ru && hit->addr == a)
		return hit->ru;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a < d->rules[mid]->start)
			hi = mid;
		else if (a >= d->rules[mid]->end)
			lo = mid + 1;
		else {
			hit->addr = a;
			hit->ru = d->rules[mid];
			return d->rules[mid];
		}
	}
	if (!d->cfi_done)
		unw_cfi_open(d);
	if (u64map_get(&d->norow, a))
		return NULL;
	if (d->eh && dwarf_cfi_addrframe(d->eh, a, &frame))
		frame = NULL;
	if (!frame && d->has_dbg) {
		if (bail && !d->dbg_used) {
			*bail = 1;
			return NULL;
		}
		if (!d->dbg_used) {
			d->dbg_used = 1;
			if (elf_check_warn(d->elf, ELF_CHECK_DEBUG_FRAME, d->name))
				d->has_dbg = 0;
			else
				d->dwarf = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
			if (d->dwarf)
				d->dbg = dwarf_getcfi(d->dwarf);
		}
		if (d->dbg && dwarf_cfi_addrframe(d->dbg, a, &frame))
			frame = NULL;
	}
	if (!frame) {
		if (d->norow.nr < CALL_CACHE_MAX)
			u64map_put(&d->norow, a, (void *)1);
		return NULL;
	}
	ru = unw_rule_make(frame);
	free(frame);
	if (a < ru->start || a >= ru->end || (lo < d->nr_rules && d->rules[lo]->start < ru->end) ||
	    (lo && d->rules[lo - 1]->end > ru->start)) {
		/* a row that does not fit the table (overlapping FDEs): use it once */
		unw_rule_free(d->spare);
		d->spare = ru;
		return ru;
	}
	ALLOC_GROW(d->rules, d->nr_rules + 1, d->alloc_rules);
	memmove(d->rules + lo + 1, d->rules + lo, (d->nr_rules - lo) * sizeof(*d->rules));
	d->rules[lo] = ru;
	d->nr_rules++;
	hit->addr = a;
	hit->ru = ru;
	return ru;
}
