/* elfcheck.h - what libelf and libdw would trust in an ELF file, checked before they read it.
 *
 * A file a recording names is outside input (a colleague's library, a damaged file, a
 * --symfs tree), and libdw believes what it reads: the register number of a CFI
 * instruction sizes the row it builds (8 bytes a register, up to 2^28 registers), and
 * every DW_CFA_remember_state copies that row.  Each reader that hands a file's CFI or
 * DWARF to libdw (the symbolizer, the unwinder, the DL view's function bounds, check-isa)
 * asks here first, and leaves out what is refused.
 */
#ifndef DLPROF_ELFCHECK_H
#define DLPROF_ELFCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <gelf.h>

/* the parts of a file to check, and the parts found unsafe */
#define ELF_CHECK_FILE		(1u << 0)	/* headers, PT_LOADs and sections inside the file */
#define ELF_CHECK_EH_FRAME	(1u << 1)	/* the .eh_frame libdw would read, and its table */
#define ELF_CHECK_DEBUG_FRAME	(1u << 2)	/* .debug_frame (decompressed, as libdw does) */

/* No CIE or FDE program may name a DWARF register from ELF_CHECK_MAX_REG on (x86-64's
 * end below 150) or nest DW_CFA_remember_state deeper than ELF_CHECK_MAX_DEPTH: one
 * row libdw builds then stays under 2.2 KiB, one lookup under 72 KiB. */
#define ELF_CHECK_MAX_REG	256
#define ELF_CHECK_MAX_DEPTH	32

/*
 * Check the parts of e named in what.  The file part: the ELF, program and section
 * headers, every PT_LOAD and every section with bytes lie inside the file.  The CFI
 * parts, walked as libdw walks them (the .eh_frame section, else what PT_GNU_EH_FRAME
 * points at; its entries in order up to the terminator, and each FDE the .eh_frame_hdr
 * table names): no CIE or FDE runs past the end of its section, and the programs libdw
 * would run (a CIE's initial instructions, an FDE's) stay within the limits above.
 *
 * Returns 0 when libdw may read those parts; else the parts found unsafe (all of what
 * when it is the file), the first reason in why ("section headers beyond the end of the
 * file", ".eh_frame: FDE at 0x3468 names DWARF register 234881023").
 */
unsigned elf_check(Elf *e, unsigned what, char *why, size_t whysz);

/*
 * elf_check() for the readers of a recording's files: each part of a file (by name,
 * size and the bytes at its ends) is checked once in this process, and the first time
 * a part is refused one warning names the file, the reason and what is left out ("not
 * reading it", "not using its CFI").  Safe to call from any thread.
 */
unsigned elf_check_warn(Elf *e, unsigned what, const char *name);
/*
 * The functions the CFI bounds: fn is called with the code range [start, start + len) of
 * each FDE of e's .eh_frame (else what PT_GNU_EH_FRAME points at) that libdw would read,
 * as elf_check() walks them, its entries' bounds and encodings checked but not their CFI
 * programs (no one runs them here: who unwinds with them has elf_check_warn's verdict).
 * -1 (the reason in why) when the file or its CFI is refused, after the FDEs before the
 * fault; else 0.
 */
int elf_each_fde(Elf *e, void (*fn)(void *ctx, uint64_t start, uint64_t len, int signal),
		 void *ctx, char *why, size_t whysz);

/* The functions the CFI bounds, sorted to look one up: the FDE around an address names
 * a function without a symbol (func@START) and bounds it (its whole range: a function
 * has several CFI rows, one per push and pop, and a row is not the function) */
struct fde_range {
	uint64_t start, len;
};
struct fde_index {
	const struct fde_range *v;
	size_t nr;
	const uint64_t *sig;	/* the starts of signal frames' FDEs (their CIE's 'S') */
	size_t nr_sig;
};
/* e's FDEs (elf_each_fde) into x, sorted by start; -1 where the CFI is refused (those
 * before the fault kept).  One walk a file: the index is shared by every caller that
 * asks for the same file (its size and the bytes at both ends), until exit; the
 * symbolizer, the code scan of check-isa's verdict and the GIL's finder each ask of
 * libtorch_cpu.so's ~0.9 M FDEs. */
int fde_index_build(Elf *e, struct fde_index *x);
/* The FDE whose range holds vaddr, NULL where none does */
const struct fde_range *fde_index_find(const struct fde_index *x, uint64_t vaddr);
/* 1 where f (of x) is a signal frame's: where a handler returns (__restore_rt) */
int fde_index_signal(const struct fde_index *x, const struct fde_range *f);
void fde_index_release(struct fde_index *x);

/* Off: check every time (a harness that rewrites one file in place) */
void elf_check_cache(int on);

#endif
