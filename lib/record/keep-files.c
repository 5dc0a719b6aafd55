/* keep-files.c - the files of other roots the samples hit, kept in the build-id cache
 * (recunwind.h, paths.h).
 *
 * A container's (or chroot's) libraries and interpreter are gone with it: report reads
 * the recording later, on the host, where the same path names another file or none.
 * At the end of record each such file that a walk met (the unwinder opened it, or the
 * kernel's walk read a row of its table: a sample's frame was in it) is copied, whole,
 * into the build-id cache under its build-id, once: a file already there costs
 * nothing.  Whole, because report reads more than symbols from it (CFI to unwind kept
 * stack copies, instructions for check-isa); perf's build-id cache keeps whole files
 * too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsyms.h"
#include "paths.h"
#include "process.h"
#include "recunwind.h"
#include "util.h"

/* Copy src's bytes (fd) to path, made whole or not at all: 0, or -1 */
static int copy_to(int in, const char *path, uint64_t *bytes)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/'), *tmp;
	struct stat st;
	int out, ret = -1;
	off_t off = 0;

	*slash = 0;
	if (mkdir_p(dir) < 0 || fstat(in, &st) < 0) {
		free(dir);
		return -1;
	}
	tmp = xasprintf("%s/.tmp.XXXXXX", dir);
	free(dir);
	out = mkstemp(tmp);
	if (out < 0) {
		free(tmp);
		return -1;
	}
	while (off < st.st_size) {
		ssize_t n = copy_file_range(in, &off, out, NULL, (size_t)(st.st_size - off), 0);

		if (n <= 0) {
			/* a file system that cannot (EXDEV on old kernels, EINVAL): read/write */
			char buf[1 << 16];

			n = n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS) ?
				pread(in, buf, sizeof(buf), off) : -1;
			if (n <= 0 || write(out, buf, (size_t)n) != n)
				break;
			off += n;
		}
	}
	if (off == st.st_size && !fchmod(out, 0644) && !fsync(out) && !rename(tmp, path)) {
		*bytes += (uint64_t)st.st_size;
		ret = 0;
	}
	close(out);
	if (ret)
		unlink(tmp);
	free(tmp);
	return ret;
}

void keep_files(struct machine *m, struct keep_stats *st)
{
	struct dso **dsos;
	size_t n = machine_dsos(m, &dsos);
	uint64_t t0 = now_ns();

	if (st->off)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct dso *d = dsos[i];
		uint8_t id[20];
		char *dst;
		int fd;

		if (!d->root || d->kernel || d->special || d->anon || !d->build_id_size ||
		    (!d->unwind_priv && !d->walked) || d->path[0] != '/')
			continue;
		dst = buildid_cache_file(d->build_id, d->build_id_size);
		if (!dst) {
			st->failed++;
			continue;
		}
		if (access(dst, R_OK) == 0) {
			st->had++;
			free(dst);
			continue;
		}
		fd = open(dso_file(d), O_RDONLY | O_CLOEXEC);
		/* the file the process mapped, as its build-id says */
		if (fd < 0 || elf_file_build_id(dso_file(d), id) < d->build_id_size ||
		    memcmp(id, d->build_id, d->build_id_size) || copy_to(fd, dst, &st->bytes) < 0) {
			if (!st->failed++)
				st->first_failed = xstrdup(d->path);
		} else
			st->files++;
		if (fd >= 0)
			close(fd);
		free(dst);
	}
	st->ns = now_ns() - t0;
}
