/* kunwind.h - a file's CFI as the kernel walk reads it: rows of 4 bytes, one per range of
 * code with one rule, the table's rules apart, and an index by 4 KiB page of the file's
 * addresses.  Made from the
 * rules the unwinder derives with libdw (lib/resolve/unwind-table.c), put in BPF maps by
 * record (lib/record/kstack.c), read by the BPF program (lib/record/python/pybpf.bpf.c).
 * Included by clang -target bpf too: fixed-size types only.
 */
#ifndef DLPROF_KUNWIND_H
#define DLPROF_KUNWIND_H

#include <stdint.h>

/* How a row finds the caller's frame.  The return address is always at CFA - 8 (a row
 * whose CFI says otherwise is KR_OTHER); rbp is kept, or read from CFA + 8 * rbp. */
enum {
	KR_NONE,	/* no CFI covers it: the frame-pointer step (the unwinder's too) */
	KR_RSP,		/* CFA = rsp + 8 * cfa */
	KR_RBP,		/* CFA = rbp + 8 * cfa */
	KR_RBP_DEREF,	/* CFA = *(rbp + 8 * cfa): a realigned stack (gcc's drap) */
	KR_PLT,		/* CFA = rsp + 8 * cfa, + 8 where (rip & 15) >= rbp: a PLT entry */
	KR_ROOT,	/* the CFI says the caller is none: the thread's first frame */
	KR_OTHER,	/* anything else: the walk stops there and the copy finishes it */
	KR_SIGNAL,	/* a signal frame (__restore_rt): rsp is the ucontext, whose saved
			   rip, rsp and rbp are the interrupted code's (KUNW_SIG_*) */
};

/* x86-64 Linux: where the interrupted rip, rsp and rbp lie from a signal frame's rsp
 * (the ucontext: uc_mcontext at 40, and in it rbp, rsp, rip at 80, 120, 128) */
#define KUNW_SIG_RBP	120
#define KUNW_SIG_RSP	160
#define KUNW_SIG_RIP	168

#define KR_IN_ROOT	0x80	/* in kind: in a thread's first function (_start,
				   start_thread, clone3...): a walk that ends there is whole */

#define KR_RBP_SAME	0	/* rbp: the caller's is this frame's */
#define KR_RBP_UNKNOWN	(-128)	/* rbp: not known past this frame */
#define KR_RBP_AT_RBP	(-127)	/* rbp: at *rbp (a realigned stack's frame: gcc's drap) */

/* A rule: how a row finds the caller's frame */
struct kunw_rule {
	uint8_t kind;		/* KR_*, | KR_IN_ROOT */
	int8_t rbp;		/* where the caller's rbp is: CFA + 8 * rbp, or KR_RBP_* */
	int16_t cfa;		/* in 8 bytes */
};

/* A row with its rule, as the table is made and as the walk caches it */
struct kunw_row {
	uint32_t addr;		/* first address, less the table's base */
	uint8_t kind;		/* the rule's */
	int8_t rbp;
	int16_t cfa;
};

#define KUNW_PAGE_SHIFT	12

/*
 * A row as the table keeps it, 4 bytes: its address within its 1 MiB segment (of the
 * table's addresses) above the index of its rule among the table's.  Every segment that
 * has code starts with a row (the one in force there, again where none starts there), so
 * the rows a page's look-up compares all lie in the page's segment.  A file of more than
 * KUNW_MAX_RULES rules has the rarest made KR_OTHER (the walk stops there).
 */
#define KUNW_SEG_SHIFT	20
#define KUNW_RULE_BITS	12
#define KUNW_MAX_RULES	(1u << KUNW_RULE_BITS)
#define KUNW_SEG_OFF(a)	((uint32_t)(a) & ((1u << KUNW_SEG_SHIFT) - 1))
#define KUNW_ROW(a, rule) (KUNW_SEG_OFF(a) << KUNW_RULE_BITS | (rule))
#define KUNW_ROW_AT(w)	((uint32_t)(w) >> KUNW_RULE_BITS)	/* KUNW_SEG_OFF of its address */
#define KUNW_ROW_RULE(w) ((uint32_t)(w) & (KUNW_MAX_RULES - 1))

/*
 * A table as one BPF array of 4-byte words, KUNW_BLOCK to an element (a look-up is a
 * helper call: a row is found with three or four, not one per step of a search): first
 * two words per page (the rows that can cover it: [first, end) of the rows), then the
 * rules, then the rows sorted by address.  A row covers up to the next row's address; a
 * table ends with a KR_NONE row.  Where the table's base and its counts of pages and
 * rules are, the file's entry says (pybpf-prog.h: struct kunw_file).
 */
#define KUNW_BLOCK	1024

struct kunw_page {
	uint32_t first, end;	/* row indexes */
};

/*
 * Is there a call instruction just before a return address?  b: the 7 bytes before it.
 * A call rel32 (e8), or a call r/m64 (ff /2) in any ModRM form, ending exactly at the
 * return address.  A notrack, segment or REX prefix before the ff changes nothing of
 * where it ends, so each place an ff stands is tried alone.  The length of an ff /2 from
 * its ff, by its ModRM byte, comes from a table (0: not /2; KUNW_FF2_SIB: a SIB byte
 * follows, whose base 5 adds a disp32): a place costs the verifier a few ways, not one
 * for each form's branch.  The unwinder's stack scan asks it of each word it looks at
 * (unwind-dso.c), and so does the kernel walk's (pybpf.bpf.c): the indexes are masked
 * for the verifier.
 */
#define KUNW_FF2_SIB	0x80
#define KUNW_FF2_MOD(m)	((m) >> 6)
#define KUNW_FF2_RM(m)	((m) & 7)
#define KUNW_FF2_LEN(m) \
	((((m) >> 3) & 7) != 2 ? 0 : KUNW_FF2_MOD(m) == 3 ? 2 : \
	 2 + (KUNW_FF2_RM(m) == 4 ? 1 + (KUNW_FF2_MOD(m) == 0 ? KUNW_FF2_SIB : 0) : 0) + \
	 (KUNW_FF2_MOD(m) == 0 && KUNW_FF2_RM(m) == 5 ? 4 : 0) + \
	 (KUNW_FF2_MOD(m) == 1 ? 1 : 0) + (KUNW_FF2_MOD(m) == 2 ? 4 : 0))
#define KUNW_FF2_L4(m)	KUNW_FF2_LEN(m), KUNW_FF2_LEN((m) + 1), KUNW_FF2_LEN((m) + 2), \
			KUNW_FF2_LEN((m) + 3)
#define KUNW_FF2_L16(m)	KUNW_FF2_L4(m), KUNW_FF2_L4((m) + 4), KUNW_FF2_L4((m) + 8), \
			KUNW_FF2_L4((m) + 12)
#define KUNW_FF2_L64(m)	KUNW_FF2_L16(m), KUNW_FF2_L16((m) + 16), KUNW_FF2_L16((m) + 32), \
			KUNW_FF2_L16((m) + 48)

static const uint8_t kunw_ff2_len[256] = {
	KUNW_FF2_L64(0), KUNW_FF2_L64(64), KUNW_FF2_L64(128), KUNW_FF2_L64(192)
};

static inline int kunw_call_before(const uint8_t *b)
{
	uint32_t p, t, n;

	if (b[2] == 0xe8)
		return 1;
	for (p = 0; p < 6; p++) {
		if (b[p & 7] != 0xff)
			continue;
		t = kunw_ff2_len[b[(p + 1) & 7]];
		/* (a SIB form is 3 bytes at least: none fits from 5, whose SIB is past b) */
		n = (t & ~KUNW_FF2_SIB) +
		    ((t & KUNW_FF2_SIB) && p < 5 && (b[(p + 2) & 7] & 7) == 5 ? 4 : 0);
		if (n == 7 - p)
			return 1;
	}
	return 0;
}

#endif
