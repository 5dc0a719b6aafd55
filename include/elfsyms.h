/* elfsyms.h - the function symbols of an ELF file, for the readers that look one up by
 * name or address without a symbolizer (the unwinder's thread roots, the ISA code hits,
 * record's uprobe places).
 */
#ifndef DLPROF_ELFSYMS_H
#define DLPROF_ELFSYMS_H

#include <gelf.h>

/*
 * Call fn for every defined function symbol (STT_FUNC, not SHN_UNDEF) of e's .symtab
 * and .dynsym, in file order; strndx is its string table, for elf_strptr() when the name
 * is wanted.  Stops at the first non-zero fn returns, and returns it (0 when none did).
 */
int elf_each_func(Elf *e, int (*fn)(void *ctx, const GElf_Sym *sym, size_t strndx), void *ctx);

#endif
