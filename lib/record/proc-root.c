/* proc-root.c - a recorded process's root, where it is not record's (proc-root.h). */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc-root.h"
#include "util.h"

void proc_roots_init(struct proc_roots *r)
{
	struct stat self;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	u64map_init(&r->pids);
	u64map_init(&r->tids);
	u64map_init(&r->last_at);
	if (stat("/", &self) == 0) {
		r->self_dev = self.st_dev;
		r->self_ino = self.st_ino;
		r->have_self = 1;
	}
}

void proc_roots_release(struct proc_roots *r)
{
	for (size_t i = 0; i < r->nr; i++) {
		close(r->v[i].fd);
		free(r->v[i].prefix);
	}
	free(r->v);
	u64map_release(&r->pids);
	u64map_release(&r->tids);
	u64map_release(&r->last_at);
	free(r->at);
	pthread_mutex_destroy(&r->mu);
	memset(r, 0, sizeof(*r));
}

int proc_nspid(uint32_t pid, uint32_t tid, uint32_t *outer, uint32_t *inner)
{
	char path[64], line[256];
	FILE *f;
	int ret = 0;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%u/task/%u/status", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + 6, *end;
		unsigned long v;

		if (strncmp(line, "NSpid:", 6))
			continue;
		for (*outer = *inner = 0; (v = strtoul(p, &end, 10)), end != p; p = end) {
			if (!*outer)
				*outer = (uint32_t)v;
			*inner = (uint32_t)v;
		}
		ret = *outer != 0;
		break;
	}
	fclose(f);
	return ret;
}

/* a thread's id in its own PID namespace, 0 when unread; tid 0: the process's */
static uint32_t ns_pid_of(uint32_t pid, uint32_t tid)
{
	uint32_t outer, inner;

	return proc_nspid(pid, tid, &outer, &inner) ? inner : 0;
}

/* under mu: remember pid with root index idx + 1 (0: ours) */
static void note_pid(struct proc_roots *r, uint32_t pid, uint64_t idx1)
{
	void **slot = u64map_slot(&r->pids, pid);
	uint64_t v = (uint64_t)(uintptr_t)*slot, ns = v & 0xffffffffu;

	if (!v || !ns)
		ns = ns_pid_of(pid, 0);
	if (!ns)
		ns = pid;
	*slot = (void *)(uintptr_t)(idx1 << 32 | ns);
}

const char *proc_roots_of(struct proc_roots *r, uint32_t pid)
{
	const char *ret = NULL;
	char path[64];
	struct stat st, fst;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	if (!r->have_self)
		return NULL;
	if (stat(path, &st) < 0)
		return NULL;
	pthread_mutex_lock(&r->mu);
	if (st.st_dev == r->self_dev && st.st_ino == r->self_ino) {
		note_pid(r, pid, 0);
		goto out;
	}
	for (size_t i = 0; i < r->nr; i++)
		if (r->v[i].dev == st.st_dev && r->v[i].ino == st.st_ino) {
			note_pid(r, pid, i + 1);
			ret = r->v[i].prefix;
			goto out;
		}
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	/* the same root as stat saw (not a pid reused in between) */
	if (fstat(fd, &fst) < 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		close(fd);
		goto out;
	}
	ALLOC_GROW(r->v, r->nr + 1, r->alloc);
	r->v[r->nr] = (struct proc_root){ st.st_dev, st.st_ino, fd,
					  xasprintf("/proc/self/fd/%d", fd) };
	ret = r->v[r->nr++].prefix;
	note_pid(r, pid, r->nr);
out:
	pthread_mutex_unlock(&r->mu);
	return ret;
}

const char *proc_roots_note(struct proc_roots *r, uint32_t pid, uint64_t time)
{
	const char *ret = proc_roots_of(r, pid);
	uint64_t v;
	uint32_t idx1, last;

	pthread_mutex_lock(&r->mu);
	v = (uint64_t)(uintptr_t)u64map_get(&r->pids, pid);
	last = (uint32_t)(uintptr_t)u64map_get(&r->last_at, pid);
	idx1 = v ? (uint32_t)(v >> 32) : 0;
	/* a new entry where the root changed (or the first seen) */
	if (v && (!last || r->at[last - 1].idx1 != idx1)) {
		ALLOC_GROW(r->at, r->nr_at + 1, r->alloc_at);
		r->at[r->nr_at] = (struct proc_root_at){ time, idx1, last };
		*u64map_slot(&r->last_at, pid) = (void *)(uintptr_t)(++r->nr_at);
	}
	pthread_mutex_unlock(&r->mu);
	return ret;
}

const char *proc_roots_at(struct proc_roots *r, uint32_t pid, uint64_t time)
{
	const char *ret = NULL;
	uint32_t i;
	int found = 0;

	pthread_mutex_lock(&r->mu);
	for (i = (uint32_t)(uintptr_t)u64map_get(&r->last_at, pid); i; i = r->at[i - 1].prev)
		if (r->at[i - 1].time <= time || !r->at[i - 1].prev) {
			/* (before the first entry: the first root seen) */
			found = 1;
			if (r->at[i - 1].idx1 && r->at[i - 1].idx1 <= r->nr)
				ret = r->v[r->at[i - 1].idx1 - 1].prefix;
			break;
		}
	pthread_mutex_unlock(&r->mu);
	return found ? ret : proc_roots_of(r, pid);
}

int proc_roots_pid(struct proc_roots *r, uint32_t pid, int *root_fd, uint32_t *ns_pid)
{
	uint64_t v;
	int ret = -1;

	pthread_mutex_lock(&r->mu);
	v = (uint64_t)(uintptr_t)u64map_get(&r->pids, pid);
	if (v) {
		uint64_t idx1 = v >> 32;

		*root_fd = idx1 && idx1 <= r->nr ? r->v[idx1 - 1].fd : -1;
		*ns_pid = (uint32_t)v;
		ret = 0;
	}
	pthread_mutex_unlock(&r->mu);
	return ret;
}

void proc_roots_thread(struct proc_roots *r, uint32_t pid, uint32_t tid)
{
	uint64_t v;
	uint32_t ns;

	pthread_mutex_lock(&r->mu);
	v = (uint64_t)(uintptr_t)u64map_get(&r->pids, pid);
	pthread_mutex_unlock(&r->mu);
	if (!v || (uint32_t)v == pid || tid == pid)
		return;		/* never seen, or in record's namespace */
	ns = ns_pid_of(pid, tid);
	if (!ns)
		return;
	pthread_mutex_lock(&r->mu);
	*u64map_slot(&r->tids, (uint64_t)pid << 32 | ns) = (void *)(uintptr_t)tid;
	pthread_mutex_unlock(&r->mu);
}

uint32_t proc_roots_tid(struct proc_roots *r, uint32_t pid, uint32_t ns_tid)
{
	uint64_t v;
	uint32_t ret = 0;

	pthread_mutex_lock(&r->mu);
	v = (uint64_t)(uintptr_t)u64map_get(&r->pids, pid);
	if (v && (uint32_t)v == ns_tid)
		ret = pid;
	else
		ret = (uint32_t)(uintptr_t)u64map_get(&r->tids, (uint64_t)pid << 32 | ns_tid);
	pthread_mutex_unlock(&r->mu);
	return ret;
}

uint32_t proc_roots_outer_pid(struct proc_roots *r, uint32_t ns_pid)
{
	uint32_t found = 0;
	int n = 0;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->pids.cap; i++) {
		uint64_t v;

		if (!r->pids.used[i])
			continue;
		v = (uint64_t)(uintptr_t)r->pids.vals[i];
		if ((uint32_t)v == ns_pid && r->pids.keys[i] != ns_pid) {
			found = (uint32_t)r->pids.keys[i];
			n++;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return n == 1 ? found : 0;
}

int proc_root_open(int root_fd, const char *path, int flags)
{
	struct open_how how;
	long fd;

	if (root_fd < 0)
		return open(path, flags | O_NOFOLLOW | O_CLOEXEC);
	while (*path == '/')
		path++;
	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	/* an absolute link inside is the container's own, never the host's */
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	return fd < 0 ? -1 : (int)fd;
}
