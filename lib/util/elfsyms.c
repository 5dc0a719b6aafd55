/* elfsyms.c - the function symbols of an ELF file (elfsyms.h). */
#include <stddef.h>

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
