/* proc-root.h - where a recorded process's files are: under its own root where that is
 * not record's (a container in another mount namespace, a chroot), and its pid as it
 * knows itself (a PID namespace).
 *
 * A path in a process's MMAP record names a file under that process's root.  Where the
 * root differs from record's (stat of /proc/PID/root against /), the files are read
 * through a handle on it, an O_PATH descriptor kept open for the recording: read as
 * "/proc/self/fd/N/PATH", they stay readable when the process is gone (a container
 * removed on exit included: the handle keeps its mount).  One handle per distinct root
 * (device and inode).  Each process asked about is remembered with the root it had last
 * and its NSpid, for what is read at the end (its perf map is /tmp/perf-NSPID.map under
 * its root).  Thread-safe.
 */
#ifndef DLPROF_PROC_ROOT_H
#define DLPROF_PROC_ROOT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "rephash.h"

struct proc_roots {
	pthread_mutex_t mu;
	struct proc_root { uint64_t dev, ino; int fd; char *prefix; } *v;
	size_t nr, alloc;
	/* pid -> (root index + 1, 0: ours) << 32 | its pid in its own namespace */
	struct u64map pids;
	/* pid << 32 | a thread's id in pid's namespace -> its id, for pids in another */
	struct u64map tids;
	/* each process's roots over time, as the drain saw its mappings come: pid -> the
	 * index + 1 of its latest entry, each entry linking to its previous one */
	struct proc_root_at { uint64_t time; uint32_t idx1, prev; } *at;
	size_t nr_at, alloc_at;
	struct u64map last_at;
	uint64_t self_dev, self_ino;
	int have_self;
};

void proc_roots_init(struct proc_roots *r);
void proc_roots_release(struct proc_roots *r);
/* "/proc/self/fd/N" for pid's root where it is not ours, NULL where it is ours or pid
 * cannot be looked at (gone, not permitted).  Valid until proc_roots_release. */
const char *proc_roots_of(struct proc_roots *r, uint32_t pid);
/* The same, asked as a mapping of pid at time is read (the drain, in the records' order):
 * noted, so that proc_roots_at answers for that time later */
const char *proc_roots_note(struct proc_roots *r, uint32_t pid, uint64_t time);
/* pid's root as of time, as proc_roots_note saw it then (a reader behind the drain: the
 * process may have changed its root, or be gone); where nothing was noted, as now */
const char *proc_roots_at(struct proc_roots *r, uint32_t pid, uint64_t time);
/* What was last seen of pid: its root's handle (-1: record's own root) and its pid in
 * its own namespace (the pid itself where that is record's).  0, or -1 when pid was
 * never asked about. */
int proc_roots_pid(struct proc_roots *r, uint32_t pid, int *root_fd, uint32_t *ns_pid);
/* A new thread tid of pid (its FORK record): where pid is in a PID namespace of its own,
 * its id there is read and kept for proc_roots_tid. */
void proc_roots_thread(struct proc_roots *r, uint32_t pid, uint32_t tid);
/* Record's id of the thread pid knows as ns_tid (the main thread: pid's own NSpid; others
 * as proc_roots_thread saw them), 0 when not known */
uint32_t proc_roots_tid(struct proc_roots *r, uint32_t pid, uint32_t ns_tid);
/* The process record knows that calls itself ns_pid in a PID namespace of its own
 * (another than record's), where exactly one such was seen; else 0 */
uint32_t proc_roots_outer_pid(struct proc_roots *r, uint32_t ns_pid);
/* A thread's ids from its status's NSpid line: record's first (outer), its own
 * namespace's last (inner; one id: the same namespace); tid 0: the process's own.
 * 1, or 0 when it cannot be read. */
int proc_nspid(uint32_t pid, uint32_t tid, uint32_t *outer, uint32_t *inner);
/* Open path (absolute, as the process names it) under root_fd (-1: record's root), its
 * symbolic links resolved inside that root, never through a link at its end.  A
 * descriptor, or -1 with errno set. */
int proc_root_open(int root_fd, const char *path, int flags);

#endif
