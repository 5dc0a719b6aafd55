/* pyread.c - read a CPython 3.11, 3.12 or 3.13 process's Python stacks from outside
 * (pyread.h).
 *
 * The layouts (x86-64), as each version's headers give them (struct pylayout):
 *					3.11	3.12
 *	_PyRuntimeState.interpreters.head	40	40
 *	PyInterpreterState.threads.head		16	72
 *	_PyRuntimeState.gilstate.autoTSSkey	0x250	0x608 (3.12: autoTSSkey)
 *	PyThreadState: next			8	8
 *		interp				16	16
 *		cframe				56	56
 *		native_thread_id		160	144
 *	_PyCFrame: current_frame		8	0
 *		previous			16	8
 *	_PyInterpreterFrame: f_code		32	0
 *		previous			48	8
 *		prev_instr			56	56
 *		owner				69	70
 *		is_entry			68	-  (3.12: a FRAME_OWNED_BY_CSTACK shim
 *						   frame sits outside each eval loop's first)
 *	PyCodeObject: ob_type 8, co_filename 112, co_name 120, co_qualname 128,
 *		co_linetable 136 in both;
 *		co_firstlineno			72	68
 *		_co_firsttraceable		168	176
 *		co_code_adaptive		184	192
 *	PyBytesObject: ob_size 16, ob_sval 32
 *	PyASCIIObject: length 16, state 32 (interned:2 kind:3 compact:1 ascii:1), data at
 *		(ascii)				48	40
 *		(compact, not ascii)		72	56
 * 3.13 as 3.12 but: no _PyCFrame (tstate->current_frame at 72; the shim frame of each
 * eval loop is on its C stack), interpreters.head 632, autoTSSkey 0x870, threads.head 7344,
 * native_thread_id 160, _PyInterpreterFrame.instr_ptr 56 (f_executable 0),
 * _co_firsttraceable 184, co_code_adaptive 200; each checked against the interpreter's
 * own _Py_DebugOffsets (at the start of _PyRuntime) before the process is read.
 * The location table (co_linetable) has one format in all three.
 * The interpreter is found by its exported symbols (_PyRuntime, Py_Version, PyCode_Type)
 * in the python3.X executable or libpython3.X.so the process maps.  Every read is
 * checked; a failed one leaves the sample its native stack (counted, never fatal).
 */
#include <dirent.h>
#include <errno.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "elffile.h"
#include "memevent.h"
#include "../proc-root.h"
#include "pyread-priv.h"
#include "pyread.h"

static const struct pylayout layouts[] = {
	{ 0x030b0000, 40, 16, 160, 8, 56, 8, 16, 32, 48, 56, 69, 68, 72, 168, 184, 48, 72,
	  0x250, 16 },
	{ 0x030c0000, 40, 72, 144, 8, 56, 0, 8, 0, 8, 56, 70, 0, 68, 176, 192, 40, 56,
	  0x608, 16 },
	{ 0x030d0000, 632, 7344, 160, 8, 72, NO_CFRAME, NO_CFRAME, 0, 8, 56, 70, 0, 68, 184,
	  200, 40, 56, 0x870, 16 },
};

struct pyreader *pyreader_new(pyreader_emit_fn *emit, void *ctx)
{
	struct pyreader *pr = xcalloc(1, sizeof(*pr));

	pr->emit = emit;
	pr->ctx = ctx;
	return pr;
}

/* What a code object's entry holds */
void pyread_code_free(struct pycode *c)
{
	free(c->qualname);
	free(c->file);
	free(c->tab);
}

static void free_codes(struct pyproc *p)
{
	for (size_t i = 0; i < p->size_codes; i++)
		if (p->codes[i].addr)
			pyread_code_free(&p->codes[i]);
	free(p->codes);
	for (size_t i = 0; i < p->nr_old; i++)
		pyread_code_free(&p->old[i]);
	free(p->old);
}

void pyreader_free(struct pyreader *pr)
{
	if (!pr)
		return;
	for (size_t i = 0; i < pr->nr_procs; i++) {
		free(pr->procs[i].tids);
		free_codes(&pr->procs[i]);
	}
	for (size_t i = 0; i < pr->nr_last; i++)
		free(pr->last[i].frames);
	free(pr->last);
	for (size_t i = 0; i < pr->nr_syms; i++)
		free(pr->syms[i].path);
	free(pr->procs);
	free(pr->syms);
	u64map_release(&pr->lines_written);
	u64map_release(&pr->chain_ids);
	free(pr->chains);
	free(pr->chain_frames);
	free(pr->pend);
	free(pr);
}

int pyread_rd(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (!addr)
		return -1;
	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

int pyread_rd64(uint32_t pid, uint64_t addr, uint64_t *v)
{
	return pyread_rd(pid, addr, v, 8);
}

struct pyproc *pyread_proc(struct pyreader *pr, uint32_t pid)
{
	for (size_t i = 0; i < pr->nr_procs; i++)
		if (pr->procs[i].pid == pid)
			return &pr->procs[i];
	ALLOC_GROW(pr->procs, pr->nr_procs + 1, pr->alloc_procs);
	memset(&pr->procs[pr->nr_procs], 0, sizeof(pr->procs[0]));
	pr->procs[pr->nr_procs].pid = pid;
	return &pr->procs[pr->nr_procs++];
}

void pyreader_exec(struct pyreader *pr, uint32_t pid)
{
	for (size_t i = 0; i < pr->nr_procs; i++)
		if (pr->procs[i].pid == pid) {
			struct pyproc *p = &pr->procs[i];

			free(p->tids);
			free_codes(p);
			memset(p, 0, sizeof(*p));
			p->pid = pid;
		}
}

int pyreader_active(const struct pyreader *pr)
{
	return pr ? pr->active : 0;
}

/* The interpreter's symbols in PATH (its .dynsym), cached per file. */
static const struct pysyms *file_syms(struct pyreader *pr, const char *path)
{
	struct pysyms *s;
	const struct elffile *f;
	Elf *e;
	Elf_Scn *scn = NULL;

	for (size_t i = 0; i < pr->nr_syms; i++)
		if (!strcmp(pr->syms[i].path, path))
			return &pr->syms[i];
	ALLOC_GROW(pr->syms, pr->nr_syms + 1, pr->alloc_syms);
	s = &pr->syms[pr->nr_syms++];
	memset(s, 0, sizeof(*s));
	s->path = xstrdup(path);
	f = elffile_open(path, NULL, 0, NULL);
	e = f ? elffile_elf(f) : NULL;
	if (!e || !f->type)
		goto out;
	s->is_dyn = f->type == ET_DYN;
	s->first_vaddr = UINT64_MAX;
	for (size_t i = 0; i < f->nr_segs; i++) {
		const struct elffile_seg *ph = &f->segs[i];

		if (ph->vaddr - ph->offset < s->first_vaddr)
			s->first_vaddr = ph->vaddr - ph->offset;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			n = elf_strptr(e, sh.sh_link, sym.st_name);
			if (!n)
				continue;
			if (!strcmp(n, "_PyRuntime"))
				s->runtime = sym.st_value;
			else if (!strcmp(n, "Py_Version"))
				s->version = sym.st_value;
			else if (!strcmp(n, "PyCode_Type"))
				s->code_type = sym.st_value;
			else if (!strcmp(n, "PyUnicode_Type"))
				s->str_type = sym.st_value;
		}
	}
	s->ok = s->runtime && s->code_type && s->first_vaddr != UINT64_MAX;
out:
	if (e)
		elf_end(e);
	elffile_put(f);
	return s;
}

int pyreader_python_path(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "python", 6) || !strncmp(b, "libpython", 9);
}

/* python3.X or libpython3.X.so...: the file that holds the interpreter */
static int python_file(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	if (!strncmp(b, "libpython3.", 11))
		return strstr(b, ".so") != NULL;
	if (strncmp(b, "python3.", 8))
		return 0;
	for (b += 8; *b >= '0' && *b <= '9'; b++)
		;
	/* d: a debug build, t: a free-threaded one (3.13t) */
	return !*b || !strcmp(b, "d") || !strcmp(b, "m") || !strcmp(b, "t") || !strcmp(b, "td");
}

/*
 * 3.13: the _Py_DebugOffsets at the start of _PyRuntime ("xdebugpy", then version,
 * free_threaded and the offsets, 8 bytes each, in the order of CPython 3.13's
 * pycore_runtime.h) must give the offsets of the layout: a build with other structures
 * (a patched one) is refused rather than read wrong.  A free-threaded build (3.13t) has
 * the same thread states and frames and objects whose header is longer: its code, str
 * and unicode offsets are the layout's plus that (*ob_base: 16; 0 in a default build).
 * 1: read and confirmed, 0: laid out otherwise (what differs in why), -1: not readable
 * (yet).
 */
static int debug_offsets_ok(uint32_t pid, uint64_t runtime, const struct pylayout *lay,
			    uint16_t *ob_base, char *why, size_t why_len)
{
	/* word indexes after the cookie: version 0, free_threaded 1, runtime_state 2..4,
	 * interpreter_state 5..17, thread_state 18..26, interpreter_frame 27..32,
	 * code_object 33..42, pyobject 43..44, ..., unicode_object 66..69 (size, state,
	 * length, asciiobject_size) */
	static const struct { unsigned word; size_t off; } want[] = {
		{ 4, offsetof(struct pylayout, rt_interp_head) },
		{ 8, offsetof(struct pylayout, is_threads_head) },
		{ 20, offsetof(struct pylayout, ts_next) },
		{ 21, offsetof(struct pylayout, ts_interp) },
		{ 22, offsetof(struct pylayout, ts_cframe) },
		{ 24, offsetof(struct pylayout, ts_native_tid) },
		{ 28, offsetof(struct pylayout, fr_previous) },
		{ 29, offsetof(struct pylayout, fr_code) },
		{ 30, offsetof(struct pylayout, fr_prev_instr) },
		{ 32, offsetof(struct pylayout, fr_owner) },
		{ 38, offsetof(struct pylayout, co_firstline) },
		{ 42, offsetof(struct pylayout, co_code) },
		{ 69, offsetof(struct pylayout, str_ascii) },
	};
	struct {
		char cookie[8];
		uint64_t w[70];
	} d;
	uint64_t base;

	if (pyread_rd(pid, runtime, &d, sizeof(d)) < 0)
		return -1;
	if (memcmp(d.cookie, "xdebugpy", 8)) {
		snprintf(why, why_len, "no \"xdebugpy\" at _PyRuntime");
		return 0;
	}
	if ((d.w[0] >> 16) != lay->hex >> 16 || d.w[1] > 1) {
		snprintf(why, why_len, "version %#llx, free_threaded %llu",
			 (unsigned long long)d.w[0], (unsigned long long)d.w[1]);
		return 0;
	}
	/* the object header's growth: PyObject's ob_type (word 44) past a default build's */
	base = d.w[1] ? d.w[44] - CO_TYPE : 0;
	if (base != (d.w[1] ? 16 : 0) || d.w[43] != 16 + base) {
		snprintf(why, why_len, "PyObject %llu bytes, ob_type at %llu",
			 (unsigned long long)d.w[43], (unsigned long long)d.w[44]);
		return 0;
	}
	{
		struct { unsigned word; uint64_t v; } all[ARRAY_SIZE(want) + 6] = {
			{ 34, CO_FILENAME }, { 36, CO_QUALNAME }, { 37, CO_LINETABLE },
			{ 44, CO_TYPE }, { 67, 32 }, { 68, 16 },	/* every version's */
		};
		size_t n = 6;

		for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
			uint16_t v;

			memcpy(&v, (const char *)lay + want[i].off, sizeof(v));
			all[n++] = (typeof(all[0])){ want[i].word, v };
		}
		for (size_t i = 0; i < n; i++) {
			/* an object's field (code, PyObject, str: words 33 on) moves with it */
			uint64_t v = all[i].v + (all[i].word >= 33 ? base : 0);

			if (d.w[all[i].word] != v) {
				snprintf(why, why_len, "word %u is %llu, not %llu", all[i].word,
					 (unsigned long long)d.w[all[i].word],
					 (unsigned long long)v);
				return 0;
			}
		}
	}
	*ob_base = (uint16_t)base;
	return 1;
}

/* A process probed before it is ready (its image or libpython still being mapped):
 * asked again from PROBE_EVERY_NS on, PROBE_TRIES times at most.  0: no tries left. */
static int probe_later(struct pyproc *p)
{
	if (++p->probes >= PROBE_TRIES)
		return 0;
	p->state = 0;
	p->probe_again = now_ns() + PROBE_EVERY_NS;
	return 1;
}

/* Is pid a CPython 3.11-3.13 process: its maps, the interpreter's symbols, Py_Version. */
void pyread_probe(struct pyreader *pr, struct pyproc *p)
{
	char mpath[64], line[4352], file[4096] = "", why[96] = "";
	FILE *f;
	uint64_t base = 0, file_lo = 0, file_hi = 0;
	const struct pysyms *s;
	uint64_t bias;
	uint32_t ver = 0;
	int files = 0, rw = 0, ok;

	if (p->probe_again && now_ns() < p->probe_again)
		return;	/* state 0: the next sample asks again */
	p->state = -1;
	snprintf(mpath, sizeof(mpath), "/proc/%u/maps", p->pid);
	f = fopen(mpath, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off;
		char perm[8], path[4096];

		path[0] = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095[^\n]", &lo, &hi, perm, &off,
			   path) < 4 || !path[0])
			continue;
		files += path[0] == '/';
		if (!python_file(path))
			continue;
		/* a libpython beats the executable that loads it */
		if (!file[0] || (strstr(path, "libpython") && !strstr(file, "libpython"))) {
			snprintf(file, sizeof(file), "%s", path);
			base = off == 0 ? lo : 0;
			file_lo = lo;
			file_hi = hi;
			rw = 0;
		} else if (!strcmp(path, file) && off == 0 && !base) {
			base = lo;
		}
		if (!strcmp(path, file) && perm[1] == 'w')
			rw = 1;	/* its data mapped: _PyRuntime, Py_Version readable */
	}
	fclose(f);
	/* no file mapped yet: an exec's COMM record comes before the kernel maps the new
	 * image (begin_new_exec, then load_elf_binary's mappings), so a sample read right
	 * after it finds only the stack; asked again (a python3.11 in a PID namespace under
	 * load was read as no Python at all: t1014 #5) */
	if (!files && probe_later(p))
		return;
	if (!file[0])
		return;
	/* the loader is mapping it: its data segment not yet there, the range reserved by
	 * its first mapping reads other bytes of the file (a pyenv 3.13 probed at a
	 * switch-out in its loading was taken for a build laid out otherwise, native
	 * stacks only: t8008 under load) */
	if (!rw && probe_later(p))
		return;
	{
		/* the file mapped, whatever root the process has (a chroot, a container:
		 * its maps name it as record sees it, or as the container does) */
		char at[96];
		struct stat st;

		snprintf(at, sizeof(at), "/proc/%u/map_files/%llx-%llx", p->pid,
			 (unsigned long long)file_lo, (unsigned long long)file_hi);
		s = file_syms(pr, stat(at, &st) == 0 ? at : file);
	}
	/* a python3.X linked to its libpython, probed before the loader mapped it (a
	 * sample taken while the loader ran) */
	if (!s->ok && !strstr(file, "libpython") && probe_later(p))
		return;
	if (!s->ok) {
		warning("pid %u runs %s, but its interpreter symbols are not readable: "
			"native stacks only", p->pid, file);
		return;
	}
	if (s->is_dyn && !base)
		return;
	bias = s->is_dyn ? base - s->first_vaddr : 0;
	if (s->version && pyread_rd(p->pid, s->version + bias, &ver, 4) < 0) {
		if (errno == EPERM)
			warning("pid %u runs %s, but dlprof may not read its memory (%s; see "
				"kernel.yama.ptrace_scope): native stacks only", p->pid, file,
				strerror(errno));
		else
			warning("pid %u runs %s, but its memory is not readable (%s): native "
				"stacks only", p->pid, file, strerror(errno));
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(layouts) && !p->lay; i++)
		if ((ver >> 16) == layouts[i].hex >> 16)
			p->lay = &layouts[i];
	ok = p->lay && p->lay->cf_current == NO_CFRAME ?
		debug_offsets_ok(p->pid, s->runtime + bias, p->lay, &p->ob_base, why,
				 sizeof(why)) : 1;
	if (ok < 0 && probe_later(p)) {
		p->lay = NULL;	/* not readable yet: asked again */
		return;
	}
	if (ok <= 0) {
		warning("pid %u runs Python %u.%u.%u, whose structures are not laid out as dlprof "
			"reads them (its _Py_DebugOffsets %s%s%s): native stacks only", p->pid,
			ver >> 24, (ver >> 16) & 0xff, (ver >> 8) & 0xff,
			ok < 0 ? "cannot be read" : "differ", ok < 0 ? "" : ": ", why);
		return;
	}
	if (!p->lay) {
		if (ver)
			warning("pid %u runs Python %u.%u: dlprof reads the frames of Python 3.11 "
				"to 3.13, native stacks here", p->pid, ver >> 24, (ver >> 16) & 0xff);
		else
			warning("pid %u runs %s: its version is unknown, native stacks only",
				p->pid, file);
		return;
	}
	p->runtime = s->runtime + bias;
	p->code_type = s->code_type + bias;
	p->str_type = s->str_type ? s->str_type + bias : 0;
	p->version = ver;
	p->state = 1;
	pr->active++;
}

/* The ids the states of a process in another PID namespace hold, as record's: each of its
 * threads' NSpid (the states hold the inner id, the samples name the outer) */
static void ns_tids(struct pyproc *p)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	struct { uint32_t outer, inner; } map[1024];
	size_t n = 0;
	uint32_t o, in;

	if (!p->pidns)
		p->pidns = proc_nspid(p->pid, p->pid, &o, &in) && o != in ? 2 : 1;
	if (p->pidns != 2)
		return;
	snprintf(path, sizeof(path), "/proc/%u/task", p->pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && n < ARRAY_SIZE(map)) {
		uint32_t tid = (uint32_t)strtoul(de->d_name, NULL, 10);

		if (tid && proc_nspid(p->pid, tid, &o, &in)) {
			map[n].outer = o;
			map[n++].inner = in;
		}
	}
	closedir(d);
	for (size_t i = 0; i < p->nr_tids; i++) {
		uint32_t t = p->tids[i].ns_tid;

		p->tids[i].tid = 0;	/* a thread gone: none of record's */
		for (size_t k = 0; k < n; k++)
			if (map[k].inner == t) {
				p->tids[i].tid = map[k].outer;
				break;
			}
	}
}

/* Thread states of the process by native thread id.  A thread may have more than one:
 * the interpreter's static initial state stays on the list after the main thread has
 * moved to another, and C code can make states of its own for a thread. */
static void walk_threads(struct pyproc *p, uint64_t now)
{
	uint64_t interp, ts;
	unsigned char buf[TS_READ];
	size_t n = 0;

	p->last_walk = now;
	p->nr_tids = 0;
	if (pyread_rd64(p->pid, p->runtime + p->lay->rt_interp_head, &interp) < 0 ||
	    pyread_rd64(p->pid, interp + p->lay->is_threads_head, &ts) < 0)
		return;
	for (; ts && n < 4096; n++) {
		uint64_t tid, next;

		if (pyread_rd(p->pid, ts, buf, sizeof(buf)) < 0)
			return;
		memcpy(&tid, buf + p->lay->ts_native_tid, 8);
		memcpy(&next, buf + p->lay->ts_next, 8);
		ALLOC_GROW(p->tids, p->nr_tids + 1, p->alloc_tids);
		p->tids[p->nr_tids].tid = (uint32_t)tid;
		p->tids[p->nr_tids].ns_tid = (uint32_t)tid;
		p->tids[p->nr_tids++].tstate = ts;
		ts = next;
	}
	ns_tids(p);
}

/* The thread states of tid (*nr of them, at most max), after a new walk of the list when
 * the thread is not on it (at most every WALK_EVERY_NS: a thread that is not Python, an
 * OpenMP worker, stays off it). */
size_t pyread_tstates_of(struct pyproc *p, uint32_t tid, uint64_t now, uint64_t *out, size_t max)
{
	size_t n = 0;

	for (int pass = 0; pass < 2 && !n; pass++) {
		if (pass) {
			/* an interpreter still starting has no thread yet: look again soon */
			if (now - p->last_walk < (p->nr_tids ? WALK_EVERY_NS : WALK_EMPTY_NS))
				break;
			walk_threads(p, now);
		}
		for (size_t i = 0; i < p->nr_tids && n < max; i++)
			if (p->tids[i].tid == tid && p->tids[i].tstate)
				out[n++] = p->tids[i].tstate;
	}
	return n;
}

static struct pyframe_layout frame_layout_of(const struct pylayout *lay)
{
	return (struct pyframe_layout){ lay->fr_code, lay->fr_previous, lay->fr_prev_instr,
					lay->fr_owner,
					lay->fr_is_entry ? lay->fr_is_entry : MEM_PY_NONE };
}

size_t pyreader_frame_layouts(struct pyframe_layout *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(layouts); i++) {
		struct pyframe_layout f = frame_layout_of(&layouts[i]);
		size_t k;

		for (k = 0; k < n && memcmp(&out[k], &f, sizeof(f)); k++)
			;
		if (k == n && n < max)
			out[n++] = f;
	}
	return n;
}

/* The structure offsets a reader of frames needs (memevent.h, pybpf.h) */
static void layout_offsets(const struct pyproc *p, struct pywalk_info *wi)
{
	const struct pylayout *lay = p->lay;
	struct pyframe_layout all[ARRAY_SIZE(layouts)], f = frame_layout_of(lay);
	size_t n = pyreader_frame_layouts(all, ARRAY_SIZE(all));

	wi->ts_interp = lay->ts_interp;
	wi->ts_tid = lay->ts_native_tid;
	wi->ts_frame = lay->ts_cframe;
	wi->cf_current = lay->cf_current == NO_CFRAME ? MEM_PY_NONE : lay->cf_current;
	wi->fr_code = lay->fr_code;
	wi->fr_previous = lay->fr_previous;
	wi->fr_instr = lay->fr_prev_instr;
	wi->fr_owner = lay->fr_owner;
	wi->fr_is_entry = f.is_entry;
	wi->ob_base = p->ob_base;
	for (wi->frame = 0; wi->frame < n && memcmp(&all[wi->frame], &f, sizeof(f)); wi->frame++)
		;
}

int pyreader_walk_info(struct pyreader *pr, uint32_t pid, struct pywalk_info *wi)
{
	struct pyproc *p = pyread_proc(pr, pid);
	const struct pylayout *lay;
	int32_t key[2];

	if (!p->state)
		pyread_probe(pr, p);
	if (p->state != 1)
		return 0;
	lay = p->lay;
	memset(wi, 0, sizeof(*wi));
	wi->tss = p->runtime + lay->rt_tss;
	/* a Py_tss_t that is set, with a key pthreads can have */
	if (pyread_rd(pid, wi->tss, key, sizeof(key)) < 0 || key[0] != 1 || key[1] < 0 || key[1] >= 1024 ||
	    pyread_rd64(pid, p->runtime + lay->rt_interp_head, &wi->interp) < 0 || !wi->interp)
		return 0;
	layout_offsets(p, wi);
	return 1;
}

/*
 * A process's GIL: struct _gil_runtime_state, "unsigned long interval; PyThreadState
 * *last_holder; int locked; unsigned long switch_number; ..." (Include/internal/
 * pycore_gil.h, 3.11-3.13 without Py_GIL_DISABLED).  3.11 keeps it in _PyRuntime
 * (ceval.gil), 3.12 and 3.13 in the main interpreter's state (_gil, which
 * interp->ceval.gil points to); the offsets differ between versions and builds, so it is
 * found by what it holds: the switch interval in microseconds (the default 5000: a
 * program that set another with sys.setswitchinterval() before is not read), a thread
 * state of the process as the last holder, locked 0 or 1 with the word's upper half 0, a
 * switch count.  (A looser interval took 3.12's list of threads, "next id, head, count",
 * at a time the process had one thread.)  Looked for once the process has a Python
 * thread, again (at most every GIL_LOOK_NS) until found.
 */
#define GIL_SCAN_BYTES	(1u << 20)
#define GIL_INTERVAL_US	5000	/* sys.getswitchinterval()'s default, 5 ms */
#define GIL_LOOK_NS	200000000ull

static int is_tstate(const struct pyproc *p, uint64_t v)
{
	for (size_t i = 0; i < p->nr_tids; i++)
		if (p->tids[i].tstate && p->tids[i].tstate == v)
			return 1;
	return 0;
}

static uint64_t gil_scan(const struct pyproc *p, uint64_t from, size_t len)
{
	enum { CHUNK = 65536 };
	uint64_t *buf = xmalloc(CHUNK + 64);
	uint64_t found = 0;

	for (size_t off = 0; off < len && !found; off += CHUNK) {
		size_t n = CHUNK + 64 < len - off ? CHUNK + 64 : len - off;

		if (pyread_rd(p->pid, from + off, buf, n) < 0)
			break;	/* the end of what is mapped */
		for (size_t w = 0; w + 5 < n / 8 && w < CHUNK / 8 && !found; w++) {
			uint64_t interval = buf[w], holder = buf[w + 1], locked = buf[w + 2];

			if (interval == GIL_INTERVAL_US && holder % 8 == 0 && locked <= 1 &&
			    buf[w + 3] < (1ull << 48) && is_tstate(p, holder))
				found = from + off + w * 8;
		}
	}
	free(buf);
	return found;
}

uint64_t pyreader_gil(struct pyreader *pr, uint32_t pid)
{
	struct pyproc *p = pyread_proc(pr, pid);
	uint64_t interp = 0, now;

	if (!p->state)
		pyread_probe(pr, p);
	/* (a free-threaded build too: its GIL, off unless PYTHON_GIL=1 or an extension
	 * module turns it on, is found once a thread has held it) */
	if (p->state != 1 || p->gil_looked > 0)
		return p->gil;
	now = now_ns();
	if (p->gil_looked < 0 && now < p->gil_next)
		return 0;
	p->gil_looked = -1;
	p->gil_next = now + GIL_LOOK_NS;
	if (!p->nr_tids)
		walk_threads(p, now);
	if (p->version >= 0x030c0000) {
		/* the main interpreter's state: interpreters.head */
		if (pyread_rd64(pid, p->runtime + p->lay->rt_interp_head, &interp) < 0 || !interp)
			return 0;
		p->gil = gil_scan(p, interp, GIL_SCAN_BYTES);
	} else {
		p->gil = gil_scan(p, p->runtime, GIL_SCAN_BYTES);
	}
	if (p->gil)
		p->gil_looked = 1;
	return p->gil;
}

size_t pyreader_threads(struct pyreader *pr, uint32_t pid, struct pyreader_thread *out,
			size_t max, struct pywalk_info *wi)
{
	struct pyproc *p = pyread_proc(pr, pid);
	size_t n = 0;

	if (!p->state)
		pyread_probe(pr, p);
	if (p->state != 1)
		return 0;
	walk_threads(p, now_ns());
	for (size_t i = 0; i < p->nr_tids && n < max; i++) {
		size_t k;

		for (k = 0; k < n && out[k].tid != p->tids[i].tid; k++)
			;
		if (k == n && p->tids[i].tid) {
			out[n].tid = p->tids[i].tid;
			out[n].ns_tid = p->tids[i].ns_tid;
			out[n++].tstate = p->tids[i].tstate;
		}
	}
	memset(wi, 0, sizeof(*wi));
	layout_offsets(p, wi);
	return n;
}

void pyreader_get_stats(const struct pyreader *pr, struct pyreader_stats *st)
{
	*st = pr->st;
}
