/*
 * opcalls.c - record --op-calls: how many times each PyTorch operator was called.
 *
 * Every operator has one entry the dispatcher is called through, at::_ops::NAME::call
 * (NAME the schema's name and overload: "add_Tensor"), exported by the library that holds
 * the operators (libtorch_cpu.so: 2,952 of them in torch 1.13).  When the drain sees a
 * process map that library, a thread of record's attaches a BPF program
 * (opcalls.bpf.c) to all of them as one uprobe_multi link (Linux 6.6), each entry's
 * cookie its operator, and the program counts the calls per process and operator.  The
 * counts of the recorded processes are summed at the end: META op_calls
 * ("aten::add.Tensor=120,aten::relu=64", most first).
 *
 * One link, not a uprobe event per entry: removing a uprobe waits for a grace period
 * (78 ms each here, one at a time whatever the threads), so 2,952 perf events on
 * tracefs uprobes took 230 s to close; a link's uprobes go with one wait.  A call is a
 * trap into the kernel (about a microsecond): opt-in.  Calls made before the link was
 * in place (the library's own start, before the first operator ran from Python) are not
 * counted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "elffile.h"
#include "recorder.h"
#include "torchops.h"
#include "opcalls.skel.h"	/* generated (lib/record/opcalls.mk) */

/* (not in Debian 12's uapi headers: Linux 6.6's) */
#define OC_TRACE_UPROBE_MULTI	48
struct oc_link_create {
	uint32_t prog_fd, target_fd, attach_type, flags;
	uint64_t path, offsets, ref_ctr_offsets, cookies;
	uint32_t cnt, umflags, pid;
};

struct oc_file {
	char *path;		/* as the process names it */
	uint64_t *off, *cookie;	/* each entry's file offset, its operator */
	size_t nr, alloc;
	int link;		/* -1: none (said in why) */
};

/* The operator's index (a link's cookie), by its interned name */
static uint32_t op_index(struct rec_opcalls *oc, const char *name, size_t len)
{
	const char *op = str_intern(name, len);
	void **slot = u64map_slot(&oc->op_at, (uint64_t)(uintptr_t)op);

	if (!*slot) {
		ALLOC_GROW(oc->ops, oc->nr_ops + 1, oc->alloc_ops);
		oc->ops[oc->nr_ops] = op;
		*slot = (void *)(uintptr_t)++oc->nr_ops;
	}
	return (uint32_t)((uintptr_t)*slot - 1);
}

struct sym_walk {
	struct rec_opcalls *oc;
	struct oc_file *f;
	const struct elffile *ef;
	Elf *e;
	const char *path;	/* readable from here */
};

/* _ZN2at4_ops<len><NAME>4callE...: the entry of operator NAME */
static int each_func(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	struct sym_walk *w = ctx;
	struct oc_file *f = w->f;
	const char *n = elf_strptr(w->e, strndx, sym->st_name);
	char *end, buf[300];
	unsigned long len;
	uint64_t off;
	size_t cut;
	int k;

	if (!n || strncmp(n, "_ZN2at4_ops", 11) || !sym->st_value)
		return 0;
	len = strtoul(n + 11, &end, 10);
	if (!len || len > 200 || end == n + 11 || strnlen(end, len) < len ||
	    strncmp(end + len, "4callE", 6))
		return 0;
	if (elffile_vaddr_to_off(w->ef, sym->st_value, &off))
		return 0;
	for (size_t i = 0; i < f->nr; i++)	/* (.symtab and .dynsym both) */
		if (f->off[i] == off)
			return 0;
	cut = torchops_split(w->path, end, len);
	if (cut >= len)
		k = snprintf(buf, sizeof(buf), "aten::%.*s", (int)len, end);
	else
		k = snprintf(buf, sizeof(buf), "aten::%.*s.%.*s", (int)cut, end,
			     (int)(len - cut - 1), end + cut + 1);
	if (k <= 0 || k >= (int)sizeof(buf))
		return 0;
	if (f->nr == f->alloc) {
		f->alloc = f->alloc ? 2 * f->alloc : 4096;
		f->off = xrealloc(f->off, f->alloc * sizeof(*f->off));
		f->cookie = xrealloc(f->cookie, f->alloc * sizeof(*f->cookie));
	}
	f->off[f->nr] = off;
	f->cookie[f->nr++] = op_index(w->oc, buf, (size_t)k);
	return 0;
}

/* path's operator entries (read as full), the program attached to them all */
static void attach_file(struct recorder *r, const char *path, const char *full,
			uint64_t mapped)
{
	struct rec_opcalls *oc = &r->oc;
	struct oc_file *f;
	struct sym_walk w = { oc, NULL, NULL, NULL, full };
	struct oc_link_create a;

	ALLOC_GROW(oc->files, oc->nr_files + 1, oc->alloc_files);
	f = &oc->files[oc->nr_files++];
	memset(f, 0, sizeof(*f));
	f->path = xstrdup(path);
	f->link = -1;
	w.f = f;
	w.ef = elffile_open(full, NULL, 0, NULL);
	w.e = w.ef ? elffile_elf(w.ef) : NULL;
	elf_each_func(w.e, each_func, &w);
	if (w.e)
		elf_end(w.e);
	elffile_put(w.ef);
	if (!f->nr) {
		snprintf(oc->why, sizeof(oc->why), "%s has no at::_ops entries to count", path);
		return;
	}
	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)bpf_program__fd(oc->skel->progs.oc_call);
	a.attach_type = OC_TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)full;
	a.offsets = (uint64_t)(uintptr_t)f->off;
	a.cookies = (uint64_t)(uintptr_t)f->cookie;
	a.cnt = (uint32_t)f->nr;
	f->link = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	if (f->link >= 0 && !oc->first_ns) {
		oc->first_ns = clock_ns(CLOCK_MONOTONIC);
		oc->mapped_ns = mapped;
		oc->first_path = f->path;
	}
	if (f->link < 0) {
		snprintf(oc->why, sizeof(oc->why), "cannot attach to the %zu operators of %s: %s%s",
			 f->nr, path, strerror(errno), errno == EINVAL || errno == ENOSYS ?
			 " (uprobe_multi links need Linux 6.6)" : "");
		return;
	}
	oc->entries += f->nr;
}

static void *oc_thread(void *arg)
{
	struct recorder *r = arg;
	struct rec_opcalls *oc = &r->oc;

	pthread_mutex_lock(&oc->mu);
	for (;;) {
		struct oc_job j;

		while (!oc->nr_jobs && !oc->closing)
			pthread_cond_wait(&oc->cv, &oc->mu);
		if (!oc->nr_jobs)
			break;
		j = oc->jobs[0];
		memmove(oc->jobs, oc->jobs + 1, --oc->nr_jobs * sizeof(*oc->jobs));
		pthread_mutex_unlock(&oc->mu);
		attach_file(r, j.shown, j.path, j.time);
		free(j.path);
		free(j.shown);
		pthread_mutex_lock(&oc->mu);
	}
	pthread_mutex_unlock(&oc->mu);
	return NULL;
}

int opcalls_setup(struct recorder *r)
{
	struct rec_opcalls *oc = &r->oc;
	struct opcalls_bpf *s;
	struct stat st;
	int err;

	if (!r->opts->op_calls)
		return 0;
	libbpf_set_print(NULL);
	s = opcalls_bpf__open();
	if (!s)
		return error("--op-calls: cannot open its BPF program: %s", strerror(errno)),
		       DLP_FAILED;
	bpf_program__set_expected_attach_type(s->progs.oc_call, OC_TRACE_UPROBE_MULTI);
	/* record in a PID namespace of its own: the processes as it knows them (the first
	 * namespace's inode is fixed: PROC_PID_INIT_INO) */
	if (!stat("/proc/self/ns/pid", &st) && st.st_ino != 0xEFFFFFFCu) {
		s->rodata->pidns_dev = (uint64_t)st.st_dev;
		s->rodata->pidns_ino = (uint64_t)st.st_ino;
	}
	err = opcalls_bpf__load(s);
	if (err) {
		opcalls_bpf__destroy(s);
		return error("--op-calls: the kernel refused its BPF program: %s (root or "
			     "CAP_BPF and CAP_PERFMON; uprobe_multi links need Linux 6.6)",
			     strerror(-err)), DLP_FAILED;
	}
	oc->skel = s;
	pthread_mutex_init(&oc->mu, NULL);
	pthread_cond_init(&oc->cv, NULL);
	u64map_init(&oc->op_at);
	oc->on = 1;
	if (pthread_create(&oc->th, NULL, oc_thread, r))
		return error("--op-calls: cannot start a thread: %s", strerror(errno)), DLP_FAILED;
	oc->started = 1;
	return 0;
}

/*
 * The drain saw pid map path at start with PROT_EXEC: the library of the operators?  A
 * link counts every process that runs the file, so one per file: the file a mapping
 * holds is read through /proc/PID/map_files (under a container's overlay, the real file,
 * as uprobes take it).  By path, one file under two (a bind mount, two containers of one
 * image) had two links, and each call was counted twice.
 */
void opcalls_mapped(struct recorder *r, uint32_t pid, const char *path, const char *root,
		    uint64_t start, uint64_t len, uint64_t time)
{
	struct rec_opcalls *oc = &r->oc;
	const char *base = strrchr(path, '/');
	struct oc_seen seen = { 0, 0, NULL };
	int known = 0;
	struct oc_job j;
	struct stat st;
	char mf[80];
	int fd;

	if (!oc->on || !base || strncmp(base + 1, "libtorch_cpu.so", 15))
		return;
	seen.path = xstrdup(path);
	snprintf(mf, sizeof(mf), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)(start + len));
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && !fstat(fd, &st)) {
		seen.dev = (uint64_t)st.st_dev;
		seen.ino = (uint64_t)st.st_ino;
		known = 1;
	}
	if (fd >= 0)
		close(fd);
	for (size_t i = 0; i < oc->nr_seen; i++)
		if (known ? oc->seen[i].ino && oc->seen[i].dev == seen.dev &&
			    oc->seen[i].ino == seen.ino :
		    !strcmp(oc->seen[i].path, seen.path)) {	/* (gone already: by path) */
			free(seen.path);
			return;	/* (attached, or being: the link counts every process) */
		}
	ALLOC_GROW(oc->seen, oc->nr_seen + 1, oc->alloc_seen);
	oc->seen[oc->nr_seen++] = seen;
	j.pid = pid;
	j.time = time;
	j.shown = xstrdup(path);
	j.path = root ? xasprintf("%s%s", root, path) : xstrdup(path);	/* (a container's) */
	pthread_mutex_lock(&oc->mu);
	ALLOC_GROW(oc->jobs, oc->nr_jobs + 1, oc->alloc_jobs);
	oc->jobs[oc->nr_jobs++] = j;
	pthread_cond_signal(&oc->cv);
	pthread_mutex_unlock(&oc->mu);
}

static int cmp_count(const void *a, const void *b, void *ctx)
{
	const uint64_t *n = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (n[x] != n[y])
		return n[x] > n[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The end: the calls of the recorded processes summed by operator, META op_calls made,
 * the links closed; what was not counted said in one line */
void opcalls_finish(struct recorder *r)
{
	struct rec_opcalls *oc = &r->oc;
	uint64_t *n, key, next, v, dropped = 0, others = 0;
	uint32_t *order, zero = 0;
	size_t nr = 0;
	int map;

	if (!oc->started)
		return;
	pthread_mutex_lock(&oc->mu);
	oc->closing = 1;
	pthread_cond_signal(&oc->cv);
	pthread_mutex_unlock(&oc->mu);
	pthread_join(oc->th, NULL);
	oc->started = 0;
	n = xcalloc(oc->nr_ops + 1, sizeof(*n));
	order = xcalloc(oc->nr_ops + 1, sizeof(*order));
	map = bpf_map__fd(oc->skel->maps.calls);
	for (int more = !bpf_map_get_next_key(map, NULL, &key); more;
	     more = !bpf_map_get_next_key(map, &key, &next), key = next) {
		if (bpf_map_lookup_elem(map, &key, &v))
			continue;
		if ((key & 0xffffffffu) >= oc->nr_ops)
			continue;
		if (u64map_has(&r->pids, key >> 32))
			n[key & 0xffffffffu] += v;
		else
			others += v;	/* (a process not recorded that ran the same code) */
	}
	bpf_map_lookup_elem(bpf_map__fd(oc->skel->maps.dropped), &zero, &dropped);
	for (size_t f = 0; f < oc->nr_files; f++)
		if (oc->files[f].link >= 0) {
			close(oc->files[f].link);
			oc->files[f].link = -1;
		}
	for (uint32_t i = 0; i < oc->nr_ops; i++)
		if (n[i])
			order[nr++] = i;
	qsort_r(order, nr, sizeof(*order), cmp_count, n);
	for (size_t i = 0; i < nr; i++) {
		strbuf_addf(&oc->meta, "%s%s=%llu", i ? "," : "", oc->ops[order[i]],
			    (unsigned long long)n[order[i]]);
		oc->calls += n[order[i]];
	}
	oc->nr_counted = nr;
	if (!oc->entries && !oc->why[0])
		snprintf(oc->why, sizeof(oc->why), "no process mapped libtorch_cpu.so: nothing "
			 "counted");
	if (oc->why[0])
		rec_warn(r, "--op-calls: %s", oc->why);
	if (dropped)
		rec_warn(r, "--op-calls: %llu calls not counted (the table of processes and "
			    "operators was full)", (unsigned long long)dropped);
	(void)others;
	free(n);
	free(order);
}

void opcalls_say(const struct recorder *r)
{
	const struct rec_opcalls *oc = &r->oc;

	if (!oc->on || !oc->first_ns)
		return;
	fprintf(stderr, "dlprof: op calls: %llu calls of %zu operators counted (%zu entries of "
		"%s, from %.1f ms after it was mapped)\n", (unsigned long long)oc->calls,
		oc->nr_counted, oc->entries, oc->first_path,
		oc->mapped_ns && oc->first_ns > oc->mapped_ns ?
		(oc->first_ns - oc->mapped_ns) / 1e6 : 0.0);
}

void opcalls_release(struct recorder *r)
{
	struct rec_opcalls *oc = &r->oc;

	opcalls_finish(r);
	for (size_t i = 0; i < oc->nr_jobs; i++) {
		free(oc->jobs[i].path);
		free(oc->jobs[i].shown);
	}
	free(oc->jobs);
	for (size_t f = 0; f < oc->nr_files; f++) {
		if (oc->files[f].link >= 0)
			close(oc->files[f].link);
		free(oc->files[f].path);
		free(oc->files[f].off);
		free(oc->files[f].cookie);
	}
	free(oc->files);
	for (size_t i = 0; i < oc->nr_seen; i++)
		free(oc->seen[i].path);
	free(oc->seen);
	free(oc->ops);
	u64map_release(&oc->op_at);
	strbuf_release(&oc->meta);
	if (oc->skel)
		opcalls_bpf__destroy(oc->skel);
	if (oc->on) {
		pthread_mutex_destroy(&oc->mu);
		pthread_cond_destroy(&oc->cv);
	}
	memset(oc, 0, sizeof(*oc));
}
