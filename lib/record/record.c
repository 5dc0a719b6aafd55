/* record.c - the record loop and what is captured at the end of a recording.
 *
 * Events: one fd per (event, online cpu) on the workload's pid with inherit, so every
 * thread, child process and exec is followed.  The first event of each cpu owns that
 * cpu's ring; later events are redirected into it (PERF_EVENT_IOC_SET_OUTPUT).  Side-band
 * records (mmap2 with build-ids, comm, fork/exit, context switches) come from the first
 * event only, so they are not duplicated.
 *
 * Dwarf mode: the kernel copies sample_stack_user bytes per sample whatever the stack
 * depth.  Before writing a sample we trim that copy to the bytes actually used (dyn_size,
 * rounded up to 8) and shrink the record's stack size field and header size to match, so
 * the stored record is a valid PERF_RECORD_SAMPLE whose stack size field equals the
 * bytes present (followed by the original dyn_size, as the kernel lays it out).
 */
#include "record.h"
#include "recunwind.h"
#include "attach.h"
#include "elfsyms.h"
#include "event.h"
#include "isa.h"
#include "jitsym.h"
#include "memevent.h"
#include "memrec.h"
#include "pybpf.h"
#include "pyread.h"
#include "recfile.h"
#include "rephash.h"
#include "ring.h"
#include "workload.h"
#include "paths.h"
#include "util.h"
#include "version.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <gelf.h>
#include <libelf.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS	16
#define FLUSH_NS	1000000000ull	/* write a chunk at least this often */
#define MEM_FREES_BATCH	1024	/* frees a DLP_REC_MEMFREES record holds at most */
#define POLL_MS		100
/* A ring wakes the reader when this share of it is full (1/WAKE_DIV): half, so that
 * each wake-up drains ~128 dwarf samples of a cpu (a quarter woke the reader and, through
 * the hand-over, the unwinding thread twice as often; on the CNN, 6 ABBA pairs: record's
 * CPU 9.83 -> 9.08 us a sample, the walks 3.65 -> 3.10 in larger batches), and the other
 * half (~64-128 ms at 1-2 kHz a cpu) is the margin before one fills: no sample lost at
 * -F 5000 and -F 20000 on the CNN and the demo on 2 busy cores either way. */
#define WAKE_DIV	2
#define XR_HITS		256
#define PY_POLL_MS	1	/* with a Python process: read its stacks within ~1 ms */
#define CAPTURE_MAX	(512u << 20)	/* cap on a captured JIT/ITT file */
#define BG_CAP		(64u << 20)	/* raw bytes waiting for the compressor (~1.5 s of
					   dwarf samples on 2 cpus) before record compresses inline */

/* x86_64 general registers + BP, SP, IP (asm/perf_regs.h numbering) */
#define X86_64_USER_REGS (((1ull << 9) - 1) /* AX..IP: 0-8 */ | (0xffull << 16) /* R8..R15 */)

/* ---- a set of u64 (open addressing; 0 stored aside) ---- */
struct u64set {
	uint64_t *slot;
	size_t nr, alloc;	/* alloc: power of two */
	int has_zero;
};

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static void u64set_add(struct u64set *s, uint64_t v);

static void u64set_grow(struct u64set *s)
{
	struct u64set n = { NULL, 0, s->alloc ? s->alloc * 2 : 1024, s->has_zero };

	n.slot = xcalloc(n.alloc, sizeof(uint64_t));
	for (size_t i = 0; i < s->alloc; i++)
		if (s->slot[i])
			u64set_add(&n, s->slot[i]);
	free(s->slot);
	*s = n;
}

static void u64set_add(struct u64set *s, uint64_t v)
{
	size_t i;

	if (!v) {
		s->has_zero = 1;
		return;
	}
	if ((s->nr + 1) * 2 > s->alloc)
		u64set_grow(s);
	for (i = hash64(v) & (s->alloc - 1); s->slot[i]; i = (i + 1) & (s->alloc - 1))
		if (s->slot[i] == v)
			return;
	s->slot[i] = v;
	s->nr++;
}

static int u64set_has(const struct u64set *s, uint64_t v)
{
	if (!v)
		return s->has_zero;
	if (!s->alloc)
		return 0;
	for (size_t i = hash64(v) & (s->alloc - 1); s->slot[i]; i = (i + 1) & (s->alloc - 1))
		if (s->slot[i] == v)
			return 1;
	return 0;
}

static void u64set_free(struct u64set *s)
{
	free(s->slot);
	memset(s, 0, sizeof(*s));
}

/* ---- record state ---- */
struct rec_event {
	char name[64];
	int off_cpu;		/* the switch-out event (record --off-cpu) */
	int mem;		/* --memory: MEM_EV_*, the uprobes */
	struct perf_event_attr attr;
	uint64_t *ids;
	size_t nr_ids, alloc_ids;
};

enum { MEM_EV_ALLOC = 1, MEM_EV_FREE, MEM_EV_WAIT };

struct path_list {
	char **v;
	size_t nr, alloc;
};

struct recorder {
	uint32_t cmd_pid;	/* the command record started, 0 with -p */
	int cmd_exec_seen;	/* its first exec's PROC record was written */
	const struct record_opts *opts;
	struct rec_event ev[MAX_EVENTS];
	int nr_ev;
	int *cpus;
	int nr_cpus;
	int *fds;		/* nr_ev * nr_cpus, -1 when not open */
	struct ring *rings;	/* one per cpu */
	struct recwriter *w;
	int write_failed;
	struct recunw *ru;	/* unwinding while recording (dwarf), NULL: write directly */
	struct recunw_stats ru_st;

	uint64_t samples, lost, lost_records;
	struct u64set kaddrs;	/* kernel ips seen */
	struct u64set pids;	/* processes seen (comm, fork) */
	struct path_list need_buildid;	/* exec file mappings whose MMAP2 had no build-id */
	struct path_list jitdumps;	/* jit-PID.dump files named by mmap records */
	unsigned char *scratch;		/* rewritten dwarf samples */
	size_t cut_head;		/* the sample sample_fixup() read is to be cut (with
					   the unwinding thread): its bytes up to the stack
					   size word, 0: not cut */
	uint64_t cut_keep, cut_dyn;	/* ... to keep bytes of stack, dyn_size cut_dyn */

	char fallback_note[256];
	char ring_note[160];	/* the ring was shrunk to fit the mlock limit */
	char *jitdir;		/* JITDUMPDIR we created, NULL when not ours */
	int jit_ours;		/* we set ONEDNN_JIT_PROFILE/DNNL_JIT_PROFILE */
	char *ittdir;		/* DLPROF_ITT_DIR we created */
	int jitdir_lock, ittdir_lock;	/* flock()ed while we live; -1 none */
	/* -p: the processes and the threads that have counters */
	pid_t *targets;
	int nr_targets;
	struct u64set tids_open;
	struct strbuf attach_cmdline;	/* read while they run: META cmdline */
	int nr_fds;		/* fds[]: thread-major, then event, then cpu */
	size_t alloc_fds;
	uint64_t start_ns;
	time_t start_wall;	/* files newer than this were caused by us */
	/* what the recording lacks, said on stderr and kept for report (META warn.N) */
	struct strbuf warns;	/* NUL-separated lines */
	int nr_warns;
	char *dnnl_path;	/* a libdnnl the workload mapped, NULL when none */
	int itt_files;		/* ITT collector output files captured */
	/* JIT code in anonymous memory: the executable mappings (anonymous or not), and
	 * the user samples taken in anonymous ones, checked at the end against the
	 * captured JIT names.  A sample can be drained before the mapping it ran in (each
	 * cpu has its own ring): those wait in pending until the end. */
	struct exec_range { uint32_t pid, anon; uint64_t start, end; } *xr;
	size_t nr_xr, alloc_xr;
	/* the range of a code page met lately (direct-mapped; each user sample asks, and
	 * a scan of every range was ~4% of the reader's CPU) */
	struct xr_hit { uint32_t pid, idx; uint64_t page; } xr_hits[XR_HITS];
	struct anon_ip { uint32_t pid; uint64_t ip; } *anon_ips, *pending;
	size_t nr_anon_ips, alloc_anon_ips, nr_pending, alloc_pending;
	uint64_t anon_samples;		/* all of them, also those past the array's cap */
	struct jitsyms *jit;		/* the captured perf maps and jitdumps, parsed */
	struct pyreader *py;		/* Python stacks of CPython processes, NULL: --no-python */
	int py_wakeup;			/* the target looks like Python: wake up per sample */
	/* the user stack copy of the sample being stored (sample_fixup), for py */
	const unsigned char *smp_stack;
	size_t smp_len;
	uint64_t smp_sp;
	const unsigned char *smp_regs;	/* its user registers (in the ring), NULL: none */
	/* --memory: the preloaded library, the processes that mapped it, those that ran a
	 * new program (each should have), and what each said at its exit */
	char *mem_lib;
	uint64_t mem_off[3];		/* file offsets of the alloc, free and wait functions */
	const char *mem_tracefs;	/* where the uprobes were made */
	int mem_probe[3];		/* made: to remove at the end */
	struct u64set mem_pids;
	struct mem_proc {
		uint32_t pid;
		int stats;		/* its exit stats came */
		char comm[16];
		uint64_t calls, bytes, rss_anon;
	} *mem_procs;
	size_t nr_mem_procs, alloc_mem_procs;
	uint64_t mem_allocs, mem_frees;
	uint64_t mem_alloc_events;	/* alloc events drained (with the exit statistics) */
	uint64_t mem_waits;		/* times a thread waited for the drain (mem-wait events) */
	/* dlprof's CPU while the workload ran (all threads but the kernel-symbol loader):
	 * what the samples cost, start-up and the end's work left out (META) */
	uint64_t run_cpu_ns;
	uint64_t mem_free_tail;		/* the free ring's next slot to read */
	struct memrec_enc mem_frees_enc;	/* frees from it not written yet */
	uint64_t mem_free_wait;		/* since when its slot is taken but not filled */
	uint64_t mem_ring_lost;		/* frees whose writer never filled their slot */
	char *mem_shared_path;		/* the back-pressure counters (memevent.h) */
	struct mem_shared *mem_shared;
	/* Python stacks read in the kernel at the sample (pybpf.h); NULL: from outside */
	struct pybpf *pb;
	const char *pb_why;		/* why not, when the target is Python */
	struct u64map tcb_at;		/* tid -> its TCB's address (stack_end()) */
	struct u64map pb_tids;		/* tid -> since when it is in the program's map (ns),
					   PB_GONE: taken out */
	struct pb_wait *pb_wait;	/* samples whose chain has not come yet */
	size_t nr_pb_wait, alloc_pb_wait;
	struct pb_chain *pb_chains;	/* chains whose sample has not come yet */
	size_t nr_pb_chains, alloc_pb_chains;
	struct pb_proc *pb_procs;	/* when each Python process's threads were last listed */
	size_t nr_pb_procs, alloc_pb_procs;
	uint64_t pb_unmatched;		/* samples whose chain never came */
	uint64_t pb_join_after;		/* a chain this long after its sample's time is its */
	/* a Python process found: its rings read every PY_POLL_MS until one of its threads
	 * is listed for the kernel (its first samples, taken before the interpreter made
	 * its thread state, list none: 100 ms of samples were then read from outside) */
	int py_seen;
	uint64_t py_fast_until;
	uint64_t pb_hot_until;		/* code objects not read before were met: quick reads
					   until then */
	uint64_t pb_codes;		/* code objects read from outside, at the last drain */
	struct py_pub *py_pub;		/* Python processes and their mem_shared.py entries */
	size_t nr_py_pub, alloc_py_pub;
	unsigned py_pub_next;		/* the entry to take next when none is free */
};

struct pb_wait {
	uint32_t pid, tid;
	uint64_t time;
	unsigned turns;			/* drains it has waited */
};

struct pb_chain {
	uint32_t tid, n;
	uint64_t time;
	int failed;			/* a read failed, or it was too deep */
	unsigned turns;
	uint64_t *chain;
};

struct pb_proc {
	uint32_t pid;
	uint64_t listed;
};

struct py_pub {
	uint32_t pid;
	int slot;			/* its entry in mem_shared.py, -1 none */
	uint64_t tried;			/* when it was last tried (CLOCK_MONOTONIC ns) */
};

#define ANON_IPS_MAX (1u << 20)	/* past this, anonymous-code samples are only counted */

/* One line on stderr now, and in the recording for report to repeat (never dropped by
 * -q: it says the recording has less than asked). */
static void record_warn(struct recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void record_warn(struct recorder *r, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	warning("%s", buf);
	strbuf_add(&r->warns, buf, strlen(buf) + 1);
	r->nr_warns++;
}

static void note_exec_map(struct recorder *r, uint32_t pid, uint64_t start, uint64_t len,
			  int anon)
{
	memset(r->xr_hits, 0, sizeof(r->xr_hits));
	for (size_t i = 0; i < r->nr_xr; i++)
		if (r->xr[i].pid == pid && r->xr[i].start == start) {
			r->xr[i].end = start + len;
			r->xr[i].anon = (uint32_t)anon;
			return;
		}
	ALLOC_GROW(r->xr, r->nr_xr + 1, r->alloc_xr);
	r->xr[r->nr_xr++] = (struct exec_range){ pid, (uint32_t)anon, start, start + len };
}

static const struct exec_range *find_exec(struct recorder *r, uint32_t pid, uint64_t ip)
{
	uint64_t page = ip >> 12;
	struct xr_hit *h = &r->xr_hits[hash_u64(page ^ (uint64_t)pid << 40) & (XR_HITS - 1)];

	/* (0 is no code page: an empty entry never matches) */
	if (h->page == page && h->pid == pid && page)
		return &r->xr[h->idx];
	for (size_t i = r->nr_xr; i-- > 0;)	/* the latest mapping of an address wins */
		if (r->xr[i].pid == pid && ip >= r->xr[i].start && ip < r->xr[i].end) {
			/* (a page the range covers whole: every ip in it has this answer) */
			if (page << 12 >= r->xr[i].start && (page + 1) << 12 <= r->xr[i].end)
				*h = (struct xr_hit){ pid, (uint32_t)i, page };
			return &r->xr[i];
		}
	return NULL;
}

static void push_ip(struct anon_ip **v, size_t *nr, size_t *alloc, uint32_t pid, uint64_t ip)
{
	if (*nr >= ANON_IPS_MAX)
		return;
	ALLOC_GROW(*v, *nr + 1, *alloc);
	(*v)[(*nr)++] = (struct anon_ip){ pid, ip };
}

/* A user sample's ip: kept when it ran in anonymous executable memory (or in memory
 * whose mapping was not seen yet). */
static void note_anon_ip(struct recorder *r, uint32_t pid, uint64_t ip)
{
	const struct exec_range *x = find_exec(r, pid, ip);

	if (!x) {
		push_ip(&r->pending, &r->nr_pending, &r->alloc_pending, pid, ip);
		return;
	}
	if (!x->anon)
		return;
	r->anon_samples++;
	push_ip(&r->anon_ips, &r->nr_anon_ips, &r->alloc_anon_ips, pid, ip);
}

/* The end: samples drained before their mapping, placed now. */
static void place_pending(struct recorder *r)
{
	for (size_t i = 0; i < r->nr_pending; i++) {
		const struct exec_range *x = find_exec(r, r->pending[i].pid, r->pending[i].ip);

		if (x && x->anon) {
			r->anon_samples++;
			push_ip(&r->anon_ips, &r->nr_anon_ips, &r->alloc_anon_ips,
				r->pending[i].pid, r->pending[i].ip);
		}
	}
	r->nr_pending = 0;
}

static void path_list_add(struct path_list *l, const char *p)
{
	for (size_t i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i], p))
			return;
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	l->v[l->nr++] = xstrdup(p);
}

static void path_list_clear(struct path_list *l)
{
	for (size_t i = 0; i < l->nr; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ---- event setup ---- */
static int online_cpus(int **cpus)
{
	struct strbuf sb = STRBUF_INIT;
	int nr = 0;
	size_t alloc = 0;
	char *p;

	*cpus = NULL;
	if (strbuf_read_file(&sb, "/sys/devices/system/cpu/online", 4096) < 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		for (long i = 0; i < n; i++) {
			ALLOC_GROW(*cpus, (size_t)nr + 1, alloc);
			(*cpus)[nr++] = (int)i;
		}
		return nr;
	}
	for (p = sb.buf; *p && *p != '\n';) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && i < 4096; i++) {
			ALLOC_GROW(*cpus, (size_t)nr + 1, alloc);
			(*cpus)[nr++] = (int)i;
		}
		p = *end == ',' ? end + 1 : end;
	}
	strbuf_release(&sb);
	return nr;
}

/* The file execvp would run for name, or -1. */
static int find_in_path(const char *name, char *out, size_t size)
{
	const char *p = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
		return 0;
	}
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");

		snprintf(out, size, "%.*s%s%s", (int)n, p, n ? "/" : "", name);
		if (!access(out, X_OK))
			return 0;
		p += n + (p[n] == ':');
	}
	return -1;
}

/* Does the command (or a process of -p) look like a Python interpreter: a python3.X
 * executable, a script run by one, or a process that maps one. */
static int python_target(const struct record_opts *o)
{
	char path[4096], line[256];
	FILE *f;

	if (o->pids) {
		const char *p = o->pids;

		while (*p) {
			char exe[64], buf[4096];
			long pid = strtol(p, (char **)&p, 10);
			ssize_t n;

			snprintf(exe, sizeof(exe), "/proc/%ld/exe", pid);
			n = readlink(exe, buf, sizeof(buf) - 1);
			if (n > 0) {
				buf[n] = 0;
				if (pyreader_python_path(buf))
					return 1;
			}
			while (*p && (*p < '0' || *p > '9'))
				p++;
		}
		return 0;
	}
	if (!o->argv || !o->argv[0] || find_in_path(o->argv[0], path, sizeof(path)) < 0)
		return 0;
	{
		char *real = realpath(path, NULL);
		int py = real && pyreader_python_path(real);

		free(real);
		if (py)
			return 1;
	}
	f = fopen(path, "re");
	if (!f)
		return 0;
	line[0] = 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return !strncmp(line, "#!", 2) && strstr(line, "python");
}

static void attr_common(struct recorder *r, struct perf_event_attr *a, int first)
{
	const struct record_opts *o = r->opts;

	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (o->callgraph == RECORD_CG_FP)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (o->callgraph == RECORD_CG_DWARF) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
				  PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = X86_64_USER_REGS;
		a->sample_stack_user = o->stack_size;
		a->exclude_callchain_user = 1;	/* the stack copy replaces the fp chain */
	}
	if (o->memory && !(a->sample_type & PERF_SAMPLE_REGS_USER)) {
		/* the allocation events' arguments; every event keeps one record layout */
		a->sample_type |= PERF_SAMPLE_REGS_USER;
		a->sample_regs_user = X86_64_USER_REGS;
	}
	if (o->period) {
		a->freq = 0;
		a->sample_period = o->period;
	} else {
		a->freq = 1;
		a->sample_freq = o->freq;
	}
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->inherit = 1;
	if (o->pids) {
		/* running already: counting starts when the counter is opened */
		a->disabled = 0;
		a->enable_on_exec = 0;
	} else {
		a->disabled = 1;
		a->enable_on_exec = 1;
	}
	if (r->py_wakeup && !r->pb) {
		/* Python stacks are read when the sample is in: wake up for each one */
		a->watermark = 0;
		a->wakeup_events = 1;
	} else {
		a->watermark = 1;
	}
	if (first) {
		a->mmap = 1;
		a->mmap2 = 1;
		a->build_id = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		a->context_switch = 1;
	}
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
static uint64_t elf_func_offset(const char *path, const char *sym)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct func_named fn = { NULL, sym, 0 };
	uint64_t addr, off = 0;
	size_t nph = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	fn.e = elf_begin(fd, ELF_C_READ, NULL);
	elf_each_func(fn.e, func_named, &fn);
	addr = fn.addr;
	if (fn.e && addr && !elf_getphdrnum(fn.e, &nph))
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(fn.e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_filesz) {
				off = addr - ph.p_vaddr + ph.p_offset;
				break;
			}
		}
	if (fn.e)
		elf_end(fn.e);
	close(fd);
	return off;
}

/*
 * --memory's uprobes are trace events made through tracefs (as perf probe makes them),
 * group "dlprof_PID": an event of the uprobe PMU would be simpler, but the kernel copies
 * its path from the memory of whichever task inherits it (a workload's new thread gets
 * no event), while a trace event is inherited like any other.
 */
static const char *tracefs_dir(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char p[64];

		snprintf(p, sizeof(p), "%s/uprobe_events", dirs[i]);
		if (!access(p, W_OK))
			return dirs[i];
	}
	/* not mounted: mount it where it belongs (root only, as uprobes are) */
	if (!mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) &&
	    !access("/sys/kernel/tracing/uprobe_events", W_OK))
		return "/sys/kernel/tracing";
	return NULL;
}

static int write_uprobe_events(const char *dir, const char *line)
{
	char p[64];
	int fd, ret = 0;

	snprintf(p, sizeof(p), "%s/uprobe_events", dir);
	fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, strlen(line)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Remove the uprobes of dlprof processes that are gone (a recorder that was killed). */
static void remove_stale_uprobes(const char *dir)
{
	struct strbuf sb = STRBUF_INIT;
	char p[64];

	snprintf(p, sizeof(p), "%s/uprobe_events", dir);
	if (strbuf_read_file(&sb, p, 1 << 16) < 0) {
		strbuf_release(&sb);
		return;
	}
	for (char *l = sb.buf, *nl; l && *l; l = nl) {
		char group[64], ev[64], cmd[160];
		int pid;

		nl = strchr(l, '\n');
		if (nl)
			*nl++ = 0;
		/* "p:dlprof_123/alloc /path:0x..." */
		if (sscanf(l, "p:%63[^/]/%63s", group, ev) == 2 &&
		    sscanf(group, "dlprof_%d", &pid) == 1 && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH) {
			snprintf(cmd, sizeof(cmd), "-:%s/%s\n", group, ev);
			write_uprobe_events(dir, cmd);
		}
	}
	strbuf_release(&sb);
}

/* Make the uprobe dlprof_PID/NAME at path:offset; its tracepoint id, or -errno. */
static long make_uprobe(const char *dir, const char *name, const char *path, uint64_t off)
{
	struct strbuf sb = STRBUF_INIT;
	char *line = xasprintf("p:dlprof_%d/%s %s:0x%llx\n", (int)getpid(), name, path,
			       (unsigned long long)off);
	char *idp;
	long id = -ENOENT;
	int ret = write_uprobe_events(dir, line);

	free(line);
	if (ret < 0)
		return ret;
	idp = xasprintf("%s/events/dlprof_%d/%s/id", dir, (int)getpid(), name);
	if (strbuf_read_file(&sb, idp, 32) >= 0 && sb.len)
		id = strtol(sb.buf, NULL, 10);
	free(idp);
	strbuf_release(&sb);
	return id;
}

static void remove_mem_uprobes(struct recorder *r)
{
	static const char *const names[3] = { "alloc", "free", "wait" };

	if (!r->mem_tracefs)
		return;
	for (int i = 0; i < 3; i++)
		if (r->mem_probe[i]) {
			char line[64];

			snprintf(line, sizeof(line), "-:dlprof_%d/%s\n", (int)getpid(), names[i]);
			write_uprobe_events(r->mem_tracefs, line);
			r->mem_probe[i] = 0;
		}
}

/*
 * --memory: the allocation and free events, uprobes on the preloaded library's
 * functions (memevent.h), sampled every time they are hit, and the wait event, which
 * only wakes the recorder (its samples are not written, nor its event).  The free and
 * wait events copy no stack worth the name (8 bytes: the records keep the layout of the
 * first event's).  Returns 0, or the exit status on error (printed).
 */
static int add_mem_events(struct recorder *r, int *kernel_dropped)
{
	static const char *const names[3] = { "mem-alloc", "mem-free", "mem-wait" };
	static const char *const funcs[3] = { MEM_ALLOC_FUNC, MEM_FREE_FUNC, MEM_WAIT_FUNC };
	static const char *const probes[3] = { "alloc", "free", "wait" };

	if (r->opts->pids)
		return error("--memory needs a command to start: the allocator it samples is "
			     "preloaded (-p cannot attach it to a running process)"), 64;
	r->mem_lib = dlprof_libfile(MEM_LIBRARY);
	if (!r->mem_lib) {
		char *where = dlprof_libfile_places();

		error("--memory: %s is missing (looked in %s); build it with 'make' in dlprof's "
		      "source tree, or 'make install'", MEM_LIBRARY, where);
		free(where);
		return 2;
	}
	r->mem_tracefs = tracefs_dir();
	if (!r->mem_tracefs)
		return error("--memory: no tracefs to make uprobes in (/sys/kernel/tracing: "
			     "root, and a kernel with CONFIG_UPROBE_EVENTS)"), 2;
	remove_stale_uprobes(r->mem_tracefs);
	for (int i = 0; i < 3; i++) {
		struct rec_event *e;
		long id;
		int ret;

		r->mem_off[i] = elf_func_offset(r->mem_lib, funcs[i]);
		if (!r->mem_off[i])
			return error("--memory: no function %s in %s", funcs[i], r->mem_lib), 2;
		id = make_uprobe(r->mem_tracefs, probes[i], r->mem_lib, r->mem_off[i]);
		if (id < 0)
			return error("--memory: cannot make a uprobe on %s:%s in %s/uprobe_events: %s",
				     r->mem_lib, funcs[i], r->mem_tracefs, strerror((int)-id)), 2;
		r->mem_probe[i] = 1;
		if (r->nr_ev == MAX_EVENTS)
			return error("too many events (at most %d)", MAX_EVENTS), 64;
		e = &r->ev[r->nr_ev];
		memset(e, 0, sizeof(*e));
		attr_common(r, &e->attr, 0);
		e->attr.type = PERF_TYPE_TRACEPOINT;
		e->attr.config = (uint64_t)id;
		e->attr.freq = 0;
		e->attr.sample_period = 1;
		if (i && (e->attr.sample_type & PERF_SAMPLE_STACK_USER))
			e->attr.sample_stack_user = 8;
		if (i == 2) {
			/* a thread waits for the drain: now */
			e->attr.watermark = 0;
			e->attr.wakeup_events = 1;
		} else {
			/* allocations and frees wake nobody (the ring's watermark, set with
			 * the others'): read with the rest, or at once when a thread waits */
			e->attr.watermark = 1;
			e->attr.wakeup_watermark = 0;
		}
		e->mem = i == 2 ? MEM_EV_WAIT : i ? MEM_EV_FREE : MEM_EV_ALLOC;
		ret = event_probe(&e->attr, kernel_dropped);
		if (ret < 0) {
			error("--memory: cannot open a uprobe on %s:%s: %s%s", r->mem_lib, funcs[i],
			      strerror(-ret), ret == -EACCES || ret == -EPERM ?
			      " (uprobes need root or CAP_PERFMON)" : "");
			return 2;
		}
		snprintf(e->name, sizeof(e->name), "%s", names[i]);
		r->nr_ev++;
	}
	return 0;
}

/*
 * Split opts->events and resolve every name, then probe each: an unknown name is
 * reported before any event fails to open (-e cycles,bogus names bogus, not the
 * missing PMU).  Returns 0, or the exit status on error.
 */
static int setup_events(struct recorder *r)
{
	const char *list = r->opts->events ? r->opts->events : "cycles";
	int kernel_dropped = 0;
	char *copy = xstrdup(list), *save = NULL, *name;
	char *names[MAX_EVENTS];

	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		struct rec_event *e;
		int ret;

		if (r->nr_ev == MAX_EVENTS) {
			free(copy);
			return error("too many events (at most %d)", MAX_EVENTS), 64;
		}
		e = &r->ev[r->nr_ev];
		memset(e, 0, sizeof(*e));
		ret = event_resolve(name, &e->attr);
		if (ret == EVENT_UNKNOWN) {
			error("unknown event '%s'", name);
			free(copy);
			return 2;
		}
		if (ret < 0) {
			free(copy);
			return 2;
		}
		names[r->nr_ev++] = name;
	}
	for (int i = 0; i < r->nr_ev; i++) {
		struct rec_event *e = &r->ev[i];
		int ret;

		name = names[i];
		attr_common(r, &e->attr, i == 0);
		ret = event_probe(&e->attr, &kernel_dropped);
		if (ret < 0 && !r->opts->events && !strcmp(name, "cycles")) {
			snprintf(r->fallback_note, sizeof(r->fallback_note),
				 "no hardware PMU available (cycles: %s); sampling cpu-clock instead",
				 strerror(-ret));
			name = "cpu-clock";
			memset(&e->attr, 0, sizeof(e->attr));
			event_resolve(name, &e->attr);
			attr_common(r, &e->attr, i == 0);
			ret = event_probe(&e->attr, &kernel_dropped);
		}
		if (ret < 0) {
			event_open_error(name, ret);
			free(copy);
			return 2;
		}
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	free(copy);
	if (!r->nr_ev)
		return error("no event given"), 64;
	/* by default not for a Python target whose stacks are read from outside: record
	 * wakes at each of its samples then, each wake-up preempts a workload thread on a
	 * busy machine, and those preemptions (our own doing) would be most of its
	 * switch-outs (CNN: 17k samples with them against 9.5k, the run time the same);
	 * read in the kernel (pybpf.h), nothing wakes */
	if (r->opts->off_cpu == 1 || (r->opts->off_cpu == 2 && !(r->py_wakeup && !r->pb))) {
		/* where threads block: every switch-out, with its stack (report and fold
		 * --off-cpu weight it by the time until the thread runs again) */
		struct rec_event *e;
		int ret;

		if (r->nr_ev == MAX_EVENTS)
			return error("too many events (at most %d)", MAX_EVENTS), 64;
		e = &r->ev[r->nr_ev];
		memset(e, 0, sizeof(*e));
		e->attr.type = PERF_TYPE_SOFTWARE;
		e->attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		attr_common(r, &e->attr, 0);
		e->attr.freq = 0;
		e->attr.sample_period = 1;
		/* a switch-out wakes nobody: with Python's per-sample wake-ups, waking at
		 * each switch would make the switches it counts (and lose samples) */
		e->attr.watermark = 1;
		e->attr.wakeup_events = 0;
		e->off_cpu = 1;
		ret = event_probe(&e->attr, &kernel_dropped);
		if (ret < 0 && r->opts->off_cpu == 2) {
			;	/* by default only: left out */
		} else if (ret < 0) {
			event_open_error("context-switches", ret);
			return 2;
		} else {
			snprintf(e->name, sizeof(e->name), "%s", "context-switches");
			r->nr_ev++;
		}
	}
	if (r->opts->memory) {
		int ret = add_mem_events(r, &kernel_dropped);

		if (ret)
			return ret;
	}
	if (kernel_dropped)
		warning("kernel.perf_event_paranoid is %d: recording user space only",
			event_paranoid());
	return 0;
}

/* kernel.perf_event_max_sample_rate (the kernel may lower it while it runs) */
static unsigned long max_sample_rate(void)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned long v = (unsigned long)-1;

	if (strbuf_read_file(&sb, "/proc/sys/kernel/perf_event_max_sample_rate", 64) >= 0 &&
	    sb.len)
		v = strtoul(sb.buf, NULL, 10);
	strbuf_release(&sb);
	return v ? v : (unsigned long)-1;
}

static long mlock_kb(void)
{
	struct strbuf sb = STRBUF_INIT;
	long v = -1;

	if (strbuf_read_file(&sb, "/proc/sys/kernel/perf_event_mlock_kb", 64) >= 0 && sb.len)
		v = strtol(sb.buf, NULL, 10);
	strbuf_release(&sb);
	return v;
}

static size_t default_pages(const struct record_opts *o)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = o->callgraph == RECORD_CG_DWARF ? (8u << 20) : (512u << 10);

	if (o->mmap_pages)
		return o->mmap_pages;
	return bytes / psz;
}

static void pb_attach(struct recorder *r, int base);

static int open_events(struct recorder *r, pid_t pid)
{
	size_t pages = default_pages(r->opts);
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	int shrunk = 0;

	r->nr_fds = r->nr_ev * r->nr_cpus;
	ALLOC_GROW(r->fds, (size_t)r->nr_fds, r->alloc_fds);
	for (int i = 0; i < r->nr_fds; i++)
		r->fds[i] = -1;
	r->rings = xcalloc((size_t)r->nr_cpus, sizeof(struct ring));
	for (int e = 0; e < r->nr_ev; e++) {
		ALLOC_GROW(r->ev[e].ids, (size_t)r->nr_cpus, r->ev[e].alloc_ids);
		if (r->ev[e].attr.watermark)
			r->ev[e].attr.wakeup_watermark = (uint32_t)(pages * psz / WAKE_DIV);
	}

	for (int c = 0; c < r->nr_cpus; c++) {
		for (int e = 0; e < r->nr_ev; e++) {
			struct rec_event *ev = &r->ev[e];
			int fd = event_open(&ev->attr, pid, r->cpus[c], -1, PERF_FLAG_FD_CLOEXEC);
			uint64_t id;

			if (fd < 0) {
				event_open_error(ev->name, -errno);
				return -1;
			}
			r->fds[e * r->nr_cpus + c] = fd;
			if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
				return error("cannot get the id of event '%s': %s", ev->name,
					     strerror(errno));
			ev->ids[ev->nr_ids++] = id;
			if (e == 0) {
				while (ring_mmap(&r->rings[c], fd, pages) < 0) {
					if ((errno != EPERM && errno != ENOMEM) || pages <= 8)
						return error("cannot map the ring buffer of cpu %d: %s "
							     "(kernel.perf_event_mlock_kb is %ld: raise it with "
							     "'sysctl -w kernel.perf_event_mlock_kb=%zu', or RLIMIT_MEMLOCK)",
							     r->cpus[c], strerror(errno), mlock_kb(),
							     default_pages(r->opts) * psz / 1024 + psz / 1024);
					/*
					 * A smaller ring needs a smaller wakeup watermark (the kernel
					 * clamps it to the whole ring: no wakeup before it is full,
					 * samples lost): open this cpu's event again with it.
					 */
					pages /= 2;
					shrunk = 1;
					for (int k = 0; k < r->nr_ev; k++)
						if (r->ev[k].attr.watermark)
							r->ev[k].attr.wakeup_watermark =
								(uint32_t)(pages * psz / WAKE_DIV);
					close(fd);
					r->fds[c] = -1;
					fd = event_open(&ev->attr, pid, r->cpus[c], -1, PERF_FLAG_FD_CLOEXEC);
					if (fd < 0) {
						event_open_error(ev->name, -errno);
						return -1;
					}
					r->fds[c] = fd;
					if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
						return error("cannot get the id of event '%s': %s",
							     ev->name, strerror(errno));
					ev->ids[ev->nr_ids - 1] = id;
				}
				if (r->opts->callgraph == RECORD_CG_DWARF &&
				    pages * psz < (size_t)r->opts->stack_size + 1024)
					return error("a ring of %zu KiB cannot hold one sample with %u "
						     "bytes of stack: use --call-graph dwarf=%zu or raise "
						     "kernel.perf_event_mlock_kb", pages * psz / 1024,
						     r->opts->stack_size, pages * psz / 2);
			} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fds[c]) < 0) {
				return error("cannot redirect event '%s' to the ring of cpu %d: %s",
					     ev->name, r->cpus[c], strerror(errno));
			}
		}
	}
	if (shrunk) {
		snprintf(r->ring_note, sizeof(r->ring_note), "ring buffer limited to %zu KiB per "
			 "cpu (kernel.perf_event_mlock_kb is %ld, RLIMIT_MEMLOCK)", pages * psz / 1024,
			 mlock_kb());
		/* asked for with -m: said now; the default's ring is said only if it lost */
		if (r->opts->mmap_pages)
			warning("%s: samples may be lost at high rates", r->ring_note);
	}
	if (r->pb)
		pb_attach(r, 0);
	return 0;
}

/*
 * -p: counters on one more thread of a running process, one per event and cpu, each
 * writing into the ring of its cpu.  Returns 0, 1 when the thread is gone already, or
 * -1 (error printed).
 */
static int open_thread(struct recorder *r, pid_t tid)
{
	int base = r->nr_fds;

	r->nr_fds += r->nr_ev * r->nr_cpus;
	ALLOC_GROW(r->fds, (size_t)r->nr_fds, r->alloc_fds);
	for (int i = base; i < r->nr_fds; i++)
		r->fds[i] = -1;
	for (int e = 0; e < r->nr_ev; e++) {
		struct rec_event *ev = &r->ev[e];

		for (int c = 0; c < r->nr_cpus; c++) {
			int fd = event_open(&ev->attr, tid, r->cpus[c], -1, PERF_FLAG_FD_CLOEXEC);
			uint64_t id;

			if (fd < 0) {
				if (errno == ESRCH)
					return 1;
				event_open_error(ev->name, -errno);
				return -1;
			}
			r->fds[base + e * r->nr_cpus + c] = fd;
			if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
				return error("cannot get the id of event '%s': %s", ev->name,
					     strerror(errno));
			ALLOC_GROW(ev->ids, ev->nr_ids + 1, ev->alloc_ids);
			ev->ids[ev->nr_ids++] = id;
			if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fds[c]) < 0)
				return error("cannot redirect event '%s' to the ring of cpu %d: %s",
					     ev->name, r->cpus[c], strerror(errno));
		}
	}
	if (r->pb)
		pb_attach(r, base);
	return 0;
}

/*
 * -p: counters on every thread of the target processes.  Threads that start after
 * their creator has counters inherit them; the list is read again until it holds no
 * thread without, so none started in between is missed.  Returns 0 or -1.
 */
static int open_targets(struct recorder *r)
{
	int first = 1;

	for (int round = 0; round < 100; round++) {
		int added = 0;

		for (int t = 0; t < r->nr_targets; t++) {
			pid_t *tids;
			size_t nr = attach_list_tids(r->targets[t], &tids);

			for (size_t i = 0; i < nr; i++) {
				int ret;

				if (u64set_has(&r->tids_open, (uint64_t)tids[i]))
					continue;
				if (first)
					ret = open_events(r, tids[i]);
				else
					ret = open_thread(r, tids[i]);
				if (ret < 0) {
					free(tids);
					return -1;
				}
				first = 0;
				u64set_add(&r->tids_open, (uint64_t)tids[i]);
				added++;
			}
			free(tids);
		}
		if (first)
			return error("the processes to attach to have ended"), -1;
		if (!added)
			return 0;
	}
	return error("the threads of the processes to attach to keep changing"), -1;
}

static void close_events(struct recorder *r)
{
	if (r->fds)
		for (int i = 0; i < r->nr_fds; i++)
			if (r->fds[i] >= 0)
				close(r->fds[i]);
	if (r->rings)
		for (int c = 0; c < r->nr_cpus; c++)
			ring_release(&r->rings[c]);
	free(r->fds);
	free(r->rings);
	r->fds = NULL;
	r->rings = NULL;
	r->nr_fds = r->alloc_fds = 0;
}

/* Thread t's CPU time so far */
static uint64_t thread_cpu_ns(pthread_t t)
{
	clockid_t c;

	return pthread_getcpuclockid(t, &c) ? 0 : clock_ns(c);
}

static int write_attrs(struct recorder *r)
{
	for (int e = 0; e < r->nr_ev; e++) {
		struct rec_event *ev = &r->ev[e];
		struct dlp_attr_rec h;
		struct strbuf sb = STRBUF_INIT;
		int ret;

		if (ev->mem == MEM_EV_WAIT)
			continue;	/* it wakes record, nothing of it is written */
		memset(&h, 0, sizeof(h));
		h.attr_size = sizeof(ev->attr);
		h.nr_ids = (uint32_t)ev->nr_ids;
		snprintf(h.name, sizeof(h.name), "%s", ev->name);
		strbuf_add(&sb, &ev->attr, sizeof(ev->attr));
		strbuf_add(&sb, ev->ids, ev->nr_ids * sizeof(uint64_t));
		if (r->ru) {
			struct strbuf all = STRBUF_INIT;

			strbuf_add(&all, &h, sizeof(h));
			strbuf_add(&all, sb.buf, sb.len);
			ret = recunw_attr(r->ru, all.buf, all.len);
			strbuf_release(&all);
		} else {
			ret = recwriter_add2(r->w, DLP_REC_ATTR, &h, sizeof(h), sb.buf, sb.len);
		}
		strbuf_release(&sb);
		if (ret < 0)
			return -1;
	}
	return 0;
}

/* ---- the drain: one callback per perf record ---- */

/* Write a record of the run: through the unwinding thread when there is one (it writes
 * in the order records come), else directly. */
static void rec_put(struct recorder *r, uint32_t type, const void *a, size_t alen,
		    const void *b, size_t blen)
{
	if (r->ru)
		recunw_add(r->ru, type, a, alen, b, blen);
	else if (!r->write_failed && recwriter_add2(r->w, type, a, alen, b, blen) < 0)
		r->write_failed = 1;
}

/* All of the run's records written (the unwinding thread done): what follows is written
 * directly. */
static void rec_put_done(struct recorder *r)
{
	if (!r->ru)
		return;
	if (recunw_finish(r->ru, &r->ru_st) < 0)
		r->write_failed = 1;
	r->ru = NULL;
}
static void note_kernel_ips(struct recorder *r, uint16_t cpumode, uint64_t ip,
			    const uint64_t *chain, uint64_t nr)
{
	uint64_t ctx = 0;

	if (cpumode == PERF_RECORD_MISC_KERNEL)
		u64set_add(&r->kaddrs, ip);
	for (uint64_t i = 0; i < nr; i++) {
		if (chain[i] >= (uint64_t)PERF_CONTEXT_MAX) {
			ctx = chain[i];
			continue;
		}
		if (ctx == (uint64_t)PERF_CONTEXT_KERNEL)
			u64set_add(&r->kaddrs, chain[i]);
	}
}

/*
 * The kernel copies a thread's stack from sp upwards until the requested size or the
 * first unreadable page.  Above a glibc thread's stack lie its static TLS and struct
 * pthread (the TCB, at the top of the stack block), and above the block whatever
 * mapping happens to be adjacent: when that is readable, the copy runs on through bytes
 * no unwinder needs (measured: a torch worker thread's copies grew from ~5 KB to ~30 KB
 * per sample in the runs where ASLR put a mapping right above its stack, doubling the
 * file).  The TCB starts with tcbhead_t on x86-64: header.tcb (offset 0) and
 * header.self (offset 16) both hold the TCB's own address, and struct pthread is
 * 64-byte aligned.  No stack frame lies at or above it, so the copy is cut at the
 * lowest 64-aligned address A holding A at A and A + 16 (a main thread's TCB is not on
 * its stack: nothing is cut there).  Returns the bytes to keep of the len copied.
 */
/* Does the copy hold a TCB at off (address addr): addr at off and at off + 16?  (The
 * copy has 24 bytes at off.) */
static int tcb_at(const unsigned char *stack, size_t off, uint64_t addr)
{
	uint64_t v, self;

	memcpy(&v, stack + off, 8);
	if (v != addr)
		return 0;
	memcpy(&self, stack + off + 16, 8);
	return self == addr;
}

static uint64_t stack_end_at_tcb(const unsigned char *stack, size_t len, uint64_t sp,
				 uint64_t from)
{
	size_t off = (size_t)(-sp & 63);

	if (from > sp + off)	/* (from - sp, up to the next 64-aligned address) */
		off = (size_t)(((from + 63) & ~(uint64_t)63) - sp);
	for (; off + 24 <= len; off += 64)
		if (tcb_at(stack, off, sp + off))
			return off;
	return len;
}

/*
 * The same, remembering per thread what the scans found (r->tcb_at: tid -> its TCB's
 * address, or bit 0 set: no TCB below that address), so that a thread's samples do not
 * each read their whole copy once more (that scan was 7% of record's CPU on the CNN, a
 * cache miss per 64 bytes of the ring): a known TCB inside the copy is checked where it
 * is (two words) and the copy cut there; a main thread's stack, with no TCB on it, is
 * scanned above the part scanned before only.  A tid's entry goes with its EXIT record
 * (a thread made later under the same tid starts afresh); a stale entry can only make a
 * copy longer, never cut one at a place that is not a TCB.
 */
static uint64_t stack_end(struct recorder *r, uint32_t tid, const unsigned char *stack,
			  size_t len, uint64_t sp)
{
	void **slot = u64map_slot(&r->tcb_at, tid);
	uint64_t known = (uintptr_t)*slot, end;

	if (known && !(known & 1)) {
		if (known < sp || known - sp + 24 > len)
			return len;	/* the copy ends below it */
		if (tcb_at(stack, (size_t)(known - sp), known))
			return known - sp;
		known = 0;		/* not there any more: scanned afresh */
	}
	end = stack_end_at_tcb(stack, len, sp, known & 1 ? known & ~(uint64_t)1 : 0);
	if (end < len)
		*slot = (void *)(uintptr_t)(sp + end);
	else if (len >= 24 && sp + len - 24 > (known & ~(uint64_t)1))
		*slot = (void *)(uintptr_t)((sp + len - 24) | 1);	/* scanned up to there */
	return end;
}

/*
 * Look into a sample: note kernel addresses, and in dwarf mode trim the stack copy.
 * Returns the record to write (rec itself, or r->scratch) or NULL when malformed; with
 * the unwinding thread a copy to cut is returned as rec, r->cut_* saying how.
 */
static const struct perf_event_header *sample_fixup(struct recorder *r,
						    const struct perf_event_header *rec)
{
	const unsigned char *p = (const void *)rec, *end = p + rec->size;
	const unsigned char *q = p + sizeof(*rec);
	uint64_t ip, nr = 0, abi, size, dyn, sp = 0;
	const uint64_t *chain = NULL;
	const struct perf_event_attr *a = &r->ev[0].attr;
	size_t regs, keep, head_len;

	r->cut_head = 0;
	/* IDENTIFIER, IP, TID, TIME, CPU, PERIOD: six u64 */
	if (end - q < 48)
		return NULL;
	memcpy(&ip, q + 8, 8);
	if ((rec->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
		uint32_t pid;

		memcpy(&pid, q + 16, 4);
		note_anon_ip(r, pid, ip);
	}
	q += 48;
	if (a->sample_type & PERF_SAMPLE_CALLCHAIN) {
		if (end - q < 8)
			return NULL;
		memcpy(&nr, q, 8);
		q += 8;
		if (nr > (uint64_t)(end - q) / 8)
			return NULL;
		chain = (const uint64_t *)q;
		q += nr * 8;
	}
	note_kernel_ips(r, rec->misc & PERF_RECORD_MISC_CPUMODE_MASK, ip, chain, nr);
	r->smp_stack = NULL;
	r->smp_regs = NULL;
	if (a->sample_type & PERF_SAMPLE_REGS_USER) {
		if (end - q < 8)
			return NULL;
		memcpy(&abi, q, 8);
		q += 8;
		regs = abi ? (size_t)__builtin_popcountll(a->sample_regs_user) : 0;
		if ((size_t)(end - q) < regs * 8)
			return NULL;
		if (regs)
			r->smp_regs = q;	/* for sample_args() */
		if (regs >= 8 && (a->sample_regs_user & 0xff) == 0xff)
			memcpy(&sp, q + 7 * 8, 8);	/* AX BX CX DX SI DI BP SP */
		q += regs * 8;
	}
	if (!(a->sample_type & PERF_SAMPLE_STACK_USER))
		return rec;

	if (end - q < 8)
		return NULL;
	memcpy(&size, q, 8);
	if (!size)
		return rec;
	if ((size_t)(end - q) < 16 || size > (uint64_t)(end - q) - 16)
		return NULL;
	memcpy(&dyn, q + 8 + size, 8);
	if (dyn > size)
		dyn = size;
	if (sp) {
		uint32_t tid;

		r->smp_stack = q + 8;	/* as the sample took it, for the Python check */
		r->smp_len = (size_t)dyn;
		r->smp_sp = sp;
		memcpy(&tid, p + sizeof(*rec) + 20, 4);	/* IDENTIFIER IP PID/TID */
		dyn = stack_end(r, tid, q + 8, (size_t)dyn, sp);
	}
	keep = (size_t)(dyn + 7) & ~(size_t)7;
	if (keep > size)
		keep = (size_t)size;
	if (keep == size)
		return rec;
	head_len = (size_t)(q - p);
	if (r->ru) {
		/* assembled as it is queued for the unwinding thread: one copy */
		r->cut_head = head_len;
		r->cut_keep = keep;
		r->cut_dyn = dyn;
		return rec;
	}
	/* header .. regs, then size=keep, keep bytes of stack, dyn_size */
	recunw_cut(r->scratch, rec, head_len, keep, dyn);
	return (const void *)r->scratch;
}

/* The event of this sample record (IDENTIFIER first), NULL when its id is unknown. */
static const struct rec_event *sample_event(const struct recorder *r, const unsigned char *p)
{
	uint64_t id;

	if (r->nr_ev < 2)
		return &r->ev[0];
	memcpy(&id, p + sizeof(struct perf_event_header), 8);
	for (int e = 0; e < r->nr_ev; e++)
		for (size_t i = 0; i < r->ev[e].nr_ids; i++)
			if (r->ev[e].ids[i] == id)
				return &r->ev[e];
	return NULL;
}

/* User register regno (PERF_REG_X86_*) of the sample sample_fixup() just read: 0, or -1
 * when the record has none. */
static int sample_reg(const struct recorder *r, int regno, uint64_t *v)
{
	uint64_t mask = r->ev[0].attr.sample_regs_user;

	if (!r->smp_regs || !(mask & (1ull << regno)))
		return -1;
	/* registers come in bit order */
	memcpy(v, r->smp_regs + 8 * __builtin_popcountll(mask & ((1ull << regno) - 1)), 8);
	return 0;
}

/* The user registers DI, SI, DX, CX of that sample (the arguments of the function a
 * uprobe hit).  Returns 0, or -1 when the record has none. */
static int sample_args(const struct recorder *r, uint64_t args[4])
{
	static const int want[4] = { MEM_REG_DI, MEM_REG_SI, MEM_REG_DX, MEM_REG_CX };

	for (int i = 0; i < 4; i++)
		if (sample_reg(r, want[i], &args[i]) < 0)
			return -1;
	return 0;
}

/* An alloc event that carries its thread's Python frames (memevent.h: R8 points at them
 * in the stack copy, R9 says how many): written as its Python stack.  0 when it carries
 * none (record reads them from outside then). */
static int mem_py_chain(struct recorder *r, uint32_t pid, uint32_t tid, uint64_t time,
			uint32_t *chain_id)
{
	static uint64_t chain[2 * MEM_PY_FRAMES];
	uint64_t at, n;

	if (sample_reg(r, MEM_REG_R8, &at) < 0 || sample_reg(r, MEM_REG_R9, &n) < 0 ||
	    !n || n > MEM_PY_FRAMES || !r->smp_stack || at < r->smp_sp ||
	    at - r->smp_sp > r->smp_len || r->smp_len - (at - r->smp_sp) < n * 16)
		return 0;
	memcpy(chain, r->smp_stack + (at - r->smp_sp), n * 16);
	return pyreader_sample_chain(r->py, pid, tid, time, chain, n, DLP_PYSTACK_OWN, chain_id);
}

static struct py_pub *py_pub_of(struct recorder *r, uint32_t pid)
{
	for (size_t i = 0; i < r->nr_py_pub; i++)
		if (r->py_pub[i].pid == pid)
			return &r->py_pub[i];
	ALLOC_GROW(r->py_pub, r->nr_py_pub + 1, r->alloc_py_pub);
	r->py_pub[r->nr_py_pub] = (struct py_pub){ pid, -1, 0 };
	return &r->py_pub[r->nr_py_pub++];
}

/* Empty entry slot of mem_shared.py (seq: odd while written) */
static void py_entry_clear(struct recorder *r, int slot)
{
	struct mem_pywalk *e = &r->mem_shared->py[slot];

	__atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&e->pid, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&e->seq, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < r->nr_py_pub; i++)
		if (r->py_pub[i].slot == slot)
			r->py_pub[i].slot = -1;
}

/* A Python process: tell the library there how its threads read their own frames at an
 * allocation (memevent.h), once it can (its thread-state key is set a little after start:
 * tried again at most every 10 ms).  With more processes than entries, the oldest gives
 * its entry up (its allocations' frames are read from outside then). */
static void py_publish(struct recorder *r, uint32_t pid)
{
	struct py_pub *pp = py_pub_of(r, pid);
	struct pywalk_info wi;
	struct mem_pywalk *e;
	uint64_t now;
	int slot = -1;

	if (pp->slot >= 0)
		return;
	now = now_ns();
	if (pp->tried && now - pp->tried < 10000000ull)
		return;
	pp->tried = now;
	if (!pyreader_walk_info(r->py, pid, &wi))
		return;
	for (int i = 0; i < MEM_PY_PROCS && slot < 0; i++)
		if (!__atomic_load_n(&r->mem_shared->py[i].pid, __ATOMIC_RELAXED))
			slot = i;
	if (slot < 0) {
		slot = (int)(r->py_pub_next++ % MEM_PY_PROCS);
		py_entry_clear(r, slot);
	}
	e = &r->mem_shared->py[slot];
	__atomic_add_fetch(&e->seq, 1, __ATOMIC_ACQ_REL);	/* odd: being written */
	e->tss = wi.tss;
	e->interp = wi.interp;
	e->ts_interp = wi.ts_interp;
	e->ts_tid = wi.ts_tid;
	e->ts_frame = wi.ts_frame;
	e->cf_current = wi.cf_current;
	e->fr_code = wi.fr_code;
	e->fr_previous = wi.fr_previous;
	e->fr_instr = wi.fr_instr;
	e->fr_owner = wi.fr_owner;
	e->fr_is_entry = wi.fr_is_entry;
	__atomic_store_n(&e->pid, pid, __ATOMIC_RELEASE);
	__atomic_add_fetch(&e->seq, 1, __ATOMIC_RELEASE);
	pp->slot = slot;
}

/* pid exec'd: its entry named the image before */
static void py_unpublish(struct recorder *r, uint32_t pid)
{
	for (size_t i = 0; i < r->nr_py_pub; i++)
		if (r->py_pub[i].pid == pid) {
			if (r->py_pub[i].slot >= 0)
				py_entry_clear(r, r->py_pub[i].slot);
			r->py_pub[i].tried = 0;
		}
}

/* ---- Python stacks read in the kernel (pybpf.h) ---- */

#define PB_LIST_NS	10000000ull	/* a process's threads listed at most this often */
#define PB_JOIN_NS	50000ull	/* a chain and its sample are this close at most (the
					   program runs right after the sample's time is taken:
					   measured 0.1-0.4 us; in 1 sample of ~3,000, on this
					   VM guest, 51-52 us after: pb_join_after) */
#define PB_JOIN_MAX_NS	1000000ull	/* ... after it, at most (half a period, below) */
#define PB_TURNS	3		/* drains a sample or a chain waits for the other */
#define PB_FAST_NS	2000000000ull	/* a new Python process's quick reads, at most */
#define PB_HOT_NS	50000000ull	/* quick reads after new code objects were met */
#define PB_START_NS	500000000ull	/* ... after a Python process's thread is listed */
#define PB_GONE		((void *)1)

/* Process pid's entry (listed 0 when new) */
static struct pb_proc *pb_proc_of(struct recorder *r, uint32_t pid)
{
	for (size_t i = 0; i < r->nr_pb_procs; i++)
		if (r->pb_procs[i].pid == pid)
			return &r->pb_procs[i];
	ALLOC_GROW(r->pb_procs, r->nr_pb_procs + 1, r->alloc_pb_procs);
	r->pb_procs[r->nr_pb_procs] = (struct pb_proc){ pid, 0 };
	return &r->pb_procs[r->nr_pb_procs++];
}

/* Put pid's Python threads in the program's map (at most every PB_LIST_NS). */
static void pb_list(struct recorder *r, uint32_t pid)
{
	struct pyreader_thread th[256];
	struct pywalk_info wi;
	struct pb_proc *pp = pb_proc_of(r, pid);
	uint64_t now = now_ns();
	size_t n;

	if (pp->listed && now - pp->listed < PB_LIST_NS)
		return;
	pp->listed = now;
	n = pyreader_threads(r->py, pid, th, ARRAY_SIZE(th), &wi);
	for (size_t i = 0; i < n; i++) {
		struct pybpf_thread t = {
			.tstate = th[i].tstate,
			.ts_frame = wi.ts_frame,
			.cf_current = wi.cf_current,
			.ts_tid = wi.ts_tid,
			.layout = wi.frame,
		};

		if ((uintptr_t)u64map_get(&r->pb_tids, th[i].tid) > 1)
			continue;
		/* read from the first sample after its entry is in the map (a sample taken
		 * between `now` and the update had no chain: one a run, counted as lost) */
		if (!pybpf_set_thread(r->pb, th[i].tid, &t)) {
			u64map_put(&r->pb_tids, th[i].tid, (void *)(uintptr_t)now_ns());
			/* listed: the quick reads that waited for it end (the main loop, seeing
			 * the new Python process only now, must not start them again: they
			 * went on for 2 s, 1,000 wake-ups of record, each a context switch of
			 * the workload on a busy machine); where the program does not read
			 * code objects itself, a new process's first imports are read quickly
			 * (PB_START_NS), then while new code keeps coming */
			r->py_fast_until = 0;
			r->py_seen = pyreader_active(r->py);
			if (pybpf_codes_off(r->pb) && r->pb_hot_until < now_ns() + PB_START_NS)
				r->pb_hot_until = now_ns() + PB_START_NS;
		}
	}
}

/* The program no longer reads tid (it ended, exec'd, or its state is not the one listed:
 * listed again when it shows up) */
static void pb_forget(struct recorder *r, uint32_t tid)
{
	if ((uintptr_t)u64map_get(&r->pb_tids, tid) <= 1)
		return;
	pybpf_drop_thread(r->pb, tid);
	u64map_put(&r->pb_tids, tid, PB_GONE);
}

static void pb_got_chain(void *ctx, uint32_t tid, uint64_t time, const uint64_t *chain,
			 uint32_t n, int failed)
{
	struct recorder *r = ctx;
	struct pb_chain *c;

	ALLOC_GROW(r->pb_chains, r->nr_pb_chains + 1, r->alloc_pb_chains);
	c = &r->pb_chains[r->nr_pb_chains++];
	c->tid = tid;
	c->n = n;
	c->time = time;
	c->failed = failed;
	c->turns = 0;
	c->chain = xmalloc(n ? n * 16 : 1);
	memcpy(c->chain, chain, n * 16);
}

static int pb_chain_cmp(const void *a, const void *b)
{
	const struct pb_chain *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static void pb_got_code(void *ctx, const struct pybpf_code *code)
{
	struct recorder *r = ctx;

	pyreader_kernel_code(r->py, code);
}

/* The chains the program wrote since the last look, sorted by thread, then time (the
 * code objects it read, to the Python reader as they come: before their chains). */
static void pb_fetch(struct recorder *r)
{
	if (pybpf_drain(r->pb, pb_got_chain, pb_got_code, r))
		qsort(r->pb_chains, r->nr_pb_chains, sizeof(r->pb_chains[0]), pb_chain_cmp);
}

/* The chain of thread tid's sample at time: the same thread, the closest time (the
 * program runs as the sample is taken, before it is written); NULL when none is in. */
static struct pb_chain *pb_find(struct recorder *r, uint32_t tid, uint64_t time)
{
	struct pb_chain *best = NULL;
	uint64_t best_d = PB_JOIN_NS + 1;
	size_t lo = 0, hi = r->nr_pb_chains;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pb_chain *c = &r->pb_chains[mid];

		if (c->tid < tid || (c->tid == tid && c->time < time))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the neighbours either side, past the ones already taken */
	for (size_t k = lo; k-- > 0 && r->pb_chains[k].tid == tid;) {
		struct pb_chain *c = &r->pb_chains[k];

		if (!c->chain)
			continue;
		if (time - c->time < best_d) {
			best = c;
			best_d = time - c->time;
		}
		break;
	}
	/* a chain after the sample: the program ran late (a guest's CPU held up in the
	 * sample's interrupt): up to half the sampling period after it */
	for (size_t k = lo; k < r->nr_pb_chains && r->pb_chains[k].tid == tid; k++) {
		struct pb_chain *c = &r->pb_chains[k];

		if (!c->chain)
			continue;
		if (c->time - time < best_d || (!best && c->time - time <= r->pb_join_after))
			best = c;
		break;
	}
	return best;
}

/* Sample (pid, tid, time) gets chain c: its Python stack, with chain_id named by the
 * sample's own record (pyreader_sample_chain), else a record of its own. */
static void pb_take(struct recorder *r, struct pb_chain *c, uint32_t pid, uint32_t tid,
		    uint64_t time, uint32_t *chain_id)
{
	if (c->failed) {
		pyreader_sample_chain(r->py, pid, tid, time, NULL, 0, 0, chain_id);
	} else {
		pyreader_chain_read_at(r->py, c->time);
		pyreader_sample_chain(r->py, pid, tid, time, c->chain, c->n, DLP_PYSTACK_KERNEL,
				      chain_id);
	}
	free(c->chain);
	c->chain = NULL;
}

/* A sample of a thread the program reads (taken since it does): its chain is in (it is
 * written before the sample), or comes in a later drain: the sample waits then.  Returns
 * 0 when the thread is not read in the kernel. */
static int pb_sample(struct recorder *r, uint32_t pid, uint32_t tid, uint64_t time,
		     uint32_t *chain_id)
{
	uintptr_t since = (uintptr_t)u64map_get(&r->pb_tids, tid);
	struct pb_chain *c;

	if (since <= 1 || time < since)
		return 0;
	c = pb_find(r, tid, time);
	if (!c) {
		pb_fetch(r);
		c = pb_find(r, tid, time);
	}
	if (c) {
		pb_take(r, c, pid, tid, time, chain_id);
		return 1;
	}
	ALLOC_GROW(r->pb_wait, r->nr_pb_wait + 1, r->alloc_pb_wait);
	r->pb_wait[r->nr_pb_wait++] = (struct pb_wait){ pid, tid, time, 0 };
	return 1;
}

/* After a drain: the samples whose chain had not come joined to it; what waited too
 * long goes (a sample without a chain keeps its native stack, counted, and its thread is
 * listed again: its state may have changed), and so do chains whose sample never came. */
static void pb_match(struct recorder *r, int last)
{
	struct pyreader_stats st;
	size_t w = 0;

	pb_fetch(r);
	for (size_t i = 0; i < r->nr_pb_wait; i++) {
		struct pb_wait *sw = &r->pb_wait[i];
		struct pb_chain *c = pb_find(r, sw->tid, sw->time);

		if (c) {
			pb_take(r, c, sw->pid, sw->tid, sw->time, NULL);
		} else if (last || ++sw->turns >= PB_TURNS) {
			r->pb_unmatched++;
			pb_forget(r, sw->tid);
			pb_list(r, sw->pid);
		} else {
			r->pb_wait[w++] = *sw;
		}
	}
	r->nr_pb_wait = w;
	w = 0;
	for (size_t k = 0; k < r->nr_pb_chains; k++) {
		struct pb_chain *c = &r->pb_chains[k];

		if (c->chain && (last || ++c->turns >= PB_TURNS)) {
			free(c->chain);	/* its sample never came (not ours to read) */
			c->chain = NULL;
		}
		if (c->chain)
			r->pb_chains[w++] = *c;
	}
	r->nr_pb_chains = w;
	/* code objects read from outside for the first time since the last drain (as its
	 * chains were joined, or here; where the program reads them at the sample, those it
	 * could not): an import, code being made; a module's code goes when its import is
	 * over, so it must be read soon: the drains come soon while new ones keep coming
	 * (PB_HOT_NS after the last: one quick drain that finds none says little) */
	pyreader_get_stats(r->py, &st);
	if (st.codes_outside != r->pb_codes) {
		r->pb_codes = st.codes_outside;
		r->pb_hot_until = now_ns() + PB_HOT_NS;
	}
}

/* Run the program on the sampling events among fds[base...] (not the switch-outs, not
 * the allocation uprobes).  Where the kernel will not, Python stacks are read from
 * outside, and late: said once. */
static void pb_attach(struct recorder *r, int base)
{
	r->pb_join_after = PB_JOIN_MAX_NS;
	for (int e = 0; r->pb && e < r->nr_ev; e++) {
		const struct perf_event_attr *a = &r->ev[e].attr;
		uint64_t period = 0;

		if (r->ev[e].off_cpu || r->ev[e].mem)
			continue;
		/* a thread's samples of this event come a period apart at least (a clock's
		 * period is in ns; other events' nominal rate, with -F) */
		if (a->freq && a->sample_freq)
			period = 1000000000ull / a->sample_freq;
		else if (a->type == PERF_TYPE_SOFTWARE && (a->config == PERF_COUNT_SW_CPU_CLOCK ||
							   a->config == PERF_COUNT_SW_TASK_CLOCK))
			period = a->sample_period;
		if (!period)
			r->pb_join_after = PB_JOIN_NS;	/* unknown: only the close ones */
		else if (period / 2 < r->pb_join_after)
			r->pb_join_after = period / 2 > PB_JOIN_NS ? period / 2 : PB_JOIN_NS;
		for (int c = 0; c < r->nr_cpus; c++) {
			int ret = pybpf_attach(r->pb, r->fds[base + e * r->nr_cpus + c]);

			if (ret < 0) {
				warning("cannot run the Python stack reader on '%s' (%s): Python "
					"stacks are read from outside, late", r->ev[e].name,
					strerror(-ret));
				pybpf_free(r->pb);
				r->pb = NULL;
				r->pb_why = "the kernel would not run it on the events";
				break;
			}
		}
	}
}

static struct mem_proc *mem_proc(struct recorder *r, uint32_t pid)
{
	for (size_t i = r->nr_mem_procs; i-- > 0;)
		if (r->mem_procs[i].pid == pid)
			return &r->mem_procs[i];
	ALLOC_GROW(r->mem_procs, r->nr_mem_procs + 1, r->alloc_mem_procs);
	memset(&r->mem_procs[r->nr_mem_procs], 0, sizeof(struct mem_proc));
	r->mem_procs[r->nr_mem_procs].pid = pid;
	return &r->mem_procs[r->nr_mem_procs++];
}

/* --memory: count the events; a process's exit statistics are noted */
static void note_mem_sample(struct recorder *r, const struct rec_event *ev,
			    const struct perf_event_header *rec)
{
	uint64_t args[4];

	if (ev->mem == MEM_EV_FREE) {
		r->mem_frees++;
		return;
	}
	r->mem_alloc_events++;
	if (r->mem_shared)	/* drained: one more may come */
		__atomic_add_fetch(&r->mem_shared->consumed, 1, __ATOMIC_RELEASE);
	if (!sample_args(r, args) && args[3] == MEM_KIND_STATS) {
		uint32_t pid;
		struct mem_proc *mp;

		memcpy(&pid, (const char *)rec + sizeof(*rec) + 16, 4);
		mp = mem_proc(r, pid);
		mp->stats = 1;
		mp->calls = args[0];
		mp->bytes = args[1];
		mp->rss_anon = args[2];
		return;
	}
	r->mem_allocs++;
}

/* A process exec'd (or is attached to): its command line and rank, read while it runs
 * (a process already gone keeps only its comm). */
static void put_proc_info(struct recorder *r, uint32_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	int first = pid && pid == r->cmd_pid && !r->cmd_exec_seen;

	if (pid == r->cmd_pid)
		r->cmd_exec_seen = 1;
	if (!proc_info_rec((pid_t)pid, &sb)) {
		rec_put(r, DLP_REC_PROC, sb.buf, sb.len, NULL, 0);
	} else if (first) {
		/* the command, gone already: it ran what we started, as we started it */
		proc_info_rec_ours((pid_t)pid, (const char *const *)r->opts->argv, &sb);
		rec_put(r, DLP_REC_PROC, sb.buf, sb.len, NULL, 0);
	}
	strbuf_release(&sb);
}

static int on_record(void *ctx, const struct perf_event_header *rec)
{
	struct recorder *r = ctx;
	const unsigned char *p = (const void *)rec;
	const struct rec_event *ev;
	/* the sample's Python stack read as it was taken, when its own record names it */
	struct recunw_py py = { 0 };
	uint32_t *want_chain = r->ru ? &py.chain : NULL;
	unsigned unw_flags = 0;		/* RECUNW_* */

	switch (rec->type) {
	case PERF_RECORD_SAMPLE:
		rec = sample_fixup(r, rec);
		if (!rec)
			return 0;	/* malformed: not stored */
		ev = r->py || r->opts->memory ? sample_event(r, p) : NULL;
		if (ev && ev->mem == MEM_EV_WAIT) {
			r->mem_waits++;	/* it woke us: that was all */
			return 0;
		}
		r->samples++;
		if (ev && ev->mem)
			note_mem_sample(r, ev, (const void *)p);
		if (ev && ev->mem == MEM_EV_ALLOC && r->ru)
			unw_flags = RECUNW_WAIT;	/* its thread waits for us: unwound */
		/* not for a switch-out, nor a free (no stack worth the name) */
		if (r->py && ev && !ev->off_cpu && ev->mem != MEM_EV_FREE) {
			/* IDENTIFIER IP PID/TID TIME: read its thread's Python stack now */
			uint32_t pid, tid;
			uint64_t t;
			struct pychain_ref ref = { 0, 0 };

			memcpy(&pid, p + sizeof(*rec) + 16, 4);
			memcpy(&tid, p + sizeof(*rec) + 20, 4);
			memcpy(&t, p + sizeof(*rec) + 24, 8);
			py = (struct recunw_py){ 0, 0, pid, tid, t, DLP_PY_TRUSTED };
			if (ev->mem == MEM_EV_ALLOC && mem_py_chain(r, pid, tid, t, want_chain))
				py.flags = DLP_PYSTACK_OWN;	/* read by the allocating thread */
			else if (r->pb && !ev->mem && pb_sample(r, pid, tid, t, want_chain))
				py.flags = DLP_PYSTACK_KERNEL;	/* read in the kernel */
			else if (pyreader_sample(r->py, pid, tid, t, r->smp_stack, r->smp_len,
						 r->smp_sp, r->ru ? &ref : NULL)) {
				/* read now, from outside */
				py.chain = ref.chain;
				py.state = ref.state;
				if (r->mem_shared)
					py_publish(r, pid);
				if (r->pb)
					pb_list(r, pid);	/* a Python thread not read yet */
			}
		}
		break;
	case PERF_RECORD_LOST:
		if (rec->size >= sizeof(*rec) + 16) {
			uint64_t n;

			memcpy(&n, p + sizeof(*rec) + 8, 8);
			r->lost += n;
			r->lost_records++;
		}
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (rec->size >= sizeof(*rec) + 8) {
			uint64_t n;

			memcpy(&n, p + sizeof(*rec), 8);
			r->lost += n;
			r->lost_records++;
		}
		break;
	case PERF_RECORD_EXIT:
		if (rec->size >= sizeof(*rec) + 12) {
			uint32_t tid;

			memcpy(&tid, p + sizeof(*rec) + 8, 4);
			if (u64map_get(&r->tcb_at, tid))
				u64map_put(&r->tcb_at, tid, NULL);
			if (r->pb)
				pb_forget(r, tid);
		}
		break;
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
		if (rec->size >= sizeof(*rec) + 8) {
			uint32_t pid;

			memcpy(&pid, p + sizeof(*rec), 4);
			u64set_add(&r->pids, pid);
			if (rec->type == PERF_RECORD_COMM && (rec->misc & PERF_RECORD_MISC_COMM_EXEC))
				put_proc_info(r, pid);
			if (r->py && rec->type == PERF_RECORD_COMM &&
			    (rec->misc & PERF_RECORD_MISC_COMM_EXEC)) {
				pyreader_exec(r->py, pid);
				if (r->mem_shared)
					py_unpublish(r, pid);
				if (r->pb) {
					/* its one thread left: its state was the image's before */
					pb_forget(r, pid);
					pb_proc_of(r, pid)->listed = 0;
				}
			}
			if (r->opts->memory && rec->type == PERF_RECORD_COMM &&
			    (rec->misc & PERF_RECORD_MISC_COMM_EXEC) && rec->size >= sizeof(*rec) + 9) {
				struct mem_proc *mp = mem_proc(r, pid);
				size_t n = rec->size - sizeof(*rec) - 8;

				n = n < sizeof(mp->comm) - 1 ? n : sizeof(mp->comm) - 1;
				memcpy(mp->comm, p + sizeof(*rec) + 8, n);
				mp->comm[n] = 0;
			}
		}
		break;
	case PERF_RECORD_MMAP2:
		/* pid tid start len pgoff (maj min ino ino_gen | bid) prot flags filename */
		if (rec->size > sizeof(*rec) + 64) {
			uint32_t prot;
			const char *fn = (const char *)p + sizeof(*rec) + 64;
			size_t max = rec->size - sizeof(*rec) - 64;

			memcpy(&prot, p + sizeof(*rec) + 56, 4);
			if (!memchr(fn, '\0', max))
				break;
			if (prot & PROT_EXEC) {
				uint32_t pid;
				uint64_t start, len;
				int anon = !strcmp(fn, "//anon") || !strncmp(fn, "[anon", 5);

				memcpy(&pid, p + sizeof(*rec), 4);
				memcpy(&start, p + sizeof(*rec) + 8, 8);
				memcpy(&len, p + sizeof(*rec) + 16, 8);
				note_exec_map(r, pid, start, len, anon);
				if (anon)
					break;
			}
			if (fn[0] != '/')
				break;
			if (!r->dnnl_path && strstr(fn, "/libdnnl.so"))
				r->dnnl_path = xstrdup(fn);
			if (r->opts->memory && (prot & PROT_EXEC) && strstr(fn, "/" MEM_LIBRARY)) {
				uint32_t pid;

				memcpy(&pid, p + sizeof(*rec), 4);
				u64set_add(&r->mem_pids, pid);
			}
			if (strstr(fn, "/jit-") && strstr(fn, ".dump"))
				path_list_add(&r->jitdumps, fn);
			else if ((prot & PROT_EXEC) && !(rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID))
				path_list_add(&r->need_buildid, fn);
		}
		break;
	}
	if (rec->type == PERF_RECORD_SAMPLE && r->cut_head)
		recunw_add_cut(r->ru, rec, r->cut_head, r->cut_keep, r->cut_dyn,
			       py.chain ? &py : NULL, unw_flags);
	else if (py.chain || unw_flags)
		recunw_add_sample(r->ru, rec, py.chain ? &py : NULL, unw_flags);
	else
		rec_put(r, DLP_REC_PERF, rec, rec->size, NULL, 0);
	return 0;
}

static int py_emit(void *ctx, uint32_t type, const void *a, size_t alen, const void *b,
		   size_t blen)
{
	struct strbuf packed = STRBUF_INIT;
	uint32_t ptype;

	/* code objects and chains packed (pyrec.h): ~30% fewer bytes of them in the
	 * file, which on a short run are most of what Python frames add */
	if (!pyrec_pack(type, a, alen, b, blen, &packed, &ptype))
		rec_put(ctx, ptype, packed.buf, packed.len, NULL, 0);
	else
		rec_put(ctx, type, a, alen, b, blen);
	strbuf_release(&packed);
	return 0;
}

static void mem_ring_drain(struct recorder *r, int final);

static void drain_all(struct recorder *r)
{
	struct mem_shared *sh = r->mem_shared;
	uint64_t made = sh ? __atomic_load_n(&sh->produced, __ATOMIC_ACQUIRE) : 0;

	/* the Python chains first: the kernel writes a sample's chain before the sample,
	 * so the samples drained next find theirs in (pb_sample) */
	if (r->pb)
		pb_fetch(r);
	for (int c = 0; c < r->nr_cpus; c++)
		if (r->rings[c].ctl)
			ring_drain(&r->rings[c], on_record, r);
	/* the rings drained: an alloc event counted before that is in, or never will be
	 * (the kernel does not deliver every one: in a process just forked, a thread's
	 * first events can go missing, uncounted), so it no longer holds the library back */
	if (sh && (int64_t)(made - __atomic_load_n(&sh->consumed, __ATOMIC_SEQ_CST)) > 0)
		__atomic_store_n(&sh->consumed, made, __ATOMIC_SEQ_CST);
	if (sh && __atomic_load_n(&sh->waiters, __ATOMIC_SEQ_CST)) {
		/* threads of the workload wait for this drain (memevent.h) */
		__atomic_add_fetch(&sh->wake_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &sh->wake_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	mem_ring_drain(r, 0);
	if (r->pb)
		pb_match(r, 0);
	if (r->py)
		pyreader_flush(r->py);
	if (r->ru)
		recunw_kick(r->ru);
}

/* ---- end of record: build-ids, kernel symbols, JIT, ITT, meta, stats ---- */

/*
 * --memory: name the processes whose allocations the recording lacks: a program that
 * never loaded the library (static, or LD_PRELOAD dropped), one whose malloc is not ours
 * (an allocator linked in or preloaded before ours), and one with far more anonymous
 * memory resident at its exit than it ever allocated through us (its own arena over brk
 * or raw system calls).
 */
static void check_memory(struct recorder *r)
{
	int said = 0, more = 0;

	if (!r->opts->memory)
		return;
	for (size_t i = 0; i < r->nr_mem_procs; i++) {
		const struct mem_proc *mp = &r->mem_procs[i];
		const char *comm = mp->comm[0] ? mp->comm : "?";
		char line[400];

		line[0] = 0;
		if (mp->comm[0] && !u64set_has(&r->mem_pids, mp->pid) && !mp->stats)
			snprintf(line, sizeof(line), "--memory: process %u (%s) did not load %s "
				 "(a static binary, or one that drops LD_PRELOAD): its allocations are "
				 "not recorded", mp->pid, comm, MEM_LIBRARY);
		else if (mp->stats && mp->rss_anon > 2 * mp->bytes + (64ull << 20))
			snprintf(line, sizeof(line), "--memory: process %u (%s) had %.0f MiB of "
				 "anonymous memory resident at exit but allocated only %.0f MiB through "
				 "dlprof's malloc and mmap: it allocates in a way dlprof cannot see (an "
				 "allocator linked in or preloaded before dlprof's, its own arena over "
				 "brk or raw system calls)", mp->pid, comm,
				 mp->rss_anon / 1048576.0, mp->bytes / 1048576.0);
		if (!line[0])
			continue;
		if (said++ < 4)
			record_warn(r, "%s", line);
		else
			more++;
	}
	if (more)
		record_warn(r, "--memory: %d more processes like these", more);
}
static int read_build_id(const char *path, unsigned char id[20], size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	int found = 0;

	if (fd < 0)
		return -1;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4) &&
			    nh.n_descsz > 0 && nh.n_descsz <= 20) {
				memcpy(id, (char *)d->d_buf + doff, nh.n_descsz);
				*len = nh.n_descsz;
				found = 1;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found ? 0 : -1;
}

static void write_build_ids(struct recorder *r)
{
	if (!r->need_buildid.nr)
		return;
	elf_version(EV_CURRENT);
	for (size_t i = 0; i < r->need_buildid.nr; i++) {
		struct dlp_buildid_rec b;
		size_t len = 0;
		const char *path = r->need_buildid.v[i];

		memset(&b, 0, sizeof(b));
		if (read_build_id(path, b.id, &len) < 0)
			continue;
		b.pid = -1;
		b.size = (uint8_t)len;
		recwriter_add2(r->w, DLP_REC_BUILDID, &b, sizeof(b), path, strlen(path) + 1);
	}
}

struct ksym {
	uint64_t addr;
	const char *line;	/* "type name [module]" inside the file buffer */
};

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * /proc/kallsyms takes ~40 ms of kernel time to read: a thread loads and sorts it while
 * the workload runs, so the exit path only looks up the addresses hit.
 */
struct kallsyms {
	struct strbuf text;
	struct ksym *syms;
	size_t nr;
	uint64_t cpu_ns;	/* the loading thread's CPU time, set as it ends */
};

static void *kallsyms_load(void *arg)
{
	struct kallsyms *k = arg;
	size_t alloc = 0;
	char *p, *nl;

	setpriority(PRIO_PROCESS, 0, 0);	/* not urgent: the reader's boost is not for it */
	if (strbuf_read_file(&k->text, "/proc/kallsyms", 64u << 20) < 0) {
		__atomic_store_n(&k->cpu_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELEASE);
		return NULL;
	}
	for (p = k->text.buf; *p; p = nl + 1) {
		char *end;
		uint64_t a;

		nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		a = strtoull(p, &end, 16);
		if (end == p || *end != ' ' || !end[1] || end[2] != ' ')
			continue;
		/* text symbols only: t, T, w, W (weak code) */
		if (end[1] != 't' && end[1] != 'T' && end[1] != 'w' && end[1] != 'W')
			continue;
		ALLOC_GROW(k->syms, k->nr + 1, alloc);
		k->syms[k->nr].addr = a;
		k->syms[k->nr].line = end + 3;
		k->nr++;
	}
	if (k->nr && !k->syms[0].addr)	/* addresses hidden (kptr_restrict) */
		k->nr = 0;
	qsort(k->syms, k->nr, sizeof(*k->syms), ksym_cmp);
	/* (its clock is gone with it: record_run_cpu_ns leaves this out) */
	__atomic_store_n(&k->cpu_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELEASE);
	return NULL;
}

static void kallsyms_free(struct kallsyms *k)
{
	free(k->syms);
	strbuf_release(&k->text);
	memset(k, 0, sizeof(*k));
}

static void write_ksyms(struct recorder *r, struct kallsyms *k)
{
	struct strbuf out = STRBUF_INIT;
	struct ksym *syms = k->syms;
	size_t nr = k->nr;
	unsigned char *hit;

	if (!r->kaddrs.nr || !nr)
		return;
	hit = xcalloc(nr, 1);
	for (size_t i = 0; i < r->kaddrs.alloc; i++) {
		uint64_t a = r->kaddrs.slot[i];
		size_t lo = 0, hi = nr;

		if (!a || a < syms[0].addr)
			continue;
		while (hi - lo > 1) {	/* last symbol with addr <= a */
			size_t mid = (lo + hi) / 2;

			if (syms[mid].addr <= a)
				lo = mid;
			else
				hi = mid;
		}
		hit[lo] = 1;
	}
	for (size_t i = 0; i < nr; i++) {
		uint64_t size;
		const char *name = syms[i].line;
		const char *tab;

		if (!hit[i])
			continue;
		size = i + 1 < nr ? syms[i + 1].addr - syms[i].addr : 4096;
		/* kallsyms: "name\t[module]" */
		tab = strchr(name, '\t');
		if (tab)
			strbuf_addf(&out, "%llx %llx %.*s %s\n", (unsigned long long)syms[i].addr,
				    (unsigned long long)size, (int)(tab - name), name, tab + 1);
		else
			strbuf_addf(&out, "%llx %llx %s\n", (unsigned long long)syms[i].addr,
				    (unsigned long long)size, name);
	}
	if (out.len)
		recwriter_add(r->w, DLP_REC_KSYMS, out.buf, out.len);
	free(hit);
	strbuf_release(&out);
}

/*
 * The [vdso] has no file: its image is this process's own (one per kernel for every
 * 64-bit process), captured so that report names the samples in it
 * (__vdso_clock_gettime, ...) wherever it reads the recording.
 */
static void write_vdso(struct recorder *r)
{
	struct strbuf sb = STRBUF_INIT;

	if (!vdso_file_rec(&sb))
		recwriter_add(r->w, DLP_REC_FILE, sb.buf, sb.len);
	strbuf_release(&sb);
}

static void capture_file(struct recorder *r, uint32_t type, int32_t pid, const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	struct dlp_jit_rec h = { pid, 0 };
	int ret = strbuf_read_file(&sb, path, CAPTURE_MAX);

	if (ret < 0) {
		warning("cannot read '%s': %s", path, strerror(-ret));
		return;
	}
	recwriter_add2(r->w, type, &h, sizeof(h), sb.buf, sb.len);
	if (type == DLP_REC_JITDUMP)
		jitsyms_add_jitdump(r->jit, pid, sb.buf, sb.len, path);
	strbuf_release(&sb);
}

/*
 * /tmp is everyone's: a map is taken only when the file opened (never through a
 * symlink) is a regular file owned by us or root, and was written after the workload
 * started.  The checks are made on the open descriptor, so the file cannot be swapped
 * between check and read.
 */
static void capture_perf_maps(struct recorder *r)
{
	for (size_t i = 0; i < r->pids.alloc; i++) {
		uint64_t pid = r->pids.slot[i];
		struct strbuf sb = STRBUF_INIT;
		struct dlp_jit_rec h = { (int32_t)pid, 0 };
		char path[64];
		struct stat st;
		const char *why;
		int fd, ret;

		if (!pid)
			continue;
		snprintf(path, sizeof(path), "/tmp/perf-%llu.map", (unsigned long long)pid);
		fd = jit_perfmap_open((int32_t)pid, r->start_wall, &st, &why);
		if (fd < 0) {
			if (why == JIT_PERFMAP_OLD)
				warning("ignoring '%s': last written before this recording started"
					" (left by an earlier process with pid %llu)", path,
					(unsigned long long)pid);
			else if (why)
				warning("ignoring '%s': %s", path, why);
			continue;
		}
		ret = strbuf_read_fd(&sb, fd, CAPTURE_MAX);
		close(fd);
		if (ret < 0)
			warning("cannot read '%s': %s", path, strerror(-ret));
		else {
			recwriter_add2(r->w, DLP_REC_JITMAP, &h, sizeof(h), sb.buf, sb.len);
			jitsyms_add_perfmap(r->jit, (int32_t)pid, sb.buf, sb.len, path);
		}
		strbuf_release(&sb);
		if (ret == 0 && r->jit_ours)
			unlink(path);
	}
}

static int dump_pid(const char *path)
{
	const char *base = strrchr(path, '/');
	int pid;

	base = base ? base + 1 : path;
	if (sscanf(base, "jit-%d.dump", &pid) != 1)
		return -1;
	return pid;
}

static struct recorder *walk_rec;	/* nftw has no context argument */

static int walk_jitdump(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	int pid;

	if (flag != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	pid = dump_pid(path);
	if (pid >= 0)
		capture_file(walk_rec, DLP_REC_JITDUMP, pid, path);
	return 0;
}

static int walk_itt(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	struct strbuf sb = STRBUF_INIT;

	if (flag != FTW_F || !S_ISREG(st->st_mode))
		return 0;
	if (strbuf_read_file(&sb, path, CAPTURE_MAX) < 0) {
		warning("cannot read '%s'", path);
		return 0;
	}
	if (sb.len) {
		recwriter_add(walk_rec->w, DLP_REC_ITT, sb.buf, sb.len);
		walk_rec->itt_files++;
	}
	strbuf_release(&sb);
	return 0;
}

static int walk_remove(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_tree(const char *dir)
{
	nftw(dir, walk_remove, 16, FTW_DEPTH | FTW_PHYS);
}

static void capture_jit(struct recorder *r)
{
	if (r->opts->no_jit)
		return;
	capture_perf_maps(r);
	walk_rec = r;
	if (r->jitdir)
		nftw(r->jitdir, walk_jitdump, 16, FTW_PHYS);
	for (size_t i = 0; i < r->jitdumps.nr; i++) {
		const char *p = r->jitdumps.v[i];
		int pid = dump_pid(p);

		if (r->jitdir && !strncmp(p, r->jitdir, strlen(r->jitdir)))
			continue;	/* already taken from our directory */
		if (pid >= 0 && access(p, R_OK) == 0)
			capture_file(r, DLP_REC_JITDUMP, pid, p);
	}
	if (r->jitdir)
		remove_tree(r->jitdir);
}

static void capture_itt(struct recorder *r)
{
	if (!r->ittdir)
		return;
	walk_rec = r;
	nftw(r->ittdir, walk_itt, 16, FTW_PHYS);
	remove_tree(r->ittdir);
}

/* The user's JIT profile setting when it keeps oneDNN from publishing its kernels
 * (ONEDNN_JIT_PROFILE without the perf map (2) and jitdump (4) bits), else NULL. */
static const char *jit_profile_off(const struct recorder *r, const char **var)
{
	static const char *const vars[] = { "ONEDNN_JIT_PROFILE", "DNNL_JIT_PROFILE" };

	if (r->jit_ours)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *v = getenv(vars[i]);

		if (v && !(strtoul(v, NULL, 0) & 6)) {
			*var = vars[i];
			return v;
		}
	}
	return NULL;
}

/*
 * What the recording lacks that the user expects, said once the run is over: JIT code
 * that ran unnamed (no perf map or jitdump covers its samples), a oneDNN workload that
 * never called the ITT collector.
 */
static void check_missing(struct recorder *r)
{
	uint64_t unnamed = 0, seen;

	place_pending(r);
	seen = r->nr_anon_ips;
	for (size_t i = 0; i < r->nr_anon_ips; i++)
		if (!jitsyms_find(r->jit, (int32_t)r->anon_ips[i].pid, r->anon_ips[i].ip))
			unnamed++;
	/* past the array's cap: at the rate of those checked */
	if (seen && r->anon_samples > seen)
		unnamed = (uint64_t)((double)unnamed * r->anon_samples / seen);
	if (unnamed && unnamed * 200 >= r->samples) {
		const char *var = NULL, *val = jit_profile_off(r, &var);
		char why[256];

		if (r->opts->no_jit)
			snprintf(why, sizeof(why), "--no-jit left JIT publishing off");
		else if (val)
			snprintf(why, sizeof(why), "%s=%s in the environment keeps oneDNN from "
				 "publishing its JIT kernels: unset it, or set it to 6", var, val);
		else if (r->dnnl_path)
			snprintf(why, sizeof(why), "oneDNN (%s) published no perf map or jitdump "
				 "for that code", r->dnnl_path);
		else
			snprintf(why, sizeof(why), "the JIT that made it publishes neither "
				 "/tmp/perf-PID.map nor a jitdump");
		record_warn(r, "%llu samples (%.1f%%) ran JIT code in anonymous memory that no "
			    "perf map or jitdump names: they show as [anon] addresses; %s",
			    (unsigned long long)unnamed, 100.0 * unnamed / (r->samples ? r->samples : 1),
			    why);
	}
	if (r->lost && r->ring_note[0])
		record_warn(r, "%llu samples lost: the %s; raise it, or lower -F",
			    (unsigned long long)r->lost, r->ring_note);
	if (r->ittdir && r->dnnl_path && !r->itt_files) {
		const char *lvl = getenv("ONEDNN_ITT_TASK_LEVEL");

		if (!lvl)
			lvl = getenv("DNNL_ITT_TASK_LEVEL");
		record_warn(r, "the workload mapped %s but never called dlprof's ITT collector: no "
			    "oneDNN primitive is labelled (no dnnl:* operators)%s", r->dnnl_path,
			    lvl && !strcmp(lvl, "0") ? "; ONEDNN_ITT_TASK_LEVEL=0 in the environment "
			    "turns oneDNN's ITT tasks off" : "; did the workload set "
			    "INTEL_LIBITTNOTIFY64 to another collector, or oneDNN run no primitive?");
	}
}

static void meta_add(struct strbuf *sb, const char *k, const char *v)
{
	strbuf_add(sb, k, strlen(k) + 1);
	strbuf_add(sb, v, strlen(v) + 1);
}

/* The "flags" line of /proc/cpuinfo (its first cpu), for the DL view's ISA findings. */
static void meta_cpu_flags(struct strbuf *sb)
{
	char *flags = isa_cpuinfo_flags();

	if (flags)
		meta_add(sb, "cpu_flags", flags);
	free(flags);
}

/*
 * The workload's settings that decide which code paths its libraries take (ISA caps,
 * OpenBLAS's core, ATen's capability, JIT profiling, OpenMP waiting), as META
 * "env.NAME" = value: report names them as the cause of a slow path.  What dlprof set
 * itself (the JIT profile and ITT collector) is not the user's and is left out.  A
 * process attached to with -p has its own environment, read from /proc.
 */
static const char *const settings_env[] = {
	"ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", "ONEDNN_CPU_ISA_HINTS", "DNNL_CPU_ISA_HINTS",
	"ONEDNN_JIT_PROFILE", "DNNL_JIT_PROFILE", "ONEDNN_VERBOSE", "DNNL_VERBOSE",
	"MKLDNN_VERBOSE", "ONEDNN_ITT_TASK_LEVEL", "DNNL_ITT_TASK_LEVEL", "ONEDNN_DEFAULT_FPMATH_MODE",
	"ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
	"MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE", "MKL_CBWR", "MKL_NUM_THREADS",
	"OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_PLACES", "GOMP_SPINCOUNT",
	"KMP_BLOCKTIME", "KMP_AFFINITY", "INTEL_LIBITTNOTIFY64", "INTEL_ITTNOTIFY_GROUPS",
	NULL
};

static int settings_env_ours(const struct recorder *r, const char *name)
{
	if (r->jit_ours && (!strcmp(name, "ONEDNN_JIT_PROFILE") || !strcmp(name, "DNNL_JIT_PROFILE")))
		return 1;
	return r->ittdir && (!strcmp(name, "INTEL_LIBITTNOTIFY64") ||
			     !strcmp(name, "INTEL_ITTNOTIFY_GROUPS"));
}

static void meta_settings_env(struct recorder *r, struct strbuf *sb)
{
	struct strbuf env = STRBUF_INIT, key = STRBUF_INIT;

	if (r->opts->pids && r->nr_targets) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/environ", (int)r->targets[0]);
		if (strbuf_read_file(&env, path, 1u << 20) < 0) {
			strbuf_release(&env);
			return;
		}
		strbuf_addch(&env, '\0');
	}
	for (const char *const *v = settings_env; *v; v++) {
		const char *val = NULL;
		size_t n = strlen(*v);

		if (!r->opts->pids) {
			if (!settings_env_ours(r, *v))
				val = getenv(*v);
		} else {
			for (const char *e = env.buf; e && e < env.buf + env.len && *e; e += strlen(e) + 1)
				if (!strncmp(e, *v, n) && e[n] == '=') {
					val = e + n + 1;
					break;
				}
		}
		if (!val || !*val)
			continue;	/* empty: the libraries ignore it too */
		strbuf_reset(&key);
		strbuf_addf(&key, "env.%s", *v);
		meta_add(sb, key.buf, val);
	}
	strbuf_release(&env);
	strbuf_release(&key);
}

static void write_meta(struct recorder *r)
{
	const struct record_opts *o = r->opts;
	struct strbuf sb = STRBUF_INIT, tmp = STRBUF_INIT;
	struct utsname u;
	char num[64];

	if (o->pids) {
		/* the processes attached to */
		strbuf_addstr(&tmp, r->attach_cmdline.len ? r->attach_cmdline.buf : "?");
		meta_add(&sb, "attach", o->pids);
	} else {
		for (const char **a = o->argv; *a; a++) {
			if (a != o->argv)
				strbuf_addch(&tmp, ' ');
			strbuf_addstr(&tmp, *a);
		}
	}
	meta_add(&sb, "cmdline", tmp.buf);
	if (!uname(&u)) {
		meta_add(&sb, "hostname", u.nodename);
		meta_add(&sb, "release", u.release);
		meta_add(&sb, "machine", u.machine);
	}
	snprintf(num, sizeof(num), "%d", r->nr_cpus);
	meta_add(&sb, "nr_cpus", num);
	meta_cpu_flags(&sb);
	strbuf_reset(&tmp);
	for (int e = 0; e < r->nr_ev; e++)
		strbuf_addf(&tmp, "%s%s", e ? "," : "", r->ev[e].name);
	meta_add(&sb, "event", tmp.buf);
	if (o->period) {
		snprintf(num, sizeof(num), "%lu", o->period);
		meta_add(&sb, "period", num);
	} else {
		snprintf(num, sizeof(num), "%lu", o->freq);
		meta_add(&sb, "freq", num);
	}
	if (o->callgraph == RECORD_CG_DWARF)
		snprintf(num, sizeof(num), "dwarf=%u", o->stack_size);
	else
		snprintf(num, sizeof(num), "%s", o->callgraph == RECORD_CG_FP ? "fp" : "none");
	meta_add(&sb, "callgraph", num);
	meta_add(&sb, "version", DLPROF_VERSION);
	meta_add(&sb, "kernel", r->ev[0].attr.exclude_kernel ? "excluded" : "included");
	if (r->fallback_note[0])
		meta_add(&sb, "note", r->fallback_note);
	meta_add(&sb, "jit", o->no_jit ? "off" : r->jit_ours ? "on" : "user");
	meta_add(&sb, "itt", r->ittdir ? "on" : "off");
	if (o->memory) {
		char n[32];

		snprintf(n, sizeof(n), "%lu", o->mem_sample ? o->mem_sample :
			 (unsigned long)MEM_DEFAULT_SAMPLE);
		meta_add(&sb, "mem_sample", n);
	}
	meta_add(&sb, "python", r->py ? "on" : "off");
	if (r->py) {
		/* the stacks read from outside that their samples name: how many, the sum
		 * and the largest of their delays (the PYSTACK records carry their own) */
		struct pyreader_stats ps;

		pyreader_get_stats(r->py, &ps);
		if (ps.late_named) {
			strbuf_reset(&tmp);
			strbuf_addf(&tmp, "%llu %llu %llu", (unsigned long long)ps.late_named,
				    (unsigned long long)ps.late_delay_sum_ns,
				    (unsigned long long)ps.late_delay_max_ns);
			meta_add(&sb, "python_late", tmp.buf);
		}
		/* code objects read in the kernel, from outside; frames whose code was gone */
		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "%llu %llu %llu", (unsigned long long)ps.kernel_codes,
			    (unsigned long long)ps.codes_outside, (unsigned long long)ps.gone);
		meta_add(&sb, "python_codes", tmp.buf);
	}
	{
		/* dlprof's own CPU time (all its threads), for the cost per sample */
		struct rusage ru;

		if (!getrusage(RUSAGE_SELF, &ru)) {
			snprintf(num, sizeof(num), "%llu",
				 (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
				 (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull);
			meta_add(&sb, "record_cpu_ns", num);
		}
		if (r->run_cpu_ns) {
			/* the same while the workload ran, the kernel symbols' load left out */
			snprintf(num, sizeof(num), "%llu", (unsigned long long)r->run_cpu_ns);
			meta_add(&sb, "record_run_cpu_ns", num);
		}
	}
	if (r->ru_st.samples) {
		/* samples (with a copy) unwound incomplete behind distinct-stacks cpu-ns unwind-ns
		 * partial frames joined reused inline bails */
		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			    (unsigned long long)r->ru_st.samples, (unsigned long long)r->ru_st.unwound,
			    (unsigned long long)r->ru_st.incomplete, (unsigned long long)r->ru_st.behind,
			    (unsigned long long)r->ru_st.stacks, (unsigned long long)r->ru_st.cpu_ns,
			    (unsigned long long)r->ru_st.unwind_ns, (unsigned long long)r->ru_st.partial,
			    (unsigned long long)r->ru_st.frames, (unsigned long long)r->ru_st.joined,
			    (unsigned long long)r->ru_st.reused,
			    (unsigned long long)r->ru_st.inline_samples,
			    (unsigned long long)r->ru_st.bails);
		meta_add(&sb, "record_unwind", tmp.buf);
	}
	meta_settings_env(r, &sb);
	{
		const char *w = r->warns.buf;

		for (int i = 0; i < r->nr_warns; i++, w += strlen(w) + 1) {
			snprintf(num, sizeof(num), "warn.%d", i + 1);
			meta_add(&sb, num, w);
		}
	}
	recwriter_add(r->w, DLP_REC_META, sb.buf, sb.len);
	strbuf_release(&sb);
	strbuf_release(&tmp);
}

/* ---- environment for JIT and ITT ---- */
static const char *tmp_root(void)
{
	const char *t = getenv("TMPDIR");

	return t && *t ? t : "/tmp";
}

/*
 * Open dir and take an exclusive flock on it: held until we close it or die, so a
 * directory whose lock can be taken belongs to no running dlprof (the kernel drops
 * a SIGKILLed process's locks; flock works across pid namespaces sharing /tmp).
 * Returns the locked descriptor, or -1.
 */
static int lock_dir(int at, const char *dir)
{
	int fd = openat(at, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static char *make_tmpdir(const char *what, int *lock)
{
	char *d = xasprintf("%s/dlprof-%s.XXXXXX", tmp_root(), what);

	*lock = -1;
	if (!mkdtemp(d)) {
		warning("cannot create a temporary directory '%s': %s", d, strerror(errno));
		free(d);
		return NULL;
	}
	*lock = lock_dir(AT_FDCWD, d);
	return d;
}

/*
 * The JIT and ITT directories of a dlprof that was SIGKILLed stay behind: remove
 * ours that no live dlprof holds locked.  Ones younger than a minute are left alone,
 * so a dlprof between its mkdtemp() and its flock() keeps its directory.
 */
static void sweep_tmpdirs(void)
{
	DIR *d = opendir(tmp_root());
	struct dirent *e;
	time_t old = time(NULL) - 60;

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		int fd;

		if (strncmp(e->d_name, "dlprof-jit.", 11) && strncmp(e->d_name, "dlprof-itt.", 11))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || st.st_mtime > old)
			continue;
		fd = lock_dir(dirfd(d), e->d_name);
		if (fd < 0)
			continue;
		{
			char *path = xasprintf("%s/%s", tmp_root(), e->d_name);

			remove_tree(path);
			free(path);
		}
		close(fd);
	}
	closedir(d);
}

/* --memory: the file the library and we share (memevent.h): the alloc events' counters
 * and the free ring */
static void mem_shared_open(struct recorder *r)
{
	char *path = xasprintf("%s/dlprof-mem.XXXXXX", tmp_root());
	int fd = mkstemp(path);
	void *m = MAP_FAILED;

	_Static_assert(offsetof(struct mem_shared, free_ring) == 4096, "the ring's page");
	if (fd >= 0 && !ftruncate(fd, (off_t)MEM_SHARED_SIZE))
		m = mmap(NULL, MEM_SHARED_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fd >= 0)
		close(fd);
	if (m == MAP_FAILED) {
		/* without it nothing waits (samples may be lost at high rates: counted) and
		 * every free is a uprobe event */
		warning("--memory: cannot set up '%s': %s", path, strerror(errno));
		if (fd >= 0)
			unlink(path);
		free(path);
		return;
	}
	r->mem_shared = m;
	/* in flight at most: a quarter of a ring's worth of stack copies */
	r->mem_shared->limit = default_pages(r->opts) * (size_t)sysconf(_SC_PAGESIZE) / 4 /
			       ((size_t)r->opts->stack_size + 512);
	if (r->mem_shared->limit < 4)
		r->mem_shared->limit = 4;
	for (uint64_t i = 0; i < MEM_FREE_RING; i++)
		r->mem_shared->free_ring[i].seq = i;
	/* the test suite's way to send every free as a uprobe event */
	if (!getenv("DLPROF_TEST_MEM_NO_RING"))
		__atomic_store_n(&r->mem_shared->free_ring_on, 1, __ATOMIC_RELEASE);
	r->mem_shared_path = path;
	setenv(MEM_ENV_SHARED, path, 1);
}

/* The frees gathered, as one DLP_REC_MEMFREES record */
static void mem_frees_put(struct recorder *r)
{
	size_t len;
	const void *p = memrec_take(&r->mem_frees_enc, &len);

	if (p)
		rec_put(r, DLP_REC_MEMFREES, p, len, NULL, 0);
}

/*
 * --memory: take the frees the library put in the ring (memevent.h) and gather them for
 * DLP_REC_MEMFREES records (MEM_FREES_BATCH a record, or what a second gathered).  A
 * slot taken but not filled yet is waited for; one left so for a second (its writer died
 * between the two) is passed over and counted.  FINAL: the end of the recording (the ring
 * is closed to writers first; what is half-written then is counted).
 */
static void mem_ring_drain(struct recorder *r, int final)
{
	struct mem_shared *sh = r->mem_shared;

	if (!sh)
		return;
	if (final) {
		/* closed; a writer that saw it open a moment ago finishes its slot first */
		__atomic_store_n(&sh->free_ring_on, 0, __ATOMIC_RELEASE);
		usleep(2000);
	}
	for (;;) {
		uint64_t pos = r->mem_free_tail;
		struct mem_free_slot *e = &sh->free_ring[pos & (MEM_FREE_RING - 1)];

		if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != pos + 1) {
			if (__atomic_load_n(&sh->free_head, __ATOMIC_ACQUIRE) == pos)
				break;	/* empty */
			if (!final) {
				uint64_t t = now_ns();

				if (!r->mem_free_wait)
					r->mem_free_wait = t;
				if (t - r->mem_free_wait < 1000000000ull)
					break;
			}
			r->mem_ring_lost++;
		} else {
			struct memrec_free f = { e->time, e->key, e->pid, e->tid };

			memrec_free_add(&r->mem_frees_enc, &f);
			r->mem_frees++;
		}
		__atomic_store_n(&e->seq, pos + MEM_FREE_RING, __ATOMIC_RELEASE);
		r->mem_free_tail = pos + 1;
		r->mem_free_wait = 0;
		if (r->mem_frees_enc.nr >= MEM_FREES_BATCH)
			mem_frees_put(r);
	}
	if (final)
		mem_frees_put(r);
}

static void setup_env(struct recorder *r)
{
	if (!r->opts->no_jit || !r->opts->no_itt)
		sweep_tmpdirs();
	if (!r->opts->no_jit && !getenv("ONEDNN_JIT_PROFILE") && !getenv("DNNL_JIT_PROFILE")) {
		r->jitdir = make_tmpdir("jit", &r->jitdir_lock);
		if (r->jitdir) {
			setenv("ONEDNN_JIT_PROFILE", "6", 1);
			setenv("DNNL_JIT_PROFILE", "6", 1);
			setenv("JITDUMPDIR", r->jitdir, 1);
			r->jit_ours = 1;
		}
	}
	if (r->opts->memory && r->mem_lib) {
		/* after the user's own preloads: an allocator preloaded on purpose stays the
		 * workload's (and is named at the end: our functions see no call) */
		const char *pre = getenv("LD_PRELOAD");
		char *v = pre && *pre ? xasprintf("%s:%s", pre, r->mem_lib) : xstrdup(r->mem_lib);
		char n[32];

		setenv("LD_PRELOAD", v, 1);
		free(v);
		snprintf(n, sizeof(n), "%lu", r->opts->mem_sample ? r->opts->mem_sample :
			 (unsigned long)MEM_DEFAULT_SAMPLE);
		setenv(MEM_ENV_SAMPLE, n, 1);
		mem_shared_open(r);
	}
	if (!r->opts->no_itt) {
		char *lib = dlprof_libfile("libdlprof-itt.so");

		if (lib) {
			r->ittdir = make_tmpdir("itt", &r->ittdir_lock);
			if (r->ittdir) {
				setenv("INTEL_LIBITTNOTIFY64", lib, 1);
				setenv("INTEL_ITTNOTIFY_GROUPS", "all", 0);
				setenv("DLPROF_ITT_DIR", r->ittdir, 1);
			}
			free(lib);
		} else {
			char *where = dlprof_libfile_places();

			record_warn(r, "the ITT collector libdlprof-itt.so is missing (looked in %s): "
				    "oneDNN primitives will not be labelled (no dnnl:* operators); "
				    "build it with 'make' in dlprof's source tree, or 'make install'",
				    where);
			free(where);
		}
	}
}

/* ---- main loop ---- */

/*
 * -p: counters on every thread of the targets, then what the kernel will not tell:
 * their threads' names and their code mappings, stamped with the time before the
 * counters opened, so a mapping the kernel reports later replaces ours.
 */
static int attach_open(struct recorder *r)
{
	struct rlimit rl;
	time_t earliest = 0;

	/* threads x events x cpus descriptors: a big server needs more than 1024 */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* another user's process: say so, rather than the paranoid advice (not the cause) */
	for (int t = 0; t < r->nr_targets; t++) {
		char path[32];
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d", (int)r->targets[t]);
		if (stat(path, &st) < 0 || st.st_uid == geteuid() || !geteuid())
			continue;
		fd = event_open(&r->ev[0].attr, r->targets[t], -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0) {
			close(fd);	/* allowed (CAP_SYS_PTRACE, CAP_PERFMON) */
			continue;
		}
		if (errno == EACCES || errno == EPERM)
			return error("cannot attach to pid %d: %s: it belongs to another user "
				     "(uid %u); attaching needs root or CAP_SYS_PTRACE",
				     (int)r->targets[t], strerror(errno), (unsigned)st.st_uid);
	}
	if (open_targets(r) < 0 || write_attrs(r) < 0)
		return -1;
	for (int t = 0; t < r->nr_targets; t++) {
		time_t start = attach_start_wall(r->targets[t]);

		if (t)
			strbuf_addstr(&r->attach_cmdline, "; ");
		if (attach_cmdline(r->targets[t], &r->attach_cmdline) < 0)
			strbuf_addstr(&r->attach_cmdline, "?");
		strbuf_addf(&r->attach_cmdline, " (pid %d, attached)", (int)r->targets[t]);

		attach_synthesize(r->targets[t], &r->ev[0].attr, r->ev[0].ids[0], r->start_ns,
				  on_record, r);
		put_proc_info(r, (uint32_t)r->targets[t]);
		if (start && (!earliest || start < earliest))
			earliest = start;
	}
	/* a perf map written after the process started is its own (capture_perf_maps) */
	r->start_wall = earliest ? earliest - 1 : 0;
	return 0;
}

static void print_summary(struct recorder *r, const char *path, int incomplete)
{
	uint64_t bytes = recwriter_bytes(r->w);
	int color = want_color(2) && r->lost;
	char mode[64];

	/* the call-graph mode and what it cost on disk */
	if (r->opts->callgraph == RECORD_CG_DWARF && r->ru_st.samples)
		snprintf(mode, sizeof(mode), "stacks: dwarf, %.1f%% unwound while recording",
			 100.0 * r->ru_st.unwound / r->ru_st.samples);
	else if (r->opts->callgraph == RECORD_CG_DWARF)
		snprintf(mode, sizeof(mode), "stacks: dwarf, %u bytes copied", r->opts->stack_size);
	else
		snprintf(mode, sizeof(mode), "stacks: %s",
			 r->opts->callgraph == RECORD_CG_FP ? "fp" : "none");
	fprintf(stderr, "dlprof: %llu samples, %s%llu lost%s, wrote %s (%.*f MB, %s, %.0f bytes "
		"per sample%s)\n",
		(unsigned long long)r->samples, color ? "\033[1;31m" : "",
		(unsigned long long)r->lost, color ? "\033[m" : "", path,
		bytes < 100000 ? 3 : 2, bytes / 1e6, mode,
		r->samples ? (double)bytes / r->samples : 0.0,
		incomplete ? ", incomplete: only the chunks written before the error" : "");
	if (pyreader_active(r->py)) {
		struct pyreader_stats ps;

		pyreader_get_stats(r->py, &ps);
		uint64_t late = ps.samples - ps.own - ps.kernel;	/* read from outside */

		fprintf(stderr, "dlprof: python: %llu samples read (%.1f%% checked against the "
			"sample, %.1f%% moved on, %.1f%% unreadable)", (unsigned long long)ps.samples,
			ps.samples ? 100.0 * ps.trusted / ps.samples : 0.0,
			ps.samples ? 100.0 * ps.moved / ps.samples : 0.0,
			ps.samples ? 100.0 * ps.failed / ps.samples : 0.0);
		if (ps.kernel)
			fprintf(stderr, "; %llu read in the kernel at the sample",
				(unsigned long long)ps.kernel);
		if (ps.own)
			fprintf(stderr, "; %llu allocations' read by their own thread as they were "
				"made", (unsigned long long)ps.own);
		if (ps.gone)
			fprintf(stderr, "; %llu frames whose code object was freed before it was "
				"read", (unsigned long long)ps.gone);
		if (r->pb && r->pb_unmatched)
			fprintf(stderr, "; %llu whose kernel read never came", (unsigned long long)
				r->pb_unmatched);
		if (r->pb && pybpf_dropped(r->pb))
			fprintf(stderr, "; %llu kernel reads dropped (its buffer was full)",
				(unsigned long long)pybpf_dropped(r->pb));
		if (late)
			fprintf(stderr, "; %llu read from outside, %.2f ms after the sample on average",
				(unsigned long long)late, ps.delay_sum_ns / 1e6 / late);
		if (!r->pb && r->pb_why)
			fprintf(stderr, " (in the kernel: %s)", r->pb_why);
		if (r->pb && pybpf_codes_off(r->pb) && ps.kernel)
			fprintf(stderr, "; code objects read from outside (%s)",
				pybpf_codes_off(r->pb));
		fputc('\n', stderr);
	}
	if (r->opts->memory) {
		unsigned long mean = r->opts->mem_sample ? r->opts->mem_sample : MEM_DEFAULT_SAMPLE;

		if (mean == 1)
			fprintf(stderr, "dlprof: memory: %llu allocations and %llu frees (every one)",
				(unsigned long long)r->mem_allocs, (unsigned long long)r->mem_frees);
		else
			fprintf(stderr, "dlprof: memory: %llu allocations sampled (one per %lu bytes "
				"on average), %llu of them freed", (unsigned long long)r->mem_allocs,
				mean, (unsigned long long)r->mem_frees);
		if (r->mem_waits)
			fprintf(stderr, "; threads waited for dlprof to catch up %llu times",
				(unsigned long long)r->mem_waits);
		fputc('\n', stderr);
	}
	if (r->ru_st.samples && r->ru_st.unwound < r->ru_st.samples)
		fprintf(stderr, "dlprof: stacks: %llu kept as copies for report to unwind (%llu "
			"with no frame found, %llu while the unwinder was behind)\n",
			(unsigned long long)(r->ru_st.samples - r->ru_st.unwound),
			(unsigned long long)r->ru_st.incomplete, (unsigned long long)r->ru_st.behind);
}

/* The one-line status on a terminal: elapsed, samples, MB written, lost. */
static void show_progress(struct recorder *r, int last)
{
	uint64_t s = (now_ns() - r->start_ns) / 1000000000ull;

	if (last) {
		fputs("\r\033[K", stderr);
		return;
	}
	fprintf(stderr, "\rdlprof: recording %llu:%02llu  %llu samples  %.1f MB  %llu lost\033[K",
		(unsigned long long)(s / 60), (unsigned long long)(s % 60),
		(unsigned long long)r->samples, recwriter_bytes(r->w) / 1e6,
		(unsigned long long)r->lost);
}

/*
 * A signal for the command: a terminal's ^C reaches the workload too (same process
 * group); a signal sent to dlprof alone by a process is passed on.  One after 2 s
 * since the first (first_ns) ends a workload that does not listen.
 */
static void pass_signal(struct workload *wl, const struct signalfd_siginfo *si,
			uint64_t first_ns, int *killed)
{
	if (si->ssi_code == SI_USER || si->ssi_code == SI_QUEUE || si->ssi_code == SI_TKILL)
		kill(wl->pid, (int)si->ssi_signo);
	if (now_ns() - first_ns > 2000000000ull && !*killed) {
		info("the workload still runs 2 s after the first signal: killing it");
		kill(wl->pid, SIGKILL);
		*killed = 1;
	}
}

/* A limit ended the recording (finished and closed): the command runs on; wait for it,
 * passing signals on as before.  Returns its status. */
static int wait_unrecorded(struct workload *wl, int sfd)
{
	int status = 2, killed = 0;
	uint64_t first_sig_ns = 0;

	info("waiting for the command (pid %d) to end; Ctrl-C ends it", (int)wl->pid);
	for (;;) {
		struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { wl->pidfd, POLLIN, 0 } };
		struct signalfd_siginfo si;

		if (workload_reap(wl, 0, &status) != 0)
			return status;
		if (poll(pfd, 2, 100) < 0 && errno != EINTR)
			return workload_reap(wl, 1, &status) > 0 ? status : 2;
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			if (!first_sig_ns)
				first_sig_ns = now_ns();
			pass_signal(wl, &si, first_sig_ns, &killed);
		}
	}
}

int record_run(const struct record_opts *o)
{
	struct recorder rec, *r = &rec;
	struct workload wl;
	struct sigaction orig_act[WORKLOAD_NR_SIGNALS], act;
	sigset_t block, orig_mask;
	int sfd = -1, status = 2, ret, interrupted = 0, done = 0, killed = 0;
	uint64_t last_flush, first_sig_ns = 0, end_ns;
	struct pollfd *pfd = NULL;
	struct kallsyms ksyms;
	pthread_t ksyms_thread;
	int npfd, live_at, ksyms_started = 0, attach = o->pids != NULL, have_cmd;
	uint64_t quit_ns = 0, last_progress = 0, run_cpu0 = 0;
	const char *limit = NULL;	/* the limit that ended the recording */
	int reaped = 0, progress = !o->quiet && !o->live && isatty(STDERR_FILENO);
	int *target_fd = NULL, targets_left = 0;
	char *old = NULL;	/* where the previous recording went */

	memset(r, 0, sizeof(*r));
	memset(&ksyms, 0, sizeof(ksyms));
	memset(&wl, 0, sizeof(wl));
	wl.pid = -1;
	wl.go_fd = wl.err_fd = wl.pidfd = -1;
	r->opts = o;
	memrec_enc_init(&r->mem_frees_enc);
	have_cmd = o->argv && o->argv[0];
	if (!have_cmd && !attach)
		return error("no command to record"), 64;
	if (attach) {
		ret = attach_parse_pids(o->pids, &r->targets);
		if (ret < 0)
			return ret == -1 ? 64 : 2;
		r->nr_targets = ret;
	}

	if (!o->period && o->freq > max_sample_rate()) {
		error("-F %lu is above kernel.perf_event_max_sample_rate (%lu): lower -F, or raise "
		      "the limit with 'sysctl -w kernel.perf_event_max_sample_rate=%lu'",
		      o->freq, max_sample_rate(), o->freq);
		return 2;
	}
	if (o->callgraph == RECORD_CG_DWARF &&
	    default_pages(o) * (size_t)sysconf(_SC_PAGESIZE) < (size_t)o->stack_size + 1024) {
		size_t psz = (size_t)sysconf(_SC_PAGESIZE), need = 1;

		while (need * psz < 2 * ((size_t)o->stack_size + 1024))
			need *= 2;
		error("-m %zu: a ring of %zu KiB cannot hold one sample with %u bytes of stack; "
		      "use -m %zu or more", default_pages(o), default_pages(o) * psz / 1024,
		      o->stack_size, need);
		return 64;
	}
	r->py_wakeup = !o->no_python && python_target(o);
	u64map_init(&r->pb_tids);
	u64map_init(&r->tcb_at);
	if (r->py_wakeup) {
		struct pyframe_layout lays[8];

		r->pb = pybpf_new(lays, pyreader_frame_layouts(lays, ARRAY_SIZE(lays)),
				  &r->pb_why);
	}
	ret = setup_events(r);
	if (ret) {
		free(r->targets);
		return ret;
	}
	r->nr_cpus = online_cpus(&r->cpus);
	if (r->nr_cpus <= 0)
		return error("cannot list the online cpus"), 2;
	r->scratch = xmalloc(65536);
	r->jit = jitsyms_new();
	jitsyms_set_quiet(r->jit, 1);	/* report warns about the records it reads */

	/* like perf: keep the previous recording as FILE.old (a regular file only: never
	 * move a directory or a device aside) */
	if (o->output) {
		struct stat st;

		if (!stat(o->output, &st) && S_ISDIR(st.st_mode)) {
			error("'%s' is a directory", o->output);
			goto out;
		}
		if (!lstat(o->output, &st) && S_ISREG(st.st_mode)) {
			old = xasprintf("%s.old", o->output);
			if (rename(o->output, old) < 0) {
				warning("cannot rename '%s' to '%s': %s", o->output, old, strerror(errno));
				free(old);
				old = NULL;
			}
		}
	}
	r->w = o->output ? recwriter_open(o->output) : recwriter_open_discard();
	if (!r->w)
		goto out;
	if (o->live)
		recwriter_set_tap(r->w, o->live->tap, o->live->ctx);
	recwriter_split_samples(r->w);
	/* deflate in idle time, not on the workload's cores; at most BG_CAP queued */
	recwriter_set_background(r->w, BG_CAP);
	/* dwarf stacks: unwound as they are drained, the copies dropped */
	if ((r->ev[0].attr.sample_type & PERF_SAMPLE_STACK_USER) && !o->no_record_unwind)
		r->ru = recunw_new(r->w, o->keep_stacks);
	/* without the copies (or fp stacks) a sample is ~100 bytes before compression:
	 * deflate harder, it costs little (level 3: a sixth off the CNN's file for 0.7 us
	 * a sample; 6 saved a tenth more for twice that: docs/FORMAT.md) */
	if ((r->ru && !o->keep_stacks) || !(r->ev[0].attr.sample_type & PERF_SAMPLE_STACK_USER))
		recwriter_set_level(r->w, 3);
	if (!o->no_python) {
		r->py = pyreader_new(py_emit, r);
		if (r->pb && !pybpf_codes_off(r->pb))
			pyreader_codes_in_kernel(r->py);
	}
	if (r->fallback_note[0] && !o->quiet)	/* said once the recording can go ahead */
		info("%s", r->fallback_note);

	/* signals: taken through a signalfd; the child gets the original setup back */
	sigemptyset(&block);
	for (int i = 0; i < WORKLOAD_NR_SIGNALS; i++)
		if (workload_signals[i] != SIGPIPE)
			sigaddset(&block, workload_signals[i]);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &orig_mask);
	memset(&act, 0, sizeof(act));
	for (int i = 0; i < WORKLOAD_NR_SIGNALS; i++) {
		act.sa_handler = workload_signals[i] == SIGPIPE ? SIG_IGN : SIG_DFL;
		sigaction(workload_signals[i], &act, &orig_act[i]);
	}
	sfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		error("cannot create a signalfd: %s", strerror(errno));
		goto out;
	}

	if (!attach)
		setup_env(r);
	/* with -p, a command is only the timer: it runs without counters */
	if (have_cmd && workload_prepare_stdio(&wl, o->argv, &orig_mask, orig_act,
					       o->live ? o->live->stdio : NULL) < 0)
		goto out;
	if (have_cmd && !attach)
		r->cmd_pid = (uint32_t)wl.pid;
	/* A workload that keeps every core busy (64 threads on 2 cores, OpenMP on all of
	 * them) must not starve this thread, the rings' only reader: at the default weight
	 * it waited behind them (returning from exec, entering the loop: 140 ms) while the
	 * first samples filled a ring.  Where we may (root, CAP_SYS_NICE, RLIMIT_NICE) it runs
	 * at nice -10: this thread (nice is per thread on Linux), after the command was
	 * forked (it keeps its own); the unwinding thread raises itself (recunwind.c), the
	 * compressing one stays idle-class.  Not allowed: the default weight, as perf runs. */
	(void)setpriority(PRIO_PROCESS, 0, RECORD_NICE);
	if (attach) {
		r->start_ns = now_ns();
		if (attach_open(r) < 0) {
			if (have_cmd)
				workload_abort(&wl);
			goto out;
		}
	} else {
		if (open_events(r, wl.pid) < 0 || write_attrs(r) < 0) {
			workload_abort(&wl);
			goto out;
		}
		r->start_ns = now_ns();
		r->start_wall = time(NULL) - 1;
	}
	if (have_cmd && workload_start(&wl, o->argv[0]) < 0) {
		workload_reap(&wl, 1, &status);
		status = 127;
		goto out;
	}

	if (!r->ev[0].attr.exclude_kernel)
		ksyms_started = !pthread_create(&ksyms_thread, NULL, kallsyms_load, &ksyms);
	run_cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);

	npfd = r->nr_cpus + 2 + r->nr_targets;
	live_at = npfd;
	if (o->live && o->live->fd >= 0)
		npfd++;
	pfd = xcalloc((size_t)npfd, sizeof(*pfd));
	if (live_at < npfd) {
		pfd[live_at].fd = o->live->fd;
		pfd[live_at].events = POLLIN;
	}
	target_fd = xcalloc((size_t)r->nr_targets + 1, sizeof(int));
	for (int t = 0; t < r->nr_targets; t++) {
		/* not our children: a pidfd says when they end */
		target_fd[t] = (int)syscall(SYS_pidfd_open, r->targets[t], 0);
		pfd[r->nr_cpus + 2 + t].fd = target_fd[t];
		pfd[r->nr_cpus + 2 + t].events = POLLIN;
		targets_left++;
	}
	for (int c = 0; c < r->nr_cpus; c++) {
		pfd[c].fd = r->fds[c];
		pfd[c].events = POLLIN;
	}
	pfd[r->nr_cpus].fd = sfd;
	pfd[r->nr_cpus].events = POLLIN;
	pfd[r->nr_cpus + 1].fd = wl.pidfd;
	pfd[r->nr_cpus + 1].events = POLLIN;
	last_flush = now_ns();

	while (!done) {
		struct signalfd_siginfo si;
		int check_exit = have_cmd && wl.pidfd < 0, soon;

		/* a Python process: its stacks are read as soon as the sample is in; when the
		 * kernel reads them (pybpf.h), only their code objects are, while new ones
		 * come (where the kernel does not read those too), and until the first
		 * Python process is seen and a new one's threads are listed for the kernel
		 * (until then they are read from outside) */
		if (r->pb && pyreader_active(r->py) != r->py_seen) {
			r->py_seen = pyreader_active(r->py);
			r->py_fast_until = now_ns() + PB_FAST_NS;
		}
		soon = r->pb ? now_ns() < r->pb_hot_until || (r->py_wakeup && !r->py_seen) ||
			       (r->py_fast_until && now_ns() < r->py_fast_until) :
			       pyreader_active(r->py);
		if (poll(pfd, (nfds_t)npfd, soon ? PY_POLL_MS : POLL_MS) < 0 &&
		    errno != EINTR) {
			error("poll failed: %s", strerror(errno));
			break;
		}
		for (int c = 0; c < r->nr_cpus; c++)
			if (pfd[c].revents & (POLLHUP | POLLERR))
				pfd[c].fd = -1;	/* keep draining it, stop polling it */
		drain_all(r);
		if (pfd[r->nr_cpus + 1].revents & POLLIN)
			check_exit = 1;
		for (int t = 0; t < r->nr_targets; t++) {
			if (r->targets[t] <= 0)
				continue;
			if ((target_fd[t] >= 0 && (pfd[r->nr_cpus + 2 + t].revents & POLLIN)) ||
			    (target_fd[t] < 0 && kill(r->targets[t], 0) < 0 && errno == ESRCH)) {
				pfd[r->nr_cpus + 2 + t].fd = -1;
				r->targets[t] = -r->targets[t];	/* ended */
				if (!--targets_left && !have_cmd)
					done = 1;
			}
		}
		/* (only when poll said so: with a Python command this loop turns for every
		 * sample, and a read that fails is a system call for nothing) */
		while ((pfd[r->nr_cpus].revents & POLLIN) &&
		       read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD) {
				check_exit = 1;
				continue;
			}
			if (!interrupted)
				first_sig_ns = now_ns();
			interrupted = 1;
			if (!have_cmd) {
				done = 1;	/* -p: the end of the recording, not of the process */
				continue;
			}
			pass_signal(&wl, &si, first_sig_ns, &killed);
		}
		if (o->live && o->live->poll(o->live->ctx, live_at < npfd &&
					     (pfd[live_at].revents & (POLLIN | POLLHUP))) && !quit_ns) {
			/* the reader is done: -p stops here, a command is asked to end */
			quit_ns = now_ns();
			interrupted = 1;
			if (!have_cmd)
				done = 1;
			else
				kill(wl.pid, SIGTERM);
		}
		if (quit_ns && have_cmd && !killed && now_ns() - quit_ns > 2000000000ull) {
			kill(wl.pid, SIGKILL);
			killed = 1;
		}
		if (have_cmd && check_exit && workload_reap(&wl, 0, &status) != 0)
			done = reaped = 1;
		if (!done && o->duration > 0 && now_ns() - r->start_ns >= (uint64_t)(o->duration * 1e9))
			limit = "--duration";
		if (!done && o->max_size && recwriter_bytes(r->w) >= o->max_size)
			limit = "--max-size";
		if (limit)
			done = 1;
		if (progress && (now_ns() - last_progress >= 1000000000ull || done)) {
			show_progress(r, done);
			last_progress = now_ns();
		}
		if (now_ns() - last_flush >= FLUSH_NS) {
			mem_frees_put(r);
			if (r->ru)
				recunw_flush(r->ru);
			else if (recwriter_flush(r->w) < 0)
				r->write_failed = 1;
			last_flush = now_ns();
		}
	}
	end_ns = now_ns();
	if (!have_cmd)
		status = 0;	/* -p: the recording went as asked */
	if (limit) {
		char lim[64];

		if (!strcmp(limit, "--duration"))
			snprintf(lim, sizeof(lim), "%s %g s", limit, o->duration);
		else
			snprintf(lim, sizeof(lim), "%s %.1f MB", limit, o->max_size / 1e6);
		if (have_cmd && !reaped)
			record_warn(r, "recording stopped at %s: the command ran on unrecorded", lim);
		else
			record_warn(r, "recording stopped at %s", lim);
	}
	/* a crash is news; the death by the signal we passed on is not */
	if (wl.term_sig && !(interrupted && (wl.term_sig == SIGINT || wl.term_sig == SIGTERM ||
					     wl.term_sig == SIGHUP || wl.term_sig == SIGQUIT ||
					     wl.term_sig == SIGKILL)))
		info("workload killed by signal %d (%s)", wl.term_sig, strsignal(wl.term_sig));
	drain_all(r);
	close_events(r);
	mem_ring_drain(r, 1);
	if (r->pb)
		pb_match(r, 1);
	if (r->py)
		pyreader_flush(r->py);
	if (r->mem_shared && reaped) {
		/* (the command ended: a recording cut short by a limit has events made after) */
		uint64_t made = __atomic_load_n(&r->mem_shared->produced, __ATOMIC_ACQUIRE);

		if (made > r->mem_alloc_events)
			record_warn(r, "--memory: %llu of %llu sampled allocations never arrived from "
				    "the kernel (its uprobe missed them: it does, at times, for the first "
				    "calls of a thread of a process just forked); their frees show as "
				    "frees of addresses no sample had", (unsigned long long)
				    (made - r->mem_alloc_events), (unsigned long long)made);
	}
	if (r->mem_ring_lost)
		record_warn(r, "--memory: %llu frees lost (their process ended while writing them)",
			    (unsigned long long)r->mem_ring_lost);
	rec_put_done(r);
	/* the samples out first: what follows is side-band, and STATS ends the file */
	if (!r->write_failed && recwriter_flush(r->w) < 0)
		r->write_failed = 1;
	r->run_cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - run_cpu0;
	if (ksyms_started) {
		/* a fixed cost, read beside the workload: not the samples' */
		uint64_t k = __atomic_load_n(&ksyms.cpu_ns, __ATOMIC_ACQUIRE);

		if (!k)	/* still at it */
			k = thread_cpu_ns(ksyms_thread);
		r->run_cpu_ns = r->run_cpu_ns > k ? r->run_cpu_ns - k : 0;
	}

	write_build_ids(r);
	write_vdso(r);
	if (ksyms_started) {
		pthread_join(ksyms_thread, NULL);
		ksyms_started = 0;
		write_ksyms(r, &ksyms);
	}
	capture_jit(r);
	capture_itt(r);
	check_missing(r);
	check_memory(r);
	write_meta(r);
	{
		struct dlp_stats st;

		memset(&st, 0, sizeof(st));
		st.samples = r->samples;
		st.lost = r->lost;
		st.lost_records = r->lost_records;
		st.start_ns = r->start_ns;
		st.end_ns = end_ns;
		st.exit_status = limit && have_cmd && !reaped ? -1 : status;
		st.flags = (interrupted ? DLP_STATS_INTERRUPTED : 0) | (limit ? DLP_STATS_LIMIT : 0);
		recwriter_add(r->w, DLP_REC_STATS, &st, sizeof(st));
	}
	if (!r->write_failed && recwriter_flush(r->w) < 0)
		r->write_failed = 1;
	recwriter_sync(r->w);	/* the summary gives the size on disk */
	if (!r->write_failed && recwriter_flush(r->w) < 0)
		r->write_failed = 1;	/* the compressor thread failed to write */
	if ((!o->quiet || r->write_failed) && o->output)
		print_summary(r, o->output, r->write_failed);
	/* a write error was reported when it happened (disk full): not again */
	if (recwriter_close(r->w) < 0)
		r->write_failed = 1;
	r->w = NULL;
	if (limit && have_cmd && !reaped)
		status = wait_unrecorded(&wl, sfd);
	if (r->write_failed)
		status = 2;	/* the workload ran to its end; the recording did not */

out:
	rec_put_done(r);
	if (ksyms_started)
		pthread_join(ksyms_thread, NULL);
	kallsyms_free(&ksyms);
	if (r->w) {
		/* nothing was recorded: no stub file, and the previous one back in place */
		recwriter_close(r->w);
		if (o->output)
			unlink(o->output);
		if (old && o->output && rename(old, o->output) < 0)
			warning("cannot rename '%s' back to '%s': %s", old, o->output,
				strerror(errno));
	}
	free(old);
	close_events(r);
	remove_mem_uprobes(r);
	workload_release(&wl);
	if (sfd >= 0) {
		close(sfd);
		for (int i = 0; i < WORKLOAD_NR_SIGNALS; i++)
			sigaction(workload_signals[i], &orig_act[i], NULL);
		sigprocmask(SIG_SETMASK, &orig_mask, NULL);
	}
	if (r->jitdir) {
		remove_tree(r->jitdir);
		free(r->jitdir);
		if (r->jitdir_lock >= 0)
			close(r->jitdir_lock);
	}
	if (r->ittdir) {
		remove_tree(r->ittdir);
		free(r->ittdir);
		if (r->ittdir_lock >= 0)
			close(r->ittdir_lock);
	}
	for (int e = 0; e < r->nr_ev; e++)
		free(r->ev[e].ids);
	u64set_free(&r->kaddrs);
	u64set_free(&r->pids);
	u64set_free(&r->mem_pids);
	if (r->mem_shared)
		munmap(r->mem_shared, MEM_SHARED_SIZE);
	memrec_enc_release(&r->mem_frees_enc);
	if (r->mem_shared_path)
		unlink(r->mem_shared_path);
	free(r->mem_shared_path);
	free(r->mem_procs);
	free(r->py_pub);
	pybpf_free(r->pb);
	u64map_release(&r->pb_tids);
	u64map_release(&r->tcb_at);
	free(r->pb_wait);
	for (size_t i = 0; i < r->nr_pb_chains; i++)
		free(r->pb_chains[i].chain);
	free(r->pb_chains);
	free(r->pb_procs);
	free(r->mem_lib);
	path_list_clear(&r->need_buildid);
	path_list_clear(&r->jitdumps);
	free(r->scratch);
	free(r->cpus);
	free(pfd);
	if (target_fd)
		for (int t = 0; t < r->nr_targets; t++)
			if (target_fd[t] >= 0)
				close(target_fd[t]);
	free(target_fd);
	free(r->targets);
	u64set_free(&r->tids_open);
	strbuf_release(&r->attach_cmdline);
	strbuf_release(&r->warns);
	free(r->dnnl_path);
	free(r->xr);
	free(r->anon_ips);
	free(r->pending);
	jitsyms_free(r->jit);
	pyreader_free(r->py);
	return status;
}
