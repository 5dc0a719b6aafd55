/* kunwind.h - a file's CFI as the kernel walk reads it: rows of 8 bytes, one per range of
 * code with one rule, and an index by 4 KiB page of the file's addresses.  Made from the
 * rules the unwinder derives with libdw (lib/resolve/unwind-table.c), put in BPF maps by
 * record (lib/record/kstack.c), read by the BPF program (lib/record/pybpf.bpf.c).
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
};

#define KR_IN_ROOT	0x80	/* in kind: in a thread's first function (_start,
				   start_thread, clone3...): a walk that ends there is whole */

#define KR_RBP_SAME	0	/* rbp: the caller's is this frame's */
#define KR_RBP_UNKNOWN	(-128)	/* rbp: not known past this frame */
#define KR_RBP_AT_RBP	(-127)	/* rbp: at *rbp (a realigned stack's frame: gcc's drap) */

struct kunw_row {
	uint32_t addr;		/* first address, less the table's base */
	uint8_t kind;		/* KR_*, | KR_IN_ROOT */
	int8_t rbp;		/* where the caller's rbp is: CFA + 8 * rbp, or KR_RBP_* */
	int16_t cfa;		/* in 8 bytes */
};

#define KUNW_PAGE_SHIFT	12

/*
 * A table as one BPF array of 8-byte entries, KUNW_BLOCK to an element (a look-up is a
 * helper call: a row is found with two or three, not one per step of a search): first
 * one entry per page (the rows that can cover it: [first, end) of the rows), then the
 * rows sorted by address.  A row covers up to the next row's address; a table ends with
 * a KR_NONE row.  Where the table's base and its count of pages are, the process's
 * mapping of the file says (pybpf-prog.h: struct kunw_map).
 */
#define KUNW_BLOCK	512

struct kunw_page {
	uint32_t first, end;	/* row indexes */
};

#endif
