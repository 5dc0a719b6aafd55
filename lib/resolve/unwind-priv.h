/* unwind-priv.h - the unwinder's state, shared by its files: unwind.c (the walk and
 * the step), unwind-dso.c (a file's bytes and CFI rules), unwind-memo.c (joining a
 * thread's last walk while recording). */
#ifndef DLPROF_UNWIND_PRIV_H
#define DLPROF_UNWIND_PRIV_H

#include <stdint.h>
#include <elfutils/libdw.h>

#include "elffile.h"
#include "process.h"
#include "rephash.h"
#include "unwind.h"

#define SCAN_BYTES	4096	/* how far one stack scan looks */
#define MAX_SCANS	16	/* stack scans per sample */
#define PAST_END_SPAN	(1u << 20)	/* a stack read this far past the copy: the stack went on */
#define PAGE_CACHE	4096	/* direct-mapped page-kind cache entries per space */
#define CALL_CACHE_MAX	(1u << 20)
#define MAP_CACHE	8	/* mappings remembered during one walk */
#define RULE_CACHE	1024	/* per DSO: address -> row, direct-mapped */
#define FRAME_CACHE	4096	/* per space, while recording: return address -> all of it */
#define EXPR_STACK	16

/* x86_64 DWARF register numbers */
enum { DW_RAX, DW_RDX, DW_RCX, DW_RBX, DW_RSI, DW_RDI, DW_RBP, DW_RSP,
       DW_R8, DW_R9, DW_R10, DW_R11, DW_R12, DW_R13, DW_R14, DW_R15, DW_RIP, DW_NREGS };


#define NR_CALLEE_SAVED 6
extern const unsigned char unw_callee_saved[NR_CALLEE_SAVED];

/* page kinds */
enum { PG_UNKNOWN, PG_NONE, PG_FILE, PG_ANON };

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
	const struct elffile *file;	/* its bytes (or the dso's captured image) */
	const uint8_t *data;	/* file->data, file->size */
	size_t size;
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

/* a row of libdw's CFI as the unwinder keeps it (unwind-dso.c) */
struct rule *unw_rule_make(Dwarf_Frame *frame);
void unw_rule_free(struct rule *ru);
/* the file's thread-root functions (d->roots), found once (unwind.c) */
void unw_roots(struct unw_dso *d);

struct page_ent {
	uint64_t page;
	int kind;
	uint32_t gen;		/* its space's gen when set: else stale */
};

/* a return address met before (while recording): where it is, and its CFI row */
struct frame_ent {
	uint64_t ip;
	const struct map *mp;	/* NULL: empty */
	struct unw_dso *d;
	uint64_t bias;
	const struct rule *ru;	/* NULL: no row (the frame-pointer step) */
	uint32_t gen;		/* its space's gen when set: else stale */
};

/*
 * A frame a walk recorded and the walk's state when it did.  In a thread's memo (root
 * first) the three counts say what the walk did after it; in the walk's own record (leaf
 * first, while it runs) where the walk was when it recorded it.
 */
struct memo_frame {
	uint64_t rsp, rip;
	uint64_t cs[NR_CALLEE_SAVED];	/* callee-saved registers (0: not known) */
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
	uint32_t gen;		/* the caches' entries of other gens are stale (a mapping
				   changed since: unwind_maps_changed, not a memset of
				   224 KB at each of a torch import's mmaps) */
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
	int past_end;			/* a read of the stack fell past the copy's end */
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
	size_t beyond;			/* 1 + the first of those past this copy's
					   end (0: none; memo_reads_hold) */
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
	int last_past_copy;	/* unwind_past_copy() */
	int last_copy_ended;	/* unwind_copy_ended() */
	int live;		/* record: maps only grow, unwind_maps_changed() says when */
	int no_memo;		/* DLPROF_NO_UNWIND_MEMO: every walk from its leaf */
	struct memo rec;	/* the walk being recorded */
	int fast;		/* unwinder_set_fast() */
	int last_bail;
};

/* [addr, addr + len) lies in the copied stack */
static inline int in_copy(const struct walk *w, uint64_t addr, uint64_t len)
{
	return addr >= w->stack_lo && addr + len <= w->stack_hi && addr + len > addr;
}

/* Where a scan of the copy from address from ends (SCAN_BYTES on, or the copy's end) */
static inline uint64_t scan_end(const struct walk *w, uint64_t from)
{
	return from + SCAN_BYTES < w->stack_hi ? from + SCAN_BYTES : w->stack_hi;
}

/* the registers whose values a join compares: a step that reads another (rax is
 * "same value" in libdw's x86_64 defaults, so it carries the leaf's value up the walk)
 * keeps the frames recorded before it from being joined */
#define KEY_REGS ((1u << DW_RBX) | (1u << DW_RBP) | (1u << DW_R12) | (1u << DW_R13) | \
		  (1u << DW_R14) | (1u << DW_R15) | (1u << DW_RSP) | (1u << DW_RIP))

/* unwind-dso.c */
void unw_dso_free(struct unw_dso *d);
struct unw_dso *unw_dso_get(const struct dso *dso);
int unw_dso_bias(const struct unw_dso *d, const struct map *mp, uint64_t *bias);
int unw_read_file_bytes(struct walk *w, uint64_t addr, void *buf, size_t len);
int unw_page_kind(struct walk *w, uint64_t addr);
int unw_is_return_address(struct walk *w, uint64_t ra);
void unw_cfi_open(struct unw_dso *d);
const struct rule *unw_rule_at(struct unw_dso *d, uint64_t a, int *bail);
const struct map *unw_walk_map(struct walk *w, uint64_t addr);

/* unwind-memo.c */
void unw_set_unmapped(struct walk *w);
int unw_memo_note(struct walk *w, int initial, int activation);
void unw_memo_join(struct walk *w);
void unw_memo_begin(struct walk *w);
void unw_memo_end(struct walk *w, int done, int joined);
void unw_memo_free(struct memo *m);
void unw_memos_clear(struct space *sp, int release);

#endif
