/* unwind.c - CFI unwinding of copied user stacks through libdwfl, with stack scanning
 * over frames that have no CFI.
 *
 * Design:
 * - One Dwfl per address space (pid, exec generation), kept for the whole report: an
 *   exec without a new pid (sh -c 'exec prog') gets a fresh one.  Modules are reported
 *   lazily: the first time a walk meets an address of a file mapping that no module
 *   covers, the file is reported at its load bias (dwfl_report_begin_add/_elf/_end)
 *   from inside the frame callback, so the walk simply continues.
 * - dwfl_attach_state is called once per Dwfl; the thread callbacks read "the current
 *   walk" (sample registers, copied stack, or a restart state after a stack scan) from
 *   the unwinder, so a new sample needs no new libdwfl state.
 * - memory_read serves the copied stack [SP, SP + stack_size), else the bytes of the
 *   mapped file (mmap'ed once per DSO).
 * - When the walk stops without reaching an outermost frame, the copied stack is
 *   scanned upward from the last known SP for a word that is a return address into
 *   file-backed code (the bytes before it decode as a call), and a new walk starts from
 *   there with rip/rsp known and the callee-saved registers of the last CFI frame (rbp
 *   from the slot below the return address when the skipped code made a classic frame).
 *   That frame is FRAME_RECOVERED; if its own CFI step gives an implausible frame, it was
 *   probably a stale word and is dropped when the scan finds another.
 * - Every return address found by CFI must lie in executable memory and, in file-backed
 *   code, follow a call instruction; the stack pointer must grow toward the root.
 * - "Complete" means the CFI at the last PC marks the return address undefined (_start,
 *   clone3), or the last PC lies in a thread-root function (noted once per module).
 * - Caches: per address space, the kind of each code page (direct-mapped) and the
 *   call-decode verdict per return address; per DSO, the mapped file and its PT_LOADs.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <asm/perf_regs.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "frame.h"
#include "rephash.h"
#include "unwind.h"
#include "util.h"

#define SCAN_BYTES	4096	/* how far one stack scan looks */
#define MAX_SCANS	16	/* stack scans per sample */
#define PAGE_CACHE	4096	/* direct-mapped page-kind cache entries per space */
#define CALL_CACHE_MAX	(1u << 20)

/* x86_64 DWARF register numbers */
enum { DW_RAX, DW_RDX, DW_RCX, DW_RBX, DW_RSI, DW_RDI, DW_RBP, DW_RSP,
       DW_R8, DW_R9, DW_R10, DW_R11, DW_R12, DW_R13, DW_R14, DW_R15, DW_RIP, DW_NREGS };

/* perf_regs index of each DWARF register */
static const unsigned char dwarf_to_perf[DW_NREGS] = {
	PERF_REG_X86_AX, PERF_REG_X86_DX, PERF_REG_X86_CX, PERF_REG_X86_BX,
	PERF_REG_X86_SI, PERF_REG_X86_DI, PERF_REG_X86_BP, PERF_REG_X86_SP,
	PERF_REG_X86_R8, PERF_REG_X86_R9, PERF_REG_X86_R10, PERF_REG_X86_R11,
	PERF_REG_X86_R12, PERF_REG_X86_R13, PERF_REG_X86_R14, PERF_REG_X86_R15,
	PERF_REG_X86_IP,
};

static const unsigned char callee_saved[] = { DW_RBX, DW_RBP, DW_R12, DW_R13, DW_R14, DW_R15 };

/* page kinds */
enum { PG_UNKNOWN, PG_NONE, PG_FILE, PG_ANON };

struct load_seg {
	uint64_t offset, vaddr, filesz;
};

/* per-DSO state, hung on dso->unwind_priv */
struct unw_dso {
	int failed;		/* file unusable: no CFI, no bytes */
	const uint8_t *data;	/* whole file, mmap'ed (or the dso's captured image) */
	size_t size;
	int borrowed;		/* data is dso->image: not ours to unmap */
	uint16_t type;		/* ET_EXEC / ET_DYN */
	struct load_seg *segs;
	size_t nr_segs;
};

struct page_ent {
	uint64_t page;
	int kind;
};

/* one address space */
struct space {
	struct unwinder *u;
	uint32_t pid;
	Dwfl *dwfl;
	int attached;
	struct page_ent pages[PAGE_CACHE];
	struct u64map calls;	/* return address -> (void *)1 call, (void *)2 not */
	struct u64map outermost;	/* PC -> (void *)1 CFI says RA undefined, (void *)2 not */
	struct root_range {
		uint64_t start, end;
	} *roots;			/* thread-root functions (_start, start_thread, ...) */
	size_t nr_roots, alloc_roots;
	const struct dso **failed;	/* DSOs whose report failed in this space */
	size_t nr_failed, alloc_failed;
};

/* the walk in progress */
struct walk {
	struct space *sp;
	const struct dlp_sample *s;
	uint64_t stack_lo, stack_hi;	/* copied stack [lo, hi) in process addresses */
	/* initial registers of this pass */
	uint64_t regs[DW_NREGS];
	uint32_t regs_set;		/* bit per DWARF register */
	int restart;			/* this pass starts at a scanned return address */
	unsigned pass_frames;		/* frames seen in this pass */
	/* output */
	uint64_t *ips;
	unsigned *flags;
	size_t n, max;
	/* the last frame recorded */
	uint64_t last_sp;
	int last_has_sp;
	uint64_t last_regs[DW_NREGS];	/* callee-saved registers of the last frame */
	uint32_t last_regs_set;
	Dwfl_Module *last_mod;
	uint64_t last_lookup;
	int stop_nocfi;			/* stopped at a frame no module covers */
	int stop_bad;			/* stopped at an implausible frame */
};

struct unwinder {
	struct machine *m;
	struct u64map spaces;		/* exec generation << 32 | pid -> struct space * */
	struct space **all;
	size_t nr_all, alloc_all;
	struct walk *cur;
	Elf *arch_elf;			/* tiny in-memory x86_64 ELF header: picks the backend */
	Elf64_Ehdr arch_hdr;
};

/* ---- per-DSO file access ---- */

static void unw_dso_free(struct unw_dso *d)
{
	if (!d)
		return;
	if (d->data && !d->borrowed)
		munmap((void *)d->data, d->size);
	free(d->segs);
	free(d);
}

static int build_id_matches(const struct unw_dso *d, const Elf64_Ehdr *eh, const struct dso *dso)
{
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(d->data + eh->e_phoff);

	if (!dso->build_id_size)
		return 1;
	for (size_t i = 0; i < eh->e_phnum; i++) {
		uint64_t off = ph[i].p_offset, end;

		if (ph[i].p_type != PT_NOTE || off > d->size || ph[i].p_filesz > d->size - off)
			continue;
		end = off + ph[i].p_filesz;
		while (off + sizeof(Elf64_Nhdr) <= end) {
			const Elf64_Nhdr *nh = (const Elf64_Nhdr *)(d->data + off);
			uint64_t name = off + sizeof(*nh);
			uint64_t desc = name + ((nh->n_namesz + 3) & ~3u);
			uint64_t next = desc + ((nh->n_descsz + 3) & ~3u);

			if (next > end || next <= off)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(d->data + name, "GNU", 4))
				return nh->n_descsz >= dso->build_id_size &&
				       !memcmp(d->data + desc, dso->build_id, dso->build_id_size);
			off = next;
		}
	}
	return 1;	/* the file carries no build-id: nothing to contradict */
}

/* Open and validate the file behind dso (once). */
static struct unw_dso *dso_get(const struct dso *dso)
{
	struct unw_dso *d = dso->unwind_priv;
	const Elf64_Ehdr *eh;
	const Elf64_Phdr *ph;
	struct stat st;
	void *p;
	int fd;

	if (d)
		return d->failed ? NULL : d;
	d = xcalloc(1, sizeof(*d));
	((struct dso *)dso)->unwind_priv = d;
	d->failed = 1;
	if (dso->image && dso->image_size >= sizeof(Elf64_Ehdr)) {
		/* captured at record time (the [vdso]) */
		d->data = dso->image;
		d->size = dso->image_size;
		d->borrowed = 1;
		p = (void *)dso->image;
	} else {
		if (dso->kernel || dso->anon || dso->special || dso->path[0] != '/')
			return NULL;
		fd = open(dso->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return NULL;
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
		    (uint64_t)st.st_size < sizeof(Elf64_Ehdr)) {
			close(fd);
			return NULL;
		}
		p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (p == MAP_FAILED)
			return NULL;
		d->data = p;
		d->size = st.st_size;
	}
	eh = p;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_machine != EM_X86_64 || (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) ||
	    eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phoff > d->size ||
	    (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > d->size - eh->e_phoff)
		return NULL;
	if (!build_id_matches(d, eh, dso)) {
		warning("'%s' does not match the recorded build-id: not unwinding through it",
			dso->path);
		return NULL;
	}
	d->type = eh->e_type;
	ph = (const Elf64_Phdr *)(d->data + eh->e_phoff);
	d->segs = xcalloc(eh->e_phnum ? eh->e_phnum : 1, sizeof(*d->segs));
	for (size_t i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		d->segs[d->nr_segs].offset = ph[i].p_offset;
		d->segs[d->nr_segs].vaddr = ph[i].p_vaddr;
		d->segs[d->nr_segs].filesz = ph[i].p_filesz;
		d->nr_segs++;
	}
	if (!d->nr_segs)
		return NULL;
	d->failed = 0;
	return d;
}

/* Load bias of the file mapped by mp: process address minus ELF virtual address. */
static int dso_bias(const struct unw_dso *d, const struct map *mp, uint64_t *bias)
{
	if (d->type == ET_EXEC) {
		*bias = 0;
		return 0;
	}
	for (size_t i = 0; i < d->nr_segs; i++) {
		const struct load_seg *sg = &d->segs[i];
		uint64_t lo = sg->offset & ~0xfffULL;

		if (mp->pgoff >= lo && mp->pgoff < sg->offset + (sg->filesz ? sg->filesz : 1)) {
			*bias = mp->start - mp->pgoff + sg->offset - sg->vaddr;
			return 0;
		}
	}
	return -1;
}

/* Copy len bytes at process address addr from the file behind its mapping. */
static int read_file_bytes(struct walk *w, uint64_t addr, void *buf, size_t len)
{
	const struct map *mp = machine_find_map(w->sp->u->m, w->s->pid, addr, w->s->time);
	const struct unw_dso *d;
	uint64_t off;

	if (!mp || addr + len > mp->end || !(d = dso_get(mp->dso)))
		return -1;
	off = map_file_offset(mp, addr);
	if (off > d->size || len > d->size - off)
		return -1;
	memcpy(buf, d->data + off, len);
	return 0;
}

/* ---- address classification and call decoding ---- */

static int page_kind(struct walk *w, uint64_t addr)
{
	uint64_t page = addr >> 12;
	struct page_ent *e = &w->sp->pages[hash_u64(page) & (PAGE_CACHE - 1)];
	const struct map *mp;
	int kind = PG_NONE;

	if (e->kind != PG_UNKNOWN && e->page == page)
		return e->kind;
	if (addr >= 4096 && addr < 0x800000000000ULL) {
		mp = machine_find_map(w->sp->u->m, w->s->pid, addr, w->s->time);
		if (mp && (!mp->prot || (mp->prot & PROT_EXEC)) && !mp->dso->kernel) {
			if (mp->dso->anon)
				kind = PG_ANON;
			else if (!mp->dso->special || mp->dso->image)
				kind = PG_FILE;
			else if (mp->prot & PROT_EXEC)
				kind = PG_ANON;		/* [vdso] and the like: code without a file */
		}
	}
	e->page = page;
	e->kind = kind;
	return kind;
}

/*
 * Do the bytes b[0..7) that end just before a return address hold a call?  e8 rel32, or
 * ff /2 with any ModRM form (optional notrack/segment prefix and REX), ending exactly at
 * the return address.
 */
static int decode_call_before(const uint8_t b[7])
{
	if (b[2] == 0xe8)
		return 1;
	for (int len = 2; len <= 7; len++) {
		const uint8_t *p = b + 7 - len, *end = b + 7;
		unsigned modrm, mod, rm, n;

		if (p < end && (*p == 0x3e || *p == 0x2e || *p == 0x67))
			p++;
		if (p < end && (*p & 0xf0) == 0x40)
			p++;
		if (end - p < 2 || p[0] != 0xff)
			continue;
		modrm = p[1];
		if (((modrm >> 3) & 7) != 2)
			continue;
		mod = modrm >> 6;
		rm = modrm & 7;
		n = 2;
		if (mod != 3) {
			if (rm == 4) {
				if (end - p < 3)
					continue;
				n++;
				if (mod == 0 && (p[2] & 7) == 5)
					n += 4;
			} else if (mod == 0 && rm == 5) {
				n += 4;
			}
			if (mod == 1)
				n += 1;
			else if (mod == 2)
				n += 4;
		}
		if (p + n == end)
			return 1;
	}
	return 0;
}

/* Is ra a plausible return address: in file-backed code, right after a call? */
static int is_return_address(struct walk *w, uint64_t ra)
{
	struct space *sp = w->sp;
	void *v;
	uint8_t b[7];
	int ok;

	if (page_kind(w, ra) != PG_FILE)
		return 0;
	v = u64map_get(&sp->calls, ra);
	if (v)
		return v == (void *)1;
	ok = !read_file_bytes(w, ra - 7, b, sizeof(b)) && decode_call_before(b);
	if (sp->calls.nr < CALL_CACHE_MAX)
		u64map_put(&sp->calls, ra, ok ? (void *)1 : (void *)2);
	return ok;
}

/* ---- module reporting ---- */

static int space_failed(const struct space *sp, const struct dso *dso)
{
	for (size_t i = 0; i < sp->nr_failed; i++)
		if (sp->failed[i] == dso)
			return 1;
	return 0;
}

static int is_root_symbol(const char *name)
{
	static const char *const roots[] = {
		"_start", "start_thread", "clone", "clone3", "__clone", "__clone3",
		"__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl",
	};

	if (!name)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(roots); i++)
		if (!strcmp(name, roots[i]))
			return 1;
	return 0;
}

/* Remember where the module's thread-root functions are: one pass over its symbols at
 * report time, so the per-sample check is a range test (dwfl_module_addrname scans the
 * whole symbol table per call). */
static void note_roots(struct space *sp, Dwfl_Module *mod)
{
	int n = dwfl_module_getsymtab(mod);

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);

		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
		    !is_root_symbol(name))
			continue;
		ALLOC_GROW(sp->roots, sp->nr_roots + 1, sp->alloc_roots);
		sp->roots[sp->nr_roots].start = addr;
		sp->roots[sp->nr_roots].end = addr + sym.st_size;
		sp->nr_roots++;
	}
}

static int in_root(const struct space *sp, uint64_t addr)
{
	for (size_t i = 0; i < sp->nr_roots; i++)
		if (addr >= sp->roots[i].start && addr < sp->roots[i].end)
			return 1;
	return 0;
}

/* Report the file mapped at addr.  Returns the module, or NULL. */
static Dwfl_Module *report_module(struct walk *w, uint64_t addr)
{
	struct space *sp = w->sp;
	const struct map *mp = machine_find_map(sp->u->m, w->s->pid, addr, w->s->time);
	const struct unw_dso *d;
	Dwfl_Module *mod = NULL;
	uint64_t bias;

	if (!mp || mp->dso->anon || (mp->dso->special && !mp->dso->image) || mp->dso->kernel ||
	    space_failed(sp, mp->dso))
		return NULL;
	d = dso_get(mp->dso);
	if (d && !dso_bias(d, mp, &bias)) {
		int fd = -1;

		/* a captured image has no path: libdwfl reads it from a memfd (a module it
		 * reports keeps the fd and closes it; a failed report leaves it to us) */
		if (d->borrowed) {
			fd = memfd_create("dlprof-image", MFD_CLOEXEC);
			if (fd >= 0 && write(fd, d->data, d->size) != (ssize_t)d->size) {
				close(fd);
				fd = -1;
			}
		}
		if (!d->borrowed || fd >= 0) {
			dwfl_report_begin_add(sp->dwfl);
			mod = dwfl_report_elf(sp->dwfl, mp->dso->short_name, mp->dso->path, fd,
					      bias, true);
			dwfl_report_end(sp->dwfl, NULL, NULL);
			if (!mod && fd >= 0)
				close(fd);
		}
		if (mod) {
			note_roots(sp, mod);
			mod = dwfl_addrmodule(sp->dwfl, addr);
		}
	}
	if (!mod) {
		ALLOC_GROW(sp->failed, sp->nr_failed + 1, sp->alloc_failed);
		sp->failed[sp->nr_failed++] = mp->dso;
	}
	return mod;
}

/* ---- libdwfl thread callbacks ---- */

static pid_t cb_next_thread(Dwfl *dwfl, void *dwfl_arg, void **thread_argp)
{
	struct space *sp = dwfl_arg;

	if (*thread_argp)
		return 0;
	*thread_argp = sp;
	return sp->u->cur ? (pid_t)(sp->u->cur->s->tid ? sp->u->cur->s->tid : 1) : 0;
}

static bool cb_get_thread(Dwfl *dwfl, pid_t tid, void *dwfl_arg, void **thread_argp)
{
	*thread_argp = dwfl_arg;
	return true;
}

static bool cb_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *dwfl_arg)
{
	struct space *sp = dwfl_arg;
	struct walk *w = sp->u->cur;

	if (!w)
		return false;
	if (addr >= w->stack_lo && addr + 8 <= w->stack_hi && addr + 8 > addr) {
		memcpy(result, w->s->stack + (addr - w->stack_lo), 8);
		return true;
	}
	return !read_file_bytes(w, addr, result, 8);
}

static bool cb_set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct space *sp = thread_arg;
	struct walk *w = sp->u->cur;

	if (!w)
		return false;
	for (unsigned r = 0; r < DW_NREGS; r++) {
		Dwarf_Word v = w->regs[r];

		if ((w->regs_set & (1u << r)) && !dwfl_thread_state_registers(thread, r, 1, &v))
			return false;
	}
	dwfl_thread_state_register_pc(thread, w->regs[DW_RIP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = cb_next_thread,
	.get_thread = cb_get_thread,
	.memory_read = cb_memory_read,
	.set_initial_registers = cb_set_initial_registers,
};

/* No separate debug files: .eh_frame (or .debug_frame in the file itself) is enough to
 * unwind, and searching (or debuginfod) per module would cost more than it brings. */
static int find_no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_no_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static struct space *space_get(struct unwinder *u, uint32_t pid, uint64_t time)
{
	unsigned gen = machine_exec_gen(u->m, pid, time);
	void **slot = u64map_slot(&u->spaces, (uint64_t)gen << 32 | pid);
	struct space *sp = *slot;

	if (sp)
		return sp->dwfl && sp->attached ? sp : NULL;
	sp = xcalloc(1, sizeof(*sp));
	*slot = sp;
	ALLOC_GROW(u->all, u->nr_all + 1, u->alloc_all);
	u->all[u->nr_all++] = sp;
	sp->u = u;
	sp->pid = pid;
	u64map_init(&sp->calls);
	u64map_init(&sp->outermost);
	sp->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!sp->dwfl) {
		error("unable to create an unwinding session for pid %u: %s", pid,
		      dwfl_errmsg(-1));
		return NULL;
	}
	if (!dwfl_attach_state(sp->dwfl, u->arch_elf, pid ? (pid_t)pid : 1, &thread_callbacks, sp)) {
		error("unable to attach unwinding state for pid %u: %s", pid, dwfl_errmsg(-1));
		return NULL;
	}
	sp->attached = 1;
	return sp;
}

/* ---- the walk ---- */

static int frame_cb(Dwfl_Frame *f, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	Dwarf_Word rsp;
	bool act;
	uint64_t ip, lookup;
	unsigned fl = 0;
	Dwfl_Module *mod;
	int initial = w->pass_frames++ == 0;

	/* The PC alone first: asking for isactivation unwinds this frame already, which
	 * must wait until its module is reported. */
	if (!dwfl_frame_pc(f, &pc, NULL))
		return DWARF_CB_ABORT;
	ip = pc;
	lookup = initial ? pc : pc - 1;
	if (initial && w->restart) {
		/* the pass started at ra - 1, inside the call: report the return address */
		ip = pc + 1;
		fl = FRAME_RECOVERED;
	} else if (!initial) {
		/* a return address found by CFI (or libdwfl's frame-pointer fallback): it
		 * must be code, right after a call when we can read the code, and the
		 * stack must grow toward the root */
		int kind = page_kind(w, ip);

		if (kind == PG_NONE || (kind == PG_FILE && !is_return_address(w, ip))) {
			w->stop_bad = 1;
			return DWARF_CB_ABORT;
		}
		if (dwfl_frame_reg(f, DW_RSP, &rsp) == 0 && w->last_has_sp && rsp <= w->last_sp) {
			w->stop_bad = 1;
			return DWARF_CB_ABORT;
		}
	}
	if (w->n >= w->max)
		return DWARF_CB_ABORT;
	w->ips[w->n] = ip;
	if (w->flags)
		w->flags[w->n] = fl;
	w->n++;
	if (dwfl_frame_reg(f, DW_RSP, &rsp) == 0) {
		w->last_sp = rsp;
		w->last_has_sp = 1;
	}
	w->last_regs_set = 0;
	for (size_t i = 0; i < ARRAY_SIZE(callee_saved); i++) {
		Dwarf_Word v;

		if (dwfl_frame_reg(f, callee_saved[i], &v) == 0) {
			w->last_regs[callee_saved[i]] = v;
			w->last_regs_set |= 1u << callee_saved[i];
		}
	}
	mod = dwfl_addrmodule(w->sp->dwfl, lookup);
	if (!mod)
		mod = report_module(w, lookup);
	w->last_mod = mod;
	w->last_lookup = lookup;
	if (!mod) {
		w->stop_nocfi = 1;
		return DWARF_CB_ABORT;
	}
	/* after a signal frame the PC is not a return address: look up the PC itself */
	if (!initial && dwfl_frame_pc(f, &pc, &act) && act)
		w->last_lookup = pc;
	if (w->n >= w->max)
		return DWARF_CB_ABORT;
	return DWARF_CB_OK;
}

/*
 * Does the CFI at the last frame's PC say "return address undefined" (the ABI's
 * outermost-frame marker, as in _start and clone3)?  libdwfl also ends a walk cleanly
 * when the return address merely could not be computed, so a clean end alone proves
 * nothing.
 */
static int at_outermost(struct walk *w)
{
	void *v = u64map_get(&w->sp->outermost, w->last_lookup);
	Dwarf_Op ops_mem[3], *ops;
	Dwarf_Frame *frame;
	Dwarf_CFI *cfi;
	Dwarf_Addr bias;
	size_t nops;
	int yes = 0;

	if (v)
		return v == (void *)1;
	cfi = dwfl_module_eh_cfi(w->last_mod, &bias);
	if (!cfi)
		cfi = dwfl_module_dwarf_cfi(w->last_mod, &bias);
	if (cfi && dwarf_cfi_addrframe(cfi, w->last_lookup - bias, &frame) == 0) {
		yes = dwarf_frame_register(frame, DW_RIP, ops_mem, &ops, &nops) == 0 &&
		      nops == 0 && ops == ops_mem;
		free(frame);
	}
	if (w->sp->outermost.nr < CALL_CACHE_MAX)
		u64map_put(&w->sp->outermost, w->last_lookup, yes ? (void *)1 : (void *)2);
	return yes;
}

/* Run one pass from w->regs.  Returns 1 when it ended at the outermost frame. */
static int walk_pass(struct walk *w)
{
	int ret;

	w->stop_nocfi = w->stop_bad = 0;
	w->pass_frames = 0;
	w->last_mod = NULL;
	ret = dwfl_getthread_frames(w->sp->dwfl, w->s->tid ? (pid_t)w->s->tid : 1, frame_cb, w);
	if (!w->last_mod)
		return 0;
	if (ret == 0 && at_outermost(w))
		return 1;
	return in_root(w->sp, w->last_lookup);
}

/* Scan the copied stack upward from the last SP for a return address; on success set
 * up the registers of a restart pass. */
static int scan_stack(struct walk *w)
{
	uint64_t from = w->last_has_sp ? w->last_sp : w->stack_lo;
	uint64_t to, a;

	if (from < w->stack_lo)
		from = w->stack_lo;
	from = (from + 7) & ~7ULL;
	to = from + SCAN_BYTES < w->stack_hi ? from + SCAN_BYTES : w->stack_hi;
	for (a = from; a + 8 <= to; a += 8) {
		uint64_t v, bp;

		memcpy(&v, w->s->stack + (a - w->stack_lo), 8);
		if (v < 4096 || (v >= w->stack_lo && v < w->stack_hi))
			continue;
		if (!is_return_address(w, v))
			continue;
		w->regs_set = (1u << DW_RSP) | (1u << DW_RIP) | w->last_regs_set;
		for (size_t i = 0; i < ARRAY_SIZE(callee_saved); i++)
			w->regs[callee_saved[i]] = w->last_regs[callee_saved[i]];
		w->regs[DW_RIP] = v - 1;
		w->regs[DW_RSP] = a + 8;
		/* Callee-saved registers keep the values of the last frame CFI knew (code
		 * without CFI mostly leaves them alone or restores them); but when rbp
		 * points at the slot below the return address, the skipped code made a
		 * classic frame, and that slot holds the caller's rbp. */
		if ((w->last_regs_set & (1u << DW_RBP)) && w->last_regs[DW_RBP] == a - 8 &&
		    a - 8 >= w->stack_lo) {
			memcpy(&bp, w->s->stack + (a - 8 - w->stack_lo), 8);
			w->regs[DW_RBP] = bp;
		}
		w->last_sp = a + 8;
		w->last_has_sp = 1;
		return 1;
	}
	return 0;
}

size_t unwind_sample(struct unwinder *u, const struct dlp_sample *s, uint64_t *ips,
		     unsigned *flags, size_t max, int *complete)
{
	struct walk w;
	struct space *sp;
	int perf_idx[PERF_REG_X86_64_MAX];
	unsigned idx = 0;
	int done = 0;

	*complete = 0;
	if (!max || !s->user_abi || !s->user_regs || !s->stack_size || !s->stack)
		return 0;
	for (int r = 0; r < PERF_REG_X86_64_MAX; r++)
		perf_idx[r] = (s->user_regs_mask >> r) & 1 ? (int)idx++ : -1;
	if (perf_idx[PERF_REG_X86_SP] < 0 || perf_idx[PERF_REG_X86_IP] < 0)
		return 0;

	memset(&w, 0, sizeof(w));
	w.s = s;
	w.ips = ips;
	w.flags = flags;
	w.max = max;
	for (int r = 0; r < DW_NREGS; r++) {
		int i = perf_idx[dwarf_to_perf[r]];

		if (i >= 0) {
			w.regs[r] = s->user_regs[i];
			w.regs_set |= 1u << r;
		}
	}
	w.stack_lo = w.regs[DW_RSP];
	w.stack_hi = w.stack_lo + s->stack_size;
	if (w.stack_hi < w.stack_lo)
		return 0;

	/* ips[0] is the sampled user IP: for a kernel-mode sample, where the thread entered
	 * the kernel (the kernel part of the stack comes from the callchain) */
	w.n = 0;

	sp = space_get(u, s->pid, s->time);
	if (!sp) {
		ips[0] = w.regs[DW_RIP];
		if (flags)
			flags[0] = 0;
		return 1;
	}
	w.sp = sp;
	u->cur = &w;
	for (int scans = 0; w.n < max; scans++) {
		size_t before = w.n;
		int dead_end;

		if (walk_pass(&w)) {
			done = 1;
			break;
		}
		/* a scanned return address whose own CFI step led to an implausible frame
		 * was most likely a stale word: drop it if the scan finds a better one */
		dead_end = w.restart && w.n == before + 1 && w.stop_bad;
		if (scans >= MAX_SCANS || w.n >= max || !scan_stack(&w))
			break;
		if (dead_end)
			w.n = before;
		w.restart = 1;
	}
	u->cur = NULL;
	if (!w.n) {
		ips[0] = w.regs[DW_RIP];
		if (flags)
			flags[0] = 0;
		w.n = 1;
	}
	*complete = done;
	return w.n;
}

struct unwinder *unwinder_new(struct machine *m)
{
	struct unwinder *u = xcalloc(1, sizeof(*u));

	u->m = m;
	u64map_init(&u->spaces);
	elf_version(EV_CURRENT);
	memcpy(u->arch_hdr.e_ident, ELFMAG, SELFMAG);
	u->arch_hdr.e_ident[EI_CLASS] = ELFCLASS64;
	u->arch_hdr.e_ident[EI_DATA] = ELFDATA2LSB;
	u->arch_hdr.e_ident[EI_VERSION] = EV_CURRENT;
	u->arch_hdr.e_type = ET_EXEC;
	u->arch_hdr.e_machine = EM_X86_64;
	u->arch_hdr.e_version = EV_CURRENT;
	u->arch_hdr.e_ehsize = sizeof(Elf64_Ehdr);
	u->arch_elf = elf_memory((char *)&u->arch_hdr, sizeof(u->arch_hdr));
	if (!u->arch_elf) {
		error("unable to set up the unwinder: %s", elf_errmsg(-1));
		free(u);
		return NULL;
	}
	return u;
}

void unwinder_free(struct unwinder *u)
{
	struct dso **dsos;
	size_t n;

	if (!u)
		return;
	for (size_t i = 0; i < u->nr_all; i++) {
		struct space *sp = u->all[i];

		if (sp->dwfl)
			dwfl_end(sp->dwfl);
		u64map_release(&sp->calls);
		u64map_release(&sp->outermost);
		free(sp->failed);
		free(sp->roots);
		free(sp);
	}
	free(u->all);
	u64map_release(&u->spaces);
	n = machine_dsos(u->m, &dsos);
	for (size_t i = 0; i < n; i++) {
		unw_dso_free(dsos[i]->unwind_priv);
		dsos[i]->unwind_priv = NULL;
	}
	elf_end(u->arch_elf);
	free(u);
}
