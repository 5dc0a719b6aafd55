/* elfsyms.h - what readers without a symbolizer need of an ELF file: its function
 * symbols, to look one up by name or address (the unwinder's thread roots, the ISA code
 * hits, record's uprobe places), and its build-id (the unwinder's check of a file
 * against the recording, record's build-id records).
 */
#ifndef DLPROF_ELFSYMS_H
#define DLPROF_ELFSYMS_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Call fn for every defined function symbol (STT_FUNC, not SHN_UNDEF) of e's .symtab
 * and .dynsym, in file order; strndx is its string table, for elf_strptr() when the name
 * is wanted.  Stops at the first non-zero fn returns, and returns it (0 when none did).
 */
int elf_each_func(Elf *e, int (*fn)(void *ctx, const GElf_Sym *sym, size_t strndx), void *ctx);

/* The file offset of function sym in the ELF file at path (a uprobe's place), 0 when
 * none */
uint64_t elf_func_offset(const char *path, const char *sym);

/* The GNU build-id of a 64-bit ELF image in memory, from its PT_NOTE segments (as the
 * loader maps them: no section headers needed).  Its first (at most) 20 bytes are copied
 * to id; returns its length, 0 when the image has none or is not such an ELF file. */
size_t elf_image_build_id(const void *data, size_t size, uint8_t id[20]);
/* The same of the file at path (0 also when it cannot be read) */
size_t elf_file_build_id(const char *path, uint8_t id[20]);
/* A build-id's first (at most) 20 bytes in lower-case hex, NUL-terminated, into hex */
void build_id_hex(const uint8_t *id, size_t size, char hex[41]);

#endif
