/* pybpf.c - the loader of the BPF program that reads a sampled thread's Python frames in
 * the kernel (pybpf.h; the program: pybpf.bpf.c, embedded as a libbpf skeleton), and the
 * drain of its ring buffer.
 *
 * The frame layouts pybpf_new() is given go to the program as read-only data, before it
 * is loaded.  The program that also reads code objects needs bpf_loop (Linux 5.17) and
 * BTF; where the kernel refuses it, the one that reads chains only is loaded instead
 * (5.8: the ring buffer).  libbpf says nothing unless DLPROF_DEBUG_BPF is set (then its
 * warnings, with the verifier's log of a program refused, and the size of the one loaded).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kbtf.h"
#include "memevent.h"
#include "pybpf.h"
#include "pybpf-prog.h"
#include "unwind.h"
#include "util.h"
#include "pybpf.skel.h"		/* generated (lib/record/pybpf.mk) */

struct pybpf {
	struct pybpf_bpf *skel;
	struct bpf_program *prog;	/* the one loaded */
	struct bpf_link *fork_link;	/* dlprof_fork on sched_process_fork, or NULL */
	int fork_wanted;		/* loaded, to attach with the first thread listed */
	struct ring_buffer *rb;
	const char *codes_why;		/* why code objects are not read here */
	/* where the kernel keeps a sample's time (pybpf.bpf.c, sample_time), from its
	 * BTF; sd_ok 0: not known, or the program would not load reading it */
	uint32_t sd_time_off, sd_flags_off, ctx_data_off;
	int sd_ok;
	int codes;			/* the program reads them */
	/* the drain under way */
	pybpf_chain_fn *fn;
	pybpf_code_fn *code_fn;
	void *ctx;
	size_t chains;
	/* the native walk (pybpf_native_*) */
	int native;
	struct ring_buffer *krb;
	pybpf_native_fn *nfn;
	void *nctx;
	int stats_fd;			/* BPF_ENABLE_STATS, while it is open */
	struct bpf_program *keep_prog;	/* the one that drops no sample, or NULL */
	struct bpf_program *switch_prog;	/* the switch-outs', dropping theirs, or NULL */
	int one_event;		/* pybpf_new()'s */
	int merged;		/* prog serves the switch-outs too (switch_merged) */
	/* tables made, waiting for their place in ktabs (pybpf_native_table) */
	pthread_mutex_t tab_mu;
	struct tab_wait *tab_wait;
	size_t nr_tab_wait, alloc_tab_wait;
	int tab_inserting;		/* a caller is putting them in */
	uint64_t tab_failed;		/* tables the kernel did not take */
};

/* A table made, its map's descriptor held until the map of maps holds it */
struct tab_wait {
	uint32_t fid;
	int fd;
	struct kunw_file f;
};

static int libbpf_say(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !getenv("DLPROF_DEBUG_BPF"))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* A ring's size: per_cpu bytes for each cpu online, a power of two from min to max; or
 * DLPROF_BPF_RING_KB's (both rings: a small one shows that record is woken to read it) */
static uint32_t ring_size(uint32_t per_cpu, uint32_t min, uint32_t max)
{
	const char *e = getenv("DLPROF_BPF_RING_KB");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t want = (uint64_t)(cpus > 0 ? cpus : 1) * per_cpu;
	uint32_t size = (uint32_t)sysconf(_SC_PAGESIZE);

	if (e && *e)
		want = strtoull(e, NULL, 10) << 10;
	else if (want < min)
		want = min;
	while (size < want && size < max)
		size <<= 1;
	return size;
}

/* Where this kernel keeps a sample's time for the program (pybpf.bpf.c, sample_time),
 * from its BTF: sd_ok 0 where it does not say (the program then times its chains
 * itself). */
static void sample_time_offsets(struct pybpf *pb)
{
	struct kbtf *k = getenv("DLPROF_BPF_NO_SAMPLE_TIME") ? NULL :
			 kbtf_open("/sys/kernel/btf/vmlinux");
	long t = kbtf_member(k, "perf_sample_data", "time", 8);
	long f = kbtf_member(k, "perf_sample_data", "sample_flags", 8);
	long d = kbtf_member(k, "bpf_perf_event_data_kern", "data", 8);

	pb->sd_ok = t > 0 && f >= 0 && d >= 0;
	if (pb->sd_ok) {
		pb->sd_time_off = (uint32_t)t;
		pb->sd_flags_off = (uint32_t)f;
		pb->ctx_data_off = (uint32_t)d;
	}
	kbtf_close(k);
}

/* Open the program with these layouts and load it, reading code objects or not: 0, or
 * -errno (the kernel's). */
static int load(struct pybpf *pb, const struct pyframe_layout *lays, size_t nr, int codes,
		int stime)
{
	struct pybpf_bpf *s = pybpf_bpf__open();
	uint32_t rsize;
	int err;

	if (!s)
		return -errno;
	for (size_t k = 0; k < nr; k++)
		s->rodata->layouts[k] = lays[k];
	s->rodata->nr_layouts = (uint32_t)nr;
	if (stime) {
		s->rodata->sd_time_off = pb->sd_time_off;
		s->rodata->sd_flags_off = pb->sd_flags_off;
		s->rodata->ctx_data_off = pb->ctx_data_off;
	}
	{
		/* (the tests': pybpf.bpf.c, hold_ns) */
		const char *e = getenv("DLPROF_TEST_BPF_HOLD_US");

		if (e && *e) {
			s->rodata->hold_ns = strtoull(e, NULL, 10) * 1000;
			s->rodata->hold_every = 8;
		} else {
			bpf_map__set_autocreate(s->maps.hold_runs, false);
		}
	}
	rsize = ring_size(256u << 10, 512u << 10, PYBPF_RB_MAX);
	bpf_map__set_max_entries(s->maps.ring, rsize);
	s->rodata->ring_half = rsize / 2;
	/* the native walk's maps, small where it does not run (the program names them) */
	s->rodata->native_walk = codes ? (uint32_t)pb->native : 0;
	if (!(codes && pb->native)) {
		bpf_map__set_max_entries(s->maps.kring, (uint32_t)sysconf(_SC_PAGESIZE));
		bpf_map__set_max_entries(s->maps.ktabs, 1);
		bpf_map__set_max_entries(s->maps.kfiles, 1);
		bpf_map__set_max_entries(s->maps.kprocs, 1);
		bpf_map__set_max_entries(s->maps.kcache, 1);
	} else {
		rsize = ring_size(512u << 10, 1u << 20, KUNW_RB_MAX);
		bpf_map__set_max_entries(s->maps.kring, rsize);
	}
	s->rodata->kring_half = bpf_map__max_entries(s->maps.kring) / 2;
	bpf_program__set_autoload(codes ? s->progs.dlprof_py_chain : s->progs.dlprof_py, false);
	/* Each program verified costs time at every record (the walk: 9,100 instructions
	 * processed, 9.5 ms on 6.18).
	 * Without the walk in place of the copies, one serves every event: it drops no
	 * sample.  With it and one sampling event, the switch-outs run the same program,
	 * which knows them (switch_merged); else one that drops none serves the other
	 * sampling events, and one of their own the switch-outs. */
	pb->merged = codes && pb->native == PYBPF_NATIVE_INSTEAD && pb->one_event;
	s->rodata->switch_merged = pb->merged;
	bpf_program__set_autoload(s->progs.dlprof_py_keep,
				  codes && pb->native == PYBPF_NATIVE_INSTEAD && !pb->merged);
	bpf_program__set_autoload(s->progs.dlprof_py_switch,
				  codes && pb->native == PYBPF_NATIVE_INSTEAD && !pb->merged);
	{
		/* record in a PID namespace of its own (a container): its threads' ids are
		 * that namespace's, and so must the program's be (the first namespace's
		 * inode is fixed: PROC_PID_INIT_INO) */
		struct stat st;

		if (!stat("/proc/self/ns/pid", &st) && st.st_ino != 0xEFFFFFFCu) {
			s->rodata->pidns_dev = (uint64_t)st.st_dev;
			s->rodata->pidns_ino = (uint64_t)st.st_ino;
		}
	}
	if (!codes) {
		bpf_map__set_autocreate(s->maps.codes, false);
		bpf_map__set_autocreate(s->maps.code_scratch, false);
	}
	err = pybpf_bpf__load(s);
	if (err) {
		pybpf_bpf__destroy(s);
		return err;
	}
	pb->skel = s;
	pb->prog = codes ? s->progs.dlprof_py : s->progs.dlprof_py_chain;
	pb->keep_prog = bpf_program__autoload(s->progs.dlprof_py_keep) ?
			s->progs.dlprof_py_keep : NULL;
	pb->switch_prog = pb->merged ? s->progs.dlprof_py :
			  bpf_program__autoload(s->progs.dlprof_py_switch) ?
			  s->progs.dlprof_py_switch : NULL;
	pb->codes = codes;
	pb->sd_ok = stime;
	/* a forked child's first samples (pybpf.bpf.c, forked): attached as the first
	 * thread is listed (pybpf_set_thread) */
	pb->fork_wanted = bpf_program__autoload(s->progs.dlprof_fork);
	if (getenv("DLPROF_DEBUG_BPF")) {
		/* the sampling event's program first, then the others loaded */
		const struct bpf_program *progs[] = { pb->prog, pb->keep_prog, pb->switch_prog };

		for (size_t k = 0; k < ARRAY_SIZE(progs); k++) {
			struct bpf_prog_info info;
			uint32_t len = sizeof(info);

			if (!progs[k] || (k && progs[k] == pb->prog))
				continue;
			memset(&info, 0, sizeof(info));
			if (!bpf_obj_get_info_by_fd(bpf_program__fd(progs[k]), &info, &len))
				fprintf(stderr, "dlprof: BPF program %s: %u instructions, %u "
					"processed by the verifier\n", bpf_program__name(progs[k]),
					info.xlated_prog_len / 8, info.verified_insns);
		}
		fprintf(stderr, "dlprof: BPF program: Python stacks timed %s\n", stime ?
			"by their samples' own time, where the kernel has it (Linux 6.3)" :
			"by the program");
	}
	return 0;
}

/* One record of the ring buffer (libbpf's drain skips those discarded, stops at one
 * still being written): a chain or a code record (pybpf.h) */
static int got_record(void *ctx, void *data, size_t len)
{
	struct pybpf *pb = ctx;
	const struct pybpf_chain_rec *c = data;
	const struct pybpf_code_rec *cr = data;
	uint32_t n;

	if (len < 16)
		return 0;
	_Static_assert(!((PYBPF_TRUNC | PYBPF_FAIL | PYBPF_GIL | PYBPF_EXACT | PYBPF_STALE) &
			 (PYBPF_CODE | 0x3ffu)) &&
		       PYBPF_TRUNC != PYBPF_CODE && PYBPF_FAIL != PYBPF_CODE &&
		       PYBPF_GIL != PYBPF_CODE && PYBPF_EXACT != PYBPF_CODE &&
		       PYBPF_STALE != PYBPF_CODE && PYBPF_MAXF <= 0x3ff,
		       "a chain's flags, its frame count and a code record's kind apart");
	n = c->n & ~(PYBPF_TRUNC | PYBPF_FAIL | PYBPF_GIL | PYBPF_EXACT | PYBPF_STALE);
	if (c->n == PYBPF_CODE && len >= offsetof(struct pybpf_code_rec, tab)) {
		struct pybpf_code pc = {
			.pid = cr->pid,
			.addr = cr->addr,
			.time = cr->time,
			.head = cr->head,
			.tab_size = cr->tab_size,
		};

		if (cr->got & PYBPF_GOT_QUALNAME)
			pc.qualname = cr->qualname;
		if (cr->got & PYBPF_GOT_FILENAME)
			pc.filename = cr->filename;
		if (cr->got & PYBPF_GOT_TAB) {
			pc.tab = cr->tab;
			pc.tab_len = len - offsetof(struct pybpf_code_rec, tab);
			if (pc.tab_len > pc.tab_size)
				pc.tab_len = (size_t)pc.tab_size;
		}
		pb->code_fn(pb->ctx, &pc);
	} else if (c->n != PYBPF_CODE && n <= PYBPF_MAXF) {
		pb->fn(pb->ctx, c->tid, c->time, (const uint64_t *)(const void *)c->f, n,
		       (c->n & (PYBPF_TRUNC | PYBPF_FAIL) ? PYBPF_CHAIN_FAILED : 0) |
		       (c->n & PYBPF_GIL ? PYBPF_CHAIN_GIL : 0) |
		       (c->n & PYBPF_EXACT ? PYBPF_CHAIN_EXACT : 0) |
		       (c->n & PYBPF_STALE ? PYBPF_CHAIN_STALE : 0));
		pb->chains++;
	}
	return 0;
}

static int got_walk(void *ctx, void *data, size_t len);

struct pybpf *pybpf_new(const struct pyframe_layout *lays, size_t nr, int native,
			int one_event, const char **why)
{
	struct pybpf *pb = xcalloc(1, sizeof(*pb));
	struct rlimit memlock;
	int err, fd;

	pb->native = native;
	pb->one_event = one_event;
	pb->stats_fd = -1;
	pthread_mutex_init(&pb->tab_mu, NULL);

	libbpf_set_print(libbpf_say);
	if (getenv("DLPROF_NO_BPF")) {
		*why = "DLPROF_NO_BPF is set";
		goto fail;
	}
	for (size_t k = 0; k < nr; k++) {
		const struct pyframe_layout *l = &lays[k];

		if (nr > PYBPF_MAX_LAYOUTS || (l->code | l->previous | l->instr) % 8 ||
		    l->code + 8 > PYBPF_FR_READ ||
		    l->previous + 8 > PYBPF_FR_READ || l->instr + 8 > PYBPF_FR_READ ||
		    l->owner >= PYBPF_FR_READ ||
		    (l->is_entry != MEM_PY_NONE && l->is_entry >= PYBPF_FR_READ)) {
			*why = "a frame layout it cannot read";
			goto fail;
		}
	}
	/* whether there are BPF maps here (libbpf's load would not say what failed) */
	fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, NULL, 0, 0, (uint32_t)sysconf(_SC_PAGESIZE),
			    NULL);
	if (fd < 0) {
		*why = errno == EPERM ? "no permission for BPF maps: CAP_BPF and CAP_PERFMON, in a "
		       "container --cap-add PERFMON,BPF" : "BPF maps not available";
		goto fail;
	}
	close(fd);
	/* code objects read at the sample too, where the kernel has bpf_loop (5.17); libbpf
	 * raises RLIMIT_MEMLOCK where the kernel counts BPF memory against it (before 5.11):
	 * put back, the workload inherits record's */
	getrlimit(RLIMIT_MEMLOCK, &memlock);
	sample_time_offsets(pb);
	err = -1;
	if (!getenv("DLPROF_NO_BPF_CODES"))
		pb->codes_why = "the kernel would not run the program with bpf_loop";
	else
		pb->codes_why = "DLPROF_NO_BPF_CODES is set";
	/* each program with the sample's time read, then (a verifier that will not have
	 * the context read so) without: its chains timed by itself */
	for (int codes = !getenv("DLPROF_NO_BPF_CODES"); codes >= 0 && err; codes--)
		for (int stime = pb->sd_ok; stime >= 0 && err; stime--)
			err = load(pb, lays, nr, codes, stime);
	setrlimit(RLIMIT_MEMLOCK, &memlock);
	if (err) {
		*why = err == -E2BIG ? "the program is too long" : "the kernel refused the program";
		goto fail;
	}
	pb->rb = ring_buffer__new(bpf_map__fd(pb->skel->maps.ring), got_record, pb, NULL);
	if (!pb->rb) {
		*why = "cannot map the BPF ring buffer";
		goto fail;
	}
	if (pb->native && !pb->codes)
		pb->native = 0;	/* (it needs bpf_loop) */
	if (pb->native) {
		pb->krb = ring_buffer__new(bpf_map__fd(pb->skel->maps.kring), got_walk, pb, NULL);
		if (!pb->krb) {
			*why = "cannot map the BPF ring buffer";
			goto fail;
		}
	}
	return pb;
fail:
	pybpf_free(pb);
	return NULL;
}

const char *pybpf_codes_off(const struct pybpf *pb)
{
	return pb->codes ? NULL : pb->codes_why;
}

void pybpf_free(struct pybpf *pb)
{
	if (!pb)
		return;
	ring_buffer__free(pb->rb);
	ring_buffer__free(pb->krb);
	if (pb->stats_fd >= 0)
		close(pb->stats_fd);
	bpf_link__destroy(pb->fork_link);
	for (size_t i = 0; i < pb->nr_tab_wait; i++)	/* (none: the callers are gone) */
		close(pb->tab_wait[i].fd);
	free(pb->tab_wait);
	pthread_mutex_destroy(&pb->tab_mu);
	pybpf_bpf__destroy(pb->skel);
	free(pb);
}

int pybpf_attach_switch(struct pybpf *pb, int perf_fd, uint32_t event)
{
	if (!pb->switch_prog || !event)
		return pybpf_attach(pb, perf_fd, 0);
	pb->skel->bss->switch_event = event;
	return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, bpf_program__fd(pb->switch_prog)) < 0 ?
	       -errno : 0;
}

int pybpf_attach(struct pybpf *pb, int perf_fd, int may_drop)
{
	const struct bpf_program *p = may_drop || !pb->keep_prog ? pb->prog : pb->keep_prog;

	return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, bpf_program__fd(p)) < 0 ? -errno : 0;
}

/* The program that keeps a listed thread's entry for the processes it forks, attached
 * once there is one, to the raw tracepoint (pybpf.bpf.c, dlprof_fork) */
static void fork_attach(struct pybpf *pb)
{
	pb->fork_wanted = 0;
	pb->fork_link = bpf_program__attach_raw_tracepoint(pb->skel->progs.dlprof_fork,
							   "sched_process_fork");
	if (libbpf_get_error(pb->fork_link))
		pb->fork_link = NULL;
	if (getenv("DLPROF_DEBUG_BPF"))
		fprintf(stderr, "dlprof: BPF program dlprof_fork %s\n", pb->fork_link ?
			"attached to sched_process_fork" : "not attached");
}

int pybpf_set_thread(struct pybpf *pb, uint32_t tid, const struct pybpf_thread *t)
{
	int err = bpf_map__update_elem(pb->skel->maps.threads, &tid, sizeof(tid), t,
				       sizeof(*t), BPF_ANY);

	if (!err && pb->fork_wanted)
		fork_attach(pb);
	return err;
}

void pybpf_drop_thread(struct pybpf *pb, uint32_t tid)
{
	bpf_map__delete_elem(pb->skel->maps.threads, &tid, sizeof(tid), 0);
}

int pybpf_poll_fds(const struct pybpf *pb, int fds[2])
{
	int n = 0;

	if (pb && pb->rb)
		fds[n++] = ring_buffer__epoll_fd(pb->rb);
	if (pb && pb->krb && pb->native == PYBPF_NATIVE_INSTEAD)	/* (else read as its
									   samples are) */
		fds[n++] = ring_buffer__epoll_fd(pb->krb);
	return n;
}

uint64_t pybpf_dropped(const struct pybpf *pb)
{
	return __atomic_load_n(&pb->skel->bss->dropped, __ATOMIC_RELAXED);
}

/* The records in the ring buffer, in order */
size_t pybpf_drain(struct pybpf *pb, pybpf_chain_fn *fn, pybpf_code_fn *code_fn, void *ctx)
{
	pb->fn = fn;
	pb->code_fn = code_fn;
	pb->ctx = ctx;
	pb->chains = 0;
	ring_buffer__consume(pb->rb);
	return pb->chains;
}

/* ---- the native walk ---- */

int pybpf_native(const struct pybpf *pb)
{
	return pb && pb->native > 0 ? pb->native : 0;
}

/* A table as one array map of blocks of 4-byte words (kunwind.h), filled through a
 * mapping of it (2.5 M rows are one copy, not a system call a row), put at fid, then
 * its base, pages and rules, which say it is there */
static void insert_tables(struct pybpf *pb, struct tab_wait *t, size_t n);

int pybpf_native_table(struct pybpf *pb, uint32_t fid, const struct unw_ktable *kt)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	size_t n = 2 * kt->nr_pages + kt->nr_rules + kt->nr_rows;
	size_t nb = (n + KUNW_BLOCK - 1) / KUNW_BLOCK, len;
	struct kunw_file f = { kt->base, (uint32_t)kt->nr_pages, (uint32_t)kt->nr_rules, 0, 0 };
	unsigned char *p;
	int fd, ret = 0;

	if (!pb->native || fid >= KUNW_MAX_FILES || nb > UINT32_MAX || kt->nr_pages > UINT32_MAX ||
	    !kt->nr_rules || kt->nr_rules > KUNW_MAX_RULES)
		return -EINVAL;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "dlprof_ktab", 4, 4 * KUNW_BLOCK, (uint32_t)nb, &o);
	if (fd < 0)
		return -errno;
	len = nb * 4 * KUNW_BLOCK;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
		close(fd);
		return ret;
	}
	memcpy(p, kt->pages, kt->nr_pages * 8);
	memcpy(p + kt->nr_pages * 8, kt->rules, kt->nr_rules * 4);
	memcpy(p + kt->nr_pages * 8 + kt->nr_rules * 4, kt->rows, kt->nr_rows * 4);
	munmap(p, len);
	/*
	 * Into the map of maps: each update there waits for an RCU grace period (the
	 * kernel's programs may hold the map it replaces), 10 to 13 ms on these guests, so
	 * that four threads put 69 kept tables in over 0.28 s while the first samples
	 * waited for them.  A batch waits once: the first caller to find none at it puts
	 * in every table waiting, again until none waits; the others leave theirs to it.
	 */
	pthread_mutex_lock(&pb->tab_mu);
	ALLOC_GROW(pb->tab_wait, pb->nr_tab_wait + 1, pb->alloc_tab_wait);
	pb->tab_wait[pb->nr_tab_wait++] = (struct tab_wait){ fid, fd, f };
	if (!pb->tab_inserting) {
		pb->tab_inserting = 1;
		while (pb->nr_tab_wait) {
			struct tab_wait *t = pb->tab_wait;
			size_t nt = pb->nr_tab_wait;

			pb->tab_wait = NULL;
			pb->nr_tab_wait = pb->alloc_tab_wait = 0;
			pthread_mutex_unlock(&pb->tab_mu);
			insert_tables(pb, t, nt);
			free(t);
			pthread_mutex_lock(&pb->tab_mu);
		}
		pb->tab_inserting = 0;
	}
	pthread_mutex_unlock(&pb->tab_mu);
	return ret;
}

/* Tables t[0 .. n) into ktabs in one batch (one at a time where the kernel takes no
 * batch there), then their files' entries, which the program reads first (one whose
 * table did not go in stays without): the maps' descriptors closed (ktabs holds them) */
static void insert_tables(struct pybpf *pb, struct tab_wait *t, size_t n)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	int outer = bpf_map__fd(pb->skel->maps.ktabs);
	uint32_t *keys = xmalloc(n * sizeof(*keys)), done = (uint32_t)n;
	int *fds = xmalloc(n * sizeof(*fds)), *in = xcalloc(n, sizeof(*in)), batched;

	for (size_t i = 0; i < n; i++) {
		keys[i] = t[i].fid;
		fds[i] = t[i].fd;
	}
	/* (where it failed, what it says was done cannot be trusted: a kernel without the
	 * batch gives back the count asked; all go in again one by one) */
	batched = !bpf_map_update_batch(outer, keys, fds, &done, &o) && done == n;
	for (size_t i = 0; i < n; i++)
		in[i] = batched || !bpf_map_update_elem(outer, &keys[i], &fds[i], BPF_ANY);
	for (size_t i = 0; i < n; i++) {
		if (!in[i] || bpf_map_update_elem(bpf_map__fd(pb->skel->maps.kfiles), &keys[i],
						  &t[i].f, BPF_ANY))
			__atomic_add_fetch(&pb->tab_failed, 1, __ATOMIC_RELAXED);
		close(t[i].fd);
	}
	free(keys);
	free(fds);
	free(in);
}

uint64_t pybpf_native_tables_failed(struct pybpf *pb)
{
	return __atomic_load_n(&pb->tab_failed, __ATOMIC_RELAXED);
}

int pybpf_native_walked(struct pybpf *pb, uint32_t fid)
{
	struct kunw_file f;

	if (!pb->native || fid >= KUNW_MAX_FILES)
		return -EINVAL;
	if (bpf_map_lookup_elem(bpf_map__fd(pb->skel->maps.kfiles), &fid, &f))
		return -errno;
	return f.walked != 0;
}

int pybpf_native_proc(struct pybpf *pb, uint32_t pid, const struct kunw_proc *p)
{
	if (!pb->native)
		return -EINVAL;
	return bpf_map_update_elem(bpf_map__fd(pb->skel->maps.kprocs), &pid, p, BPF_ANY) ?
	       -errno : 0;
}

void pybpf_native_drop(struct pybpf *pb, uint32_t pid)
{
	if (pb->native)
		bpf_map_delete_elem(bpf_map__fd(pb->skel->maps.kprocs), &pid);
}

static int got_walk(void *ctx, void *data, size_t len)
{
	struct pybpf *pb = ctx;
	const struct kunw_chain *c = data;

	_Static_assert(offsetof(struct kunw_chain, ip) == KUNW_HEAD, "the walk's header");
	if (len < KUNW_HEAD || c->n > KUNW_MAXF || c->nk > KUNW_MAXK ||
	    len < KUNW_HEAD + 8 * ((size_t)c->n + c->nk))
		return 0;
	pb->nfn(pb->nctx, c);
	return 0;
}

void pybpf_native_drain(struct pybpf *pb, pybpf_native_fn *fn, void *ctx)
{
	if (!pb->native)
		return;
	pb->nfn = fn;
	pb->nctx = ctx;
	ring_buffer__consume(pb->krb);
}

uint64_t pybpf_native_dropped(const struct pybpf *pb)
{
	return pb->native ? __atomic_load_n(&pb->skel->bss->kdropped, __ATOMIC_RELAXED) : 0;
}

/* The kernel's count of the program's runs and their time, from now on */
int pybpf_stats_on(struct pybpf *pb)
{
	if (pb->stats_fd < 0)
		pb->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	return pb->stats_fd < 0 ? -errno : 0;
}

int pybpf_stats(const struct pybpf *pb, uint64_t *runs, uint64_t *ns)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(pb->prog), &info, &len))
		return -errno;
	*runs = info.run_cnt;
	*ns = info.run_time_ns;
	return 0;
}
