/* proc-root.h - where a recorded process's files are: under its own root where that is
 * not record's (a container in another mount namespace, a chroot).
 *
 * A path in a process's MMAP record names a file under that process's root.  Where the
 * root differs from record's (stat of /proc/PID/root against /), the files are read
 * through a handle on it, an O_PATH descriptor kept open for the recording: read as
 * "/proc/self/fd/N/PATH", they stay readable when the process is gone.  One handle per
 * distinct root (device and inode).  Thread-safe.
 */
#ifndef DLPROF_PROC_ROOT_H
#define DLPROF_PROC_ROOT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct proc_roots {
	pthread_mutex_t mu;
	struct proc_root { uint64_t dev, ino; int fd; char *prefix; } *v;
	size_t nr, alloc;
	uint64_t self_dev, self_ino;
	int have_self;
};

void proc_roots_init(struct proc_roots *r);
void proc_roots_release(struct proc_roots *r);
/* "/proc/self/fd/N" for pid's root where it is not ours, NULL where it is ours or pid
 * cannot be looked at (gone, not permitted).  Valid until proc_roots_release. */
const char *proc_roots_of(struct proc_roots *r, uint32_t pid);

#endif
