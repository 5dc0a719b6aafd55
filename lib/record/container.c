/* container.c - the processes of one container or cgroup, for record --container and
 * --cgroup (record.h): Docker's and Podman's processes are their daemon's or conmon's
 * children, not the command's, so they are attached to (-p) as perf -G selects them.
 *
 * --container NAME|ID: the runtime names the container's first process (podman, else
 * docker: "inspect --format {{.State.Pid}}"); the container is every process of that
 * process's PID namespace (a container has its own; one that shares the host's is
 * refused: its processes cannot be told from the host's that way), read from /proc.
 * --cgroup PATH: every process whose /proc/PID/cgroup names PATH (v2's "0::PATH", or a
 * v1 controller's), PATH as /proc shows it or under /sys/fs/cgroup.
 * Threads and processes they start after the events open are followed (inherit), as
 * with -p.  Where the kernel has the perf_event controller on the cgroup's hierarchy,
 * record opens per-cpu events on the cgroup's folder instead (container_cgroup_dir(),
 * perf -G's way), and then a process started in it later (podman exec, a job's next
 * step) is recorded too.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "attach.h"
#include "record.h"
#include "util.h"

/* "RUNTIME inspect --format {{.State.Pid}} NAME": the pid, 0 when the runtime is not
 * there or does not know NAME (within 10 s) */
static long inspect_pid(const char *runtime, const char *name)
{
	const char *argv[] = { runtime, "inspect", "--format", "{{.State.Pid}}", name, NULL };
	struct strbuf out = STRBUF_INIT;
	long pid = 0;

	if (run_capture(argv, 10000, &out) == 0 && out.len)
		pid = strtol(out.buf, NULL, 10);
	strbuf_release(&out);
	return pid > 0 ? pid : 0;
}

/* the inode of pid's namespace KIND ("pid"), 0 when unreadable */
static unsigned long ns_ino(long pid, const char *kind)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%ld/ns/%s", pid, kind);
	return stat(path, &st) < 0 ? 0 : (unsigned long)st.st_ino;
}

/* whether pid's /proc/PID/cgroup has a line for cgroup path cg or one below it (a
 * Kubernetes pod's cgroup holds its containers' own; the kernel's cgroup events count
 * them too) */
static int in_cgroup(long pid, const char *cg)
{
	char path[64], line[4096];
	size_t n = strlen(cg);
	int yes = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!yes && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, ':');

		p = p ? strchr(p + 1, ':') : NULL;	/* "ID:CONTROLLERS:PATH" */
		if (!p)
			continue;
		p++;
		p[strcspn(p, "\n")] = 0;
		yes = !strncmp(p, cg, n) && (p[n] == 0 || p[n] == '/' || (n == 1 && *cg == '/'));
	}
	fclose(f);
	return yes;
}

/* every process (not kernel thread) for which keep() holds, as "PID,PID,..." */
static size_t collect(struct strbuf *out, int (*keep)(long pid, const void *arg), const void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t n = 0;

	while (d && (e = readdir(d))) {
		char *end, path[64];
		long pid = strtol(e->d_name, &end, 10);
		struct stat st;

		if (*end || pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
		if (lstat(path, &st) < 0)	/* a kernel thread has none */
			continue;
		if (!keep(pid, arg))
			continue;
		strbuf_addf(out, "%s%ld", n ? "," : "", pid);
		n++;
	}
	if (d)
		closedir(d);
	return n;
}

static int same_pidns(long pid, const void *arg)
{
	return ns_ino(pid, "pid") == *(const unsigned long *)arg;
}

static int cgroup_member(long pid, const void *arg)
{
	return in_cgroup(pid, arg);
}

/* cgroup PATH as /proc/PID/cgroup shows it: a folder of the mounted tree is taken back
 * to the path below the v2 root (/sys/fs/cgroup, or unified/ on a hybrid machine) or
 * below a v1 controller's folder; *own: what to free */
static const char *proc_path(const char *cgroup, char **own)
{
	const char *rest = cgroup + 15;
	struct stat st;

	*own = NULL;
	if (strncmp(cgroup, "/sys/fs/cgroup/", 15))
		return cgroup;
	if (!strncmp(rest, "unified/", 8))
		return rest + 7;
	if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0)
		return *own = xasprintf("/%s", rest);
	return strchr(rest, '/') ? strchr(rest, '/') : "/";
}

int container_pids(const char *container, const char *cgroup, struct strbuf *pids,
		   long *ct_pid)
{
	*ct_pid = 0;
	if (container) {
		static const char *const runtimes[] = { "podman", "docker", "nerdctl" };
		long pid = 0;
		unsigned long ns, self;

		int many = 0;

		for (size_t i = 0; i < ARRAY_SIZE(runtimes) && !pid; i++)
			pid = inspect_pid(runtimes[i], container);
		/* a Kubernetes node: containerd's or CRI-O's bundles, by the pod's names */
		if (!pid)
			pid = ctname_find(container, &many);
		if (pid < 0)
			return error("%d containers are named '%s': give POD/CONTAINER or its id",
				     many, container), DLP_FAILED;
		if (!pid)
			return error("no running container '%s' (podman, docker and nerdctl inspect "
				     "found none, nor containerd's and CRI-O's running bundles)",
				     container), DLP_FAILED;
		ns = ns_ino(pid, "pid");
		self = ns_ino(getpid(), "pid");
		if (!ns || ns == self)
			return error("container '%s' (pid %ld) shares record's PID namespace: give its "
				     "processes with -p, or its cgroup with --cgroup", container, pid),
			       DLP_FAILED;
		if (!collect(pids, same_pidns, &ns))
			return error("container '%s': no process of it is readable in /proc",
				     container), DLP_FAILED;
		*ct_pid = pid;
		return DLP_OK;
	}
	if (cgroup) {
		char *own;
		const char *cg = proc_path(cgroup, &own);

		if (!collect(pids, cgroup_member, cg)) {
			free(own);
			return error("no process in cgroup '%s'", cgroup), DLP_FAILED;
		}
		free(own);
		return DLP_OK;
	}
	return DLP_OK;
}

/*
 * Where the perf_event controller is: a v1 hierarchy mounted with it (its mount point,
 * v1 1), else cgroup v2's mount (v1 0; the kernel puts every controller no v1
 * hierarchy took there), from /proc/self/mountinfo.  0, or -1: neither is mounted.
 */
static int perf_event_mount(struct strbuf *mnt, int *v1)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	struct strbuf v2 = STRBUF_INIT;
	int found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [TAGS] - FSTYPE SOURCE SUPEROPTS */
		char root[1024], point[1024], fstype[64], super[1024];
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 ||
		    sscanf(dash + 3, "%63s %*s %1023s", fstype, super) != 2 || strcmp(root, "/"))
			continue;
		if (!strcmp(fstype, "cgroup2") && !v2.len) {
			strbuf_addstr(&v2, point);
		} else if (!strcmp(fstype, "cgroup")) {
			for (char *s = super, *save = NULL, *o; (o = strtok_r(s, ",", &save)); s = NULL)
				if (!strcmp(o, "perf_event"))
					found = 1;
			if (found) {
				strbuf_addstr(mnt, point);
				*v1 = 1;
			}
		}
	}
	if (f)
		fclose(f);
	if (!found && v2.len) {
		strbuf_add(mnt, v2.buf, v2.len);
		*v1 = 0;
		found = 1;
	}
	strbuf_release(&v2);
	return found ? 0 : -1;
}

/* pid's cgroup path in the v1 hierarchy with perf_event (v1), else in v2's ("0::") */
static int pid_cgroup(long pid, int v1, struct strbuf *out)
{
	char path[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", pid);
	f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *p = ctl ? strchr(ctl + 1, ':') : NULL;

		if (!p)
			continue;
		*p++ = 0;
		p[strcspn(p, "\n")] = 0;
		ctl++;
		if (v1 ? !!strstr(ctl, "perf_event") : (!strncmp(line, "0", 1) && !*ctl)) {
			strbuf_addstr(out, p);
			found = 1;
		}
	}
	if (f)
		fclose(f);
	return found ? 0 : -1;
}

int container_cgroup_dir(long ct_pid, const char *cgroup, struct strbuf *dir,
			 const char **why)
{
	struct strbuf mnt = STRBUF_INIT, cg = STRBUF_INIT;
	struct stat st;
	int v1 = 0, ret = -1;

	*why = NULL;
	if (perf_event_mount(&mnt, &v1) < 0) {
		*why = "no cgroup hierarchy with the perf_event controller is mounted";
		goto out;
	}
	if (ct_pid) {
		if (pid_cgroup(ct_pid, v1, &cg) < 0) {
			*why = "the container's cgroup is not readable";
			goto out;
		}
	} else {
		char *own;

		strbuf_addstr(&cg, proc_path(cgroup, &own));
		free(own);
	}
	strbuf_addf(dir, "%s%s", mnt.buf, strcmp(cg.buf, "/") ? cg.buf : "");
	if (stat(dir->buf, &st) < 0 || !S_ISDIR(st.st_mode)) {
		*why = v1 ? "the cgroup has no folder in the perf_event hierarchy"
			  : "the cgroup has no folder in the cgroup v2 hierarchy";
		strbuf_reset(dir);
		goto out;
	}
	ret = 0;
out:
	strbuf_release(&mnt);
	strbuf_release(&cg);
	return ret;
}

/*
 * A `docker run` (or nerdctl's) starts its container through a daemon: the container's
 * processes descend from the daemon's shim, not from the command, so events that follow
 * the command never see them.  With the daemon's cgroupfs driver the container's cgroup
 * is made under the run's --cgroup-parent (/docker by default), in every hierarchy, the
 * perf_event one included; the kernel samples a cgroup's descendants with it.  So record
 * makes a parent folder of its own (or takes the one given), opens its per-cpu events on
 * it before the command starts, and adds --cgroup-parent to the run: the container is
 * recorded from its first instruction, and nothing else of the machine.  The systemd
 * driver places a container in a slice systemd makes as it starts: not followed, said.
 */
const char *container_runtime(const char *arg0)
{
	const char *b = strrchr(arg0, '/');

	return b ? b + 1 : arg0;
}

int container_daemon_runtime(const char *arg0)
{
	const char *b = container_runtime(arg0);

	return !strcmp(b, "docker") || !strcmp(b, "nerdctl");
}

size_t container_run_at(const char *const *argv)
{
	if (!argv || !argv[0] ||
	    (strcmp(container_runtime(argv[0]), "podman") && !container_daemon_runtime(argv[0])))
		return 0;
	for (size_t i = 1; argv[i]; i++) {
		if (argv[i][0] == '-')
			continue;	/* a global option (its value cannot be "run") */
		if (!strcmp(argv[i], "run"))
			return i + 1;
		if (!strcmp(argv[i], "container") && argv[i + 1] && !strcmp(argv[i + 1], "run"))
			return i + 2;
		if (strcmp(argv[i], "container") && i > 1 && argv[i - 1][0] != '-')
			return 0;	/* another subcommand (exec, start...) */
	}
	return 0;
}

int container_is_podman(const char *runtime)
{
	const char *ver[] = { runtime, "--version", NULL };
	struct strbuf v = STRBUF_INIT;
	int yes = !run_capture(ver, 10000, &v) && !strncmp(v.buf, "podman", 6);

	strbuf_release(&v);
	return yes;
}

/*
 * Late: the container's cgroup is made as it starts (the systemd driver: a scope under
 * a slice systemd makes then), so nothing can be opened on it before.  The run writes
 * the container's id to a cidfile as the container is created; record lets the command
 * go, reads the id, finds the cgroup's folder as runc makes it (runc's init waits there
 * for the start) and opens its events then (container_late_cgroup()).
 */
static int follow_late(const char **argv, size_t n, size_t at, const char *given,
		       const char ***out, struct container_follow *cf, const char **why,
		       struct strbuf *mnt)
{
	const char *cid = NULL;
	size_t extra = 0;

	strbuf_release(mnt);
	for (size_t i = at; i < n && !cid; i++) {
		if (!strcmp(argv[i], "--cidfile") && i + 1 < n)
			cid = argv[i + 1];
		else if (!strncmp(argv[i], "--cidfile=", 10))
			cid = argv[i] + 10;
	}
	if (cid) {
		cf->cidfile = xstrdup(cid);
	} else {
		char tmpl[] = "/tmp/dlprof-cid.XXXXXX";

		if (!mkdtemp(tmpl)) {
			*why = "no folder for its cidfile can be made in /tmp";
			return -1;
		}
		cf->ciddir = xstrdup(tmpl);
		cf->cidfile = xasprintf("%s/cid", tmpl);
		extra = 2;
	}
	if (given)
		cf->parent = *given == '/' ? xstrdup(given) : xasprintf("/%s", given);
	if (extra) {
		const char **v = xcalloc(n + extra + 1, sizeof(*v));

		memcpy(v, argv, at * sizeof(*v));
		v[at] = "--cidfile";
		v[at + 1] = cf->cidfile;
		memcpy(v + at + 2, argv + at, (n - at + 1) * sizeof(*v));
		*out = cf->argv = v;
	}
	return 0;
}

/* The id in a cidfile: 64 hex digits, else 0 */
static int read_cid(const char *cidfile, char id[65])
{
	struct strbuf sb = STRBUF_INIT;
	int ok = strbuf_read_file(&sb, cidfile, 256) >= 0 && sb.len >= 64;

	for (int i = 0; ok && i < 64; i++)
		ok = isxdigit((unsigned char)sb.buf[i]) && !isupper((unsigned char)sb.buf[i]);
	if (ok)
		memcpy(id, sb.buf, 64), id[64] = 0;
	strbuf_release(&sb);
	return ok;
}

/* A folder under dir (depth levels at most) whose name holds id, into out */
static int find_named(const char *dir, const char *id, int depth, struct strbuf *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && !found && (e = readdir(d))) {
		char *sub;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		sub = xasprintf("%s/%s", dir, e->d_name);
		if (strstr(e->d_name, id)) {
			strbuf_addstr(out, sub);
			found = 1;
		} else if (depth > 1) {
			found = find_named(sub, id, depth - 1, out);
		}
		free(sub);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether the path fmt makes (into dir) is a folder */
static int is_dir_at(struct strbuf *dir, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int is_dir_at(struct strbuf *dir, const char *fmt, ...)
{
	struct stat st;
	va_list ap;

	strbuf_reset(dir);
	va_start(ap, fmt);
	strbuf_vaddf(dir, fmt, ap);
	va_end(ap);
	return stat(dir->buf, &st) == 0 && S_ISDIR(st.st_mode);
}

int container_late_cgroup(const char *cidfile, const char *parent, int full, struct strbuf *dir,
			  int *id_seen)
{
	struct strbuf mnt = STRBUF_INIT, slice = STRBUF_INIT;
	char id[65];
	int v1 = 0, found;

	*id_seen = 0;
	if (!read_cid(cidfile, id) || perf_event_mount(&mnt, &v1) < 0) {
		strbuf_release(&mnt);
		return -1;
	}
	*id_seen = 1;
	/* where the drivers put it: systemd's docker-ID.scope in system.slice or the run's
	 * slice (a dash in a slice's name nests it: a-b.slice in a.slice), cgroupfs's ID in
	 * /docker or the run's parent */
	if (parent && strlen(parent) > 7 && !strcmp(parent + strlen(parent) - 6, ".slice")) {
		const char *p = parent + 1;

		for (const char *d = strchr(p, '-'); d; d = strchr(d + 1, '-'))
			strbuf_addf(&slice, "/%.*s.slice", (int)(d - p), p);
		strbuf_addf(&slice, "/%s", p);
	}
	found = is_dir_at(dir, "%s/system.slice/docker-%s.scope", mnt.buf, id) ||
		is_dir_at(dir, "%s/docker/%s", mnt.buf, id) ||
		(slice.len && is_dir_at(dir, "%s%s/docker-%s.scope", mnt.buf, slice.buf, id)) ||
		(parent && is_dir_at(dir, "%s%s/%s", mnt.buf, parent, id));
	strbuf_release(&slice);
	if (!found && full) {
		strbuf_reset(dir);
		found = find_named(mnt.buf, id, 6, dir);
	}
	if (!found)
		strbuf_reset(dir);
	strbuf_release(&mnt);
	return found ? 0 : -1;
}

int container_empty_cgroup(struct strbuf *dir)
{
	struct strbuf mnt = STRBUF_INIT;
	int v1 = 0, ret = -1;

	if (perf_event_mount(&mnt, &v1) == 0) {
		strbuf_addf(dir, "%s/dlprof-%d-none", mnt.buf, (int)getpid());
		ret = mkdir(dir->buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
	}
	strbuf_release(&mnt);
	return ret;
}

size_t container_cgroup_pids(const char *dir, struct strbuf *pids)
{
	char *own;
	const char *cg = proc_path(dir, &own);
	size_t n = collect(pids, cgroup_member, cg);

	free(own);
	return n;
}

int container_follow(const char **argv, const char ***out, struct container_follow *cf,
		     const char **why)
{
	const char *given = NULL, **info;
	struct strbuf drv = STRBUF_INIT, mnt = STRBUF_INIT;
	size_t n = 0, at, globals;
	int v1 = 0, late = 0, answered;

	memset(cf, 0, sizeof(*cf));
	*why = NULL;
	*out = argv;
	/* (podman's containers descend from the command) */
	if (!argv || !argv[0] || !container_daemon_runtime(argv[0]) ||
	    !(at = container_run_at(argv)))
		return 1;
	while (argv[n])
		n++;
	for (size_t i = at; i < n && !given; i++) {
		if (!strcmp(argv[i], "--cgroup-parent") && i + 1 < n)
			given = argv[i + 1];
		else if (!strncmp(argv[i], "--cgroup-parent=", 16))
			given = argv[i] + 16;
	}
	/* "RUNTIME [its global options: --context, -H] info": the run's own daemon */
	globals = at - 1;	/* "run"'s index, less "container" before it */
	if (globals >= 2 && !strcmp(argv[globals - 1], "container"))
		globals--;
	info = xcalloc(globals + 4, sizeof(*info));
	memcpy(info, argv, globals * sizeof(*info));
	info[globals] = "info";
	info[globals + 1] = "--format";
	info[globals + 2] = "{{.CgroupDriver}} {{.Name}}";
	answered = !run_capture(info, 10000, &drv);
	free(info);
	if (answered)
		while (drv.len && isspace((unsigned char)drv.buf[drv.len - 1]))
			drv.buf[--drv.len] = 0;
	else
		strbuf_reset(&drv);	/* (docker prints the format's blanks, failing) */
	if (!drv.len) {
		/* podman-docker's docker is podman: its containers descend from the command */
		if (container_is_podman(argv[0])) {
			strbuf_release(&drv);
			return 1;
		}
		*why = "its daemon did not answer 'info'";
	} else {
		struct utsname u;
		const char *host = strchr(drv.buf, ' ');

		/* DOCKER_HOST, a context: a daemon elsewhere runs it elsewhere */
		if (host && !uname(&u) && strcmp(host + 1, u.nodename))
			*why = "its daemon runs on another host";
		else if (strncmp(drv.buf, "cgroupfs ", 9) && strcmp(drv.buf, "cgroupfs"))
			late = 1;	/* systemd's makes the container's cgroup as it starts */
	}
	strbuf_release(&drv);
	if (!*why && perf_event_mount(&mnt, &v1) < 0)
		*why = "no cgroup hierarchy with the perf_event controller is mounted";
	if (*why) {
		strbuf_release(&mnt);
		return -1;
	}
	if (late || (getenv("DLPROF_FOLLOW") && !strcmp(getenv("DLPROF_FOLLOW"), "late")))
		return follow_late(argv, n, at, given, out, cf, why, &mnt);
	cf->parent = given && *given == '/' ? xstrdup(given)
					     : given ? xasprintf("/%s", given)
						     : xasprintf("/dlprof-%d", (int)getpid());
	cf->dir = xasprintf("%s%s", mnt.buf, cf->parent);
	strbuf_release(&mnt);
	/* docker would make it as the container starts; made now, with its parents */
	for (char *s = cf->dir + 1; ; s++) {
		if (*s == '/' || !*s) {
			char c = *s;

			*s = 0;
			if (mkdir(cf->dir, 0755) == 0 && !c)
				cf->made = 1;
			*s = c;
			if (!c)
				break;
		}
	}
	if (!cf->made && access(cf->dir, F_OK)) {
		*why = "its cgroup parent cannot be made";
		container_follow_done(cf);
		return -1;
	}
	if (!given) {
		const char **v = xcalloc(n + 3, sizeof(*v));

		memcpy(v, argv, at * sizeof(*v));
		v[at] = "--cgroup-parent";
		v[at + 1] = cf->parent;
		memcpy(v + at + 2, argv + at, (n - at + 1) * sizeof(*v));
		*out = cf->argv = v;
	}
	return 0;
}

int container_run_argv(const char *cmdline, size_t len, char rt[16])
{
	const char *words[65];
	size_t n = 0;

	for (const char *a = cmdline; a < cmdline + len && n < 64; a += strlen(a) + 1)
		words[n++] = a;
	words[n] = NULL;
	if (!n || !container_daemon_runtime(words[0]) || !container_run_at(words))
		return 0;
	snprintf(rt, 16, "%s", container_runtime(words[0]));
	return 1;
}

int container_follow_opts(struct record_opts *o, struct container_follow *cf,
			  struct strbuf *why_buf, const char *done, const char *verb)
{
	const char **argv = o->argv, *why;
	int f = container_follow(argv, &o->argv, cf, &why);

	if (!f && (o->metrics || o->memory)) {
		why = o->metrics ? "--metrics counts per thread" : "--memory probes each process";
		container_follow_done(cf);
		o->argv = argv;
		f = -1;
	}
	if (!f) {
		o->ct_follow = cf->dir ? 1 : 2;
		o->cgroup = cf->parent;
		o->cgroup_dir = cf->dir;
		o->ct_cidfile = cf->cidfile;
		o->ct_parent = cf->parent;
	} else if (f < 0) {
		/* said as the recording starts, and kept in it */
		strbuf_addf(why_buf, "%s starts its container through a daemon, and it cannot be "
			    "followed (%s): only the command is %s; %s the container with "
			    "--container NAME while it runs", container_runtime(argv[0]), why,
			    done, verb);
		o->cgroup_why = why_buf->buf;
	}
	return f;
}

/* The folder record made, in every hierarchy (docker made it in the others): gone, where
 * nothing is left in it (a container run with -d runs on) */
void container_follow_done(struct container_follow *cf)
{
	char line[4096];
	FILE *f;

	if (cf->made && (f = fopen("/proc/self/mountinfo", "re"))) {
		while (fgets(line, sizeof(line), f)) {
			char root[1024], point[1024], fstype[64];
			const char *dash = strstr(line, " - ");
			char *path;

			if (!dash || sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) != 2 ||
			    sscanf(dash + 3, "%63s", fstype) != 1 || strcmp(root, "/") ||
			    (strcmp(fstype, "cgroup") && strcmp(fstype, "cgroup2")))
				continue;
			path = xasprintf("%s%s", point, cf->parent);
			(void)rmdir(path);
			free(path);
		}
		fclose(f);
	}
	if (cf->ciddir) {
		(void)unlink(cf->cidfile);
		(void)rmdir(cf->ciddir);
	}
	free(cf->cidfile);
	free(cf->ciddir);
	free(cf->parent);
	free(cf->dir);
	free(cf->argv);
	memset(cf, 0, sizeof(*cf));
}
