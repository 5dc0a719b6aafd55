/* symbolize.c - ELF symbol tables, .eh_frame bounds and DWARF lines (see symbolize.h).
 *
 * Address translation: a process address becomes a file offset through its mapping
 * (map_file_offset), then an ELF virtual address through the PT_LOAD program header
 * whose file range holds that offset (vaddr = off - p_offset + p_vaddr).  Symbols,
 * FDEs and DWARF all speak ELF virtual addresses; the result cache is keyed by file
 * offset, which is the same in every process that maps the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <gelf.h>
#include <libelf.h>

#include "dynlib.h"
#include "elfcheck.h"
#include "elffile.h"
#include "elfsyms.h"
#include "pygil.h"
#include "rephash.h"
#include "symbolize.h"
#include "util.h"


#define TRAIT_SCAN_MAX 4096
#define SIZELESS_MAX 4096
#define DEFAULT_DEBUGINFO_PATH ":.debug:/usr/lib/debug"

struct sym {
	uint64_t start, size;
	const char *raw;	/* into an ELF string table (or a static name: add_gil_syms) */
	const char *name;	/* demangled + interned, on first use */
	unsigned traits;
	unsigned traits_done:1;
	unsigned global:1;
};

struct symres {
	const char *name;
	uint64_t start_vaddr;	/* 0: unknown */
	unsigned flags, traits;
	const char *srcline;
	size_t nr_inl;
	struct inl {
		const char *name;
		const char *srcline;
	} *inl;			/* inlined callers, innermost first, outermost last (below name) */
};

struct dso_sym {
	int state;		/* 1 usable, -1 nothing to read */
	const struct elffile *file, *dbg_file;
	Elf *elf, *dbg_elf;	/* libelf over their bytes */
	const uint8_t *raw;
	size_t raw_size;
	const struct elffile_seg *segs;	/* the file's, once it is usable */
	size_t nr_segs;
	struct sym *syms;
	size_t nr_syms, alloc_syms;
	Dwarf_CFI *cfi;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	int dwfl_tried;
	struct u64map cache;		/* file offset -> struct symres */
	struct u64map fde_names;	/* fde start vaddr -> struct fde_name */
	struct fde_index fdes;		/* its FDEs: names and bounds without a symbol */
	int fdes_built;
	struct dso_sym *next;		/* all of them, for freeing */
	struct dso *dso;
};

struct symbolizer {
	struct symbolize_opts opts;
	char *debuginfo_path;		/* libdwfl's syntax: ":.debug:/usr/lib/debug" */
	Dwfl_Callbacks callbacks;	/* offline; debuginfo_path points at the above */
	struct strpool pool;
	struct dso_sym *all;
	struct symres unknown;
};

char *symbolize_demangle(const char *name)
{
	int status = 0;
	char *d;

	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	d = dynlib_demangle(name, &status);
	if (status) {
		free(d);
		return NULL;
	}
	return d;
}

/*
 * A spin-wait: PAUSE (f3 90) followed closely by a jump back to at or before it, within
 * a short distance.  Byte-level: cheap, and the target/backward-distance constraints keep
 * stray matches out.
 */
unsigned symbolize_code_traits(const uint8_t *code, size_t len)
{
	for (size_t p = 0; p + 1 < len; p++) {
		if (code[p] != 0xf3 || code[p + 1] != 0x90)
			continue;
		for (size_t k = p + 2; k < p + 40 && k < len; k++) {
			int64_t target;

			if ((code[k] >= 0x70 && code[k] <= 0x7f) || code[k] == 0xeb) {
				if (k + 1 >= len)
					break;
				target = (int64_t)k + 2 + (int8_t)code[k + 1];
			} else if (code[k] == 0x0f && k + 5 < len && code[k + 1] >= 0x80 && code[k + 1] <= 0x8f) {
				int32_t rel;

				memcpy(&rel, code + k + 2, 4);
				target = (int64_t)k + 6 + rel;
			} else if (code[k] == 0xe9 && k + 4 < len) {
				int32_t rel;

				memcpy(&rel, code + k + 1, 4);
				target = (int64_t)k + 5 + rel;
			} else {
				continue;
			}
			if (target <= (int64_t)p && target >= (int64_t)p - 128 && target >= 0)
				return TRAIT_PAUSE_LOOP;
		}
	}
	return 0;
}

/* libdwfl's search for a separate debug file, what it finds checked as the main file is */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc, debuginfo_file_name);
	Elf *e;
	unsigned unsafe;

	if (fd < 0)
		return fd;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return fd;	/* not an ELF file: libdwfl says no itself */
	unsafe = elf_check_warn(e, ELF_CHECK_FILE, *debuginfo_file_name ? *debuginfo_file_name : modname);
	elf_end(e);
	if (!unsafe)
		return fd;
	close(fd);
	free(*debuginfo_file_name);
	*debuginfo_file_name = NULL;
	return -1;
}

struct symbolizer *symbolizer_new(const struct symbolize_opts *opts)
{
	struct symbolizer *s = xcalloc(1, sizeof(*s));

	if (opts)
		s->opts = *opts;
	strpool_init(&s->pool);
	elf_version(EV_CURRENT);
	s->unknown.name = "[unknown]";
	s->unknown.flags = FRAME_UNKNOWN;
	/* where separate debug files live: DLPROF_DEBUGINFO_PATH replaces libdwfl's default
	 * (same syntax); libdwfl's standard lookup also asks debuginfod (DEBUGINFOD_URLS) */
	s->debuginfo_path = xstrdup(getenv("DLPROF_DEBUGINFO_PATH") && *getenv("DLPROF_DEBUGINFO_PATH") ?
				    getenv("DLPROF_DEBUGINFO_PATH") : DEFAULT_DEBUGINFO_PATH);
	s->callbacks.find_elf = dwfl_build_id_find_elf;
	s->callbacks.find_debuginfo = find_debuginfo;
	s->callbacks.section_address = dwfl_offline_section_address;
	s->callbacks.debuginfo_path = &s->debuginfo_path;
	return s;
}

const char *symbolizer_intern(struct symbolizer *s, const char *str)
{
	return strpool_intern(&s->pool, str);
}

static void symres_free(struct symres *r)
{
	if (!r)
		return;
	free(r->inl);
	free(r);
}

static void dso_sym_free(struct dso_sym *d)
{
	for (size_t i = 0; i < d->cache.cap; i++)
		if (d->cache.used[i])
			symres_free(d->cache.vals[i]);
	u64map_release(&d->cache);
	for (size_t i = 0; i < d->fde_names.cap; i++)
		if (d->fde_names.used[i])
			free(d->fde_names.vals[i]);
	u64map_release(&d->fde_names);
	fde_index_release(&d->fdes);
	if (d->dwfl)
		dwfl_end(d->dwfl);
	if (d->cfi)
		dwarf_cfi_end(d->cfi);	/* before the Elf it was read from */
	if (d->dbg_elf)
		elf_end(d->dbg_elf);
	elffile_put(d->dbg_file);
	if (d->elf)
		elf_end(d->elf);
	elffile_put(d->file);
	free(d->syms);
	if (d->dso)
		d->dso->sym_priv = NULL;
	free(d);
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	while (s->all) {
		struct dso_sym *n = s->all->next;

		dso_sym_free(s->all);
		s->all = n;
	}
	strpool_release(&s->pool);
	free(s->debuginfo_path);
	free(s);
}

/* The file at path (with that build-id, where id_size) and a libelf handle over it */
static Elf *open_elf(const char *path, const uint8_t *id, size_t id_size,
		     const struct elffile **fp, enum elffile_status *st)
{
	const struct elffile *f = elffile_open(path, id, id_size, st);
	Elf *e = f ? elffile_elf(f) : NULL;

	if (!e) {
		elffile_put(f);
		f = NULL;
	}
	*fp = f;
	return e;
}

static void load_symtab(struct dso_sym *d, Elf *e, Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t n;

	if (!data || !sh->sh_entsize)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int type;
		struct sym *y;

		if (!gelf_getsym(data, i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		ALLOC_GROW(d->syms, d->nr_syms + 1, d->alloc_syms);
		y = &d->syms[d->nr_syms++];
		memset(y, 0, sizeof(*y));
		y->start = sym.st_value;
		y->size = sym.st_size;
		y->raw = name;
		y->global = GELF_ST_BIND(sym.st_info) != STB_LOCAL;
	}
}

static void load_symbols(struct dso_sym *d, Elf *e, int *have_symtab)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) {
			load_symtab(d, e, scn, &sh);
			if (sh.sh_type == SHT_SYMTAB && have_symtab)
				*have_symtab = 1;
		}
	}
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->global != y->global)		/* globals first among aliases */
		return x->global ? -1 : 1;
	if ((x->size == 0) != (y->size == 0))	/* sized first */
		return x->size ? -1 : 1;
	return strcmp(x->raw, y->raw);
}

static void finish_symbols(struct dso_sym *d)
{
	size_t j = 0;

	if (!d->nr_syms)	/* qsort(NULL, 0) is undefined */
		return;
	qsort(d->syms, d->nr_syms, sizeof(*d->syms), cmp_sym);
	/* one entry per start address (aliases and symtab/dynsym duplicates) */
	for (size_t i = 0; i < d->nr_syms; i++) {
		if (j && d->syms[j - 1].start == d->syms[i].start) {
			if (!d->syms[j - 1].size)
				d->syms[j - 1].size = d->syms[i].size;
			continue;
		}
		d->syms[j++] = d->syms[i];
	}
	d->nr_syms = j;
	/* sizeless symbols (hand-written assembly): up to the next symbol, capped */
	for (size_t i = 0; i < d->nr_syms; i++) {
		if (d->syms[i].size)
			continue;
		uint64_t lim = i + 1 < d->nr_syms ? d->syms[i + 1].start - d->syms[i].start : SIZELESS_MAX;

		d->syms[i].size = lim < SIZELESS_MAX ? lim : SIZELESS_MAX;
	}
}

/* A CPython interpreter without symbols for take_gil and drop_gil (stripped: they are
 * static) gets them from its code (pygil.h), so that its waits for the GIL are named
 * and told from other locks' (family wait-gil).  A free-threaded build too: its GIL is
 * off unless PYTHON_GIL=1 or an extension module turns it on at run time. */
static void add_gil_syms(struct dso_sym *d)
{
	struct pygil_func f[PYGIL_NR];
	int free_threaded;

	if (!pygil_interpreter(d->dso->path, &free_threaded))
		return;
	for (size_t i = 0; i < d->nr_syms; i++)
		if (!strcmp(d->syms[i].raw, pygil_name(PYGIL_TAKE)))
			return;		/* its symbols name them */
	if (!pygil_find(d->elf, f))
		return;
	for (int k = 0; k < PYGIL_NR; k++) {
		if (!f[k].len)
			continue;
		ALLOC_GROW(d->syms, d->nr_syms + 1, d->alloc_syms);
		d->syms[d->nr_syms++] = (struct sym){ .start = f[k].start, .size = f[k].len,
						      .raw = pygil_name(k) };
	}
}

static const char *gnu_debuglink(Elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *n;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh))
			continue;
		n = elf_strptr(e, shstrndx, sh.sh_name);
		if (!n || strcmp(n, ".gnu_debuglink"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_size || !memchr(data->d_buf, 0, data->d_size))
			return NULL;
		return data->d_buf;
	}
	return NULL;
}

/* Separate debug info, searched as libdwfl does along the debuginfo path (entries split
 * by ':'; "" is the file's own directory, a relative entry is under it, an absolute one is
 * a root): first ROOT/.build-id/xx/yyyy.debug for every absolute entry, then the
 * .gnu_debuglink name in every entry (ROOT + the file's directory for a root). */
static void open_debug_file(struct symbolizer *s, struct dso_sym *d, const char *path,
			    const uint8_t *id, size_t idsz)
{
	struct strbuf sb = STRBUF_INIT;
	const char *link, *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path) : 0;
	char hex[41];

	build_id_hex(id, idsz, hex);

	for (int pass = 0; pass < 2 && !d->dbg_elf; pass++) {
		const char *p = s->debuginfo_path;

		link = pass ? gnu_debuglink(d->elf) : NULL;
		if (pass ? !link || strchr(link, '/') : idsz < 2)
			continue;
		while (!d->dbg_elf) {
			const char *colon = strchr(p, ':');
			int len = colon ? (int)(colon - p) : (int)strlen(p);

			strbuf_reset(&sb);
			if (!pass) {
				if (len && p[0] == '/') {
					strbuf_addf(&sb, "%.*s/.build-id/%.2s/%s.debug", len, p,
						    hex, hex + 2);
				}
			} else if (!len) {
				strbuf_addf(&sb, "%.*s/%s", dirlen, path, link);
			} else if (p[0] != '/') {
				strbuf_addf(&sb, "%.*s/%.*s/%s", dirlen, path, len, p, link);
			} else {
				strbuf_addf(&sb, "%.*s%.*s/%s", len, p, dirlen, path, link);
			}
			if (sb.len && strcmp(sb.buf, path))
				d->dbg_elf = open_elf(sb.buf, NULL, 0, &d->dbg_file, NULL);
			if (d->dbg_elf && elf_check_warn(d->dbg_elf, ELF_CHECK_FILE, sb.buf)) {
				elf_end(d->dbg_elf);
				elffile_put(d->dbg_file);
				d->dbg_elf = NULL;
				d->dbg_file = NULL;
			}
			if (!colon)
				break;
			p = colon + 1;
		}
	}
	strbuf_release(&sb);
}

static struct dso_sym *dso_sym_get(struct symbolizer *s, struct dso *dso)
{
	struct dso_sym *d = dso->sym_priv;
	enum elffile_status st = ELFFILE_OK;
	int have_symtab = 0;
	unsigned unsafe;

	if (d)
		return d;
	d = xcalloc(1, sizeof(*d));
	d->dso = dso;
	d->state = -1;
	u64map_init(&d->cache);
	u64map_init(&d->fde_names);
	d->next = s->all;
	s->all = d;
	dso->sym_priv = d;

	if (dso->image) {
		/* captured at record time (the [vdso]): read from memory */
		d->file = elffile_image(dso->image, dso->image_size, dso->path);
		d->elf = d->file ? elffile_elf(d->file) : NULL;
	} else if (dso->kernel || dso->anon || dso->special || dso->path[0] != '/') {
		return d;
	} else {
		d->elf = open_elf(dso_file(dso), dso->build_id, dso->build_id_size, &d->file, &st);
	}
	if (st == ELFFILE_OTHER_BUILD_ID) {
		warning("'%s' changed since it was recorded (build-id differs): its samples stay unnamed",
			dso->path);
		return d;
	}
	if (!d->elf)
		return d;
	unsafe = elf_check_warn(d->elf, ELF_CHECK_FILE | ELF_CHECK_EH_FRAME,
				dso->image ? dso->path : dso_file(dso));
	if (unsafe & ELF_CHECK_FILE)
		return d;	/* its samples stay [unknown] */
	d->raw = d->file->data;
	d->raw_size = d->file->size;
	d->segs = d->file->segs;
	d->nr_segs = d->file->nr_segs;
	load_symbols(d, d->elf, &have_symtab);
	if (!have_symtab) {
		open_debug_file(s, d, dso->path, d->file->build_id,
				d->file->build_id_size < 20 ? d->file->build_id_size : 20);
		if (d->dbg_elf)
			load_symbols(d, d->dbg_elf, NULL);
	}
	add_gil_syms(d);
	finish_symbols(d);
	if (!(unsafe & ELF_CHECK_EH_FRAME))
		d->cfi = dwarf_getcfi_elf(d->elf);	/* else no func@0x.. names from FDEs */
	d->state = 1;
	return d;
}

static int off_to_vaddr(const struct dso_sym *d, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < d->nr_segs; i++) {
		const struct elffile_seg *g = &d->segs[i];

		if (off >= g->offset && off - g->offset < g->filesz) {
			*vaddr = off - g->offset + g->vaddr;
			return 0;
		}
	}
	return -1;
}

static int vaddr_to_off(const struct dso_sym *d, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < d->nr_segs; i++) {
		const struct elffile_seg *g = &d->segs[i];

		if (vaddr >= g->vaddr && vaddr - g->vaddr < g->filesz) {
			*off = vaddr - g->vaddr + g->offset;
			return 0;
		}
	}
	return -1;
}

static unsigned range_traits(const struct dso_sym *d, uint64_t start, uint64_t size)
{
	uint64_t off;

	if (!d->raw || vaddr_to_off(d, start, &off) || off >= d->raw_size)
		return 0;
	if (size > TRAIT_SCAN_MAX)
		size = TRAIT_SCAN_MAX;
	if (size > d->raw_size - off)
		size = d->raw_size - off;
	return symbolize_code_traits(d->raw + off, size);
}

static struct sym *find_sym(struct dso_sym *d, uint64_t vaddr)
{
	size_t lo = 0, hi = d->nr_syms;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (d->syms[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo-1 is the last symbol starting at or before vaddr; a few earlier ones may be
	 * larger functions that enclose it */
	for (size_t i = lo, n = 0; i-- > 0 && n < 8; n++) {
		struct sym *y = &d->syms[i];

		if (vaddr - y->start < y->size)
			return y;
	}
	return NULL;
}

static const char *intern_demangled(struct symbolizer *s, const char *raw)
{
	char *dm = symbolize_demangle(raw);
	const char *r;

	if (!dm)
		return strpool_intern(&s->pool, raw);
	r = strpool_intern(&s->pool, dm);
	free(dm);
	return r;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *n;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
	return n;
}

static int dwfl_setup(struct symbolizer *s, struct dso_sym *d)
{
	Dwarf_Addr dbias;

	if (d->dwfl_tried)
		return d->mod ? 0 : -1;
	d->dwfl_tried = 1;
	d->dwfl = dwfl_begin(&s->callbacks);
	if (!d->dwfl)
		return -1;
	dwfl_report_begin(d->dwfl);
	d->mod = dwfl_report_offline(d->dwfl, d->dso->short_name, dso_file(d->dso), -1);
	dwfl_report_end(d->dwfl, NULL, NULL);
	if (!d->mod)
		return -1;
	/* module addresses are ELF vaddrs plus the main file's bias (a separate debug
	 * file may have its own bias, which dwfl_module_addrdie hands back per CU) */
	if (!dwfl_module_getelf(d->mod, &d->bias)) {
		d->mod = NULL;
		return -1;
	}
	/* load the debug info now, so the first lookup does not pay for it */
	if (!dwfl_module_getdwarf(d->mod, &dbias)) {
		d->mod = NULL;
		return -1;
	}
	return 0;
}

static const char *fmt_srcline(struct symbolizer *s, const char *file, int line)
{
	char buf[4096];
	const char *base;

	if (!file || line <= 0)
		return NULL;
	base = strrchr(file, '/');
	snprintf(buf, sizeof(buf), "%s:%d", base ? base + 1 : file, line);
	return strpool_intern(&s->pool, buf);
}

/* DWARF: the srcline of vaddr and, with inline frames, the chain of inlined calls. */
static void add_dwarf(struct symbolizer *s, struct dso_sym *d, uint64_t vaddr, struct symres *r)
{
	Dwarf_Addr a, dbias = 0;
	Dwfl_Line *line;
	Dwarf_Die *cu, *scopes = NULL;
	int n;

	/* the bias is known only once the module is set up: take it after */
	if (dwfl_setup(s, d))
		return;
	a = vaddr + d->bias;
	line = dwfl_module_getsrc(d->mod, a);
	if (line) {
		int lineno = 0;
		const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);

		r->srcline = fmt_srcline(s, file, lineno);
	}
	if (!s->opts.inline_frames)
		return;
	cu = dwfl_module_addrdie(d->mod, a, &dbias);
	if (!cu)
		return;
	n = dwarf_getscopes(cu, a - dbias, &scopes);
	if (n <= 0)
		return;
	/* scopes[0] is innermost.  Each inlined_subroutine is a frame; its caller is the next
	 * inlined_subroutine or the subprogram outside it, at its call site. */
	const char *inner_name = NULL, *inner_src = r->srcline;
	for (int i = 0; i < n; i++) {
		Dwarf_Die *die = &scopes[i];
		int tag = dwarf_tag(die);
		const char *nm;

		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		nm = die_name(die);
		if (tag == DW_TAG_inlined_subroutine) {
			Dwarf_Attribute attr;
			Dwarf_Word cl = 0;
			Dwarf_Files *files;
			size_t nfiles;
			Dwarf_Word cf = 0;
			const char *cfile = NULL;

			r->inl = xrealloc(r->inl, (r->nr_inl + 1) * sizeof(*r->inl));
			if (!inner_name) {
				/* the innermost inlined function is the frame the sample is in;
				 * what the symbol table says becomes its caller */
				inner_name = nm ? intern_demangled(s, nm) : "[inlined]";
				r->inl[r->nr_inl].name = inner_name;
			} else {
				r->inl[r->nr_inl].name = nm ? intern_demangled(s, nm) : "[inlined]";
			}
			r->inl[r->nr_inl].srcline = inner_src;
			r->nr_inl++;
			dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &cl);
			if (!dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &cf) &&
			    !dwarf_getsrcfiles(cu, &files, &nfiles) && cf < nfiles)
				cfile = dwarf_filesrc(files, cf, NULL, NULL);
			inner_src = fmt_srcline(s, cfile, (int)cl);
		} else {
			break;
		}
	}
	/* the outer (real) function's line is the outermost call site */
	if (r->nr_inl)
		r->srcline = inner_src;
	free(scopes);
}

/* A function known by its FDE alone: its name and traits */
struct fde_name {
	const char *name;
	unsigned traits;
};

static struct symres *resolve(struct symbolizer *s, struct dso_sym *d, uint64_t off)
{
	struct symres *r;
	uint64_t vaddr;
	struct sym *y;

	r = xcalloc(1, sizeof(*r));
	if (d->state < 0 || off_to_vaddr(d, off, &vaddr)) {
		r->name = "[unknown]";
		r->flags = FRAME_UNKNOWN;
		return r;
	}
	y = find_sym(d, vaddr);
	if (y) {
		if (!y->name)
			y->name = intern_demangled(s, y->raw);
		if (!y->traits_done) {
			y->traits = range_traits(d, y->start, y->size);
			y->traits_done = 1;
		}
		r->name = y->name;
		r->start_vaddr = y->start;
		r->traits = y->traits;
	} else {
		const struct fde_range *f = NULL;
		char buf[512];

		if (d->cfi && !d->fdes_built) {
			fde_index_build(d->elf, &d->fdes);
			d->fdes_built = 1;
		}
		if (d->cfi)
			f = fde_index_find(&d->fdes, vaddr);
		if (f) {
			void **slot = u64map_slot(&d->fde_names, f->start);
			struct fde_name *fn = *slot;

			if (!fn) {
				/* once a function: every address in it is named alike; a
				 * signal frame's (its CIE's 'S': __restore_rt, where a handler
				 * returns, whose symbol a stripped libc does not keep) */
				int sig = fde_index_signal(&d->fdes, f);

				if (sig)
					snprintf(buf, sizeof(buf), "%s![signal]", d->dso->short_name);
				else
					snprintf(buf, sizeof(buf), "%s!func@0x%llx", d->dso->short_name,
						 (unsigned long long)f->start);
				fn = *slot = xmalloc(sizeof(*fn));
				fn->name = strpool_intern(&s->pool, buf);
				fn->traits = range_traits(d, f->start, f->len);
			}
			r->name = fn->name;
			r->start_vaddr = f->start;
			r->flags = FRAME_FDE;
			r->traits = fn->traits;
		} else {
			r->name = "[unknown]";
			r->flags = FRAME_UNKNOWN;
		}
	}
	if (s->opts.srcline || s->opts.inline_frames)
		add_dwarf(s, d, vaddr, r);
	return r;
}

size_t symbolize(struct symbolizer *s, const struct map *mp, uint64_t addr,
		 struct frame *out, size_t max)
{
	struct dso *dso = mp->dso;
	struct dso_sym *d;
	struct symres *r;
	void **slot;
	uint64_t off = map_file_offset(mp, addr);
	size_t n = 0;

	if (!max)
		return 0;
	d = dso_sym_get(s, dso);
	slot = u64map_slot(&d->cache, off);
	if (!*slot)
		*slot = resolve(s, d, off);
	r = *slot;

	for (size_t i = 0; i < r->nr_inl && n + 1 < max; i++, n++) {
		struct frame *f = &out[n];

		memset(f, 0, sizeof(*f));
		f->ip = addr;
		f->sym = r->inl[i].name;
		f->dso = dso->short_name;
		f->dso_path = dso->path;
		f->srcline = s->opts.srcline ? r->inl[i].srcline : NULL;
		f->flags = FRAME_INLINE;
	}
	memset(&out[n], 0, sizeof(out[n]));
	out[n].ip = addr;
	out[n].sym = r->name;
	out[n].dso = dso->short_name;
	out[n].dso_path = dso->path;
	out[n].srcline = s->opts.srcline ? r->srcline : NULL;
	out[n].flags = r->flags;
	out[n].traits = r->traits;
	if (r->start_vaddr) {
		uint64_t soff;

		if (!vaddr_to_off(d, r->start_vaddr, &soff))
			out[n].sym_start = soff - mp->pgoff + mp->start;
	}
	return n + 1;
}
