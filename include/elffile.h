/* elffile.h - the one place a reader opens an ELF file that a recording names: mapped
 * once in this process and shared by the symbolizer, the unwinder, check-isa and
 * record, while any of them holds it.
 *
 * The path is the one to open: a --symfs root or a process's own root
 * (/proc/PID/root/...) is already in it.  A file is known by its path and what stat()
 * says of it (device, inode, size, change time): the same path opened again after the
 * file was replaced maps the new file.  With a build-id asked for, a file that carries
 * another is refused (one without a build-id is taken: nothing says it differs).
 *
 * Each reader gets its own libelf handle over the shared bytes (elffile_elf): libelf's
 * handles are not shared between threads, the bytes are.
 */
#ifndef DLPROF_ELFFILE_H
#define DLPROF_ELFFILE_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct elffile_seg {
	uint64_t offset, vaddr, filesz, memsz;
	uint32_t flags;		/* PF_R, PF_W, PF_X */
};

struct elffile {
	const char *path;		/* as opened; an image's name */
	const uint8_t *data;		/* the whole file, read-only */
	size_t size;
	uint8_t build_id[20];
	size_t build_id_size;		/* its length (only 20 bytes kept); 0: none */
	unsigned elf64 : 1;		/* a 64-bit little-endian file whose headers libelf
					   reads, and what they say (ET_DYN, EM_X86_64): */
	uint16_t type, machine;		/* 0 where libelf reads none */
	const struct elffile_seg *segs;	/* its PT_LOAD segments in header order */
	size_t nr_segs;
};

enum elffile_status {
	ELFFILE_OK,
	ELFFILE_UNREADABLE,	/* it cannot be opened or mapped: errno says why */
	ELFFILE_NOT_REGULAR,	/* a folder, a device, a FIFO */
	ELFFILE_NOT_ELF,	/* no ELF magic */
	ELFFILE_OTHER_BUILD_ID,	/* it carries another build-id than the one asked for */
};

/*
 * The ELF file at path, held until elffile_put(); NULL when it cannot be used, the
 * reason in *status (status may be NULL).  A file with the ELF magic is taken even
 * where libelf reads no header: what a reader needs (elf64, type, segs) it checks.
 * build_id/id_size: the build-id it must carry (its first id_size bytes), or id_size 0.
 * Safe to call from any thread.
 */
const struct elffile *elffile_open(const char *path, const uint8_t *build_id, size_t id_size,
				   enum elffile_status *status);
/* What the headers of the file at path say, read with a few preads (no mapping, no
 * libelf: what record asks of each file a process maps): its type, machine, PT_LOAD
 * segments and the build-id of its PT_NOTE segments.  0; -1 where the file cannot be
 * read so or says less: not a 64-bit little-endian ELF file, over ELFFILE_HEAD_SEGS
 * loaded segments, no build-id in its notes (libelf may find one in its sections):
 * elffile_open() reads those. */
#define ELFFILE_HEAD_SEGS 16
struct elffile_heads {
	uint16_t type, machine;
	uint8_t build_id[20];
	size_t build_id_size;
	struct elffile_seg segs[ELFFILE_HEAD_SEGS];
	size_t nr_segs;
};
int elffile_heads(const char *path, struct elffile_heads *h);
/* The load bias of a mapping of a file (start, pgoff) with these segments: process
 * address minus ELF virtual address (0 for ET_EXEC); -1 where no segment holds pgoff */
int elffile_map_bias(uint16_t type, const struct elffile_seg *segs, size_t nr_segs,
		     uint64_t start, uint64_t pgoff, uint64_t *bias);
/* An image in memory (the [vdso] captured by record), not copied: it must live as long
 * as the result, which elffile_put() frees.  NULL when it is not an ELF image. */
const struct elffile *elffile_image(const void *data, size_t size, const char *name);
void elffile_put(const struct elffile *f);
/* A libelf handle over f's bytes, the caller's own (elf_end() it before elffile_put()),
 * NULL when libelf will not read it or the file is big-endian (libelf would turn its
 * bytes in place, and they are shared and read-only) */
Elf *elffile_elf(const struct elffile *f);
/* File offset to virtual address and back through the PT_LOAD segments' file bytes;
 * -1 outside them */
int elffile_off_to_vaddr(const struct elffile *f, uint64_t off, uint64_t *vaddr);
int elffile_vaddr_to_off(const struct elffile *f, uint64_t vaddr, uint64_t *off);
/* What status says, for a warning ("not an ELF file") */
const char *elffile_strstatus(enum elffile_status status);

#endif
