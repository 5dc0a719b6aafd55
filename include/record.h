/* record.h - run a command under sampling and write a recording (dlprof record).
 *
 * record_run() sets up the events (probing them, falling back from cycles to cpu-clock),
 * starts the workload corked, drains the per-cpu rings into the recording until the
 * workload exits, then appends what report needs later and cannot find then: build-ids,
 * kernel symbols hit, JIT maps and jitdumps, ITT task files, metadata and statistics.
 */
#ifndef DLPROF_RECORD_H
#define DLPROF_RECORD_H

#include <stdio.h>
#include <stddef.h>

#include "recfile.h"

enum record_callgraph {
	RECORD_CG_NONE,
	RECORD_CG_FP,
	RECORD_CG_DWARF,
};

#define RECORD_DEFAULT_FREQ	  999
#define RECORD_DEFAULT_STACK	  32768	/* user stack bytes per sample (dwarf): 99.6% of the
					   CNN run's stacks fit, 72% fit 16 KiB */
#define RECORD_MAX_STACK	  65000	/* a sample must fit a 64 KiB perf record */

/* A live reader of the recording being made (dlprof top). */
struct record_host;
struct record_live {
	recwriter_tap_fn *tap;		/* every record written, on the writing thread */
	void *ctx;
	int fd;				/* polled with the rings (-1: none): keys */
	/* after each turn of record's loop (at most 100 ms apart), on record's thread:
	 * fd_ready when fd is readable.  Non-zero ends the recording: with -p at once,
	 * else the command is sent SIGTERM (SIGKILL 2 s later) and waited for. */
	int (*poll)(void *ctx, int fd_ready);
	int stdio[3];			/* the command's stdin, stdout, stderr (-1: ours) */
	/* once, before the first record reaches tap: record's view of the processes'
	 * roots and perf maps, valid until record_run returns (NULL: not wanted) */
	void (*started)(void *ctx, const struct record_host *host);
};

/* What record knows of its processes that a live reader needs (containers, chroots) */
struct stat;
struct record_host {
	void *ctx;
	/* the directory pid's mapped paths were under at time ("/proc/self/fd/N"), NULL:
	 * the reader's own root (process.h machine_root_fn); thread-safe */
	const char *(*root_at)(void *ctx, uint32_t pid, uint64_t time);
	/* pid's JIT perf map (/tmp/perf-PID.map, under its root by the pid it knows
	 * itself), checked as jitsym_perfmap_open checks it against since: a descriptor, or
	 * -1 with *why set when it is refused (NULL: there is none) */
	int (*perf_map_open)(void *ctx, uint32_t pid, long since, struct stat *st,
			     const char **why);
};

struct record_opts {
	const char *output;		/* default "dlprof.data"; NULL: no file (live only) */
	unsigned long freq;		/* samples per second per thread (0: use period) */
	unsigned long period;		/* -c: events per sample */
	const char *events;		/* "a,b,c"; NULL: cycles, falling back to cpu-clock */
	enum record_callgraph callgraph;
	unsigned int stack_size;	/* dwarf: bytes of user stack, multiple of 8 */
	size_t mmap_pages;		/* per-cpu ring data pages (power of two); 0: default */
	int no_jit;			/* do not set ONEDNN_JIT_PROFILE & co */
	int no_itt;			/* do not load the ITT collector */
	int no_python;			/* do not read Python stacks (pyread.h) */
	int off_cpu;			/* also sample every context switch, with its stack:
					   1 asked (an error when it cannot), 2 by default
					   (left out when it cannot) */
	int keep_stacks;		/* dwarf: keep the stack copies next to the stacks
					   unwound while recording (recunwind.h) */
	int no_record_unwind;		/* dwarf: only the copies, unwound by report */
	int quiet;			/* no fallback note, no summary line */
	const char **argv;		/* the command, NULL-terminated */
	const char *pids;		/* -p "PID[,PID...]": attach; argv (if any) is a timer */
	int memory;			/* --memory: sample the workload's allocations
					   (libdlprof-mem.so preloaded, memevent.h) */
	unsigned long mem_sample;	/* their mean bytes between samples; 1: all */
	const struct record_live *live;	/* NULL: none */
	double duration;		/* --duration: stop recording after this many seconds
					   (0: no limit); a command runs on, unrecorded */
	unsigned long long max_size;	/* --max-size: stop when the file reaches this many
					   bytes of samples (0: no limit) */
	int no_buildid_cache;		/* keep no container's files in the build-id cache */
	const char *container;		/* --container NAME|ID, --cgroup PATH: the pids were
					   found so (META says which) */
	const char *cgroup;
	const char *cgroup_dir;		/* ... their cgroup's folder in the hierarchy that has
					   perf_event: per-cpu events on it take the processes
					   started in it later too (perf -G); NULL: -p only */
	const char *cgroup_why;		/* ... why not, with a container or cgroup */
	int system_wide;		/* -a: every process, per-cpu events; argv (if any)
					   is the workload, run as without -a */
	const char *metrics;		/* --metrics "faults,sched,...": counters read with
					   each sample of the first event; NULL: none */
	int metrics_mode;		/* --metrics-mode: RECORD_MET_* */
	unsigned long metrics_period;	/* --metrics-period: events per sample of each
					   counter sampled on its own; 0: its own default */
	int op_calls;			/* --op-calls: count each PyTorch operator's calls
					   (uprobes on the at::_ops entries; META op_calls) */
	const char *metrics_periods;	/* --metrics-period NAME=N,...: a counter's own
					   period, where not metrics_period; NULL: none */
	int ct_follow;			/* the command starts a container through a daemon
					   (docker run): its cgroup_dir is the run's cgroup
					   parent, recorded from before the command starts;
					   2: late, cgroup_dir NULL, the container's own cgroup
					   found as it starts (ct_cidfile, ct_parent) */
	const char *ct_cidfile, *ct_parent;
};

/* How --metrics counts: AUTO is GROUP where the kernel reads an inherited group with
 * each sample (Linux 6.12 and later), else EVENTS; GROUP: the counters ride on the
 * sampling event's samples, the counts of each interval; EVENTS: each counter sampled on
 * its own, every so many events, each sample attributed by its own stack */
enum { RECORD_MET_AUTO, RECORD_MET_GROUP, RECORD_MET_EVENTS };

/* whole stacks by default: Debian's libraries have no frame pointers, only CFI */
#define RECORD_OPTS_INIT { "dlprof.data", RECORD_DEFAULT_FREQ, 0, NULL, RECORD_CG_DWARF, \
			   RECORD_DEFAULT_STACK, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, 0, 0, NULL, 0, 0, 0, NULL, \
			   NULL, NULL, NULL, 0, NULL, 0, 0, 0, NULL, 0, NULL, NULL }

/* --container NAME|ID or --cgroup PATH (the other NULL): the processes, as -p's list, in
 * pids; the container's first process (its runtime's answer) in *ct_pid, 0 for a
 * cgroup.  DLP_OK, or DLP_FAILED with the reason printed (container.c). */
struct strbuf;
int container_pids(const char *container, const char *cgroup, struct strbuf *pids,
		   long *ct_pid);
/* ... and the folder of their cgroup (ct_pid's, else cgroup) in the hierarchy where the
 * perf_event controller is (cgroup v2's mount, or v1's perf_event mount), in dir: 0, or
 * -1 with *why set (no such hierarchy, the folder cannot be found) */
int container_cgroup_dir(long ct_pid, const char *cgroup, struct strbuf *dir,
			 const char **why);

/* `docker run` (nerdctl's too): its container, started by the daemon, followed through a
 * cgroup parent made for it (container.c) */
struct container_follow {
	char *parent;			/* the run's --cgroup-parent, as the runtime takes it */
	char *dir;			/* ... its folder in the perf_event hierarchy; NULL:
					   late (the container's own found as it starts) */
	const char **argv;		/* the command with the flags added; NULL: as given */
	int made;			/* record made the folder (removed after) */
	char *cidfile;			/* late: where the runtime writes the container's id */
	char *ciddir;			/* ... the folder record made for it (removed after) */
};
/* 1: argv starts no container through a daemon; 0: *cf filled, *out the command to
 * run; -1: it does, but it cannot be followed (*why says why).  With the systemd
 * driver (or DLPROF_FOLLOW=late) the container is followed late: cf->dir is NULL and
 * cf->cidfile names the file the run writes its id to (container_late_cgroup()). */
int container_follow(const char **argv, const char ***out, struct container_follow *cf,
		     const char **why);
void container_follow_done(struct container_follow *cf);
/* o's command followed so (cf: container_follow()), set in o: ct_follow 1 (its cgroup
 * parent in cgroup_dir) or 2 (late: ct_cidfile), o->argv the command to run; or, where it
 * cannot be (also with --metrics or --memory), why in o->cgroup_why (its text in why_buf:
 * "only the command is DONE; VERB the container with --container NAME").  What
 * container_follow() returns, -1 for those too. */
int container_follow_opts(struct record_opts *o, struct container_follow *cf,
			  struct strbuf *why_buf, const char *done, const char *verb);
/* The folder (in the perf_event hierarchy) of the cgroup of the container whose id the
 * run wrote to cidfile, made under parent (the run's --cgroup-parent, or NULL): 0 with
 * dir set, -1 while the id or the folder is not there yet.  full: search the whole
 * hierarchy, not only where Docker's drivers put it.  *id_seen: the id was read. */
int container_late_cgroup(const char *cidfile, const char *parent, int full, struct strbuf *dir,
			  int *id_seen);
/* An empty cgroup folder of record's own in the perf_event hierarchy (dlprof-PID-none),
 * into dir: events with nothing to count where the container never came.  0 or -1. */
int container_empty_cgroup(struct strbuf *dir);
/* The processes in cgroup folder dir and below, as "PID,PID,...": how many */
size_t container_cgroup_pids(const char *dir, struct strbuf *pids);
/* Whether a process's command line (/proc/PID/cmdline: NUL-separated, len bytes) is
 * docker's or nerdctl's "run" (or "container run"): 1, its runtime's name in rt */
int container_run_argv(const char *cmdline, size_t len, char rt[16]);
/* The runtime's name in a command's argv[0] (its last path component) */
const char *container_runtime(const char *arg0);
/* Whether arg0 is docker or nerdctl, whose containers their daemon starts */
int container_daemon_runtime(const char *arg0);
/* A podman, docker or nerdctl command line's "run" (or "container run"): the index of
 * the run's first argument, 0 where argv runs no container.  Words before it are the
 * runtime's global options (--context NAME: a word after an option may be its value);
 * any other word is another subcommand (exec, start...). */
size_t container_run_at(const char *const *argv);
/* Whether RUNTIME --version says podman (podman-docker's docker) */
int container_is_podman(const char *runtime);

/* The flags of `podman run`/`docker run` that give a container started apart what
 * record gives a workload it starts (JIT profile, ITT collector), one line on out.
 * DLP_OK, or DLP_FAILED when the collector is missing (said; the JIT flags printed). */
int env_container_flags(FILE *out);

/*
 * Record opts->argv, or with opts->pids the running processes (every thread) until
 * they end, or with opts->system_wide every process (until a signal or the command
 * ends), a signal comes, the command (run without counters) ends, or a limit
 * (duration, max_size) is reached: then the recording is finished and a command is
 * waited for, unrecorded.  On a terminal (stderr) a status line (elapsed, samples, MB,
 * lost) is refreshed each second unless quiet.  DLP_OK when the recording was made
 * (or the command could not be run), with *exit_status the status dlprof exits with:
 * the command's (its exit code, 128+signal when killed; 0 with -p and no command; 127
 * when it could not be run); DLP_USAGE for options the machine refuses (a bad -p list,
 * a ring too small); DLP_FAILED when recording could not be set up or written (message
 * printed).
 */
int record_run(const struct record_opts *opts, int *exit_status);

#endif
