/* proc-root.c - a recorded process's root, where it is not record's (proc-root.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proc-root.h"
#include "util.h"

void proc_roots_init(struct proc_roots *r)
{
	struct stat self;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
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
	pthread_mutex_destroy(&r->mu);
	memset(r, 0, sizeof(*r));
}

const char *proc_roots_of(struct proc_roots *r, uint32_t pid)
{
	const char *ret = NULL;
	char path[64];
	struct stat st, fst;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	if (!r->have_self || stat(path, &st) < 0 ||
	    (st.st_dev == r->self_dev && st.st_ino == r->self_ino))
		return NULL;
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nr; i++)
		if (r->v[i].dev == st.st_dev && r->v[i].ino == st.st_ino) {
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
out:
	pthread_mutex_unlock(&r->mu);
	return ret;
}
