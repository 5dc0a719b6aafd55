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
 * with -p.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* whether pid's /proc/PID/cgroup has a line for cgroup path cg */
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
		yes = !strncmp(p, cg, n) && p[n] == 0;
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

int container_pids(const char *container, const char *cgroup, struct strbuf *pids)
{
	if (container) {
		static const char *const runtimes[] = { "podman", "docker", "nerdctl" };
		long pid = 0;
		unsigned long ns, self;

		for (size_t i = 0; i < ARRAY_SIZE(runtimes) && !pid; i++)
			pid = inspect_pid(runtimes[i], container);
		if (!pid)
			return error("no running container '%s' (podman, docker and nerdctl inspect "
				     "found none)", container), DLP_FAILED;
		ns = ns_ino(pid, "pid");
		self = ns_ino(getpid(), "pid");
		if (!ns || ns == self)
			return error("container '%s' (pid %ld) shares record's PID namespace: give its "
				     "processes with -p, or its cgroup with --cgroup", container, pid),
			       DLP_FAILED;
		if (!collect(pids, same_pidns, &ns))
			return error("container '%s': no process of it is readable in /proc",
				     container), DLP_FAILED;
		return DLP_OK;
	}
	if (cgroup) {
		const char *cg = cgroup;
		char *own = NULL;

		if (!strncmp(cg, "/sys/fs/cgroup/", 15)) {
			/* a folder of the mounted tree: the path /proc shows is below the v2
			 * root (/sys/fs/cgroup, or unified/ on a hybrid machine), or below a
			 * v1 controller's folder */
			const char *rest = cg + 15;
			struct stat st;

			if (!strncmp(rest, "unified/", 8))
				cg = rest + 7;
			else if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0)
				cg = own = xasprintf("/%s", rest);
			else
				cg = strchr(rest, '/') ? strchr(rest, '/') : "/";
		}
		if (!collect(pids, cgroup_member, cg)) {
			free(own);
			return error("no process in cgroup '%s'", cgroup), DLP_FAILED;
		}
		free(own);
		return DLP_OK;
	}
	return DLP_OK;
}
