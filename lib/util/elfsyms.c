/* elfsyms.c - the function symbols and the build-id of an ELF file (elfsyms.h). */
#include <stddef.h>
#include <string.h>

#include "elffile.h"
#include "elfsyms.h"

int elf_each_func(Elf *e, int (*fn)(void *ctx, const GElf_Sym *sym, size_t strndx), void *ctx)
{
	Elf_Scn *scn = NULL;

	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			int ret;

			if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    sym.st_shndx == SHN_UNDEF)
				continue;
			ret = fn(ctx, &sym, sh.sh_link);
			if (ret)
				return ret;
		}
	}
	return 0;
}

size_t elf_image_build_id(const void *data, size_t size, uint8_t id[20])
{
	const unsigned char *p = data;
	Elf64_Ehdr eh;

	if (size < sizeof(eh))
		return 0;
	memcpy(&eh, p, sizeof(eh));	/* headers copied out: nothing need be aligned */
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > size ||
	    (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > size - eh.e_phoff)
		return 0;
	for (size_t i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		uint64_t off, end;

		memcpy(&ph, p + eh.e_phoff + i * sizeof(ph), sizeof(ph));
		off = ph.p_offset;
		if (ph.p_type != PT_NOTE || off > size || ph.p_filesz > size - off)
			continue;
		end = off + ph.p_filesz;
		while (off + sizeof(Elf64_Nhdr) <= end) {
			Elf64_Nhdr nh;
			uint64_t name = off + sizeof(nh), desc, next;

			memcpy(&nh, p + off, sizeof(nh));
			desc = name + ((nh.n_namesz + 3ull) & ~3ull);
			next = desc + ((nh.n_descsz + 3ull) & ~3ull);
			if (next > end || next <= off)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(p + name, "GNU", 4) && nh.n_descsz) {
				memcpy(id, p + desc, nh.n_descsz < 20 ? nh.n_descsz : 20);
				return nh.n_descsz;
			}
			off = next;
		}
	}
	return 0;
}

size_t elf_file_build_id(const char *path, uint8_t id[20])
{
	struct elffile_heads h;
	const struct elffile *f;
	size_t n;

	if (!elffile_heads(path, &h)) {
		/* its notes (record asks it of every file a process maps: no mapping) */
		memcpy(id, h.build_id, h.build_id_size < 20 ? h.build_id_size : 20);
		return h.build_id_size;
	}
	f = elffile_open(path, NULL, 0, NULL);
	n = f ? f->build_id_size : 0;

	if (n)
		memcpy(id, f->build_id, n < 20 ? n : 20);
	elffile_put(f);
	return n;
}

void build_id_hex(const uint8_t *id, size_t size, char hex[41])
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < size && i < 20; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[2 * i] = '\0';
}

struct func_named {
	Elf *e;
	const char *name;
	uint64_t addr;		/* found: its address */
};

static int func_named(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	struct func_named *fn = ctx;
	const char *n = elf_strptr(fn->e, strndx, sym->st_name);

	if (!n || strcmp(n, fn->name) || !sym->st_value)
		return 0;
	fn->addr = sym->st_value;
	return 1;
}

/* The file offset of function sym in the ELF file path (a uprobe's place), 0 when none. */
uint64_t elf_func_offset(const char *path, const char *sym)
{
	const struct elffile *f = elffile_open(path, NULL, 0, NULL);
	struct func_named fn = { f ? elffile_elf(f) : NULL, sym, 0 };
	uint64_t off = 0;

	elf_each_func(fn.e, func_named, &fn);
	if (fn.addr && elffile_vaddr_to_off(f, fn.addr, &off))
		off = 0;
	if (fn.e)
		elf_end(fn.e);
	elffile_put(f);
	return off;
}
