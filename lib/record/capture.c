/* finish.c - the end of a recording: build-ids, kernel symbols, JIT maps and dumps, ITT files, META, checks (recorder.h). */
#include "itt-format.h"
#include "ksyms.h"
#include "python/pybpf-prog.h"
#include "recorder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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

/* ---- end of record: build-ids, kernel symbols, JIT, ITT, meta, stats ---- */

/*
 * --memory: name the processes whose allocations the recording lacks: a program that
 * never loaded the library (static, or LD_PRELOAD dropped), one whose malloc is not ours
 * (an allocator linked in or preloaded before ours), and one with far more anonymous
 * memory resident at its exit than it ever allocated through us (its own arena over brk
 * or raw system calls).
 */
void check_memory(struct recorder *r)
{
	int said = 0, more = 0;

	if (!r->opts->memory)
		return;
	for (size_t i = 0; i < r->mem.nr_procs; i++) {
		const struct mem_proc *mp = &r->mem.procs[i];
		const char *comm = mp->comm[0] ? mp->comm : "?";
		char line[400];

		line[0] = 0;
		if (mp->comm[0] && !u64map_has(&r->mem.pids, mp->pid) && !mp->stats)
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
void write_build_ids(struct recorder *r)
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
void write_sym_names(struct recorder *r)
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
void *kallsyms_load(void *arg)
{
	struct kallsyms *k = arg;
	struct ksyms *ks = ksyms_new();

	setpriority(PRIO_PROCESS, 0, 0);	/* not urgent: the reader's boost is not for it */
	if (ksyms_load_kallsyms(ks, NULL, NULL) > 0)
		ksyms_sort(ks);
	k->ks = ks;
	/* (its clock is gone with it: record_run_cpu_ns leaves this out) */
	__atomic_store_n(&k->cpu_ns, clock_ns(CLOCK_THREAD_CPUTIME_ID), __ATOMIC_RELEASE);
	return NULL;
}

void kallsyms_free(struct kallsyms *k)
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
void write_ksyms(struct recorder *r, struct kallsyms *k)
{
	struct strbuf out = STRBUF_INIT;
	struct u64map seen;
	const struct ksym **hit = NULL;
	size_t nr = 0, alloc = 0;

	if (!r->kaddrs.nr || !k->ks || !ksyms_count(k->ks))
		return;
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
void write_vdso(struct recorder *r)
{
	struct strbuf sb = STRBUF_INIT;

	if (!vdso_file_rec(&sb))
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
int perf_map_open(struct recorder *r, uint32_t pid, long since, struct stat *st,
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
		return jit_perfmap_open((int32_t)pid, since, st, why);
	}
	snprintf(shown, size, "%s of process %u%s", path, pid, root >= 0 ? " (under its root)" : "");
	*why = NULL;
	fd = proc_root_open(root, path, O_RDONLY | O_NONBLOCK);
	if (fd < 0 && errno != ENOENT)
		*why = errno == ELOOP ? "a symbolic link" : strerror(errno);
	if (fd >= 0)
		fd = jit_perfmap_check(fd, since, root >= 0, st, why);
	/* (a process of another PID namespace on our root, as a container's runtime is
	 * for a moment, names another's map: not said) */
	if (fd < 0 && *why == JIT_PERFMAP_OLD && root < 0)
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
		if (r->opts->system_wide) {
			/* -a: each process's own start (one gone: the recording's) */
			time_t w = attach_start_wall((pid_t)pid);

			since = w ? (long)w - 1 : (long)(r->clock_start.real / 1000000000ull);
		}
		fd = perf_map_open(r, (uint32_t)pid, since, &st, &why, shown, sizeof(shown),
				   &ns);
		if (fd < 0) {
			if (why == JIT_PERFMAP_OLD)
				warning("ignoring '%s': last written before %s started (left by an "
					"earlier process with pid %u)", shown, r->opts->system_wide ?
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

void jit_dump_add(struct recorder *r, uint32_t pid, const char *path)
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
void itt_note_foreign(struct recorder *r, uint32_t pid, const char *dir)
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

/* The collector files of the processes itt_note_foreign found: DIR/itt-NSPID.bin under
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

/* The user's JIT profile setting when it keeps oneDNN from publishing its kernels
 * (ONEDNN_JIT_PROFILE without the perf map (2) and jitdump (4) bits), else NULL. */
static const char *jit_profile_off(const struct recorder *r, const char **var)
{
	static const char *const vars[] = { "ONEDNN_JIT_PROFILE", "DNNL_JIT_PROFILE" };

	if (r->jit.ours)
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
void check_missing(struct recorder *r)
{
	uint64_t unnamed = 0, seen;
	int contained = 0;	/* of those, in a container record did not start */

	place_pending(r);
	seen = r->jit.nr_anon_ips;
	for (size_t i = 0; i < r->jit.nr_anon_ips; i++)
		if (!jitsyms_find(r->jit.syms, (int32_t)r->jit.anon_ips[i].pid, r->jit.anon_ips[i].ip)) {
			int root;
			uint32_t ns;

			unnamed++;
			if (!r->given.argv && !proc_roots_pid(&r->roots, r->jit.anon_ips[i].pid, &root, &ns) &&
			    root >= 0)
				contained = 1;
		}
	/* past the array's cap: at the rate of those checked */
	if (seen && r->jit.anon_samples > seen)
		unnamed = (uint64_t)((double)unnamed * r->jit.anon_samples / seen);
	if (unnamed && unnamed * 200 >= r->samples - r->switch_outs) {
		const char *var = NULL, *val = jit_profile_off(r, &var);
		char why[400];

		if (r->opts->no_jit)
			snprintf(why, sizeof(why), "--no-jit left JIT publishing off");
		else if (val)
			snprintf(why, sizeof(why), "%s=%s in the environment keeps oneDNN from "
				 "publishing its JIT kernels: unset it, or set it to 6", var, val);
		else if (r->itt.dnnl_path && contained)
			snprintf(why, sizeof(why), "oneDNN (%s) in a container published no perf "
				 "map or jitdump for that code: a container runtime passes no "
				 "environment in; start it with -e ONEDNN_JIT_PROFILE=6, or record its "
				 "start ('dlprof record -- podman run ...' passes it in)",
				 r->itt.dnnl_path);
		else if (r->itt.dnnl_path)
			snprintf(why, sizeof(why), "oneDNN (%s) published no perf map or jitdump "
				 "for that code", r->itt.dnnl_path);
		else
			snprintf(why, sizeof(why), "the JIT that made it publishes neither "
				 "/tmp/perf-PID.map nor a jitdump");
		record_warn(r, "%llu samples (%.1f%%) ran JIT code in anonymous memory that no "
			    "perf map or jitdump names: they show as [anon] addresses; %s",
			    (unsigned long long)unnamed,
			    100.0 * unnamed / (r->samples > r->switch_outs ? r->samples - r->switch_outs : 1),
			    why);
	}
	if (r->relabel_guessed)
		record_warn(r, "%llu samples came with the id of another profiler's event (one "
			    "sampling the same threads): written as %s, though another of the "
			    "software events recorded may have taken them",
			    (unsigned long long)r->relabel_guessed, r->relabel_guess);
	if (r->lost && r->warn.ring[0])
		record_warn(r, "%llu samples lost: the %s; raise it, or lower -F",
			    (unsigned long long)r->lost, r->warn.ring);
	if ((r->opts->pids || r->opts->system_wide) && r->itt.dnnl_path && !r->itt.task_files &&
	    !r->opts->no_itt)
		record_warn(r, "process %u maps %s but was started without dlprof's ITT collector: "
			    "no oneDNN primitive is labelled (no dnnl:* operators); start it with "
			    "the flags 'dlprof record --container-flags' prints", r->itt.dnnl_pid,
			    r->itt.dnnl_path);
	if (r->itt.dir && r->itt.dnnl_path && !r->itt.task_files) {
		const char *lvl = getenv("ONEDNN_ITT_TASK_LEVEL");

		if (!lvl)
			lvl = getenv("DNNL_ITT_TASK_LEVEL");
		record_warn(r, "the workload mapped %s but never called dlprof's ITT collector: no "
			    "oneDNN primitive is labelled (no dnnl:* operators)%s", r->itt.dnnl_path,
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
	"DLPROF_NO_DNNL_HOOK", NULL
};

static int settings_env_ours(const struct recorder *r, const char *name)
{
	if (r->jit.ours && (!strcmp(name, "ONEDNN_JIT_PROFILE") || !strcmp(name, "DNNL_JIT_PROFILE")))
		return 1;
	return r->itt.dir && (!strcmp(name, "INTEL_LIBITTNOTIFY64") ||
			     !strcmp(name, "INTEL_ITTNOTIFY_GROUPS"));
}

static void meta_settings_env(struct recorder *r, struct strbuf *sb)
{
	struct strbuf env = STRBUF_INIT, key = STRBUF_INIT;

	if (r->opts->pids && r->att.nr) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/environ", (int)r->att.targets[0]);
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

void write_meta(struct recorder *r)
{
	const struct record_opts *o = r->opts;
	struct strbuf sb = STRBUF_INIT, tmp = STRBUF_INIT;
	struct utsname u;
	char num[64];

	if (o->system_wide) {
		strbuf_addstr(&tmp, r->att.cmdline.buf ? r->att.cmdline.buf : "every process");
		for (const char **a = o->argv; a && *a; a++)
			strbuf_addf(&tmp, "%s%s", a == o->argv ? "; while: " : " ", *a);
		meta_add(&sb, "system_wide", "1");
	} else if (o->pids) {
		/* the processes attached to */
		strbuf_addstr(&tmp, r->att.cmdline.len ? r->att.cmdline.buf : "?");
		meta_add(&sb, "attach", o->pids);
		if (o->container)
			meta_add(&sb, "container", o->container);
		if (o->cgroup)
			meta_add(&sb, "cgroup", o->cgroup);
	} else {
		for (const char **a = o->argv; *a; a++) {
			if (a != o->argv)
				strbuf_addch(&tmp, ' ');
			strbuf_addstr(&tmp, *a);
		}
	}
	meta_add(&sb, "cmdline", tmp.buf);
	/* MONOTONIC REALTIME UNCERTAINTY, ns: the time axis of several hosts' recordings */
	for (int k = 0; k < 2; k++) {
		const struct clock_anchor *c = k ? &r->clock_end : &r->clock_start;
		char clk[80];

		if (!c->real)
			continue;
		snprintf(clk, sizeof(clk), "%llu %llu %llu", (unsigned long long)c->mono,
			 (unsigned long long)c->real, (unsigned long long)c->err);
		meta_add(&sb, k ? "clock_end" : "clock_start", clk);
	}
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
	if (r->warn.fallback[0])
		meta_add(&sb, "note", r->warn.fallback);
	meta_add(&sb, "jit", o->no_jit ? "off" : r->jit.ours ? "on" : "user");
	meta_add(&sb, "itt", r->itt.dir ? "on" : "off");
	if (o->memory) {
		char n[32];

		snprintf(n, sizeof(n), "%lu", o->mem_sample ? o->mem_sample :
			 (unsigned long)MEM_DEFAULT_SAMPLE);
		meta_add(&sb, "mem_sample", n);
	}
	if (r->met.nr) {
		/* record --metrics: the members in the samples' order, and the counts read at
		 * the end: enabled ns, running ns, the leader's, the members' */
		struct strbuf names = STRBUF_INIT, totals = STRBUF_INIT;

		metrics_meta(r, &names, &totals);
		meta_add(&sb, "metrics", names.buf);
		if (r->met.switch_outs)
			meta_add(&sb, "metrics_switch_outs", "1");
		if (totals.len)
			meta_add(&sb, "metrics_total", totals.buf);
		strbuf_release(&names);
		strbuf_release(&totals);
	}
	meta_add(&sb, "python", r->py.reader ? "on" : "off");
	if (r->py.reader) {
		/* the stacks read from outside that their samples name: how many, the sum
		 * and the largest of their delays (the PYSTACK records carry their own) */
		struct pyreader_stats ps;

		pyreader_get_stats(r->py.reader, &ps);
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
	/* bytes read from the rings: the perf rings', the native walks' (kstack.h) */
	strbuf_reset(&tmp);
	strbuf_addf(&tmp, "%llu %llu", (unsigned long long)r->ring_bytes,
		    (unsigned long long)(r->ru_st.kstack ? r->ru_st.ks.kring_bytes : 0));
	meta_add(&sb, "record_rings", tmp.buf);
	if (r->ru_st.kstack) {
		/* the kernel's native walks (kstack.h): tables rows table-bytes table-ns walks
		 * dropped matched unmatched same differ runs run-ns, then the early stops by
		 * KW_* from 1 */
		const struct kstack_stats *k = &r->ru_st.ks;
		uint64_t runs = 0, run_ns = 0;

		if (r->py.pb && r->py.stats)
			pybpf_stats(r->py.pb, &runs, &run_ns);

		strbuf_reset(&tmp);
		strbuf_addf(&tmp, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
			    (unsigned long long)k->tables, (unsigned long long)k->rows,
			    (unsigned long long)k->table_bytes, (unsigned long long)k->table_ns,
			    (unsigned long long)k->walks, (unsigned long long)k->dropped,
			    (unsigned long long)k->matched, (unsigned long long)k->unmatched,
			    (unsigned long long)k->same, (unsigned long long)k->differ,
			    (unsigned long long)runs, (unsigned long long)run_ns);
		for (int i = 1; i < KW_NR; i++)
			strbuf_addf(&tmp, " %llu", (unsigned long long)k->stopped[i]);
		meta_add(&sb, "record_kstack", tmp.buf);
	}
	meta_settings_env(r, &sb);
	{
		const char *w = r->warn.lines.buf;

		for (int i = 0; i < r->warn.nr; i++, w += strlen(w) + 1) {
			snprintf(num, sizeof(num), "warn.%d", i + 1);
			meta_add(&sb, num, w);
		}
	}
	recwriter_add(r->w, DLP_REC_META, sb.buf, sb.len);
	strbuf_release(&sb);
	strbuf_release(&tmp);
}

