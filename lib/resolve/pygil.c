/* pygil.c - take_gil and drop_gil found from an interpreter's code (pygil.h) */
#include <capstone/capstone.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "dynlib.h"
#include "elfcheck.h"
#include "elfsyms.h"
#include "pygil.h"
#include "util.h"

#define MAX_DEPTH	3	/* calls followed from an exported function */
#define MAX_FUNCS	256	/* functions decoded in one search at most */

/* what a function calls, of what tells the two apart */
enum {
	C_TIMEDWAIT = 1, C_WAIT = 2, C_SIGNAL = 4, C_UNLOCK = 8,
};

static const struct { const char *name; unsigned bit; } imports[] = {
	{ "pthread_cond_timedwait", C_TIMEDWAIT }, { "pthread_cond_wait", C_WAIT },
	{ "pthread_cond_signal", C_SIGNAL }, { "pthread_mutex_unlock", C_UNLOCK },
};

struct slot {			/* a GOT slot the dynamic linker fills with an import */
	uint64_t addr;
	unsigned bit;
};

struct gil_scan {
	Elf *e;
	const struct dynlib_cs *dl;
	csh cs;
	struct fde_index fdes;
	struct slot *slots;
	size_t nr_slots, alloc_slots;
	uint64_t plt_lo[2], plt_hi[2];	/* .plt, .plt.sec */
	uint64_t entry[5];		/* the exported functions searched from; 0: none */
};

int pygil_interpreter(const char *path, int *free_threaded)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	*free_threaded = 0;
	if (!strncmp(b, "libpython3.", 11))
		b += 11;
	else if (!strncmp(b, "python3.", 8))
		b += 8;
	else
		return 0;
	if (*b < '0' || *b > '9')
		return 0;
	while (*b >= '0' && *b <= '9')
		b++;
	*free_threaded = *b == 't';
	return 1;
}

const char *pygil_name(enum pygil_fn f)
{
	return f == PYGIL_TAKE ? "take_gil" : "drop_gil";
}

/* The bytes of [addr, addr + len) in an executable section, NULL where not one */
static const uint8_t *code_at(Elf *e, uint64_t addr, uint64_t len)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || addr < sh.sh_addr ||
		    addr + len > sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < sh.sh_size)
			return NULL;
		return (const uint8_t *)d->d_buf + (addr - sh.sh_addr);
	}
	return NULL;
}

static unsigned import_bit(const char *name)
{
	size_t n = strcspn(name, "@");

	for (size_t i = 0; i < ARRAY_SIZE(imports); i++)
		if (strlen(imports[i].name) == n && !strncmp(name, imports[i].name, n))
			return imports[i].bit;
	return 0;
}

/* The GOT slots of the imports that matter, from the relocations against .dynsym */
static void read_slots(struct gil_scan *g)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(g->e, scn))) {
		Elf_Scn *syms;
		GElf_Shdr ssh;
		Elf_Data *d, *sd;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize)
			continue;
		syms = elf_getscn(g->e, sh.sh_link);
		if (!syms || !gelf_getshdr(syms, &ssh) || ssh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		sd = elf_getdata(syms, NULL);
		if (!d || !sd)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym s;
			const char *name;
			unsigned bit;

			if (!gelf_getrela(d, (int)i, &r) ||
			    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &s) ||
			    !(name = elf_strptr(g->e, ssh.sh_link, s.st_name)) ||
			    !(bit = import_bit(name)))
				continue;
			ALLOC_GROW(g->slots, g->nr_slots + 1, g->alloc_slots);
			g->slots[g->nr_slots++] = (struct slot){ r.r_offset, bit };
		}
	}
}

static unsigned slot_bit(const struct gil_scan *g, uint64_t addr)
{
	for (size_t i = 0; i < g->nr_slots; i++)
		if (g->slots[i].addr == addr)
			return g->slots[i].bit;
	return 0;
}

/* The slot an instruction reads through [rip + disp], 0 where it does not */
static uint64_t rip_slot(const cs_insn *in)
{
	const cs_x86 *x = &in->detail->x86;

	if (x->op_count != 1 || x->operands[0].type != X86_OP_MEM ||
	    x->operands[0].mem.base != X86_REG_RIP)
		return 0;
	return in->address + in->size + (uint64_t)x->operands[0].mem.disp;
}

/* The import a PLT stub at addr jumps to (its bit), 0 where none that matters */
static unsigned plt_bit(struct gil_scan *g, uint64_t addr)
{
	const uint8_t *code = code_at(g->e, addr, 16);
	cs_insn *in;
	size_t n;
	unsigned bit = 0;

	if (!code)
		return 0;
	n = g->dl->disasm(g->cs, code, 16, addr, 3, &in);
	for (size_t i = 0; i < n && !bit; i++)
		if (in[i].id == X86_INS_JMP)
			bit = slot_bit(g, rip_slot(&in[i]));
	if (n)
		g->dl->free(in, n);
	return bit;
}

static int in_plt(const struct gil_scan *g, uint64_t addr)
{
	for (int i = 0; i < 2; i++)
		if (addr >= g->plt_lo[i] && addr < g->plt_hi[i])
			return 1;
	return 0;
}

/* What f calls (the imports' bits); its direct calls and tail jumps out of it into
 * functions of the file appended to next[*nr_next..max) */
static unsigned calls_of(struct gil_scan *g, const struct fde_range *f, uint64_t *next,
			 size_t *nr_next, size_t max)
{
	const uint8_t *code = code_at(g->e, f->start, f->len);
	cs_insn *in;
	size_t n;
	unsigned bits = 0;

	if (!code)
		return 0;
	n = g->dl->disasm(g->cs, code, f->len, f->start, 0, &in);
	for (size_t i = 0; i < n; i++) {
		const cs_x86 *x = &in[i].detail->x86;
		const struct fde_range *callee;
		uint64_t t;

		if (in[i].id != X86_INS_CALL && in[i].id != X86_INS_JMP)
			continue;
		if (x->op_count == 1 && x->operands[0].type == X86_OP_MEM) {
			bits |= slot_bit(g, rip_slot(&in[i]));	/* -fno-plt: call *slot(%rip) */
			continue;
		}
		if (x->op_count != 1 || x->operands[0].type != X86_OP_IMM)
			continue;
		t = (uint64_t)x->operands[0].imm;
		if (t >= f->start && t < f->start + f->len)
			continue;	/* a branch inside it */
		if (in_plt(g, t))
			bits |= plt_bit(g, t);
		else if (*nr_next < max && (callee = fde_index_find(&g->fdes, t)))
			next[(*nr_next)++] = callee->start;
	}
	if (n)
		g->dl->free(in, n);
	return bits;
}

/*
 * Breadth-first from the exported functions entry[0..n) through direct calls, at most
 * MAX_DEPTH deep: the first function other than those that calls all of want and none
 * of reject; its FDE in *out
 */
static int search(struct gil_scan *g, const uint64_t *entry, size_t n, unsigned want,
		  unsigned reject, struct pygil_func *out)
{
	uint64_t q[MAX_FUNCS];
	uint8_t depth[MAX_FUNCS];
	size_t head = 0, tail = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fde_range *f = entry[i] ? fde_index_find(&g->fdes, entry[i]) : NULL;

		if (f && tail < MAX_FUNCS) {
			depth[tail] = 0;
			q[tail++] = f->start;
		}
	}
	while (head < tail) {
		const struct fde_range *f = fde_index_find(&g->fdes, q[head]);
		size_t from = tail, seen;
		unsigned d = depth[head++], bits;

		bits = calls_of(g, f, q, &tail, d < MAX_DEPTH ? MAX_FUNCS : tail);
		if (d && (bits & want) == want && !(bits & reject)) {
			*out = (struct pygil_func){ f->start, f->len };
			return 1;
		}
		/* keep each function once */
		seen = from;
		for (size_t i = from; i < tail; i++) {
			size_t k;

			for (k = 0; k < seen && q[k] != q[i]; k++)
				;
			if (k == seen) {
				depth[seen] = (uint8_t)(d + 1);
				q[seen++] = q[i];
			}
		}
		tail = seen;
	}
	return 0;
}

static int find_entry(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	static const char *const names[] = { "PyEval_RestoreThread", "PyEval_AcquireThread",
		"PyEval_SaveThread", "PyEval_ReleaseThread", "_PyThreadState_DeleteCurrent" };
	struct gil_scan *g = ctx;
	const char *name = elf_strptr(g->e, strndx, sym->st_name);

	for (size_t i = 0; name && i < ARRAY_SIZE(names); i++)
		if (!strcmp(name, names[i]))
			g->entry[i] = sym->st_value;
	return 0;
}

static void find_plt(struct gil_scan *g)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(g->e, &shstrndx))
		return;
	while ((scn = elf_nextscn(g->e, scn))) {
		const char *name;
		int k;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(g->e, shstrndx, sh.sh_name)))
			continue;
		k = !strcmp(name, ".plt") ? 0 : !strcmp(name, ".plt.sec") ? 1 : -1;
		if (k >= 0) {
			g->plt_lo[k] = sh.sh_addr;
			g->plt_hi[k] = sh.sh_addr + sh.sh_size;
		}
	}
}

int pygil_find(Elf *e, struct pygil_func out[PYGIL_NR])
{
	struct gil_scan g = { .e = e };
	int found = 0;

	memset(out, 0, PYGIL_NR * sizeof(*out));
	g.dl = dynlib_cs();
	if (!g.dl || g.dl->open(CS_ARCH_X86, CS_MODE_64, &g.cs) != CS_ERR_OK)
		return 0;
	g.dl->option(g.cs, CS_OPT_DETAIL, CS_OPT_ON);
	elf_each_func(e, find_entry, &g);
	fde_index_build(e, &g.fdes);
	find_plt(&g);
	read_slots(&g);
	found += search(&g, g.entry, 2, C_TIMEDWAIT | C_SIGNAL, 0, &out[PYGIL_TAKE]);
	found += search(&g, g.entry + 2, 3, C_SIGNAL | C_WAIT | C_UNLOCK, C_TIMEDWAIT,
			&out[PYGIL_DROP]);
	g.dl->close(&g.cs);
	fde_index_release(&g.fdes);
	free(g.slots);
	return found;
}
