/* attach.h - dlprof record -p: processes that were running before the recording.
 *
 * The kernel only reports what happens after the counters are opened: the threads,
 * names and executable mappings a process already has are read from /proc and written
 * as the COMM and MMAP2 records the kernel would have written (perf calls this
 * synthesizing), so report sees such a process like one it watched start.
 */
#ifndef DLPROF_ATTACH_H
#define DLPROF_ATTACH_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "util.h"

/* "PID[,PID...]" into *pids (allocated).  Returns how many; -1 for a bad number, -2 for
 * a process that does not exist (error printed). */
int attach_parse_pids(const char *list, pid_t **pids);
/* This process's rank in a distributed job, from its launcher's environment (RANK,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), or NULL */
const char *attach_job_rank(void);
/* record -o: pattern with %h (host name), %r (attach_job_rank()), %p (dlprof's pid) and %%
 * replaced, into out; -1 (error printed) for an unknown %x or a %r without a rank */
struct strbuf;
int attach_output_name(const char *pattern, struct strbuf *out);

/* The threads of pid now (/proc/PID/task), into *tids (allocated).  Returns how many;
 * 0 when the process is gone. */
size_t attach_list_tids(pid_t pid, pid_t **tids);

/* When pid started, in seconds of the wall clock; 0 when unknown. */
time_t attach_start_wall(pid_t pid);
/* The CPU time pid has used (user and system), in clock ticks; 0 unknown */
unsigned long long attach_cpu_ticks(pid_t pid);

/* pid's command line, arguments separated by spaces, appended to sb.  Returns 0 or -1. */
int attach_cmdline(pid_t pid, struct strbuf *sb);

/* The value of variable name in an environment attach_proc_info() read, or NULL */
const char *attach_env_value(const struct strbuf *env, const char *name);

/* The payload of a DLP_REC_PROC record for pid (recfile.h: its command line, its
 * container and, from its environment, rank, local_rank and world_size), appended to sb.  Returns 0, or -1
 * when the process is gone (sb unchanged).  env, when not NULL, gets the environment it
 * read (as it started: "NAME=VALUE" strings, NUL-separated), for attach_env_value();
 * argv, when not NULL, its arguments as /proc/PID/cmdline holds them (NUL-separated). */
int attach_proc_info(pid_t pid, struct strbuf *sb, struct strbuf *env, struct strbuf *argv);
/* The same for the command record started (argv) before it exec'd anything else: its
 * environment is record's own (a command that ended before /proc was read). */
void attach_proc_info_ours(pid_t pid, const char *const *argv, struct strbuf *sb);

/* The container pid runs in, by its runtime's name (Podman, Docker; else the id's first
 * 12 hex digits), appended to name: 0, or -1 when its cgroup names none (ctname.c). */
int ctname_of_pid(pid_t pid, struct strbuf *name);
/* The first process of the running container containerd or CRI-O names want
 * (POD/CONTAINER as ctname_of_pid gives it, its container's name where only one has it,
 * or an id prefix of 12 digits or more), from its OCI bundle: its pid, 0 for none, -1
 * where several containers have that name (*many of them) */
long ctname_find(const char *want, int *many);

typedef int (*attach_emit_fn)(void *ctx, const struct perf_event_header *rec);

/*
 * One COMM record per thread of pid and one MMAP2 record per executable mapping, with
 * the sample_id_all trailer attr asks for (time, the event id, cpu 0), passed to emit
 * one by one.  MMAP2 records carry the device and inode, not a build-id (the recorder
 * reads build-ids of the files later, as for kernel records without one).
 * Returns how many records were emitted, or -1 when pid is gone.
 */
int attach_synthesize(pid_t pid, const struct perf_event_attr *attr, uint64_t id,
		      uint64_t time, attach_emit_fn emit, void *ctx);

#endif
