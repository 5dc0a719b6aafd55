/* unwind.c - CFI unwinding of copied user stacks, with stack scanning over frames that
 * have no CFI.
 *
 * Design:
 * - The CFI of a file is read once, through libdw (dwarf_getcfi_elf for .eh_frame, the
 *   file's own .debug_frame after it), and each row the walk meets is turned into a rule
 *   and cached on the DSO: how to compute the CFA (register + offset, or an expression)
 *   and, per register, where the caller's value is (same, undefined, at CFA+n, CFA+n,
 *   another register, an expression).  A row covers an address range, so one step of a
 *   walk is a binary search in the DSO's rules and a few reads from the copied stack; libdw
 *   is asked again only for an address no cached row covers.  The rules hold nothing of a
 *   process: the same cache serves every process that maps the file, at report time and,
 *   in record, while the stacks are drained.
 * - Memory reads are served from the copied stack [SP, SP + stack_size), else from the
 *   bytes of the mapped file (mmap'ed once per DSO).
 * - Without a row for the PC in a file that has CFI, the frame-pointer step is tried
 *   (return address at rbp + 8, the caller's rbp at rbp).
 * - When the walk stops without reaching an outermost frame, the copied stack is
 *   scanned upward from the last known SP for a word that is a return address into
 *   file-backed code (the bytes before it decode as a call), and a new walk starts from
 *   there with rip/rsp known and the callee-saved registers of the last CFI frame (rbp
 *   from the slot below the return address when the skipped code made a classic frame).
 *   That frame is FRAME_RECOVERED; if its own CFI step gives an implausible frame, it was
 *   probably a stale word and is dropped when the scan finds another.
 * - Every return address found by CFI must lie in executable memory and, in file-backed
 *   code, follow a call instruction; the stack pointer must grow toward the root.
 * - "Complete" means the CFI at the last PC marks the return address undefined (_start,
 *   clone3), or the last PC lies in a thread-root function (noted once per file).
 * - Caches: per address space, the kind of each code page (direct-mapped) and the
 *   call-decode verdict per return address; per DSO, the mapped file, its PT_LOADs, its
 *   CFI rules and its thread-root functions.
 * - While recording, each thread's last walk is kept (its frames, the walk's state as it
 *   recorded each, and every read of the copied stack it made from there on).  A walk
 *   that records a frame in the same state as one of the last walk's (same SP, PC and
 *   registers, the same scans behind it) would go on exactly as that one did if what it
 *   read above is unchanged: the reads are compared with this copy, and when they all
 *   match, the rest of the frames are taken from the last walk.  Outer frames (main, the
 *   interpreter's loop, a worker's start) mostly stay, so most of a walk is a compare of
 *   a few words a frame instead of a step.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <asm/perf_regs.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "elfcheck.h"
#include "elfsyms.h"
#include "frame.h"
#include "rephash.h"
#include "unwind.h"
#include "util.h"

#define SCAN_BYTES	4096	/* how far one stack scan looks */
#define MAX_SCANS	16	/* stack scans per sample */
#define PAGE_CACHE	4096	/* direct-mapped page-kind cache entries per space */
#define CALL_CACHE_MAX	(1u << 20)
#define MAP_CACHE	8	/* mappings remembered during one walk */
#define RULE_CACHE	1024	/* per DSO: address -> row, direct-mapped */
#define FRAME_CACHE	4096	/* per space, while recording: return address -> all of it */
#define EXPR_STACK	16

/* x86_64 DWARF register numbers */
enum { DW_RAX, DW_RDX, DW_RCX, DW_RBX, DW_RSI, DW_RDI, DW_RBP, DW_RSP,
       DW_R8, DW_R9, DW_R10, DW_R11, DW_R12, DW_R13, DW_R14, DW_R15, DW_RIP, DW_NREGS };

/* perf_regs index of each DWARF register */
static const unsigned char dwarf_to_perf[DW_NREGS] = {
	PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX, PERF_REG_X86_BX,
	PERF_REG_X86_SI, PERF_REG_X86_DI, PERF_REG_X86_BP, PERF_REG_X86_SP,
	PERF_REG_X86_R8, PERF_REG_X86_R9, PERF_REG_X86_R10, PERF_REG_X86_R11,
	PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15,
	PERF_REG_X86_IP,
};

static const unsigned char callee_saved[] = { DW_RBX, DW_RBP, DW_R12, DW_R13, DW_R14, DW_R15 };

/* page kinds */
enum { PG_UNKNOWN, PG_NONE, PG_FILE, PG_ANON };

struct load_seg {
	uint64_t offset, vaddr, filesz;
};

/* where the caller's value of a register is */
enum { RR_UNDEF, RR_SAME, RR_AT_CFA, RR_CFA_PLUS, RR_REG, RR_EXPR, RR_VAL_EXPR };

struct expr {
	Dwarf_Op *ops;
	size_t nops;
};

struct reg_rule {
	uint8_t kind;
	uint8_t reg;		/* RR_REG */
	int64_t off;		/* RR_AT_CFA, RR_CFA_PLUS */
	struct expr e;		/* RR_EXPR, RR_VAL_EXPR */
};

/* a register whose caller value is neither this frame's nor undefined */
struct reg_step {
	uint8_t reg;		/* DW_RIP: the return address */
	uint8_t kind;		/* RR_AT_CFA .. RR_VAL_EXPR */
	uint8_t from;		/* RR_REG: the register; RR_*EXPR: index in exprs */
	uint8_t pad;
	int32_t off;		/* RR_AT_CFA, RR_CFA_PLUS */
};

/*
 * One CFI row, for [start, end) in the file's virtual addresses, packed so that a step
 * reads a cache line or two: the registers kept from this frame as a mask, the few
 * others (return address, saved rbp, rbx, r12-r15) as steps.
 */
struct rule {
	uint64_t start, end;
	int64_t cfa_off;
	struct expr *cfa_expr;	/* NULL: CFA = cfa_reg + cfa_off */
	struct expr *exprs;	/* the steps' expressions */
	uint32_t same;		/* registers whose caller value is this frame's */
	uint8_t cfa_reg;
	uint8_t signal;		/* a signal frame: its caller's PC is not a return address */
	uint8_t ra_undefined;	/* outermost frame */
	uint8_t cfa_unknown;
	uint8_t nr_steps, nr_exprs;
	uint32_t uses;		/* registers the step reads */
	struct reg_step steps[];
};

struct root_range {
	uint64_t start, end;
};

/* per-DSO state, hung on dso->unwind_priv */
struct unw_dso {
	int failed;		/* file unusable: no bytes */
	const char *name;	/* the file, for a warning (the dso's) */
	const uint8_t *data;	/* whole file, mmap'ed (or the dso's captured image) */
	size_t size;
	int borrowed;		/* data is dso->image: not ours to unmap */
	uint16_t type;		/* ET_EXEC / ET_DYN */
	struct load_seg *segs;
	size_t nr_segs;
	/* CFI, read on first use */
	int cfi_done;
	Elf *elf;
	Dwarf *dwarf;		/* for the file's own .debug_frame */
	Dwarf_CFI *eh, *dbg;
	int has_dbg;		/* it has a .debug_frame: opened on first use */
	int dbg_used;		/* .debug_frame looked into (libdw has read it all) */
	struct rule **rules;	/* sorted by start, disjoint */
	size_t nr_rules, alloc_rules;
	struct rule *spare;	/* the last row that did not fit the table */
	struct rule_hit {
		uint64_t addr;
		const struct rule *ru;
	} hits[RULE_CACHE];	/* the rows of addresses met lately (direct-mapped) */
	struct u64map norow;	/* file addresses no row covers */
	struct root_range *roots;	/* thread-root functions (_start, start_thread, ...) */
	size_t nr_roots;
};

struct page_ent {
	uint64_t page;
	int kind;
};

/* a return address met before (while recording): where it is, and its CFI row */
struct frame_ent {
	uint64_t ip;
	const struct map *mp;	/* NULL: empty */
	struct unw_dso *d;
	uint64_t bias;
	const struct rule *ru;	/* NULL: no row (the frame-pointer step) */
};

/*
 * A frame a walk recorded and the walk's state when it did.  In a thread's memo (root
 * first) the three counts say what the walk did after it; in the walk's own record (leaf
 * first, while it runs) where the walk was when it recorded it.
 */
struct memo_frame {
	uint64_t rsp, rip;
	uint64_t cs[ARRAY_SIZE(callee_saved)];	/* callee-saved registers (0: not known) */
	uint32_t regs_set;	/* of KEY_REGS */
	uint32_t reads;		/* reads of the stack made after it (record: before it) */
	uint32_t seq;		/* frames recorded after it, dropped ones too (record:
				   before it) */
	uint16_t scans;		/* stack scans after it (record: before it) */
	uint8_t joinable;	/* not a pass's first frame */
	uint8_t activation;	/* its PC is not a return address (after a signal frame) */
};

/* A read the walk made: a word from the copy (addr, the word), a word outside the copy
 * (MR_FILE: what a file holds does not change, where the copy ends does), or the words
 * one scan looked at (MR_SCAN: val is where its struct memo_scan is in bytes[]) */
#define MR_FILE		(1ULL << 63)
#define MR_SCAN		(1ULL << 62)
struct memo_read {
	uint64_t addr;
	uint64_t val;
};

struct memo_scan {
	uint64_t to;		/* where the scan would have ended, when it found nothing */
	uint64_t len;		/* bytes, following */
};

#define MEMO_NONE	UINT32_MAX
#define MEMO_THREADS	4096	/* threads of a process with a last walk kept at once */

/* a walk: the thread's last (root first), or the one being recorded (leaf first) */
struct memo {
	uint64_t time;
	size_t n;		/* frames (0: none kept) */
	uint64_t *ips;
	unsigned *flags;
	struct memo_frame *fr;
	size_t alloc_ips, alloc_flags, alloc_fr;
	struct memo_read *log;
	size_t nr_log, alloc_log;
	unsigned char *bytes;	/* the scans' words */
	size_t nr_bytes, alloc_bytes;
	uint32_t unmapped;	/* frames recorded after the walk last met an address in no
				   mapping (MEMO_NONE: it met none) */
	uint32_t other;		/* frames recorded after a step last read a register not in
				   KEY_REGS (MEMO_NONE: none did): one recorded before cannot
				   be joined */
	uint16_t scans;		/* stack scans in all */
	uint8_t done;
};

/* one address space */
struct space {
	struct unwinder *u;
	uint32_t pid;
	struct page_ent pages[PAGE_CACHE];
	struct u64map calls;	/* return address -> (void *)1 call, (void *)2 not */
	struct frame_ent *frames;	/* FRAME_CACHE of them, live unwinders only */
	struct u64map memos;	/* tid -> struct memo, root first (live unwinders only;
				   NULL once the thread exited) */
	size_t nr_memos;	/* of them not NULL */
	uint64_t maps_time;	/* the latest mapping change's time: walks of samples
				   before it cannot be joined */
};

/* the walk in progress */
struct walk {
	struct space *sp;
	const struct dlp_sample *s;
	uint64_t stack_lo, stack_hi;	/* copied stack [lo, hi) in process addresses */
	/* registers of the current frame */
	uint64_t regs[DW_NREGS];
	uint32_t regs_set;		/* bit per DWARF register */
	int restart;			/* this pass starts at a scanned return address */
	/* output */
	uint64_t *ips;
	unsigned *flags;
	size_t n, max;
	/* the last frame recorded */
	uint64_t last_sp;
	int last_has_sp;
	uint64_t last_regs[DW_NREGS];	/* callee-saved registers of the last frame */
	uint32_t last_regs_set;
	const struct map *last_map;	/* file mapping of the last frame's PC, NULL: none */
	uint64_t last_lookup;
	int stop_bad;			/* stopped at an implausible frame */
	int unmapped;			/* a frame's address was in no known mapping */
	uint64_t seq;			/* frames recorded, dropped ones too */
	uint64_t unmapped_seq;		/* seq when unmapped was last set (0: never) */
	uint64_t other_seq;		/* seq when a step last read a register other than
					   these a join compares (KEY_REGS) */
	/* mappings met during this walk (the sample's time is fixed) */
	const struct map *maps[MAP_CACHE];
	unsigned next_map;
	/* joining the thread's last walk */
	unsigned scans;			/* scans so far */
	struct memo *old;		/* the thread's last walk (NULL: none to join) */
	struct memo *rec;		/* this walk (NULL: not kept) */
	size_t cursor;			/* old's frames from the root with SP >= this
					   frame's (1 + the index of the nearest) */
	size_t held;			/* old's reads from the first that read the same
					   here */
	int fast;			/* nothing long: no .debug_frame read */
	int bail;			/* it would have needed that: given up */
};

struct unwinder {
	struct machine *m;
	struct u64map spaces;		/* exec generation << 32 | pid -> struct space * */
	struct space **all;
	size_t nr_all, alloc_all;
	struct unwind_stats st;
	int last_unmapped;
	int live;		/* record: maps only grow, unwind_maps_changed() says when */
	int no_memo;		/* DLPROF_NO_UNWIND_MEMO: every walk from its leaf */
	struct memo rec;	/* the walk being recorded */
	int fast;		/* unwinder_set_fast() */
	int last_bail;
};

/* ---- per-DSO file access ---- */

static void rule_free(struct rule *ru)
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

static void unw_dso_free(struct unw_dso *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr_rules; i++)
		rule_free(d->rules[i]);
	rule_free(d->spare);
	free(d->rules);
	u64map_release(&d->norow);
	free(d->roots);
	if (d->dwarf)
		dwarf_end(d->dwarf);
	if (d->eh)
		dwarf_cfi_end(d->eh);
	if (d->elf)
		elf_end(d->elf);
	if (d->data && !d->borrowed)
		munmap((void *)d->data, d->size);
	free(d->segs);
	free(d);
}

/* The file is the one recorded: its build-id is the recorded one, or it has none */
static int build_id_matches(const struct unw_dso *d, const struct dso *dso)
{
	uint8_t id[20];
	size_t n;

	if (!dso->build_id_size)
		return 1;
	n = elf_image_build_id(d->data, d->size, id);
	return !n || (n >= dso->build_id_size &&
		      !memcmp(id, dso->build_id, dso->build_id_size < 20 ? dso->build_id_size : 20));
}

/* Open and validate the file behind dso (once). */
static struct unw_dso *dso_get(const struct dso *dso)
{
	struct unw_dso *d = dso->unwind_priv;
	const Elf64_Ehdr *eh;
	struct stat st;
	void *p;
	int fd;

	if (d)
		return d->failed ? NULL : d;
	d = xcalloc(1, sizeof(*d));
	u64map_init(&d->norow);
	((struct dso *)dso)->unwind_priv = d;
	d->failed = 1;
	if (dso->image && dso->image_size >= sizeof(Elf64_Ehdr)) {
		/* captured at record time (the [vdso]) */
		d->data = dso->image;
		d->size = dso->image_size;
		d->borrowed = 1;
		d->name = dso->path;
		p = (void *)dso->image;
	} else {
		if (dso->kernel || dso->anon || dso->special || dso->path[0] != '/')
			return NULL;
		fd = open(dso_file(dso), O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return NULL;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size < sizeof(Elf64_Ehdr)) {
			close(fd);
			return NULL;
		}
		p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (p == MAP_FAILED)
			return NULL;
		d->data = p;
		d->size = st.st_size;
		d->name = dso_file(dso);
	}
	eh = p;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_machine != EM_X86_64 || (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > d->size ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > d->size - eh->e_phoff)
		return NULL;
	if (!build_id_matches(d, dso)) {
		warning("'%s' does not match the recorded build-id: not unwinding through it",
			dso->path);
		return NULL;
	}
	d->type = eh->e_type;
	d->segs = xcalloc(eh->e_phnum ? eh->e_phnum : 1, sizeof(*d->segs));
	for (size_t i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;	/* copied: a file's e_phoff need not be aligned */

		memcpy(&ph, d->data + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_LOAD)
			continue;
		d->segs[d->nr_segs].offset = ph.p_offset;
		d->segs[d->nr_segs].vaddr = ph.p_vaddr;
		d->segs[d->nr_segs].filesz = ph.p_filesz;
		d->nr_segs++;
	}
	if (!d->nr_segs)
		return NULL;
	d->failed = 0;
	return d;
}

/* Load bias of the file mapped by mp: process address minus ELF virtual address. */
static int dso_bias(const struct unw_dso *d, const struct map *mp, uint64_t *bias)
{
	if (d->type == ET_EXEC) {
		*bias = 0;
		return 0;
	}
	for (size_t i = 0; i < d->nr_segs; i++) {
		const struct load_seg *sg = &d->segs[i];
		uint64_t lo = sg->offset & ~0xfffULL;

		if (mp->pgoff >= lo && mp->pgoff < sg->offset + (sg->filesz ? sg->filesz : 1)) {
			*bias = mp->start - mp->pgoff + sg->offset - sg->vaddr;
			return 0;
		}
	}
	return -1;
}

/* The mapping that covers addr at the sample's time (a few remembered per walk). */
static const struct map *walk_map(struct walk *w, uint64_t addr)
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
static int read_file_bytes(struct walk *w, uint64_t addr, void *buf, size_t len)
{
	const struct map *mp = walk_map(w, addr);
	const struct unw_dso *d;
	uint64_t off;

	if (!mp || addr + len > mp->end || !(d = dso_get(mp->dso)))
		return -1;
	off = map_file_offset(mp, addr);
	if (off > d->size || len > d->size - off)
		return -1;
	memcpy(buf, d->data + off, len);
	return 0;
}

/* ---- address classification and call decoding ---- */

static int page_kind(struct walk *w, uint64_t addr)
{
	uint64_t page = addr >> 12;
	struct page_ent *e = &w->sp->pages[hash_u64(page) & (PAGE_CACHE - 1)];
	const struct map *mp;
	int kind = PG_NONE;

	if (e->kind != PG_UNKNOWN && e->page == page)
		return e->kind;
	if (addr >= 4096 && addr < 0x800000000000ULL) {
		mp = walk_map(w, addr);
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
	return kind;
}

/*
 * Do the bytes b[0..7) that end just before a return address hold a call?  e8 rel32, or
 * ff /2 with any ModRM form (optional notrack/segment prefix and REX), ending exactly at
 * the return address.
 */
static int decode_call_before(const uint8_t b[7])
{
	if (b[2] == 0xe8)
		return 1;
	for (int len = 2; len <= 7; len++) {
		const uint8_t *p = b + 7 - len, *end = b + 7;
		unsigned modrm, mod, rm, n;

		if (p < end && (*p == 0x3e || *p == 0x2e || *p == 0x67))
			p++;
		if (p < end && (*p & 0xf0) == 0x40)
			p++;
		if (end - p < 2 || p[0] != 0xff)
			continue;
		modrm = p[1];
		if (((modrm >> 3) & 7) != 2)
			continue;
		mod = modrm >> 6;
		rm = modrm & 7;
		n = 2;
		if (mod != 3) {
			if (rm == 4) {
				if (end - p < 3)
					continue;
				n++;
				if (mod == 0 && (p[2] & 7) == 5)
					n += 4;
			} else if (mod == 0 && rm == 5) {
				n += 4;
			}
			if (mod == 1)
				n += 1;
			else if (mod == 2)
				n += 4;
		}
		if (p + n == end)
			return 1;
	}
	return 0;
}

/* Is ra a plausible return address: in file-backed code, right after a call? */
static int is_return_address(struct walk *w, uint64_t ra)
{
	struct space *sp = w->sp;
	void *v;
	uint8_t b[7];
	int ok;

	if (page_kind(w, ra) != PG_FILE)
		return 0;
	v = u64map_get(&sp->calls, ra);
	if (v)
		return v == (void *)1;
	ok = !read_file_bytes(w, ra - 7, b, sizeof(b)) && decode_call_before(b);
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

static struct rule *make_rule(Dwarf_Frame *frame)
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

static void cfi_open(struct unw_dso *d)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int has_debug_frame = 0;
	unsigned unsafe;

	d->cfi_done = 1;
	d->elf = elf_memory((char *)d->data, d->size);
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
static const struct rule *rule_at(struct unw_dso *d, uint64_t a, int *bail)
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
		cfi_open(d);
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
	ru = make_rule(frame);
	free(frame);
	if (a < ru->start || a >= ru->end || (lo < d->nr_rules && d->rules[lo]->start < ru->end) ||
	    (lo && d->rules[lo - 1]->end > ru->start)) {
		/* a row that does not fit the table (overlapping FDEs): use it once */
		rule_free(d->spare);
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

/* ---- the step ---- */

/* Read 8 bytes at process address addr: the copied stack, else the mapped file. */
static inline int in_copy(const struct walk *w, uint64_t addr, uint64_t len)
{
	return addr >= w->stack_lo && addr + len <= w->stack_hi && addr + len > addr;
}

/* Where a scan of the copy from address from ends (SCAN_BYTES on, or the copy's end) */
static inline uint64_t scan_end(const struct walk *w, uint64_t from)
{
	return from + SCAN_BYTES < w->stack_hi ? from + SCAN_BYTES : w->stack_hi;
}

static void memo_log(struct walk *w, uint64_t addr, uint64_t val)
{
	struct memo *m = w->rec;

	if (m->nr_log >= m->alloc_log)
		ALLOC_GROW(m->log, m->nr_log + 1, m->alloc_log);
	m->log[m->nr_log].addr = addr;
	m->log[m->nr_log++].val = val;
}

/* A scan read the copy's words [from, end); to: where it would have ended (0: it found a
 * return address before) */
static void memo_log_scan(struct walk *w, uint64_t from, uint64_t end, uint64_t to)
{
	struct memo *m = w->rec;
	struct memo_scan sc = { to, end - from };

	memo_log(w, from | MR_SCAN, m->nr_bytes);
	ALLOC_GROW(m->bytes, m->nr_bytes + sizeof(sc) + sc.len, m->alloc_bytes);
	memcpy(m->bytes + m->nr_bytes, &sc, sizeof(sc));
	if (sc.len)
		memcpy(m->bytes + m->nr_bytes + sizeof(sc), w->s->stack + (from - w->stack_lo),
		       sc.len);
	m->nr_bytes += sizeof(sc) + sc.len;
}

static int read_word(struct walk *w, uint64_t addr, uint64_t *out)
{
	if (in_copy(w, addr, 8)) {
		memcpy(out, w->s->stack + (addr - w->stack_lo), 8);
		if (w->rec)
			memo_log(w, addr, *out);
		return 0;
	}
	if (w->rec)
		memo_log(w, addr | MR_FILE, 0);
	return read_file_bytes(w, addr, out, 8);
}

/* Evaluate a CFI expression; cfa is pushed by DW_OP_call_frame_cfa. */
static int eval_expr(struct walk *w, const struct expr *e, const uint64_t *regs, uint32_t set,
		     uint64_t cfa, int have_cfa, uint64_t *out)
{
	uint64_t st[EXPR_STACK];
	size_t sp = 0;

#define NEED(k) do { if (sp < (k)) return -1; } while (0)
#define PUSH(v) do { if (sp >= EXPR_STACK) return -1; st[sp++] = (v); } while (0)
	for (size_t i = 0; i < e->nops; i++) {
		const Dwarf_Op *op = &e->ops[i];
		uint8_t a = op->atom;
		uint64_t x, y;

		if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
			PUSH((uint64_t)(a - DW_OP_lit0));
			continue;
		}
		if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
			unsigned r = a - DW_OP_breg0;

			if (r >= DW_NREGS || !(set & (1u << r)))
				return -1;
			PUSH(regs[r] + op->number);
			continue;
		}
		switch (a) {
		case DW_OP_call_frame_cfa:
			if (!have_cfa)
				return -1;
			PUSH(cfa);
			break;
		case DW_OP_bregx:
			if (op->number >= DW_NREGS || !(set & (1u << op->number)))
				return -1;
			PUSH(regs[op->number] + op->number2);
			break;
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts: case DW_OP_addr:
			PUSH(op->number);
			break;
		case DW_OP_dup:
			NEED(1);
			x = st[sp - 1];
			PUSH(x);
			break;
		case DW_OP_drop:
			NEED(1);
			sp--;
			break;
		case DW_OP_over:
			NEED(2);
			x = st[sp - 2];
			PUSH(x);
			break;
		case DW_OP_swap:
			NEED(2);
			x = st[sp - 1];
			st[sp - 1] = st[sp - 2];
			st[sp - 2] = x;
			break;
		case DW_OP_deref:
			NEED(1);
			if (read_word(w, st[sp - 1], &st[sp - 1]))
				return -1;
			break;
		case DW_OP_plus_uconst:
			NEED(1);
			st[sp - 1] += op->number;
			break;
		case DW_OP_neg:
			NEED(1);
			st[sp - 1] = -st[sp - 1];
			break;
		case DW_OP_not:
			NEED(1);
			st[sp - 1] = ~st[sp - 1];
			break;
		case DW_OP_plus: case DW_OP_minus: case DW_OP_mul: case DW_OP_and: case DW_OP_or:
		case DW_OP_xor: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
		case DW_OP_eq: case DW_OP_ne: case DW_OP_lt: case DW_OP_le: case DW_OP_gt:
		case DW_OP_ge:
			NEED(2);
			y = st[--sp];
			x = st[sp - 1];
			switch (a) {
			case DW_OP_plus: x += y; break;
			case DW_OP_minus: x -= y; break;
			case DW_OP_mul: x *= y; break;
			case DW_OP_and: x &= y; break;
			case DW_OP_or: x |= y; break;
			case DW_OP_xor: x ^= y; break;
			case DW_OP_shl: x = y < 64 ? x << y : 0; break;
			case DW_OP_shr: x = y < 64 ? x >> y : 0; break;
			case DW_OP_shra: x = (uint64_t)((int64_t)x >> (y < 63 ? y : 63)); break;
			case DW_OP_eq: x = x == y; break;
			case DW_OP_ne: x = x != y; break;
			case DW_OP_lt: x = (int64_t)x < (int64_t)y; break;
			case DW_OP_le: x = (int64_t)x <= (int64_t)y; break;
			case DW_OP_gt: x = (int64_t)x > (int64_t)y; break;
			case DW_OP_ge: x = (int64_t)x >= (int64_t)y; break;
			}
			st[sp - 1] = x;
			break;
		case DW_OP_nop:
			break;
		default:
			return -1;	/* not met in x86-64 CFI */
		}
	}
#undef NEED
#undef PUSH
	if (!sp)
		return -1;
	*out = st[sp - 1];
	return 0;
}

/*
 * One CFI step from the frame in regs/set to its caller, into nregs/nset.  Returns 0, or
 * -1 when the CFA or the return address cannot be computed.
 */
static int cfi_step(struct walk *w, const struct rule *ru, const uint64_t *regs, uint32_t set,
		    uint64_t *nregs, uint32_t *nset)
{
	uint64_t cfa;

	if (ru->cfa_unknown)
		return -1;
	if (ru->cfa_expr) {
		if (eval_expr(w, ru->cfa_expr, regs, set, 0, 0, &cfa))
			return -1;
	} else {
		if (!(set & (1u << ru->cfa_reg)))
			return -1;
		cfa = regs[ru->cfa_reg] + (uint64_t)ru->cfa_off;
	}
	*nset = ru->same & set;
	for (uint32_t m = *nset; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctz(m);

		nregs[r] = regs[r];
	}
	for (unsigned i = 0; i < ru->nr_steps; i++) {
		const struct reg_step *st = &ru->steps[i];
		uint64_t v;

		switch (st->kind) {
		case RR_AT_CFA:
			if (read_word(w, cfa + (uint64_t)(int64_t)st->off, &v))
				continue;
			break;
		case RR_CFA_PLUS:
			v = cfa + (uint64_t)(int64_t)st->off;
			break;
		case RR_REG:
			if (!(set & (1u << st->from)))
				continue;
			v = regs[st->from];
			break;
		case RR_EXPR:
			if (eval_expr(w, &ru->exprs[st->from], regs, set, cfa, 1, &v) ||
			    read_word(w, v, &v))
				continue;
			break;
		case RR_VAL_EXPR:
			if (eval_expr(w, &ru->exprs[st->from], regs, set, cfa, 1, &v))
				continue;
			break;
		default:
			continue;
		}
		nregs[st->reg] = v;
		*nset |= 1u << st->reg;
	}
	if (!(*nset & (1u << DW_RSP))) {
		nregs[DW_RSP] = cfa;	/* the ABI's definition of the CFA */
		*nset |= 1u << DW_RSP;
	}
	return *nset & (1u << DW_RIP) ? 0 : -1;
}

/* The frame-pointer step, for code in a file that has no CFI row for it. */
static int fp_step(struct walk *w, const uint64_t *regs, uint32_t set, uint64_t *nregs,
		   uint32_t *nset)
{
	uint64_t bp, ra, prev;

	if (!(set & (1u << DW_RBP)))
		return -1;
	bp = regs[DW_RBP];
	if (read_word(w, bp, &prev) || read_word(w, bp + 8, &ra))
		return -1;
	memcpy(nregs, regs, sizeof(*nregs) * DW_NREGS);
	*nset = set;
	nregs[DW_RBP] = prev;
	nregs[DW_RSP] = bp + 16;
	nregs[DW_RIP] = ra;
	*nset |= (1u << DW_RSP) | (1u << DW_RIP);
	return 0;
}

/* ---- thread roots ---- */

int thread_root_name(const char *name)
{
	static const char *const roots[] = {
		"_start", "__libc_start_main", "__libc_start_call_main", "__libc_start_main_impl",
		"start_thread", "clone", "clone3", "__clone", "__clone3", "_dl_start_user",
	};

	/* (called for every function symbol of every library: libtorch_cpu.so has ~200k,
	 * nearly all C++ names, "_Z...", which the first two bytes tell apart; the
	 * comparisons with every root were a quarter of the walks while torch was
	 * imported) */
	if (!name || !(name[0] == 's' || name[0] == 'c' ||
		       (name[0] == '_' && (name[1] == 's' || name[1] == '_' || name[1] == 'd'))))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (!strcmp(name, roots[i]))
			return 1;
	return 0;
}

struct roots_ctx {
	struct unw_dso *d;
	size_t alloc;
};

static int note_root(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	struct roots_ctx *rc = ctx;
	struct unw_dso *d = rc->d;

	if (!sym->st_size || !thread_root_name(elf_strptr(d->elf, strndx, sym->st_name)))
		return 0;
	ALLOC_GROW(d->roots, d->nr_roots + 1, rc->alloc);
	d->roots[d->nr_roots].start = sym->st_value;
	d->roots[d->nr_roots].end = sym->st_value + sym->st_size;
	d->nr_roots++;
	return 0;
}

/* Where the file's thread-root functions are (one pass over its symbol tables). */
static void note_roots(struct unw_dso *d)
{
	struct roots_ctx rc = { d, 0 };

	elf_each_func(d->elf, note_root, &rc);
}

/* Is process address addr (mapped by mp) inside a thread-root function? */
static int in_root(const struct map *mp, uint64_t addr)
{
	struct unw_dso *d = mp ? dso_get(mp->dso) : NULL;
	uint64_t bias;

	if (!d || dso_bias(d, mp, &bias))
		return 0;
	if (!d->cfi_done)
		cfi_open(d);
	if (d->nr_roots == 0 && !d->roots) {
		note_roots(d);
		if (!d->roots)
			d->roots = xcalloc(1, sizeof(*d->roots));	/* looked: none */
	}
	for (size_t i = 0; i < d->nr_roots; i++)
		if (addr - bias >= d->roots[i].start && addr - bias < d->roots[i].end)
			return 1;
	return 0;
}

/* ---- the walk ---- */

/* The file mapping (with usable bytes) of a code address, or NULL. */
static const struct map *code_map(struct walk *w, uint64_t addr, struct unw_dso **dp,
				  uint64_t *bias)
{
	const struct map *mp = walk_map(w, addr);

	if (!mp || mp->dso->anon || (mp->dso->special && !mp->dso->image) || mp->dso->kernel)
		return NULL;
	*dp = dso_get(mp->dso);
	if (!*dp || dso_bias(*dp, mp, bias))
		return NULL;
	return mp;
}

/* ---- joining the thread's last walk (record) ---- */

/* the registers whose values a join compares: a step that reads another (rax is
 * "same value" in libdw's x86_64 defaults, so it carries the leaf's value up the walk)
 * keeps the frames recorded before it from being joined */
#define KEY_REGS ((1u << DW_RBX) | (1u << DW_RBP) | (1u << DW_R12) | (1u << DW_R13) | \
		  (1u << DW_R14) | (1u << DW_R15) | (1u << DW_RSP) | (1u << DW_RIP))

static void set_unmapped(struct walk *w)
{
	w->unmapped = 1;
	w->unmapped_seq = w->seq;
}

/* Do the reads the last walk made after its frame r give the same with this copy?  The
 * first w->held of them are known to (the log is root first, and the frames a walk tries
 * to join go toward the root: each read is compared once a walk); on a difference,
 * w->held is the read's index. */
static int memo_reads_hold(struct walk *w, const struct memo *old, size_t r)
{
	const unsigned char *st = w->s->stack;
	uint64_t lo = w->stack_lo;

	for (size_t i = w->held; i < old->fr[r].reads; i++) {
		const struct memo_read *e = &old->log[i];
		uint64_t a = e->addr & ~(MR_FILE | MR_SCAN);
		int ok;

		if (!(e->addr & (MR_FILE | MR_SCAN))) {
			ok = in_copy(w, a, 8) && !memcmp(st + (a - lo), &e->val, 8);
		} else if (e->addr & MR_FILE) {
			ok = !in_copy(w, a, 8);
		} else {
			struct memo_scan sc;

			memcpy(&sc, old->bytes + e->val, sizeof(sc));
			ok = (!sc.len || (in_copy(w, a, sc.len) &&
					  !memcmp(st + (a - lo), old->bytes + e->val + sizeof(sc),
						  sc.len))) &&
			     (!sc.to || sc.to == scan_end(w, a));
		}
		if (!ok) {
			w->held = i;
			return 0;
		}
	}
	if (old->fr[r].reads > w->held)
		w->held = old->fr[r].reads;
	return 1;
}

/*
 * The walk is about to record its frame w->n: note it (and the state it is in) for the
 * thread's next walk, and see whether the last walk recorded a frame in this same state.
 * Returns 1 when it did and everything that walk read from there on reads the same here:
 * the rest of this walk would be that one's.
 */
static int memo_note(struct walk *w, int initial, int activation)
{
	struct memo *m = w->rec, *old = w->old;
	struct memo_frame *f, *o;

	if (w->n >= m->alloc_fr)
		ALLOC_GROW(m->fr, w->n + 1, m->alloc_fr);
	f = &m->fr[w->n];
	f->rsp = w->regs[DW_RSP];
	f->rip = w->regs[DW_RIP];
	for (size_t i = 0; i < ARRAY_SIZE(callee_saved); i++)
		f->cs[i] = w->regs_set & (1u << callee_saved[i]) ? w->regs[callee_saved[i]] : 0;
	f->regs_set = w->regs_set & KEY_REGS;
	f->reads = (uint32_t)m->nr_log;
	f->seq = (uint32_t)w->seq;
	f->scans = (uint16_t)w->scans;
	/* (after a pass's first frame the scan logic's view of it, how many frames the
	 * pass has, no longer matters) */
	f->joinable = !initial && (w->regs_set & (1u << DW_RSP));
	f->activation = (uint8_t)activation;
	if (!old || !f->joinable)
		return 0;
	while (w->cursor && old->fr[w->cursor - 1].rsp < f->rsp)
		w->cursor--;
	if (!w->cursor) {
		w->old = NULL;	/* above all of its frames */
		return 0;
	}
	o = &old->fr[w->cursor - 1];
	if (o->rsp != f->rsp || !o->joinable || old->other < o->seq || o->rip != f->rip ||
	    o->regs_set != f->regs_set || o->activation != f->activation ||
	    /* (the scans behind a frame need not be the same: the walk from there does
	     * the same ones as long as neither walk meets the cap on them; a walk that
	     * went through JIT code has one behind each frame above it, one that began
	     * above it none, and half the frames of the CNN that were met again in the
	     * same state were so) */
	    old->scans >= MAX_SCANS || f->scans + o->scans >= MAX_SCANS ||
	    memcmp(o->cs, f->cs, sizeof(f->cs)) || w->n + w->cursor >= w->max)
		return 0;
	if (!memo_reads_hold(w, old, w->cursor - 1)) {
		/* every frame of the last walk's from here to the one that read it read
		 * it after */
		while (w->cursor && old->fr[w->cursor - 1].reads > w->held)
			w->cursor--;
		if (!w->cursor)
			w->old = NULL;
		return 0;
	}
	return 1;
}

/* This walk joined the last one at its frame cursor - 1: the frames from there to the
 * root are that walk's. */
static void memo_join(struct walk *w)
{
	const struct memo *old = w->old;
	const struct memo_frame *o = &old->fr[w->cursor - 1];
	size_t k = w->n, rest = w->cursor;

	for (size_t i = 0; i < rest; i++)
		w->ips[k + i] = old->ips[rest - 1 - i];
	if (w->flags)
		for (size_t i = 0; i < rest; i++)
			w->flags[k + i] = old->flags[rest - 1 - i];
	if (old->unmapped < o->seq) {
		w->unmapped = 1;
		w->unmapped_seq = w->seq + (o->seq - old->unmapped);
	}
	w->seq += o->seq;
	w->scans += o->scans;
	w->n = k + rest;
}

/*
 * Run one pass from w->regs: record frames until the walk ends or is implausible.
 * Returns 1 when it ended at the outermost frame (or in a thread-root function), 2 when
 * it joined the thread's last walk (memo_join() writes the rest).
 */
static int walk_pass(struct walk *w)
{
	uint64_t nregs[DW_NREGS];
	uint32_t nset;
	int initial = 1, activation = 0;

	w->stop_bad = 0;
	w->last_map = NULL;
	for (;;) {
		uint64_t pc = w->regs[DW_RIP], ip = pc, lookup, bias = 0;
		unsigned fl = 0;
		const struct map *mp;
		const struct rule *ru;
		struct unw_dso *d = NULL;
		struct frame_ent *fe = NULL;
		int ok;

		if (initial) {
			lookup = pc;
			if (w->restart) {
				/* the pass started at ra - 1, inside the call: report the return
				 * address */
				ip = pc + 1;
				fl = FRAME_RECOVERED;
			}
		} else if (!activation && w->sp->frames &&
			   (fe = &w->sp->frames[hash_u64(ip) & (FRAME_CACHE - 1)])->mp && fe->ip == ip) {
			/* met before: a return address into that file, and its row */
			lookup = pc - 1;
			if ((w->regs_set & (1u << DW_RSP)) && w->last_has_sp &&
			    w->regs[DW_RSP] <= w->last_sp) {
				w->stop_bad = 1;
				break;
			}
		} else {
			/* a return address found by CFI (or the frame-pointer step): it must be
			 * code, right after a call when we can read the code, and the stack
			 * must grow toward the root */
			int kind = page_kind(w, ip);

			fe = NULL;
			lookup = activation ? pc : pc - 1;
			if (kind == PG_NONE && ip >= 4096 && ip < 0x800000000000ULL &&
			    !walk_map(w, ip))
				set_unmapped(w);
			if (kind == PG_NONE || (kind == PG_FILE && !activation && !is_return_address(w, ip)) ||
			    ((w->regs_set & (1u << DW_RSP)) && w->last_has_sp &&
			     w->regs[DW_RSP] <= w->last_sp)) {
				w->stop_bad = 1;
				break;
			}
		}
		if (w->n >= w->max)
			break;
		if (w->rec && memo_note(w, initial, activation))
			return 2;	/* the rest is the thread's last walk's */
		w->ips[w->n] = ip;
		if (w->flags)
			w->flags[w->n] = fl;
		w->n++;
		w->seq++;
		if (w->regs_set & (1u << DW_RSP)) {
			w->last_sp = w->regs[DW_RSP];
			w->last_has_sp = 1;
		}
		w->last_regs_set = 0;
		for (size_t i = 0; i < ARRAY_SIZE(callee_saved); i++) {
			unsigned r = callee_saved[i];

			if (w->regs_set & (1u << r)) {
				w->last_regs[r] = w->regs[r];
				w->last_regs_set |= 1u << r;
			}
		}
		if (fe) {
			mp = fe->mp;
			d = fe->d;
			bias = fe->bias;
		} else {
			mp = code_map(w, lookup, &d, &bias);
			if (!mp && !walk_map(w, lookup))
				set_unmapped(w);
		}
		w->last_map = mp;
		w->last_lookup = lookup;
		if (!mp || w->n >= w->max)
			break;
		if (fe) {
			ru = fe->ru;
		} else {
			ru = rule_at(d, lookup - bias, w->fast ? &w->bail : NULL);
			if (w->bail)
				return 0;
			if (!initial && !activation && w->sp->frames && ru != d->spare) {
				/* a plausible return address (checked above) in file-backed code */
				fe = &w->sp->frames[hash_u64(ip) & (FRAME_CACHE - 1)];
				*fe = (struct frame_ent){ ip, mp, d, bias, ru };
			}
		}
		if (ru && ru->ra_undefined)
			return 1;
		if (ru && (ru->uses & ~KEY_REGS))
			w->other_seq = w->seq;
		ok = ru ? cfi_step(w, ru, w->regs, w->regs_set, nregs, &nset)
			: (d->eh || d->has_dbg) ? fp_step(w, w->regs, w->regs_set, nregs, &nset) : -1;
		if (ok || !nregs[DW_RIP])
			break;
		activation = ru && ru->signal;
		memcpy(w->regs, nregs, sizeof(nregs));
		w->regs_set = nset;
		initial = 0;
	}
	return w->last_map && in_root(w->last_map, w->last_lookup);
}

/* Scan the copied stack upward from the last SP for a return address; on success set
 * up the registers of a restart pass. */
static int scan_stack(struct walk *w)
{
	uint64_t from = w->last_has_sp ? w->last_sp : w->stack_lo;
	uint64_t to, a;

	if (from < w->stack_lo)
		from = w->stack_lo;
	from = (from + 7) & ~7ULL;
	to = scan_end(w, from);
	for (a = from; a + 8 <= to; a += 8) {
		uint64_t v, bp;

		memcpy(&v, w->s->stack + (a - w->stack_lo), 8);
		if (v < 4096 || (v >= w->stack_lo && v < w->stack_hi))
			continue;
		if (!is_return_address(w, v))
			continue;
		w->regs_set = (1u << DW_RSP) | (1u << DW_RIP) | w->last_regs_set;
		for (size_t i = 0; i < ARRAY_SIZE(callee_saved); i++)
			w->regs[callee_saved[i]] = w->last_regs[callee_saved[i]];
		w->regs[DW_RIP] = v - 1;
		w->regs[DW_RSP] = a + 8;
		/* Callee-saved registers keep the values of the last frame CFI knew (code
		 * without CFI mostly leaves them alone or restores them); but when rbp
		 * points at the slot below the return address, the skipped code made a
		 * classic frame, and that slot holds the caller's rbp. */
		if (w->rec)
			memo_log_scan(w, from, a + 8, 0);
		if ((w->last_regs_set & (1u << DW_RBP)) && w->last_regs[DW_RBP] == a - 8) {
			if (in_copy(w, a - 8, 8)) {
				memcpy(&bp, w->s->stack + (a - 8 - w->stack_lo), 8);
				w->regs[DW_RBP] = bp;
				if (w->rec)
					memo_log(w, a - 8, bp);
			} else if (w->rec) {
				memo_log(w, (a - 8) | MR_FILE, 0);
			}
		}
		w->last_sp = a + 8;
		w->last_has_sp = 1;
		return 1;
	}
	if (w->rec)
		memo_log_scan(w, from, to > from ? to : from, to);
	return 0;
}

static struct space *space_get(struct unwinder *u, uint32_t pid, uint64_t time)
{
	unsigned gen = machine_exec_gen(u->m, pid, time);
	void **slot = u64map_slot(&u->spaces, (uint64_t)gen << 32 | pid);
	struct space *sp = *slot;

	if (sp)
		return sp;
	sp = xcalloc(1, sizeof(*sp));
	*slot = sp;
	ALLOC_GROW(u->all, u->nr_all + 1, u->alloc_all);
	u->all[u->nr_all++] = sp;
	sp->u = u;
	sp->pid = pid;
	u64map_init(&sp->calls);
	u64map_init(&sp->memos);
	/* the report's model knows every mapping over time, and a return address may be in
	 * another file at another time: look each up; the recorder's only grows */
	if (u->live)
		sp->frames = xcalloc(FRAME_CACHE, sizeof(*sp->frames));
	return sp;
}

/* Set the walk up to join the thread's last walk and to be recorded for its next. */
static void memo_begin(struct walk *w)
{
	struct space *sp = w->sp;
	struct memo **slot;

	/* (a sample from before the latest change of mappings seen: its walk saw fewer
	 * mappings than the thread's next will) */
	if (w->s->time < sp->maps_time)
		return;
	slot = (struct memo **)u64map_slot(&sp->memos, w->s->tid);
	if (!*slot) {
		/* (threads that come and go: their walks are freed when they exit, and a
		 * process with more at once keeps the first ones') */
		if (sp->nr_memos >= MEMO_THREADS)
			return;
		*slot = xcalloc(1, sizeof(struct memo));
		sp->nr_memos++;
	}
	w->old = *slot;
	w->cursor = w->old->n;
	if (!w->old->n || w->old->time < sp->maps_time)
		w->old = NULL;
	w->rec = &sp->u->rec;
	w->rec->nr_log = 0;
	w->rec->nr_bytes = 0;
}

/* Drop the scans' bytes no read of m's refers to any more */
static void memo_compact(struct memo *m)
{
	unsigned char *b = xmalloc(m->nr_bytes);
	size_t nb = 0;

	for (size_t i = 0; i < m->nr_log; i++) {
		struct memo_scan sc;

		if (!(m->log[i].addr & MR_SCAN))
			continue;
		memcpy(&sc, m->bytes + m->log[i].val, sizeof(sc));
		memcpy(b + nb, m->bytes + m->log[i].val, sizeof(sc) + sc.len);
		m->log[i].val = nb;
		nb += sizeof(sc) + sc.len;
	}
	free(m->bytes);
	m->bytes = b;
	m->nr_bytes = nb;
	m->alloc_bytes = nb;
}

static uint32_t frames_after(uint64_t seq_end, int happened, uint64_t seq)
{
	return happened ? (uint32_t)(seq_end - seq) : MEMO_NONE;
}

/*
 * Keep the walk just done as its thread's last (not one cut at the most frames): the
 * frames it joined stay where they are, root first, and its own are put after them.
 */
static void memo_end(struct walk *w, int done, int joined)
{
	struct memo *rec = w->rec;
	struct memo *m = u64map_get(&w->sp->memos, w->s->tid);
	size_t keep = joined ? w->cursor : 0, own = w->n - keep;
	size_t keep_reads = keep ? m->fr[keep - 1].reads : 0;
	size_t reads = keep_reads + rec->nr_log;

	if (!w->n || w->n >= w->max) {
		m->n = 0;
		return;
	}
	ALLOC_GROW(m->ips, w->n, m->alloc_ips);
	ALLOC_GROW(m->flags, w->n, m->alloc_flags);
	ALLOC_GROW(m->fr, w->n, m->alloc_fr);
	ALLOC_GROW(m->log, reads, m->alloc_log);
	for (size_t i = 0; i < own; i++) {
		size_t r = w->n - 1 - i;
		struct memo_frame *f = &m->fr[r];

		m->ips[r] = w->ips[i];
		m->flags[r] = w->flags ? w->flags[i] : 0;
		*f = rec->fr[i];
		f->reads = (uint32_t)(reads - f->reads);
		f->seq = (uint32_t)(w->seq - f->seq);
		f->scans = (uint16_t)(w->scans - f->scans);
	}
	/* the scans' bytes: only the kept reads' stay (when they would pile up) */
	m->nr_log = keep_reads;
	if (!keep_reads)
		m->nr_bytes = 0;
	else if (m->nr_bytes > (64u << 10))
		memo_compact(m);
	ALLOC_GROW(m->bytes, m->nr_bytes + rec->nr_bytes, m->alloc_bytes);
	if (rec->nr_bytes)
		memcpy(m->bytes + m->nr_bytes, rec->bytes, rec->nr_bytes);
	for (size_t i = 0; i < rec->nr_log; i++) {
		struct memo_read *e = &m->log[reads - 1 - i];

		*e = rec->log[i];
		if (e->addr & MR_SCAN)
			e->val += m->nr_bytes;
	}
	m->nr_bytes += rec->nr_bytes;
	m->nr_log = reads;
	m->n = w->n;
	m->time = w->s->time;
	m->done = (uint8_t)done;
	m->scans = (uint16_t)w->scans;
	m->unmapped = frames_after(w->seq, w->unmapped, w->unmapped_seq);
	m->other = frames_after(w->seq, w->other_seq != UINT64_MAX, w->other_seq);
}

size_t unwind_sample(struct unwinder *u, const struct dlp_sample *s, uint64_t *ips,
		     unsigned *flags, size_t max, int *complete)
{
	struct walk w;
	int perf_idx[PERF_REG_X86_64_MAX];
	unsigned idx = 0;
	int done = 0, joined = 0;
	struct unwind_stats st0 = u->st;

	*complete = 0;
	u->last_bail = 0;
	if (!max || !s->user_abi || !s->user_regs || !s->stack_size || !s->stack)
		return 0;
	for (int r = 0; r < PERF_REG_X86_64_MAX; r++)
		perf_idx[r] = (s->user_regs_mask >> r) & 1 ? (int)idx++ : -1;
	if (perf_idx[PERF_REG_X86_SP] < 0 || perf_idx[PERF_REG_X86_IP] < 0)
		return 0;

	memset(&w, 0, sizeof(w));
	w.other_seq = UINT64_MAX;
	w.s = s;
	w.ips = ips;
	w.flags = flags;
	w.max = max;
	for (int r = 0; r < DW_NREGS; r++) {
		int i = perf_idx[dwarf_to_perf[r]];

		if (i >= 0) {
			w.regs[r] = s->user_regs[i];
			w.regs_set |= 1u << r;
		}
	}
	w.stack_lo = w.regs[DW_RSP];
	w.stack_hi = w.stack_lo + s->stack_size;
	if (w.stack_hi < w.stack_lo)
		return 0;
	/* the copy was written on another CPU (record's drain, or the kernel into the ring
	 * for an inline walk): ask for all of it at once, rather than wait for a miss on each
	 * frame's slots in turn (only the lines the thread's last walk read: no better) */
	w.fast = u->fast;
	for (size_t off = 0; off < s->stack_size; off += 64)
		__builtin_prefetch(s->stack + off, 0, 2);
	w.sp = space_get(u, s->pid, s->time);
	if (w.sp->frames && !u->no_memo)
		memo_begin(&w);
	u->st.walks++;
	for (; w.n < max; w.scans++) {
		size_t before = w.n;
		int dead_end, r = walk_pass(&w);

		if (w.bail)
			break;
		if (r == 2) {
			u->st.scans += w.old->fr[w.cursor - 1].scans;
			u->st.joined++;
			u->st.reused += w.cursor;
			done = w.old->done;
			joined = 1;
			memo_join(&w);
			break;
		}
		if (r) {
			done = 1;
			break;
		}
		/* a scanned return address whose own CFI step led to an implausible frame
		 * was most likely a stale word: drop it if the scan finds a better one */
		dead_end = w.restart && w.n == before + 1 && w.stop_bad;
		if (w.scans >= MAX_SCANS || w.n >= max || !scan_stack(&w) || w.bail)
			break;
		if (dead_end)
			w.n = before;
		w.restart = 1;
		u->st.scans++;
	}
	if (w.bail) {
		/* nothing of it counted, nothing kept for the thread's next walk */
		u->st = st0;
		u->last_bail = 1;
		return 0;
	}
	if (w.rec)
		memo_end(&w, done, joined);
	if (!w.n) {
		ips[0] = w.regs[DW_RIP];
		if (flags)
			flags[0] = 0;
		w.n = 1;
	}
	u->st.frames += w.n;
	if (done)
		u->st.complete++;
	u->last_unmapped = w.unmapped;
	*complete = done;
	return w.n;
}

static void memo_free(struct memo *m)
{
	free(m->ips);
	free(m->flags);
	free(m->fr);
	free(m->log);
	free(m->bytes);
}

/* Forget (or free) the threads' last walks in sp */
static void memos_clear(struct space *sp, int release)
{
	for (size_t i = 0; i < sp->memos.cap; i++) {
		struct memo *m = sp->memos.used[i] ? sp->memos.vals[i] : NULL;

		if (!m)
			continue;
		m->n = 0;
		if (release) {
			memo_free(m);
			free(m);
		}
	}
	if (release)
		u64map_release(&sp->memos);
}

void unwind_maps_changed(struct unwinder *u, uint32_t pid, uint64_t time)
{
	for (size_t i = 0; i < u->nr_all; i++) {
		struct space *sp = u->all[i];

		if (sp->pid != pid)
			continue;
		memset(sp->pages, 0, sizeof(sp->pages));
		if (sp->frames)
			memset(sp->frames, 0, FRAME_CACHE * sizeof(*sp->frames));
		memos_clear(sp, 0);
		if (time > sp->maps_time)
			sp->maps_time = time;
	}
}

void unwind_thread_exit(struct unwinder *u, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < u->nr_all; i++) {
		struct space *sp = u->all[i];
		struct memo **slot;

		if (sp->pid != pid || !u64map_get(&sp->memos, tid))
			continue;
		slot = (struct memo **)u64map_slot(&sp->memos, tid);
		memo_free(*slot);
		free(*slot);
		*slot = NULL;
		sp->nr_memos--;
	}
}

void unwinder_set_live(struct unwinder *u)
{
	const char *e = getenv("DLPROF_NO_UNWIND_MEMO");

	u->live = 1;
	u->no_memo = e && *e && strcmp(e, "0");
}

void unwinder_set_fast(struct unwinder *u, int fast)
{
	u->fast = fast;
}

int unwind_bailed(const struct unwinder *u)
{
	return u->last_bail;
}

int unwind_met_unmapped(const struct unwinder *u)
{
	return u->last_unmapped;
}

void unwind_get_stats(const struct unwinder *u, struct unwind_stats *st)
{
	*st = u->st;
}

struct unwinder *unwinder_new(struct machine *m)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));

	u->m = m;
	u64map_init(&u->spaces);
	elf_version(EV_CURRENT);
	return u;
}

void unwinder_free(struct unwinder *u)
{
	struct dso **dsos;
	size_t n;

	if (!u)
		return;
	for (size_t i = 0; i < u->nr_all; i++) {
		u64map_release(&u->all[i]->calls);
		memos_clear(u->all[i], 1);
		free(u->all[i]->frames);
		free(u->all[i]);
	}
	free(u->all);
	memo_free(&u->rec);
	u64map_release(&u->spaces);
	n = machine_dsos(u->m, &dsos);
	for (size_t i = 0; i < n; i++) {
		unw_dso_free(dsos[i]->unwind_priv);
		dsos[i]->unwind_priv = NULL;
	}
	free(u);
}
