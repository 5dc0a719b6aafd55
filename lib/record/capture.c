/* capture.c - what is captured at the end of a recording: build-ids, kernel symbols, the vdso, JIT perf maps and dumps, ITT files (recorder.h). */
#include "itt-format.h"
#include "ksyms.h"
#include "recorder.h"

#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/resource.h>

/* ---- end of record: build-ids, kernel symbols, JIT, ITT, meta, stats ---- */

void capture_build_ids(struct recorder *r)
{
	if (!r->need_buildid.nr)
		return;
	for (size_t i = 0; i < r->need_buildid.nr; i++) {
		struct dlp_buildid_rec b;
		size_t len;
		const char *path = r->need_buildid.v[i];

		memset(&b, 0, sizeof(b));
		len = elf_file_build_id(path, b.id);
		if (!len)
			continue;
		b.pid = -1;
		b.size = (uint8_t)(len < 20 ? len : 20);
		recwriter_add2(r->w, DLP_REC_BUILDID, &b, sizeof(b), path, strlen(path) + 1);
	}
}

/* The functions named otherwise than their symbols (keep_names: torch.compile kernels) */
void capture_sym_names(struct recorder *r)
{
	for (size_t i = 0; i < r->keep.nr_names; i++) {
		const struct keep_name *k = &r->keep.names[i];
		struct dlp_buildid_rec b;
		struct strbuf sb = STRBUF_INIT;

		memset(&b, 0, sizeof(b));
		b.pid = -1;
		b.size = k->size;
		memcpy(b.id, k->id, k->size);
		strbuf_add(&sb, k->sym, strlen(k->sym) + 1);
		strbuf_add(&sb, k->name, strlen(k->name) + 1);
		recwriter_add2(r->w, DLP_REC_SYMNAME, &b, sizeof(b), sb.buf, sb.len);
		strbuf_release(&sb);
	}
}

/*
 * /proc/kallsyms takes ~40 ms of kernel time to read: a thread loads and sorts it while
 * the workload runs, so the exit path only looks up the addresses hit.
 */
void *capture_kallsyms_load(void *arg)
{
	struct kallsyms *k = arg;
	struct ksyms *ks = ksyms_new();

	setpriority(PRIO_PROCESS, 0, 0);	/* not urgent: the reader's boost is not for it */
	/* this boot's core kernel, kept by an earlier record; else a whole read, kept */
	ksyms_load_running(ks, 1);
	k->ks = ks;
	/* (its clock is gone with it: record_run_cpu_ns leaves this out) */
	__atomic_store_n(&k->cpu_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELEASE);
	return NULL;
}

void capture_kallsyms_free(struct kallsyms *k)
{
	ksyms_free(k->ks);
	memset(k, 0, sizeof(*k));
}

static int cmp_ksym_start(const void *a, const void *b)
{
	const struct ksym *x = *(const struct ksym *const *)a, *y = *(const struct ksym *const *)b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The kernel functions the samples hit, as a DLP_REC_KSYMS record (ksyms_add_text's) */
void capture_ksyms(struct recorder *r, struct kallsyms *k)
{
	struct strbuf out = STRBUF_INIT;
	struct u64map seen;
	const struct ksym **hit = NULL;
	size_t nr = 0, alloc = 0;

	if (!r->kaddrs.nr || !k->ks || !ksyms_count(k->ks))
		return;
	/* the core kernel's from the cache: an address outside it (a module, a BPF program,
	 * a trampoline) needs the whole of /proc/kallsyms */
	for (size_t i = 0; i < r->kaddrs.cap; i++)
		if (r->kaddrs.used[i] && r->kaddrs.keys[i])
			ksyms_need(k->ks, r->kaddrs.keys[i], NULL);
	u64map_init(&seen);
	for (size_t i = 0; i < r->kaddrs.cap; i++) {
		const struct ksym *y;
		void **slot;

		if (!r->kaddrs.used[i] || !r->kaddrs.keys[i])
			continue;
		y = ksyms_find(k->ks, r->kaddrs.keys[i]);
		if (!y)
			continue;
		slot = u64map_slot(&seen, y->start);
		if (*slot)
			continue;
		*slot = (void *)y;
		ALLOC_GROW(hit, nr + 1, alloc);
		hit[nr++] = y;
	}
	qsort(hit, nr, sizeof(*hit), cmp_ksym_start);
	for (size_t i = 0; i < nr; i++) {
		strbuf_addf(&out, "%llx %llx %s", (unsigned long long)hit[i]->start,
			    (unsigned long long)(hit[i]->end - hit[i]->start), hit[i]->name);
		if (hit[i]->module)
			strbuf_addf(&out, " [%s]", hit[i]->module);
		strbuf_addch(&out, '\n');
	}
	if (out.len)
		recwriter_add(r->w, DLP_REC_KSYMS, out.buf, out.len);
	free(hit);
	u64map_release(&seen);
	strbuf_release(&out);
}

/*
 * The [vdso] has no file: its image is this process's own (one per kernel for every
 * 64-bit process), captured so that report names the samples in it
 * (__vdso_clock_gettime, ...) wherever it reads the recording.
 */
void capture_vdso(struct recorder *r)
{
	struct strbuf sb = STRBUF_INIT;

	if (!recfile_vdso_rec(&sb))
		recwriter_add(r->w, DLP_REC_FILE, sb.buf, sb.len);
	strbuf_release(&sb);
}

/* path: as process pid names it, read under its root (root_fd, -1: ours) */
static void capture_file(struct recorder *r, uint32_t type, int32_t pid, int root_fd,
			 const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	struct dlp_jit_rec h = { pid, 0 };
	int fd = proc_root_open(root_fd, path, O_RDONLY | O_NONBLOCK), ret;

	ret = fd < 0 ? -errno : strbuf_read_fd(&sb, fd, CAPTURE_MAX);
	if (fd >= 0)
		close(fd);
	if (ret == -ENOENT)	/* mapped once, gone since (its writer removed it) */
		return;
	if (ret < 0) {
		warning("cannot read '%s': %s", path, strerror(-ret));
		return;
	}
	recwriter_add2(r->w, type, &h, sizeof(h), sb.buf, sb.len);
	if (type == DLP_REC_JITDUMP)
		jitsyms_add_jitdump(r->jit.syms, pid, sb.buf, sb.len, path);
	strbuf_release(&sb);
}

/* pid's perf map, by the pid it knows itself under its own root where those differ
 * from record's (shown: its name for messages; *ns_out: that pid where the root was
 * another's, else pid itself).  The descriptor, or -1 with *why set where one was refused (NULL:
 * none there). */
int capture_perf_map_open(struct recorder *r, uint32_t pid, long since, struct stat *st,
		  const char **why, char *shown, size_t size, uint32_t *ns_out)
{
	char path[64];
	uint32_t ns = pid;
	int fd, root = -1;

	/* a process in a container or a PID namespace writes its own /tmp, by the
	 * pid it knows (its root's handle outlives it: proc-root.h) */
	if (proc_roots_pid(&r->roots, pid, &root, &ns) < 0) {
		root = -1;
		ns = pid;
	}
	*ns_out = root >= 0 ? ns : pid;	/* (our root: not another's map) */
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", ns);
	if (root < 0 && ns == pid) {
		snprintf(shown, size, "%s", path);
		return jitsym_perfmap_open((int32_t)pid, since, st, why);
	}
	snprintf(shown, size, "%s of process %u%s", path, pid, root >= 0 ? " (under its root)" : "");
	*why = NULL;
	fd = proc_root_open(root, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0 && errno != ENOENT)
		*why = errno == ELOOP ? "a symbolic link" : strerror(errno);
	if (fd >= 0)
		fd = jitsym_perfmap_check(fd, since, root >= 0, st, why);
	/* (a process of another PID namespace on our root, as a container's runtime is
	 * for a moment, names another's map: not said) */
	if (fd < 0 && *why == JITSYM_PERFMAP_OLD && root < 0)
		*why = NULL;
	return fd;
}

/*
 * /tmp is everyone's: a map is taken only when the file opened (never through a
 * symlink) is a regular file owned by us or root, and was written after the workload
 * started.  The checks are made on the open descriptor, so the file cannot be swapped
 * between check and read.
 */
void capture_perf_maps(struct recorder *r)
{
	for (size_t i = 0; i < r->pids.cap; i++) {
		uint64_t pid = r->pids.used[i] ? r->pids.keys[i] : 0;
		struct strbuf sb = STRBUF_INIT;
		struct dlp_jit_rec h = { (int32_t)pid, 0 };
		char shown[160];
		struct stat st;
		const char *why;
		uint32_t ns;
		int fd, ret;
		long since = r->start_wall;

		if (!pid)
			continue;
		if (r->opts->system_wide || r->att.pid_flags) {
			/* -a, a cgroup: each process's own start (one gone: the recording's) */
			time_t w = attach_start_wall((pid_t)pid);

			since = w ? (long)w - 1 : (long)(r->clock_start.real / 1000000000ull);
		}
		fd = capture_perf_map_open(r, (uint32_t)pid, since, &st, &why, shown, sizeof(shown),
				   &ns);
		if (fd < 0) {
			if (why == JITSYM_PERFMAP_OLD)
				warning("ignoring '%s': last written before %s started (left by an "
					"earlier process with pid %u)", shown,
					r->opts->system_wide || r->att.pid_flags ?
					"its process" : "this recording", ns);
			else if (why)
				warning("ignoring '%s': %s", shown, why);
			continue;
		}
		ret = strbuf_read_fd(&sb, fd, CAPTURE_MAX);
		close(fd);
		if (ret < 0)
			warning("cannot read '%s': %s", shown, strerror(-ret));
		else {
			recwriter_add2(r->w, DLP_REC_JITMAP, &h, sizeof(h), sb.buf, sb.len);
			jitsyms_add_perfmap(r->jit.syms, (int32_t)pid, sb.buf, sb.len, shown);
		}
		strbuf_release(&sb);
		if (ret == 0 && r->jit.ours && !strchr(shown, ' '))	/* our root, our pid */
			unlink(shown);
	}
}

void capture_jit_dump_add(struct recorder *r, uint32_t pid, const char *path)
{
	for (size_t i = 0; i < r->jit.nr_dumps; i++)
		if (r->jit.dumps[i].pid == pid && !strcmp(r->jit.dumps[i].path, path))
			return;
	ALLOC_GROW(r->jit.dumps, r->jit.nr_dumps + 1, r->jit.alloc_dumps);
	r->jit.dumps[r->jit.nr_dumps].pid = pid;
	r->jit.dumps[r->jit.nr_dumps++].path = xstrdup(path);
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
	/* named by the pid its writer knows: a process in a PID namespace (a container
	 * given our directory) knows another; its mapping of the file says which */
	for (size_t i = 0; i < walk_rec->jit.nr_dumps; i++)
		if (!strcmp(walk_rec->jit.dumps[i].path, path)) {
			pid = (int)walk_rec->jit.dumps[i].pid;
			break;
		}
	if (pid >= 0)
		capture_file(walk_rec, DLP_REC_JITDUMP, pid, -1, path);
	return 0;
}

/* Whether a collector file (itt.h) holds ITT task events: one that only the oneDNN
 * interposer wrote to (the workload's ITT stub called another collector) has
 * primitives and executions but no task. */
static int itt_has_tasks(const char *buf, size_t len)
{
	size_t off = sizeof(struct itt_file_header);

	while (off + sizeof(struct itt_block_header) <= len) {
		struct itt_block_header bh;

		memcpy(&bh, buf + off, sizeof(bh));
		if (bh.kind == ITT_BLOCK_EVENTS)
			return 1;
		if (bh.len > len - off - sizeof(bh))
			break;
		off += sizeof(bh) + bh.len;
	}
	return 0;
}

/*
 * A collector in a PID namespace of its own (a container) wrote the ids it knows: its
 * pid and its threads' there.  They become record's, as the samples have them, where
 * record saw that process (one of that inner pid) and its threads (proc-root.h); an id
 * not seen stays as written.
 */
static void itt_outer_ids(struct recorder *r, char *buf, size_t len, uint32_t known)
{
	struct itt_file_header fh;
	size_t off = sizeof(fh);
	uint32_t outer;

	if (len < sizeof(fh))
		return;
	memcpy(&fh, buf, sizeof(fh));
	outer = known ? known : proc_roots_outer_pid(&r->roots, fh.pid);
	if (!outer)
		return;
	fh.pid = outer;
	memcpy(buf, &fh, sizeof(fh));
	while (off + sizeof(struct itt_block_header) <= len) {
		struct itt_block_header bh;

		memcpy(&bh, buf + off, sizeof(bh));
		if (bh.len > len - off - sizeof(bh))
			break;
		if ((bh.kind == ITT_BLOCK_EVENTS || bh.kind == ITT_BLOCK_EXECS) && bh.len >= 4) {
			uint32_t tid, host;

			memcpy(&tid, buf + off + sizeof(bh), 4);
			host = proc_roots_tid(&r->roots, outer, tid);
			if (host)
				memcpy(buf + off + sizeof(bh), &host, 4);
		}
		off += sizeof(bh) + bh.len;
	}
}

/* One collector file in (its ids made record's: the process's known, outer pid, else 0),
 * counted for the end's checks */
static void itt_file_in(struct recorder *r, char *buf, size_t len, uint32_t known)
{
	itt_outer_ids(r, buf, len, known);
	recwriter_add(r->w, DLP_REC_ITT, buf, len);
	r->itt.files++;
	r->itt.task_files += itt_has_tasks(buf, len);
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
	if (sb.len)
		itt_file_in(walk_rec, sb.buf, sb.len, 0);
	strbuf_release(&sb);
	return 0;
}

void capture_jit(struct recorder *r)
{
	if (r->opts->no_jit)
		return;
	capture_perf_maps(r);
	walk_rec = r;
	if (r->jit.dir)
		nftw(r->jit.dir, walk_jitdump, 16, FTW_PHYS);
	for (size_t i = 0; i < r->jit.nr_dumps; i++) {
		const char *p = r->jit.dumps[i].path;
		uint32_t pid = r->jit.dumps[i].pid, ns;
		int root = -1;

		if (r->jit.dir && !strncmp(p, r->jit.dir, strlen(r->jit.dir)))
			continue;	/* already taken from our directory */
		/* under its writer's root: a dump inside a container is the container's */
		if (proc_roots_pid(&r->roots, pid, &root, &ns) < 0)
			root = -1;
		capture_file(r, DLP_REC_JITDUMP, (int32_t)pid, root, p);
	}
	if (r->jit.dir)
		remove_tree(r->jit.dir);
}

/* A process seen (its PROC record written): where it was started with dlprof's ITT
 * collector by someone else (a container started apart, with the flags `record
 * --container-flags` prints), dir is the folder its collector writes to (its
 * DLPROF_ITT_DIR, NULL: none), under its root (held: proc-root.h), for capture_itt */
void capture_itt_foreign(struct recorder *r, uint32_t pid, const char *dir)
{
	if (!dir || dir[0] != '/' || (r->itt.dir && !strcmp(dir, r->itt.dir)))
		return;	/* none, or ours: read from our folder */
	for (size_t i = 0; i < r->itt.nr_foreign; i++)
		if (r->itt.foreign[i].pid == pid)
			return;
	(void)proc_roots_of(&r->roots, pid);	/* its root's handle, kept */
	ALLOC_GROW(r->itt.foreign, r->itt.nr_foreign + 1, r->itt.alloc_foreign);
	r->itt.foreign[r->itt.nr_foreign].pid = pid;
	r->itt.foreign[r->itt.nr_foreign++].dir = xstrdup(dir);
}

/* The collector files of the processes capture_itt_foreign found: DIR/itt-NSPID.bin under
 * each one's root, as it writes it (flushed as its buffers fill, and at exit) */
static void capture_foreign_itt(struct recorder *r)
{
	for (size_t i = 0; i < r->itt.nr_foreign; i++) {
		const struct itt_foreign *f = &r->itt.foreign[i];
		struct strbuf sb = STRBUF_INIT;
		char path[PATH_MAX];
		uint32_t ns = f->pid;
		int root = -1, fd;

		if (proc_roots_pid(&r->roots, f->pid, &root, &ns) < 0) {
			root = -1;
			ns = f->pid;
		}
		snprintf(path, sizeof(path), "%s/itt-%u.bin", f->dir, ns);
		fd = proc_root_open(root, path, O_RDONLY | O_NONBLOCK);
		if (fd < 0)
			continue;	/* no primitive run, or nothing flushed yet */
		if (strbuf_read_fd(&sb, fd, CAPTURE_MAX) >= 0 && sb.len)
			itt_file_in(r, sb.buf, sb.len, f->pid);
		close(fd);
		strbuf_release(&sb);
	}
}

void capture_itt(struct recorder *r)
{
	capture_foreign_itt(r);
	if (!r->itt.dir)
		return;
	walk_rec = r;
	nftw(r->itt.dir, walk_itt, 16, FTW_PHYS);
	remove_tree(r->itt.dir);
}
