/* attach.c - the threads, names and executable mappings of a running process, as
 * perf records (see attach.h). */
#include "attach.h"
#include "elfsyms.h"
#include "recfile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

int attach_parse_pids(const char *list, pid_t **pids)
{
	char *copy = xstrdup(list), *save = NULL, *tok;
	size_t nr = 0, alloc = 0;
	pid_t *v = NULL;
	int ret;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		long p;

		errno = 0;
		p = strtol(tok, &end, 10);
		if (errno || *end || end == tok || p <= 0 || p > 0x7fffffff) {
			error("bad process id '%s' (-p takes PID[,PID...])", tok);
			ret = -1;
			goto out;
		}
		if (kill((pid_t)p, 0) < 0 && errno == ESRCH) {
			error("no such process: %ld", p);
			ret = -2;
			goto out;
		}
		ALLOC_GROW(v, nr + 1, alloc);
		v[nr++] = (pid_t)p;
	}
	if (!nr) {
		error("-p needs a process id");
		ret = -1;
		goto out;
	}
	*pids = v;
	v = NULL;
	ret = (int)nr;
out:
	free(copy);
	free(v);
	return ret;
}

size_t attach_list_tids(pid_t pid, pid_t **tids)
{
	char path[64];
	DIR *d;
	struct dirent *e;
	size_t nr = 0, alloc = 0;
	pid_t *v = NULL;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d) {
		*tids = NULL;
		return 0;
	}
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		ALLOC_GROW(v, nr + 1, alloc);
		v[nr++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	*tids = v;
	return nr;
}

/* Fields first and first + 1 of /proc/PID/stat (numbers) into v[0] and v[1]: 0, or -1
 * (the process is gone, or they are not there) */
static int stat_fields(pid_t pid, int first, unsigned long long v[2])
{
	struct strbuf sb = STRBUF_INIT;
	char path[64], *p;
	int ret = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	/* "pid (comm) state ppid ...": the comm may hold spaces and parentheses */
	if (strbuf_read_file(&sb, path, 4096) >= 0 && (p = strrchr(sb.buf, ')'))) {
		/* each space found starts the next field: the first, after ")", field 3 */
		for (int field = 2; p && field < first; field++)
			p = strchr(p + 1, ' ');
		if (p && sscanf(p + 1, "%llu %llu", &v[0], &v[1]) == 2)
			ret = 0;
	}
	strbuf_release(&sb);
	return ret;
}

/* Field 22 of /proc/PID/stat: when pid started, in clock ticks since boot; 0 unknown */
static unsigned long long start_ticks(pid_t pid)
{
	unsigned long long v[2];

	return stat_fields(pid, 22, v) ? 0 : v[0];
}

unsigned long long attach_cpu_ticks(pid_t pid)
{
	unsigned long long v[2];	/* utime, stime: fields 14 and 15 */

	return stat_fields(pid, 14, v) ? 0 : v[0] + v[1];
}

time_t attach_start_wall(pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned long long start = start_ticks(pid), btime = 0;
	long tck = sysconf(_SC_CLK_TCK);
	char *p;

	if (!start)
		return 0;
	if (strbuf_read_file(&sb, "/proc/stat", 1 << 20) >= 0) {
		p = strstr(sb.buf, "\nbtime ");
		if (!p || sscanf(p + 7, "%llu", &btime) != 1)
			btime = 0;
	}
	strbuf_release(&sb);
	if (!btime || tck <= 0)
		return 0;
	return (time_t)(btime + start / (unsigned long long)tck);
}

/* pid's arguments as /proc/PID/cmdline has them (NUL-separated, the trailing NULs
 * left out) into raw, joined by spaces appended to sb: 0, or -1 (gone, a kernel
 * thread) */
static int read_cmdline(pid_t pid, struct strbuf *raw, struct strbuf *sb)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	strbuf_reset(raw);
	if (strbuf_read_file(raw, path, 1 << 16) < 0 || !raw->len)
		return -1;
	while (raw->len && !raw->buf[raw->len - 1])
		raw->len--;
	for (size_t i = 0; i < raw->len; i++)
		strbuf_addch(sb, raw->buf[i] ? raw->buf[i] : ' ');
	return 0;
}

int attach_cmdline(pid_t pid, struct strbuf *sb)
{
	struct strbuf raw = STRBUF_INIT;
	int ret = read_cmdline(pid, &raw, sb);

	strbuf_release(&raw);
	return ret;
}

/* The value of name in an environ block (NUL-separated), or NULL. */
static const char *environ_get(const char *name, void *ctx)
{
	const struct strbuf *env = ctx;
	size_t n = strlen(name);

	for (size_t i = 0; i < env->len; i += strlen(env->buf + i) + 1)
		if (!strncmp(env->buf + i, name, n) && env->buf[i + n] == '=')
			return env->buf + i + n + 1;
	return NULL;
}

static const char *getenv_get(const char *name, void *ctx)
{
	return getenv(name);
}

/* A process's rank in a distributed job, as its launcher says it: torchrun /
 * torch.distributed, then Open MPI, MPICH/Intel MPI (PMI), Slurm */
static const char *const rank_names[] = { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
					  "SLURM_PROCID", NULL };

const char *attach_job_rank(void)
{
	for (const char *const *n = rank_names; *n; n++) {
		const char *v = getenv(*n);

		if (v && *v)
			return v;
	}
	return NULL;
}

int attach_output_name(const char *pattern, struct strbuf *out)
{
	struct utsname u;

	strbuf_reset(out);
	for (const char *p = pattern; *p; p++) {
		const char *v;

		if (*p != '%') {
			strbuf_addch(out, *p);
			continue;
		}
		switch (*++p) {
		case '%':
			strbuf_addch(out, '%');
			break;
		case 'h':
			if (uname(&u))
				return error("-o %s: cannot read the host name: %m", pattern);
			strbuf_addstr(out, u.nodename);
			break;
		case 'p':
			strbuf_addf(out, "%d", (int)getpid());
			break;
		case 'r':
			v = attach_job_rank();
			if (!v || strchr(v, '/'))
				return error("-o %s: %%r, but no rank in the environment (RANK, "
					     "OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)", pattern);
			strbuf_addstr(out, v);
			break;
		default:
			return error("-o %s: unknown %%%.1s (%%h host, %%r rank, %%p pid, %%%% a %%)",
				     pattern, *p ? p : "");
		}
		if (!*p)
			break;
	}
	return 0;
}

/* The job a process belongs to, as its launcher names it: torchrun's run id (not its
 * default "none"), Slurm's job and step, a PMIx namespace (Open MPI 4 and 5, Slurm with
 * PMIx; Open MPI 4 also as OMPI_MCA_ess_base_jobid), else the rendezvous address that
 * torch.distributed's ranks share.  Prefixed with where it came from, so two launchers'
 * numbers never compare equal.  Returns 0, or -1 when none (out unchanged). */
static int job_id(const char *(*get)(const char *, void *), void *ctx, struct strbuf *out)
{
	const char *v = get("TORCHELASTIC_RUN_ID", ctx), *w;

	if (v && *v && strcmp(v, "none")) {
		strbuf_addf(out, "torchelastic:%s", v);
		return 0;
	}
	v = get("SLURM_JOB_ID", ctx);
	if (v && *v) {
		w = get("SLURM_STEP_ID", ctx);
		strbuf_addf(out, "slurm:%s%s%s", v, w && *w ? "." : "", w && *w ? w : "");
		return 0;
	}
	v = get("PMIX_NAMESPACE", ctx);
	if (!v || !*v)
		v = get("OMPI_MCA_ess_base_jobid", ctx);
	if (v && *v) {
		strbuf_addf(out, "mpi:%s", v);
		return 0;
	}
	v = get("MASTER_ADDR", ctx);
	w = get("MASTER_PORT", ctx);
	if (v && *v && w && *w) {
		strbuf_addf(out, "master:%s:%s", v, w);
		return 0;
	}
	return -1;
}

/* The payload for pid with its command line, its start (ticks since boot, 0: unknown),
 * and its rank and job from get(NAME) */
static void proc_rec(pid_t pid, const char *cmdline, unsigned long long start,
		     const char *(*get)(const char *, void *), void *ctx, struct strbuf *sb)
{
	static const char *const local[] = { "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
					     "MPI_LOCALRANKID", "SLURM_LOCALID", NULL };
	static const char *const world[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
					     "SLURM_NTASKS", NULL };
	static const struct { const char *key; const char *const *names; } keys[] = {
		{ "rank", rank_names }, { "local_rank", local }, { "world_size", world },
	};
	struct dlp_proc_rec h = { (int32_t)pid, 0 };
	struct strbuf job = STRBUF_INIT;
	char num[32];

	strbuf_add(sb, &h, sizeof(h));
	strbuf_add(sb, "cmdline", sizeof("cmdline"));
	strbuf_add(sb, cmdline, strlen(cmdline) + 1);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const char *v = NULL;

		for (const char *const *n = keys[k].names; *n && !v; n++)
			v = get(*n, ctx);
		if (v && *v && strlen(v) < 64) {
			strbuf_add(sb, keys[k].key, strlen(keys[k].key) + 1);
			strbuf_add(sb, v, strlen(v) + 1);
		}
	}
	/* pid, host and start name one process across recordings (a rank recorded by
	 * its node's dlprof and its own) */
	if (start) {
		snprintf(num, sizeof(num), "%llu", start);
		strbuf_add(sb, "start", sizeof("start"));
		strbuf_add(sb, num, strlen(num) + 1);
	}
	if (!job_id(get, ctx, &job) && job.len < 256) {
		strbuf_add(sb, "job", sizeof("job"));
		strbuf_add(sb, job.buf, job.len + 1);
	}
	strbuf_reset(&job);
	if (!ctname_of_pid(pid, &job) && job.len && !memchr(job.buf, '\0', job.len)) {
		strbuf_add(sb, "container", sizeof("container"));
		strbuf_add(sb, job.buf, job.len + 1);
	}
	strbuf_release(&job);
}

const char *attach_env_value(const struct strbuf *env, const char *name)
{
	return environ_get(name, (void *)env);
}

int attach_proc_info(pid_t pid, struct strbuf *sb, struct strbuf *env_out,
		     struct strbuf *argv_out)
{
	struct strbuf cmd = STRBUF_INIT, own = STRBUF_INIT, *env = env_out ? env_out : &own;
	struct strbuf own_argv = STRBUF_INIT, *raw = argv_out ? argv_out : &own_argv;
	char path[64];

	if (read_cmdline(pid, raw, &cmd) < 0) {
		strbuf_release(&own_argv);
		strbuf_release(&cmd);
		return -1;
	}
	strbuf_release(&own_argv);
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	strbuf_reset(env);
	if (strbuf_read_file(env, path, 1 << 20) < 0)
		strbuf_reset(env);
	strbuf_addch(env, '\0');	/* the last entry terminated whatever the file held */
	proc_rec(pid, cmd.buf, start_ticks(pid), environ_get, env, sb);
	strbuf_release(&own);
	strbuf_release(&cmd);
	return 0;
}

void attach_proc_info_ours(pid_t pid, const char *const *argv, struct strbuf *sb)
{
	struct strbuf cmd = STRBUF_INIT;

	for (size_t i = 0; argv[i]; i++) {
		if (i)
			strbuf_addch(&cmd, ' ');
		strbuf_addstr(&cmd, argv[i]);
	}
	proc_rec(pid, cmd.buf ? cmd.buf : "", start_ticks(pid), getenv_get, NULL, sb);
	strbuf_release(&cmd);
}

/* The sample_id_all trailer: the fields of sample_type that it holds, in their order. */
static void add_trailer(struct strbuf *sb, const struct perf_event_attr *attr, uint32_t pid,
			uint32_t tid, uint64_t time, uint64_t id)
{
	uint64_t st = attr->sample_type, zero = 0;

	if (!attr->sample_id_all)
		return;
	if (st & PERF_SAMPLE_TID) {
		strbuf_add(sb, &pid, 4);
		strbuf_add(sb, &tid, 4);
	}
	if (st & PERF_SAMPLE_TIME)
		strbuf_add(sb, &time, 8);
	if (st & PERF_SAMPLE_ID)
		strbuf_add(sb, &id, 8);
	if (st & PERF_SAMPLE_STREAM_ID)
		strbuf_add(sb, &id, 8);
	if (st & PERF_SAMPLE_CPU)
		strbuf_add(sb, &zero, 8);	/* cpu 0, reserved */
	if (st & PERF_SAMPLE_IDENTIFIER)
		strbuf_add(sb, &id, 8);
}

/* A NUL-terminated string padded with NULs to a multiple of 8 bytes. */
static void add_padded_str(struct strbuf *sb, const char *s)
{
	size_t n = strlen(s) + 1;

	strbuf_add(sb, s, n);
	while (n++ % 8)
		strbuf_addch(sb, '\0');
}

static int emit_record(struct strbuf *rec, attach_emit_fn emit, void *ctx)
{
	struct perf_event_header *h = (struct perf_event_header *)rec->buf;

	if (rec->len > 0xffff)
		return 0;	/* cannot be one perf record: never from /proc's sizes */
	h->size = (uint16_t)rec->len;
	return emit(ctx, h);
}

static int synth_comms(pid_t pid, const struct perf_event_attr *attr, uint64_t id,
		       uint64_t time, attach_emit_fn emit, void *ctx)
{
	pid_t *tids;
	size_t nr = attach_list_tids(pid, &tids);
	struct strbuf rec = STRBUF_INIT, comm = STRBUF_INIT;
	int n = 0;

	for (size_t i = 0; i < nr; i++) {
		struct perf_event_header h = { PERF_RECORD_COMM, 0, 0 };
		uint32_t ids[2] = { (uint32_t)pid, (uint32_t)tids[i] };
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tids[i]);
		strbuf_reset(&comm);
		if (strbuf_read_file(&comm, path, 64) < 0)
			continue;	/* the thread ended meanwhile */
		while (comm.len && comm.buf[comm.len - 1] == '\n')
			comm.buf[--comm.len] = '\0';
		strbuf_reset(&rec);
		strbuf_add(&rec, &h, sizeof(h));
		strbuf_add(&rec, ids, sizeof(ids));
		add_padded_str(&rec, comm.buf);
		add_trailer(&rec, attr, ids[0], ids[1], time, id);
		if (emit_record(&rec, emit, ctx) < 0)
			break;
		n++;
	}
	strbuf_release(&rec);
	strbuf_release(&comm);
	free(tids);
	return n;
}

int attach_synthesize(pid_t pid, const struct perf_event_attr *attr, uint64_t id,
		      uint64_t time, attach_emit_fn emit, void *ctx)
{
	struct strbuf maps = STRBUF_INIT, rec = STRBUF_INIT;
	char path[64], *line, *nl;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	if (strbuf_read_file(&maps, path, 0) < 0) {
		strbuf_release(&maps);
		return -1;
	}
	n = synth_comms(pid, attr, id, time, emit, ctx);
	for (line = maps.buf; line && *line; line = nl ? nl + 1 : NULL) {
		struct perf_event_header h = { PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 0 };
		unsigned long long start, end, off, ino;
		unsigned int maj, min;
		char perms[8];
		int name_at = 0;
		const char *name;
		uint32_t u32[2], prot = 0, flags;
		uint64_t u64[3], gen = 0;
		uint8_t bid[24] = { 0 };	/* size, reserved (3), the id: 24 bytes as maj..gen */
		size_t bid_len;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off,
			   &maj, &min, &ino, &name_at) < 7 || strlen(perms) < 4)
			continue;
		if (perms[2] != 'x')
			continue;	/* like the kernel without mmap_data: code only */
		name = name_at ? line + name_at : "";
		while (*name == ' ')
			name++;
		if (!*name)
			name = "//anon";	/* the kernel's name for anonymous code (JIT) */
		prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		       PROT_EXEC;
		flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		u32[0] = (uint32_t)pid;
		u32[1] = (uint32_t)pid;
		u64[0] = start;
		u64[1] = end - start;
		u64[2] = off;
		strbuf_reset(&rec);
		strbuf_add(&rec, &h, sizeof(h));
		strbuf_add(&rec, u32, sizeof(u32));
		strbuf_add(&rec, u64, sizeof(u64));
		/* the file's build-id, as the kernel gives it in its own MMAP2 records: read
		 * through map_files, the file as mapped whatever root the process has (a
		 * container's /usr/lib is not record's) */
		bid_len = 0;
		if (name[0] == '/') {
			char mf[96];

			snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", (int)pid, start, end);
			bid_len = elf_file_build_id(mf, bid + 4);
		}
		if (bid_len) {
			struct perf_event_header *hp = (struct perf_event_header *)rec.buf;

			hp->misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
			bid[0] = (uint8_t)(bid_len < 20 ? bid_len : 20);
			strbuf_add(&rec, bid, sizeof(bid));
		} else {
			u32[0] = maj;
			u32[1] = min;
			strbuf_add(&rec, u32, sizeof(u32));
			strbuf_add(&rec, &ino, 8);
			strbuf_add(&rec, &gen, 8);
		}
		strbuf_add(&rec, &prot, 4);
		strbuf_add(&rec, &flags, 4);
		add_padded_str(&rec, name);
		add_trailer(&rec, attr, (uint32_t)pid, (uint32_t)pid, time, id);
		if (emit_record(&rec, emit, ctx) < 0)
			break;
		n++;
	}
	strbuf_release(&maps);
	strbuf_release(&rec);
	return n;
}
