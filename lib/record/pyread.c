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
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "memevent.h"
#include "pybpf.h"
#include "pyread.h"
#include "rephash.h"
#include "recfile.h"
#include "util.h"

#define TS_READ		168	/* enough of a PyThreadState for each */
#define FR_SIZE		72	/* ... of an interpreter frame */
#define CO_READ		192	/* ... of a code object, up to its code */
#define CO_TYPE		8
#define CO_FILENAME	112
#define CO_QUALNAME	128
#define CO_LINETABLE	136
_Static_assert(CO_READ == PYBPF_CODE_HEAD && CO_FILENAME == PYBPF_CO_FILENAME &&
	       CO_QUALNAME == PYBPF_CO_QUALNAME && CO_LINETABLE == PYBPF_CO_LINETABLE,
	       "the kernel's reader reads code objects as pyread does");

struct pylayout {
	uint32_t hex;		/* major << 24 | minor << 16 */
	uint16_t rt_interp_head;
	uint16_t is_threads_head, ts_native_tid, ts_next, ts_cframe;	/* 3.13: current_frame */
	uint16_t cf_current, cf_previous;
	uint16_t fr_code, fr_previous, fr_prev_instr, fr_owner, fr_is_entry;	/* 0: none */
	uint16_t co_firstline, co_firsttrace, co_code;
	uint16_t str_ascii, str_compact;
	uint16_t rt_tss;	/* _PyRuntimeState: the thread-state key, Py_tss_t (memevent.h) */
	uint16_t ts_interp;	/* PyThreadState.interp */
};

/* 3.13 has no _PyCFrame: cf_current and cf_previous are NO_CFRAME, ts_cframe is
 * tstate->current_frame; its offsets are checked against the _Py_DebugOffsets the
 * interpreter carries at the start of _PyRuntime (debug_offsets_ok) */
#define NO_CFRAME	0xffff

static const struct pylayout layouts[] = {
	{ 0x030b0000, 40, 16, 160, 8, 56, 8, 16, 32, 48, 56, 69, 68, 72, 168, 184, 48, 72,
	  0x250, 16 },
	{ 0x030c0000, 40, 72, 144, 8, 56, 0, 8, 0, 8, 56, 70, 0, 68, 176, 192, 40, 56,
	  0x608, 16 },
	{ 0x030d0000, 632, 7344, 160, 8, 72, NO_CFRAME, NO_CFRAME, 0, 8, 56, 70, 0, 68, 184,
	  200, 40, 56, 0x870, 16 },
};

#define MAX_FRAMES	512
#define WINDOW		8192
#define WALK_EVERY_NS	50000000ull	/* look for new threads at most every 50 ms */
#define WALK_EMPTY_NS	1000000ull	/* ... every 1 ms while there is none */
/* A walk checks that its cached code objects are still at their addresses (one more read)
 * at most this often per process: a code object freed and another made at its address
 * is named by the old one for at most this long */
#define VERIFY_EVERY_NS	10000000ull

struct pycode {
	uint64_t addr;
	uint32_t id;
	int32_t firsttrace;
	/* its names and line table (co_linetable) as read; the records carry the names
	 * and the line of each instruction a sample ran (pyreader.lines_written) */
	char *qualname, *file;
	unsigned char *tab;
	uint32_t tab_len, firstlineno;
	uint16_t qlen, flen;
	uint64_t ident[4];	/* co_filename, co_name, co_qualname, co_linetable as read */
	int stale;		/* the address holds another code object now */
	/* read in the kernel: the time of the sample that read it, and (an older object
	 * at that address, in pyproc.old) when the next one was read */
	uint64_t since, until;
};

#define OLD_MAX		256	/* older objects at reused addresses kept, per process */

#define CO_IDENT	CO_FILENAME	/* the four pointers that say which code it is */

struct pytid {
	uint32_t tid;
	uint64_t tstate;	/* 0: not a Python thread (at the last walk) */
};

struct pyproc {
	uint32_t pid;
	int state;		/* 0 unknown, 1 Python 3.11-3.13, -1 not Python (or not read) */
	const struct pylayout *lay;
	uint64_t runtime, code_type;
	uint64_t str_type;	/* PyUnicode_Type, 0: not known */
	uint32_t version;
	struct pytid *tids;
	size_t nr_tids, alloc_tids;
	uint64_t last_walk;
	uint64_t last_verify;	/* when a walk last checked its cached code objects */
	struct pycode *codes;	/* open addressing on addr */
	size_t nr_codes, size_codes;
	/* code objects the kernel read whose addresses hold newer ones, oldest first: the
	 * samples taken before the newer one was read still name them */
	struct pycode *old;
	size_t nr_old, alloc_old;
	/* an interpreter executable whose libpython is not mapped yet (it is loading):
	 * probed again from then on, PROBE_TRIES times at most */
	uint64_t probe_again;
	unsigned probes;
};

#define PROBE_EVERY_NS	5000000ull
#define PROBE_TRIES	200

struct pysyms {
	char *path;
	int ok;
	uint64_t runtime, version, code_type, str_type;	/* link-time addresses */
	uint64_t first_vaddr;
	int is_dyn;
};

/* The last stack written for a thread (DLP_REC_PYSTACK's `same`) */
struct last_stack {
	uint32_t pid, tid;
	struct dlp_pyframe *frames;
	size_t n, alloc;
	uint32_t chain;		/* its last DLP_REC_PYCHAIN (a chain's base) */
};

/* The chains written (DLP_REC_PYCHAIN), remembered up to CHAIN_MAX: their frames */
struct chain_ent {
	size_t first;		/* in pyreader.chain_frames */
	uint16_t nr;
};
#define CHAIN_MAX	(1u << 20)

struct pend_line {
	uint32_t code;
	int32_t pair[2];	/* code unit, line */
};

struct pyreader {
	pyreader_emit_fn *emit;
	void *ctx;
	struct last_stack *last;
	size_t nr_last, alloc_last;
	struct pyproc *procs;
	size_t nr_procs, alloc_procs;
	struct pysyms *syms;
	size_t nr_syms, alloc_syms;
	uint32_t next_code;
	struct u64map lines_written;	/* code id << 32 | code unit: its line is written */
	struct chain_ent *chains;	/* by id - 1 */
	size_t nr_chains, alloc_chains;
	struct dlp_pyframe *chain_frames;
	size_t nr_chain_frames, alloc_chain_frames;
	struct u64map chain_ids;	/* hash of a chain's frames -> its id */
	int active;
	struct pyreader_stats st;
	/* the frame window of the sample being read */
	uint32_t win_pid;
	uint64_t win_base;
	size_t win_len;
	unsigned char win[WINDOW];
	struct dlp_pyframe frames[MAX_FRAMES];
	/* the cached code objects a walk used, checked after it in one read: a code object
	 * freed and another made at its address (a module's code after its import) */
	struct pycode *verify[MAX_FRAMES];
	size_t nr_verify;
	uint64_t stale_codes;
	struct pend_line *pend;	/* lines of instructions not written yet */
	size_t nr_pend, alloc_pend;
	int kernel_codes;	/* the kernel reads code objects at the sample (pybpf.h) */
	uint64_t cur_time;	/* the chain the kernel read: its time (0: none) */
	uint64_t chain_time;	/* pyreader_chain_read_at() */
};

struct pyreader *pyreader_new(pyreader_emit_fn *emit, void *ctx)
{
	struct pyreader *pr = xcalloc(1, sizeof(*pr));

	pr->emit = emit;
	pr->ctx = ctx;
	return pr;
}

/* What a code object's entry holds */
static void code_free(struct pycode *c)
{
	free(c->qualname);
	free(c->file);
	free(c->tab);
}

static void free_codes(struct pyproc *p)
{
	for (size_t i = 0; i < p->size_codes; i++)
		if (p->codes[i].addr)
			code_free(&p->codes[i]);
	free(p->codes);
	for (size_t i = 0; i < p->nr_old; i++)
		code_free(&p->old[i]);
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

static int rd(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	if (!addr)
		return -1;
	return process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -1;
}

static int rd64(uint32_t pid, uint64_t addr, uint64_t *v)
{
	return rd(pid, addr, v, 8);
}

static struct pyproc *get_proc(struct pyreader *pr, uint32_t pid)
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
	int fd;
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t nph;

	for (size_t i = 0; i < pr->nr_syms; i++)
		if (!strcmp(pr->syms[i].path, path))
			return &pr->syms[i];
	ALLOC_GROW(pr->syms, pr->nr_syms + 1, pr->alloc_syms);
	s = &pr->syms[pr->nr_syms++];
	memset(s, 0, sizeof(*s));
	s->path = xstrdup(path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return s;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || !gelf_getehdr(e, &eh))
		goto out;
	s->is_dyn = eh.e_type == ET_DYN;
	s->first_vaddr = UINT64_MAX;
	if (!elf_getphdrnum(e, &nph))
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    ph.p_vaddr - ph.p_offset < s->first_vaddr)
				s->first_vaddr = ph.p_vaddr - ph.p_offset;
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
	close(fd);
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
	return !*b || !strcmp(b, "d") || !strcmp(b, "m");
}

/*
 * 3.13: the _Py_DebugOffsets at the start of _PyRuntime ("xdebugpy", then version,
 * free_threaded and the offsets, 8 bytes each, in the order of CPython 3.13's
 * pycore_runtime.h) must give the offsets of the layout: a build with other structures
 * (free-threaded, a patched one) is refused rather than read wrong.
 */
static int debug_offsets_ok(uint32_t pid, uint64_t runtime, const struct pylayout *lay)
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

	if (rd(pid, runtime, &d, sizeof(d)) < 0 || memcmp(d.cookie, "xdebugpy", 8) ||
	    (d.w[0] >> 16) != lay->hex >> 16 || d.w[1])
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		uint16_t v;

		memcpy(&v, (const char *)lay + want[i].off, sizeof(v));
		if (d.w[want[i].word] != v)
			return 0;
	}
	/* and the fixed offsets every version shares */
	return d.w[34] == CO_FILENAME && d.w[36] == CO_QUALNAME && d.w[37] == CO_LINETABLE &&
	       d.w[44] == CO_TYPE && d.w[67] == 32 && d.w[68] == 16;
}

/* Is pid a CPython 3.11-3.13 process: its maps, the interpreter's symbols, Py_Version. */
static void probe(struct pyreader *pr, struct pyproc *p)
{
	char mpath[64], line[4352], file[4096] = "";
	FILE *f;
	uint64_t base = 0;
	const struct pysyms *s;
	uint64_t bias;
	uint32_t ver = 0;

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
			   path) < 4 || !path[0] || !python_file(path))
			continue;
		/* a libpython beats the executable that loads it */
		if (!file[0] || (strstr(path, "libpython") && !strstr(file, "libpython"))) {
			snprintf(file, sizeof(file), "%s", path);
			base = off == 0 ? lo : 0;
		} else if (!strcmp(path, file) && off == 0 && !base) {
			base = lo;
		}
	}
	fclose(f);
	if (!file[0])
		return;
	s = file_syms(pr, file);
	if (!s->ok && !strstr(file, "libpython") && ++p->probes < PROBE_TRIES) {
		/* a python3.X linked to its libpython, probed before the loader mapped
		 * it (a sample taken while the loader ran) */
		p->state = 0;
		p->probe_again = now_ns() + PROBE_EVERY_NS;
		return;
	}
	if (!s->ok) {
		warning("pid %u runs %s, but its interpreter symbols are not readable: "
			"native stacks only", p->pid, file);
		return;
	}
	if (s->is_dyn && !base)
		return;
	bias = s->is_dyn ? base - s->first_vaddr : 0;
	if (s->version && rd(p->pid, s->version + bias, &ver, 4) < 0) {
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
	if (p->lay && p->lay->cf_current == NO_CFRAME &&
	    !debug_offsets_ok(p->pid, s->runtime + bias, p->lay)) {
		warning("pid %u runs Python %u.%u.%u, whose structures are not laid out as dlprof "
			"reads them (its _Py_DebugOffsets differ): native stacks only", p->pid,
			ver >> 24, (ver >> 16) & 0xff, (ver >> 8) & 0xff);
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
	if (rd64(p->pid, p->runtime + p->lay->rt_interp_head, &interp) < 0 ||
	    rd64(p->pid, interp + p->lay->is_threads_head, &ts) < 0)
		return;
	for (; ts && n < 4096; n++) {
		uint64_t tid, next;

		if (rd(p->pid, ts, buf, sizeof(buf)) < 0)
			return;
		memcpy(&tid, buf + p->lay->ts_native_tid, 8);
		memcpy(&next, buf + p->lay->ts_next, 8);
		ALLOC_GROW(p->tids, p->nr_tids + 1, p->alloc_tids);
		p->tids[p->nr_tids].tid = (uint32_t)tid;
		p->tids[p->nr_tids++].tstate = ts;
		ts = next;
	}
}

/* The thread states of tid (*nr of them, at most max), after a new walk of the list when
 * the thread is not on it (at most every WALK_EVERY_NS: a thread that is not Python, an
 * OpenMP worker, stays off it). */
static size_t tstates_of(struct pyproc *p, uint32_t tid, uint64_t now, uint64_t *out, size_t max)
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

/* ---- code objects ---- */

/* The characters of the str object at obj as UTF-8 into sb (at most 1024 characters):
 * raw holds its first rawlen bytes (its header at least); what it lacks is read.  0 or
 * -1. */
static int str_parse(const struct pyproc *p, uint64_t obj, const unsigned char *raw,
		     size_t rawlen, struct strbuf *sb)
{
	unsigned char data[4096];
	const unsigned char *d = data;
	uint64_t len;
	uint32_t state, kind;
	size_t off, n;

	if (rawlen < 40)
		return -1;
	if (p->str_type && memcmp(raw + 8, &p->str_type, 8))
		return -1;	/* not a str (a code object freed under us: its names too) */
	memcpy(&len, raw + 16, 8);
	memcpy(&state, raw + 32, 4);
	kind = (state >> 2) & 7;
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4))
		return -1;	/* not compact: not a code object's name */
	off = ((state >> 6) & 1) ? p->lay->str_ascii : p->lay->str_compact;
	if (len > 1024)
		len = 1024;
	n = (size_t)len * kind;
	if (off + n <= rawlen)
		d = raw + off;
	else if (n && rd(p->pid, obj + off, data, n) < 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		uint32_t c = 0;

		memcpy(&c, d + i * kind, kind);	/* (little-endian) */
		if (c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
			return -1;	/* no character: not a string the interpreter made */
		if (c < 0x80) {
			strbuf_addch(sb, (char)c);
		} else if (c < 0x800) {
			strbuf_addch(sb, (char)(0xc0 | c >> 6));
			strbuf_addch(sb, (char)(0x80 | (c & 0x3f)));
		} else if (c < 0x10000) {
			strbuf_addch(sb, (char)(0xe0 | c >> 12));
			strbuf_addch(sb, (char)(0x80 | ((c >> 6) & 0x3f)));
			strbuf_addch(sb, (char)(0x80 | (c & 0x3f)));
		} else {
			strbuf_addch(sb, (char)(0xf0 | c >> 18));
			strbuf_addch(sb, (char)(0x80 | ((c >> 12) & 0x3f)));
			strbuf_addch(sb, (char)(0x80 | ((c >> 6) & 0x3f)));
			strbuf_addch(sb, (char)(0x80 | (c & 0x3f)));
		}
	}
	return 0;
}

/* The same for a str object read from outside. */
static int read_str(const struct pyproc *p, uint64_t obj, struct strbuf *sb)
{
	unsigned char h[40];	/* up to the state, in both layouts */

	if (rd(p->pid, obj, h, sizeof(h)) < 0)
		return -1;
	return str_parse(p, obj, h, sizeof(h), sb);
}

static struct pycode *code_slot(struct pyproc *p, uint64_t addr)
{
	size_t i;

	if ((p->nr_codes + 1) * 2 > p->size_codes) {
		struct pycode *old = p->codes;
		size_t osize = p->size_codes;

		p->size_codes = osize ? osize * 2 : 256;
		p->codes = xcalloc(p->size_codes, sizeof(*p->codes));
		for (i = 0; i < osize; i++)
			if (old[i].addr)
				*code_slot(p, old[i].addr) = old[i];
		free(old);
	}
	i = (size_t)((addr >> 4) * 0x9E3779B97F4A7C15ull >> 20) & (p->size_codes - 1);
	while (p->codes[i].addr && p->codes[i].addr != addr)
		i = (i + 1) & (p->size_codes - 1);
	return &p->codes[i];
}

/* Write code object c's record: first its names (first: the first record of its id),
 * and the line that code unit instr is on, unless a record gave it already. */
static void emit_code(struct pyreader *pr, struct pyproc *p, struct pycode *c, uint32_t instr,
		      int first)
{
	struct dlp_pycode_rec rec;
	struct strbuf body = STRBUF_INIT;
	int32_t pair[2];

	if (instr != DLP_PY_NO_INSTR) {
		void **seen = u64map_slot(&pr->lines_written, (uint64_t)c->id << 32 | instr);

		if (*seen && !first)
			return;
		*seen = (void *)1;
		if (!first) {
			/* the line of one more instruction: gathered, written a record per code
			 * object at the next pyreader_flush() (a record each was a fifth of the
			 * Python records' bytes on the CNN) */
			ALLOC_GROW(pr->pend, pr->nr_pend + 1, pr->alloc_pend);
			pr->pend[pr->nr_pend++] = (struct pend_line){
				c->id, { (int32_t)instr,
					 py311_line(c->tab, c->tab_len, (int)c->firstlineno, instr) } };
			return;
		}
	} else if (!first) {
		return;
	}
	memset(&rec, 0, sizeof(rec));
	rec.id = c->id;
	rec.flags = DLP_PYCODE_LINES;
	if (first) {
		/* the rest only once: the file is smaller for it */
		rec.pid = (int32_t)p->pid;
		rec.firstlineno = c->firstlineno;
		rec.pyversion = p->version;
		rec.qualname_len = c->qlen;
		rec.file_len = c->flen;
		strbuf_add(&body, c->qualname, c->qlen);
		strbuf_add(&body, c->file, c->flen);
	}
	if (instr != DLP_PY_NO_INSTR) {
		pair[0] = (int32_t)instr;
		pair[1] = py311_line(c->tab, c->tab_len, (int)c->firstlineno, instr);
		strbuf_add(&body, pair, sizeof(pair));
		rec.linetable_len = sizeof(pair);
	}
	pr->emit(pr->ctx, DLP_REC_PYCODE, &rec, sizeof(rec), body.buf, body.len);
	strbuf_release(&body);
}

/* Empty slot c becomes the code object at addr, as read: head (CO_READ bytes), its
 * names (the strbufs' buffers are taken), its line table (tab: tlen bytes, taken).  Its
 * id is given when a stack first names it (get_code). */
static void code_set(struct pyproc *p, struct pycode *c, uint64_t addr,
		     const unsigned char *head, struct strbuf *q, struct strbuf *fn,
		     unsigned char *tab, uint64_t tlen)
{
	int32_t first, trace;

	memcpy(&first, head + p->lay->co_firstline, 4);
	memcpy(&trace, head + p->lay->co_firsttrace, 4);
	memset(c, 0, sizeof(*c));
	c->addr = addr;
	memcpy(c->ident, head + CO_IDENT, sizeof(c->ident));
	c->firsttrace = trace;
	c->firstlineno = first > 0 ? (uint32_t)first : 0;
	c->tab = tab;
	c->tab_len = (uint32_t)tlen;
	c->qlen = (uint16_t)(q->len < 0xffff ? q->len : 0xffff);
	c->flen = (uint16_t)(fn->len < 0xffff ? fn->len : 0xffff);
	c->qualname = q->buf ? q->buf : xstrdup("");
	c->file = fn->buf ? fn->buf : xstrdup("");
	p->nr_codes++;
}

/* Slot c emptied (its code object is another one now) */
static void code_clear(struct pyproc *p, struct pycode *c)
{
	code_free(c);
	memset(c, 0, sizeof(*c));
	p->nr_codes--;
}

/* The code object at addr, running code unit instr: read (and written out) the first
 * time, written again when instr is past the line table written so far.  NULL when it
 * cannot be read (not a code object). */
static const struct pycode *get_code(struct pyreader *pr, struct pyproc *p, uint64_t addr,
				     uint32_t instr)
{
	struct pycode *c = code_slot(p, addr);
	unsigned char h[CO_READ], *tab;
	uint64_t type, fname, qname, ltab, tlen = 0;
	struct strbuf q = STRBUF_INIT, fn = STRBUF_INIT;

	if (pr->cur_time && c->addr && c->since > pr->cur_time) {
		/* a chain the kernel read before the object at addr now was: an older one */
		for (size_t i = p->nr_old; i-- > 0;)
			if (p->old[i].addr == addr && p->old[i].since <= pr->cur_time &&
			    p->old[i].until > pr->cur_time) {
				c = &p->old[i];
				break;
			}
	} else if (c->addr && c->stale && !pr->cur_time) {
		/* read again as the code object it is now (a chain the kernel read: its code
		 * objects were read with it, a later look says nothing of them) */
		code_clear(p, c);
	}
	if (c->addr) {
		size_t i;

		for (i = 0; i < pr->nr_verify && pr->verify[i] != c; i++)
			;
		if (i == pr->nr_verify && i < MAX_FRAMES)
			pr->verify[pr->nr_verify++] = c;
		if (!c->id) {
			/* read in the kernel, named by a stack for the first time */
			c->id = ++pr->next_code;
			pr->st.codes++;
			emit_code(pr, p, c, instr, 1);
		} else {
			emit_code(pr, p, c, instr, 0);
		}
		return c;
	}
	if (rd(p->pid, addr, h, sizeof(h)) < 0)
		return NULL;
	memcpy(&type, h + CO_TYPE, 8);
	if (type != p->code_type)
		return NULL;
	memcpy(&fname, h + CO_FILENAME, 8);
	memcpy(&qname, h + CO_QUALNAME, 8);
	memcpy(&ltab, h + CO_LINETABLE, 8);
	if (read_str(p, qname, &q) < 0 || read_str(p, fname, &fn) < 0) {
		strbuf_release(&q);
		strbuf_release(&fn);
		return NULL;
	}
	if (rd64(p->pid, ltab + 16, &tlen) < 0 || tlen > (1u << 20))
		tlen = 0;
	tab = xmalloc(tlen + 1);
	if (tlen && rd(p->pid, ltab + 32, tab, tlen) < 0)
		tlen = 0;
	code_set(p, c, addr, h, &q, &fn, tab, tlen);
	c->id = ++pr->next_code;
	pr->st.codes++;
	pr->st.codes_outside++;
	emit_code(pr, p, c, instr, 1);
	return c;
}

void pyreader_kernel_code(struct pyreader *pr, const struct pybpf_code *pc)
{
	struct pyproc *p = get_proc(pr, pc->pid);
	struct strbuf q = STRBUF_INIT, fn = STRBUF_INIT;
	uint64_t fname, qname, ltab, tlen = pc->tab_size;
	unsigned char *tab;
	struct pycode *c;

	if (p->state != 1 || !pc->qualname || !pc->filename ||
	    memcmp(pc->head + CO_TYPE, &p->code_type, 8))
		return;	/* not read whole: from outside, if a stack names it */
	c = code_slot(p, pc->addr);
	if (c->addr && !memcmp(c->ident, pc->head + CO_IDENT, sizeof(c->ident))) {
		c->stale = 0;
		return;	/* known already (the kernel's map forgot it) */
	}
	memcpy(&fname, pc->head + CO_FILENAME, 8);
	memcpy(&qname, pc->head + CO_QUALNAME, 8);
	memcpy(&ltab, pc->head + CO_LINETABLE, 8);
	if (str_parse(p, qname, pc->qualname, PYBPF_STR_READ, &q) < 0 ||
	    str_parse(p, fname, pc->filename, PYBPF_STR_READ, &fn) < 0) {
		strbuf_release(&q);
		strbuf_release(&fn);
		return;
	}
	if (tlen > (1u << 20))
		tlen = 0;
	tab = xmalloc(tlen + 1);
	if (pc->tab && pc->tab_len == tlen) {
		memcpy(tab, pc->tab, tlen);
	} else if (!tlen || rd(p->pid, ltab + 32, tab, tlen) < 0) {
		/* longer than the program reads, and gone: the part it read */
		tlen = pc->tab ? pc->tab_len : 0;
		if (tlen)
			memcpy(tab, pc->tab, tlen);
	}
	if (c->addr) {
		/* another object at that address before: kept for the samples before this
		 * one (the oldest kept goes) */
		if (p->nr_old == OLD_MAX) {
			code_free(&p->old[0]);
			memmove(p->old, p->old + 1, --p->nr_old * sizeof(p->old[0]));
		}
		ALLOC_GROW(p->old, p->nr_old + 1, p->alloc_old);
		p->old[p->nr_old] = *c;
		p->old[p->nr_old++].until = pc->time;
		memset(c, 0, sizeof(*c));
		p->nr_codes--;
	}
	code_set(p, c, pc->addr, pc->head, &q, &fn, tab, tlen);
	c->since = pc->time;
	pr->st.kernel_codes++;
}

static int pend_cmp(const void *a, const void *b)
{
	const struct pend_line *x = a, *y = b;

	if (x->code != y->code)
		return x->code < y->code ? -1 : 1;
	return x->pair[0] < y->pair[0] ? -1 : x->pair[0] > y->pair[0];
}

void pyreader_flush(struct pyreader *pr)
{
	struct strbuf body = STRBUF_INIT;

	if (!pr->nr_pend)
		return;
	qsort(pr->pend, pr->nr_pend, sizeof(*pr->pend), pend_cmp);
	for (size_t i = 0, j; i < pr->nr_pend; i = j) {
		struct dlp_pycode_rec rec;

		strbuf_reset(&body);
		for (j = i; j < pr->nr_pend && pr->pend[j].code == pr->pend[i].code; j++)
			strbuf_add(&body, pr->pend[j].pair, sizeof(pr->pend[j].pair));
		memset(&rec, 0, sizeof(rec));
		rec.id = pr->pend[i].code;
		rec.flags = DLP_PYCODE_LINES;
		rec.linetable_len = (uint32_t)body.len;
		pr->emit(pr->ctx, DLP_REC_PYCODE, &rec, sizeof(rec), body.buf, body.len);
	}
	pr->nr_pend = 0;
	strbuf_release(&body);
}

void pyreader_codes_in_kernel(struct pyreader *pr)
{
	pr->kernel_codes = 1;
}

void pyreader_chain_read_at(struct pyreader *pr, uint64_t time)
{
	pr->chain_time = time;
}

/* Are the cached code objects of the last walk still the objects at their addresses?
 * One read of their identifying pointers; the ones that changed are marked stale.
 * Returns how many changed (0 when the reads fail: nothing is known). */
static size_t verify_codes(struct pyreader *pr, uint32_t pid)
{
	struct iovec local[MAX_FRAMES], remote[MAX_FRAMES];
	uint64_t got[MAX_FRAMES][3];
	size_t n = pr->nr_verify, changed = 0;

	if (!n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){ got[i], sizeof(got[i]) };
		remote[i] = (struct iovec){ (void *)(uintptr_t)(pr->verify[i]->addr + CO_IDENT),
					    sizeof(got[i]) };
	}
	if (process_vm_readv((pid_t)pid, local, n, remote, n, 0) != (ssize_t)(n * sizeof(got[0])))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (memcmp(got[i], pr->verify[i]->ident, sizeof(got[i]))) {
			pr->verify[i]->stale = 1;
			changed++;
		}
	pr->stale_codes += changed;
	return changed;
}

/* ---- frames ---- */

/* The 72 bytes of the interpreter frame at addr, through a window read once for several
 * frames (a thread's frames sit together in its data stack, older ones below). */
static const unsigned char *get_frame(struct pyreader *pr, uint32_t pid, uint64_t addr)
{
	uint64_t lo;

	/* a frame pointer read while the interpreter was changing it can be anything:
	 * near the top of the address space, addr + FR_SIZE would wrap */
	if (addr > UINT64_MAX - FR_SIZE)
		return NULL;
	if (pr->win_pid == pid && addr >= pr->win_base &&
	    addr - pr->win_base <= pr->win_len - FR_SIZE)
		return pr->win + (addr - pr->win_base);
	/* as far down as the frame's page allows, up to the window size */
	lo = addr + FR_SIZE > WINDOW ? addr + FR_SIZE - WINDOW : 0;
	if (lo < (addr & ~4095ull))
		lo = addr & ~4095ull;
	pr->win_pid = 0;
	if (rd(pid, lo, pr->win, (size_t)(addr + FR_SIZE - lo)) < 0) {
		lo = addr;
		if (rd(pid, lo, pr->win, FR_SIZE) < 0)
			return NULL;
	}
	pr->win_pid = pid;
	pr->win_base = lo;
	pr->win_len = (size_t)(addr + FR_SIZE - lo);
	return pr->win + (addr - lo);
}

static struct last_stack *last_of(struct pyreader *pr, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < pr->nr_last; i++)
		if (pr->last[i].tid == tid && pr->last[i].pid == pid)
			return &pr->last[i];
	ALLOC_GROW(pr->last, pr->nr_last + 1, pr->alloc_last);
	memset(&pr->last[pr->nr_last], 0, sizeof(pr->last[0]));
	pr->last[pr->nr_last].pid = pid;
	pr->last[pr->nr_last].tid = tid;
	return &pr->last[pr->nr_last++];
}

/* What a frame whose code object was freed before it could be read shows: one code
 * record per process, at an address no object has. */
static const struct pycode *gone_code(struct pyreader *pr, struct pyproc *p)
{
	static const char name[] = "(code freed before dlprof read it)";
	struct pycode *c = code_slot(p, 1);

	if (!c->addr) {
		c->addr = 1;
		c->id = ++pr->next_code;
		c->qualname = xstrdup(name);
		c->qlen = sizeof(name) - 1;
		c->file = xstrdup("?");
		c->flen = 1;
		c->tab = xmalloc(1);
		p->nr_codes++;
		pr->st.codes++;
		emit_code(pr, p, c, DLP_PY_NO_INSTR, 1);
	}
	return c;
}

/* A frame of code object `code` running instruction pointer `instr` onto pr->frames[*n]
 * (gen: a generator's frame; entry: the first of its eval loop).  A frame still being
 * set up (3.11's _PyFrame_IsIncomplete) is left out.  A code object that cannot be read
 * is an error (-1), or with gone_ok the frame is named as freed. */
static int put_frame(struct pyreader *pr, struct pyproc *p, uint64_t code, uint64_t instr,
		     int gen, int entry, int gone_ok, size_t *n)
{
	int64_t idx = ((int64_t)instr - (int64_t)(code + p->lay->co_code)) / 2;
	uint32_t ins = idx < 0 || idx >= DLP_PY_NO_INSTR ? DLP_PY_NO_INSTR : (uint32_t)idx;
	const struct pycode *c = get_code(pr, p, code, ins);

	if (!c && !gone_ok)
		return -1;
	if (!c) {
		pr->st.gone++;
		c = gone_code(pr, p);
		ins = DLP_PY_NO_INSTR;
	}
	if (!gen && idx < c->firsttrace)
		return 0;
	pr->frames[*n].code = c->id;
	pr->frames[*n].instr = ins | (entry ? DLP_PY_ENTRY : 0);
	(*n)++;
	return 0;
}

static void count_stack(struct pyreader *pr, const struct dlp_pystack_rec *rec)
{
	pr->st.samples++;
	pr->st.trusted += rec->state == DLP_PY_TRUSTED;
	pr->st.unchecked += rec->state == DLP_PY_UNCHECKED;
	pr->st.moved += rec->state == DLP_PY_MOVED;
	pr->st.failed += rec->state == DLP_PY_FAILED;
	pr->st.own += !!(rec->flags & DLP_PYSTACK_OWN);
	pr->st.kernel += !!(rec->flags & DLP_PYSTACK_KERNEL);
	pr->st.delay_sum_ns += rec->delay_ns;
	if (rec->delay_ns > pr->st.delay_max_ns)
		pr->st.delay_max_ns = rec->delay_ns;
}

/* Write the sample's record, rec filled but for nr and same: n frames in pr->frames. */
static void put_stack(struct pyreader *pr, struct dlp_pystack_rec *rec, size_t n)
{
	rec->nr = (uint16_t)n;
	count_stack(pr, rec);
	/* the root-side frames the thread's previous record had too are not repeated */
	struct last_stack *ls = last_of(pr, rec->pid, rec->tid);
	size_t same = 0;

	while (same < n && same < ls->n &&
	       !memcmp(&pr->frames[n - 1 - same], &ls->frames[ls->n - 1 - same],
		       sizeof(pr->frames[0])))
		same++;
	rec->same = (uint16_t)same;
	ALLOC_GROW(ls->frames, n + 1, ls->alloc);
	memcpy(ls->frames, pr->frames, n * sizeof(pr->frames[0]));
	ls->n = n;
	pr->emit(pr->ctx, DLP_REC_PYSTACK, rec, sizeof(*rec), pr->frames,
		 (n - same) * sizeof(pr->frames[0]));
}

static uint32_t put_chain(struct pyreader *pr, uint32_t pid, uint32_t tid, size_t n);

/* The sample's stack, rec filled but for nr: n frames in pr->frames, counted and written
 * as a chain; its id, for the sample's own record to name. */
static uint32_t name_stack(struct pyreader *pr, struct dlp_pystack_rec *rec, size_t n)
{
	rec->nr = (uint16_t)n;
	count_stack(pr, rec);
	return put_chain(pr, rec->pid, rec->tid, n);
}

/* The id of the chain of n frames in pr->frames (thread tid's), its DLP_REC_PYCHAIN
 * written when new: the root-side frames it shares with the thread's previous chain are
 * not repeated. */
static uint32_t put_chain(struct pyreader *pr, uint32_t pid, uint32_t tid, size_t n)
{
	size_t bytes = n * sizeof(pr->frames[0]);
	uint64_t h = hash_bytes(pr->frames, bytes) ^ n;
	uintptr_t id = (uintptr_t)u64map_get(&pr->chain_ids, h);
	struct last_stack *ls = last_of(pr, pid, tid);
	struct dlp_pychain_rec rec;
	const struct chain_ent *b;
	size_t same = 0;

	if (id && pr->chains[id - 1].nr == n &&
	    (!bytes || !memcmp(pr->chain_frames + pr->chains[id - 1].first, pr->frames, bytes))) {
		ls->chain = (uint32_t)id;
		return (uint32_t)id;
	}
	memset(&rec, 0, sizeof(rec));
	rec.id = (uint32_t)(pr->nr_chains + 1);
	rec.nr = (uint16_t)n;
	b = ls->chain ? &pr->chains[ls->chain - 1] : NULL;
	if (b) {
		const struct dlp_pyframe *bf = pr->chain_frames + b->first;

		while (same < n && same < b->nr &&
		       !memcmp(&pr->frames[n - 1 - same], &bf[b->nr - 1 - same],
			       sizeof(pr->frames[0])))
			same++;
		rec.base = ls->chain;
		rec.same = (uint16_t)same;
	}
	pr->emit(pr->ctx, DLP_REC_PYCHAIN, &rec, sizeof(rec), pr->frames,
		 (n - same) * sizeof(pr->frames[0]));
	if (pr->nr_chains >= CHAIN_MAX) {
		/* not remembered: later samples write theirs again */
		ls->chain = 0;
		pr->nr_chains++;
		return rec.id;
	}
	ALLOC_GROW(pr->chains, pr->nr_chains + 1, pr->alloc_chains);
	ALLOC_GROW(pr->chain_frames, pr->nr_chain_frames + n, pr->alloc_chain_frames);
	if (bytes)
		memcpy(pr->chain_frames + pr->nr_chain_frames, pr->frames, bytes);
	pr->chains[pr->nr_chains] = (struct chain_ent){ pr->nr_chain_frames, (uint16_t)n };
	pr->nr_chain_frames += n;
	pr->nr_chains++;
	if (!id)
		u64map_put(&pr->chain_ids, h, (void *)(uintptr_t)rec.id);
	ls->chain = rec.id;
	return rec.id;
}

int pyreader_sample(struct pyreader *pr, uint32_t pid, uint32_t tid, uint64_t time,
		    const unsigned char *stack, size_t len, uint64_t sp, struct pychain_ref *ref)
{
	struct pyproc *p = get_proc(pr, pid);
	struct dlp_pystack_rec rec;
	uint64_t now, tss[8], cur = 0, at_sample = 0, fa = 0;
	size_t n = 0, nts;
	int checked = 0, found = 0;
	/* 3.13: which eval loop's entry frame the walk met first at or above the sample's
	 * stack pointer: 0 none yet, 1 one inside the copy, 2 one beyond it */
	int v313, entry_at = 0;
	const struct pylayout *lay;

	if (ref)
		ref->chain = 0;
	if (!p->state)
		probe(pr, p);
	if (p->state != 1)
		return 0;
	lay = p->lay;
	v313 = lay->cf_current == NO_CFRAME;
	now = now_ns();
	nts = tstates_of(p, tid, now, tss, ARRAY_SIZE(tss));
	if (!nts)
		return 0;	/* not a Python thread (an OpenMP worker, ...) */
	memset(&rec, 0, sizeof(rec));
	rec.pid = pid;
	rec.tid = tid;
	rec.time = time;
	rec.delay_ns = now > time ? (uint32_t)(now - time < UINT32_MAX ? now - time : UINT32_MAX) : 0;
	rec.state = DLP_PY_FAILED;
	pr->win_pid = 0;
	/* the thread's running state: the one whose _PyCFrame is in the sample's stack copy,
	 * else the one running a frame (3.13, without _PyCFrame: the first running a frame;
	 * the walk checks it against the copy) */
	for (size_t t = 0; v313 && t < nts && !cur; t++)
		if (rd64(pid, tss[t] + lay->ts_cframe, &cur) < 0)
			cur = 0;
	for (size_t t = 0; !v313 && t < nts && !checked; t++) {
		uint64_t cf, c, at = 0;
		int in_copy = 0;

		if (rd64(pid, tss[t] + lay->ts_cframe, &cf) < 0 || !cf ||
		    rd64(pid, cf + lay->cf_current, &c) < 0 || !c)
			continue;
		/* The running frame at the sample: the innermost _PyCFrame that was on the C
		 * stack then is the first of the live chain (tstate->cframe, ->previous, ...)
		 * at or above the sample's stack pointer, and the copy holds it as it was. */
		for (int k = 0; stack && sp && cf && k < 256; k++) {
			if (cf >= sp && cf - sp + lay->cf_previous + 8 <= len) {
				memcpy(&at, stack + (cf - sp) + lay->cf_current, 8);
				in_copy = 1;
				break;
			}
			if (cf > sp || rd64(pid, cf + lay->cf_previous, &cf) < 0)
				break;	/* past the copy (a deep stack), or unreadable */
		}
		if (in_copy || !cur) {
			cur = c;
			at_sample = at;
			checked = in_copy;
		}
	}
	if (!cur) {
		rec.state = DLP_PY_UNCHECKED;	/* running no Python code: no frames */
		goto out;
	}
	/* steps, not frames: skipped frames count too, so a chain that loops (memory
	 * changing under the read) ends */
	for (int attempt = 0;; attempt++) {
		n = 0;
		found = 0;
		entry_at = 0;
		pr->nr_verify = 0;
		fa = cur;
		for (unsigned steps = 0; fa && n < MAX_FRAMES; steps++) {
			const unsigned char *f = steps < 4 * MAX_FRAMES ? get_frame(pr, pid, fa) : NULL;
			uint64_t code, prev, instr;

			if (!f)
				goto out;
			memcpy(&code, f + lay->fr_code, 8);
			memcpy(&prev, f + lay->fr_previous, 8);
			memcpy(&instr, f + lay->fr_prev_instr, 8);
			if (f[lay->fr_owner] == MEM_PY_OWNED_BY_CSTACK) {
				/* 3.12, 3.13: the shim outside an eval loop's first frame, the one
				 * inside it (3.11 flags that frame itself, is_entry) */
				if (v313 && stack && len && !entry_at) {
					/* the shim lives on its eval loop's C stack: one below the
					 * sample's stack pointer is a loop entered since, whose
					 * frames are newer than the sample */
					if (fa < sp) {
						n = 0;
						fa = prev;
						continue;
					}
					entry_at = fa - sp < len ? 1 : 2;
				}
				if (n && checked == found)
					pr->frames[n - 1].instr |= DLP_PY_ENTRY;
				fa = prev;
				continue;
			}
			if (checked && !found) {
				if (fa != at_sample) {
					fa = prev;	/* newer than the sample: not its frames */
					continue;
				}
				found = 1;
			}
			if (put_frame(pr, p, code, instr,
				      f[lay->fr_owner] == MEM_PY_OWNED_BY_GENERATOR,
				      lay->fr_is_entry && f[lay->fr_is_entry], 0, &n) < 0)
				goto out;
			fa = prev;
		}
		/* a code object the cache knew under an address that now holds another: the walk
		 * again, reading those as new */
		if (attempt || now - p->last_verify < VERIFY_EVERY_NS)
			break;
		p->last_verify = now;
		if (!verify_codes(pr, pid))
			break;
	}
	if (v313 && stack && len) {
		/* checked when the sample's innermost eval loop is the live chain's: its
		 * frames then are those of the loop that ran at the sample (which of them ran
		 * at that instant the copy does not say: calls inside a loop keep no C frame) */
		rec.state = entry_at == 1 ? DLP_PY_TRUSTED : entry_at == 2 ? DLP_PY_UNCHECKED :
			    DLP_PY_MOVED;
		if (!entry_at)
			n = 0;
	} else if (checked && !found) {
		rec.state = DLP_PY_MOVED;
		n = 0;
	} else {
		rec.state = checked ? DLP_PY_TRUSTED : DLP_PY_UNCHECKED;
	}
out:
	if (rec.state == DLP_PY_FAILED || !cur)
		n = 0;
	if (ref && (rec.state == DLP_PY_TRUSTED || rec.state == DLP_PY_UNCHECKED)) {
		/* named by its sample's record; the delays, summed, go in META */
		pr->st.late_named++;
		pr->st.late_delay_sum_ns += rec.delay_ns;
		if (rec.delay_ns > pr->st.late_delay_max_ns)
			pr->st.late_delay_max_ns = rec.delay_ns;
		ref->chain = name_stack(pr, &rec, n);
		ref->state = rec.state;
		return 1;
	}
	put_stack(pr, &rec, n);
	return 1;
}

int pyreader_sample_chain(struct pyreader *pr, uint32_t pid, uint32_t tid, uint64_t time,
			  const uint64_t *chain, size_t nchain, unsigned flags, uint32_t *chain_id)
{
	struct pyproc *p = get_proc(pr, pid);
	struct dlp_pystack_rec rec;
	uint64_t now;
	size_t n = 0;

	if (!p->state)
		probe(pr, p);
	if (p->state != 1)
		return 0;
	memset(&rec, 0, sizeof(rec));
	rec.pid = pid;
	rec.tid = tid;
	rec.time = time;
	rec.state = DLP_PY_TRUSTED;
	rec.flags = (uint8_t)flags;
	if (chain_id)
		*chain_id = 0;
	if (!chain) {
		rec.state = DLP_PY_FAILED;	/* the reader's reads failed */
		put_stack(pr, &rec, 0);
		return 1;
	}
	/* read in the kernel with its code objects: each frame's is the one of its time */
	pr->cur_time = pr->kernel_codes && (flags & DLP_PYSTACK_KERNEL) ?
		       (pr->chain_time ? pr->chain_time : time ? time : 1) : 0;
	pr->chain_time = 0;
	for (int attempt = 0;; attempt++) {
		n = 0;
		pr->nr_verify = 0;
		for (size_t i = 0; i < nchain && n < MAX_FRAMES; i++) {
			unsigned ff = (unsigned)(chain[2 * i] & 7);

			if (ff & MEM_PY_SHIM) {
				/* outside an eval loop's first frame: that frame is its entry */
				if (n)
					pr->frames[n - 1].instr |= DLP_PY_ENTRY;
				continue;
			}
			/* a code object freed since (a module's code once its import is over)
			 * leaves its frame, named so, for the stack to line up with the loops */
			put_frame(pr, p, chain[2 * i] & ~7ull, chain[2 * i + 1], !!(ff & MEM_PY_GEN),
				  !!(ff & MEM_PY_ENTRY), 1, &n);
		}
		/* as a walk does: cached code objects whose addresses hold others now (the
		 * clock read only then: a system call where it has no vDSO) */
		if (attempt || pr->cur_time || (now = now_ns()) - p->last_verify < VERIFY_EVERY_NS)
			break;
		p->last_verify = now;
		if (!verify_codes(pr, pid))
			break;
	}
	pr->cur_time = 0;
	if (chain_id) {
		*chain_id = name_stack(pr, &rec, n);
		return 1;
	}
	put_stack(pr, &rec, n);
	return 1;
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
static void layout_offsets(const struct pylayout *lay, struct pywalk_info *wi)
{
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
	for (wi->frame = 0; wi->frame < n && memcmp(&all[wi->frame], &f, sizeof(f)); wi->frame++)
		;
}

int pyreader_walk_info(struct pyreader *pr, uint32_t pid, struct pywalk_info *wi)
{
	struct pyproc *p = get_proc(pr, pid);
	const struct pylayout *lay;
	int32_t key[2];

	if (!p->state)
		probe(pr, p);
	if (p->state != 1)
		return 0;
	lay = p->lay;
	memset(wi, 0, sizeof(*wi));
	wi->tss = p->runtime + lay->rt_tss;
	/* a Py_tss_t that is set, with a key pthreads can have */
	if (rd(pid, wi->tss, key, sizeof(key)) < 0 || key[0] != 1 || key[1] < 0 || key[1] >= 1024 ||
	    rd64(pid, p->runtime + lay->rt_interp_head, &wi->interp) < 0 || !wi->interp)
		return 0;
	layout_offsets(lay, wi);
	return 1;
}

size_t pyreader_threads(struct pyreader *pr, uint32_t pid, struct pyreader_thread *out,
			size_t max, struct pywalk_info *wi)
{
	struct pyproc *p = get_proc(pr, pid);
	const struct pylayout *lay;
	size_t n = 0;

	if (!p->state)
		probe(pr, p);
	if (p->state != 1)
		return 0;
	lay = p->lay;
	walk_threads(p, now_ns());
	for (size_t i = 0; i < p->nr_tids && n < max; i++) {
		size_t k;

		for (k = 0; k < n && out[k].tid != p->tids[i].tid; k++)
			;
		if (k == n && p->tids[i].tid) {
			out[n].tid = p->tids[i].tid;
			out[n++].tstate = p->tids[i].tstate;
		}
	}
	memset(wi, 0, sizeof(*wi));
	layout_offsets(lay, wi);
	return n;
}

void pyreader_get_stats(const struct pyreader *pr, struct pyreader_stats *st)
{
	*st = pr->st;
}
