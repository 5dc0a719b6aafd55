/* process.h - the process model: processes, threads and mappings over time.
 *
 * Built from the side-band records (session pass 1), queried per sample (pass 2).
 * Lookups are "as of" a time: a mapping is visible from its mmap time until a later
 * mapping of the same process overlaps it, or the process execs.  A forked child sees
 * its parent's mappings as of the fork.
 */
#ifndef DLPROF_PROCESS_H
#define DLPROF_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "session.h"

/* One mapped file (or pseudo-file), shared by every mapping of it; the symbolizer and
 * unwinder hang their per-file caches here. */
struct dso {
	char *path;		/* as mapped: "/usr/lib/x86_64-linux-gnu/libdnnl.so.2.6", "[vdso]", "//anon" */
	const char *short_name;	/* basename, points into path */
	uint8_t build_id[20];
	uint8_t build_id_size;	/* 0: unknown */
	unsigned kernel:1;	/* [kernel.kallsyms] or a kernel module */
	unsigned anon:1;	/* anonymous memory ("//anon", "[anon:...]", "" ): JIT candidates */
	unsigned special:1;	/* [vdso], [vsyscall], [stack], [heap] ... */
	const uint8_t *image;	/* the file's bytes as captured at record time ([vdso]) */
	size_t image_size;
	void *sym_priv;		/* owned by symbolize.c */
	void *unwind_priv;	/* owned by unwind.c */
	char *file;		/* dso_file(): where its bytes are read from */
	unsigned renamed:1;	/* functions of it are named otherwise (machine_sym_name) */
	const char *root;	/* the root its path is read under (the process's own, where
				   it is not record's: a container, a chroot), or NULL */
	const char *symfs;	/* its machine's symbol root (machine_set_symfs), or NULL */
	unsigned walked:1;	/* a kernel walk went through it (record: keep_files) */
};

struct map {
	uint64_t start, end;	/* [start, end) in the process */
	uint64_t pgoff;		/* file offset of start */
	uint64_t time;		/* mmap time (0: existed before recording began) */
	uint32_t prot, flags;
	struct dso *dso;
};

struct machine;

struct machine *machine_new(void);
void machine_free(struct machine *m);

/* Feed side-band events (call in file order). */
int machine_mmap(struct machine *m, const struct dlp_mmap *ev);
int machine_comm(struct machine *m, uint32_t pid, uint32_t tid, const char *comm, int exec, uint64_t time);
int machine_fork(struct machine *m, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time);
int machine_exit(struct machine *m, uint32_t pid, uint32_t tid, uint64_t time);
/* Record a build-id for a path (DLP_REC_BUILDID), used when the mmap carried none. */
void machine_set_build_id(struct machine *m, const char *path, const uint8_t *id, size_t size);
/* In the file of build-id id, function sym is called name (DLP_REC_SYMNAME).  Copied. */
void machine_set_sym_name(struct machine *m, const uint8_t *id, size_t size, const char *sym,
			  const char *name);
/* The name given to function sym of dso, or NULL */
const char *machine_sym_name(const struct machine *m, const struct dso *d, const char *sym);
/* The bytes of a file captured at record time (DLP_REC_FILE: the [vdso] image); DSOs
 * of that path get them as their image.  Copied. */
void machine_set_image(struct machine *m, const char *path, const void *data, size_t len);

/* Where the files a process maps are read: a directory its mapped paths are found
 * under ("/proc/self/fd/N", a handle on a container's root), or NULL for the reader's
 * own root, as of the mapping's time.  Asked at each mapping of a file (record sets it: its processes may live in
 * other mount namespaces or chroots; a recording's reader does not). */
typedef const char *machine_root_fn(void *ctx, uint32_t pid, uint64_t time);
void machine_set_root_fn(struct machine *m, machine_root_fn *fn, void *ctx);

/* The mapping that covered addr in process pid at time, or NULL. */
const struct map *machine_find_map(struct machine *m, uint32_t pid, uint64_t addr, uint64_t time);
/* Whether what machine_find_map() finds in process pid at time is what it finds at any
 * later time, for as long as *view stays what this call set: 1 when so (time is after
 * every mapping, exec and fork the process has), 0 when the lookups depend on the time.
 * Symbols found through those mappings keep as long (view counts the build-ids and
 * names given too). */
int machine_view(struct machine *m, uint32_t pid, uint64_t time, uint64_t *view);
/* The number of execs process pid had made at or before time (0: none).  With the pid it
 * names one address space: an exec without a new pid starts a new one. */
unsigned machine_exec_gen(struct machine *m, uint32_t pid, uint64_t time);
/* The thread's name at time ("[unknown]" when never seen). */
const char *machine_comm_at(struct machine *m, uint32_t pid, uint32_t tid, uint64_t time);
/* The names (and jitdump bytes) of the JIT code of the recording, for readers of resolved
 * frames that want a JIT kernel's code (its ISA); NULL until the reader sets it. */
struct jitsyms;
void machine_set_jit(struct machine *m, struct jitsyms *jit);
struct jitsyms *machine_jit(const struct machine *m);
/* Every DSO seen, for per-file work (e.g. check-isa over a profile). */
size_t machine_dsos(struct machine *m, struct dso ***out);

/* The file to read for dso's bytes (symbols, CFI, code): with its machine's symbol root
 * (machine_set_symfs), DIR + its recorded path where that exists (a recording read on
 * another machine, its files copied under DIR); else under the root of the process that
 * mapped it (machine_set_root_fn) where that exists; else the recorded path.  Valid as
 * long as the dso. */
const char *dso_file(const struct dso *dso);
/* The symbol root the files of m's dsos are read under (report --symfs DIR), before the
 * first mapping is added; NULL or "": none.  The string must outlive m. */
void machine_set_symfs(struct machine *m, const char *dir);

/* A DLP_REC_PROC record (recfile.h): the process's command line, rank, start, job and
 * container.
 * The strings point into the record (NULL when it had none; a rank, local rank, world
 * size or start that is not a plain number is taken as none).  Returns 0, or -1 when
 * malformed. */
struct proc_info {
	uint32_t pid;
	const char *cmdline, *rank, *local_rank, *world_size;
	const char *start;		/* clock ticks since boot (/proc/PID/stat field 22) */
	const char *job;		/* "torchelastic:ID", "slurm:JOB.STEP", ... */
	const char *container;		/* its runtime's name for it, or its id's start */
};
int proc_rec_parse(const void *data, size_t len, struct proc_info *pi);

/* The PROC records of a recording by pid, a later one replacing an earlier (copies of
 * the strings, NULL where the record had none). */
struct proc_entry {
	uint32_t pid;
	char *cmdline, *rank, *local_rank, *world_size;
	uint64_t start;			/* 0: not recorded */
	char *job;
	char *container;
};
struct proc_table {
	struct proc_entry *v;
	size_t nr, alloc;
};
/* Add a DLP_REC_PROC payload.  Returns 0, or -1 when malformed (nothing added). */
int proc_table_add(struct proc_table *t, const void *data, size_t len);
const struct proc_entry *proc_table_find(const struct proc_table *t, uint32_t pid);
void proc_table_release(struct proc_table *t);
/* dst (released first) becomes a copy of src */
void proc_table_copy(struct proc_table *dst, const struct proc_table *src);
/* The recording's PROC records, as the process model keeps them: the resolve pipeline
 * adds each before any sample is delivered (a DLP_REC_PROC payload; -1 when
 * malformed), the views read them. */
int machine_add_proc(struct machine *m, const void *data, size_t len);
const struct proc_table *machine_procs(const struct machine *m);

/* File offset -> ELF virtual address is the symbolizer's business; this is the plain
 * "offset in file" of a process address within map. */
static inline uint64_t map_file_offset(const struct map *mp, uint64_t addr)
{
	return addr - mp->start + mp->pgoff;
}

#endif
