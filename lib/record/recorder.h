/* recorder.h - the state of one dlprof record run, one part per concern (struct
 * recorder below), and the functions the files of lib/record/ give each other (their
 * order is at the end). */
#ifndef DLPROF_RECORDER_H
#define DLPROF_RECORDER_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include "record.h"
#include "recunwind.h"
#include "attach.h"
#include "elfsyms.h"
#include "event.h"
#include "isa.h"
#include "jitsym.h"
#include "memevent.h"
#include "memrec.h"
#include "python/pybpf.h"
#include "proc-root.h"
#include "python/pyread.h"
#include "recfile.h"
#include "rephash.h"
#include "ring.h"
#include "workload.h"
#include "paths.h"
#include "util.h"
#include "version.h"

#define MAX_EVENTS	16
#define FLUSH_NS	1000000000ull	/* write a chunk at least this often */
#define MEM_FREES_BATCH	1024	/* frees a DLP_REC_MEMFREES record holds at most */
#define POLL_MS		100
/* A ring wakes the reader when this share of it is full (1/WAKE_DIV): half, so that
 * each wake-up drains ~128 dwarf samples of a cpu (a quarter woke the reader and, through
 * the hand-over, the unwinding thread twice as often; on the CNN, 6 ABBA pairs: record's
 * CPU 9.83 -> 9.08 us a sample, the walks 3.65 -> 3.10 in larger batches), and the other
 * half (~64-128 ms at 1-2 kHz a cpu) is the margin before one fills: no sample lost at
 * -F 5000 and -F 20000 on the CNN and the demo on 2 busy cores either way. */
#define WAKE_DIV	2
#define XR_HITS		256
#define PY_POLL_MS	1	/* with a Python process: read its stacks within ~1 ms */
/* The kernel walk: its first samples wait for their process's mappings, told as the
 * rings are read: read soon as the workload starts (unw-libmain: 111 of 1,014 samples
 * fell back to their copies, a mapping or process not told yet, at 100 ms a poll) */
#define KS_START_NS	(300 * 1000000ull)
#define CAPTURE_MAX	(512u << 20)	/* cap on a captured JIT/ITT file */
#define BG_CAP		(64u << 20)	/* raw bytes waiting for the compressor (~1.5 s of
					   dwarf samples on 2 cpus) before record compresses inline */

/* x86_64 general registers + BP, SP, IP (asm/perf_regs.h numbering) */
#define X86_64_USER_REGS (((1ull << 9) - 1) /* AX..IP: 0-8 */ | (0xffull << 16) /* R8..R15 */)

/* ---- record state ---- */
struct rec_event {
	char name[64];
	int off_cpu;		/* the switch-out event (record --off-cpu) */
	int mem;		/* --memory: MEM_EV_*, the uprobes */
	int metric;		/* --metrics sampled each on its own: its counter, 1 + its
				   index in rec_metrics.label (metrics.c) */
	struct perf_event_attr attr;
	uint64_t *ids;
	size_t nr_ids, alloc_ids;
};

enum { MEM_EV_ALLOC = 1, MEM_EV_FREE, MEM_EV_WAIT };

/* --memory: the preloaded library, the processes that mapped it, those that ran a new
 * program (each should have), and what each said at its exit; the ring of frees */
struct mem_proc {
	uint32_t pid;
	int stats;		/* its exit stats came */
	char comm[16];
	uint64_t calls, bytes, rss_anon;
};

struct rec_memory {
	char *lib;
	uint64_t off[3];		/* file offsets of the alloc, free and wait functions */
	const char *tracefs;		/* where the uprobes were made */
	int probe[3];			/* made: to remove at the end */
	struct u64map pids;
	struct mem_proc *procs;
	size_t nr_procs, alloc_procs;
	uint64_t allocs, frees;
	uint64_t alloc_events;		/* alloc events drained (with the exit statistics) */
	uint64_t waits;			/* times a thread waited for the drain (mem-wait events) */
	uint64_t free_tail;		/* the free ring's next slot to read */
	struct memrec_enc frees_enc;	/* frees from it not written yet */
	uint64_t free_wait;		/* since when its slot is taken but not filled */
	uint64_t ring_lost;		/* frees whose writer never filled their slot */
	char *shared_path;		/* the back-pressure counters (memevent.h) */
	struct mem_shared *shared;
};

/* -p: the processes and the threads that have counters */
struct rec_attach {
	pid_t *targets;
	int nr;
	struct u64map tids_open;
	struct strbuf cmdline;		/* read while they run: META cmdline */
	/* --container, --cgroup: the events are per cpu on their cgroup's folder
	 * (opts->cgroup_dir), PERF_FLAG_PID_CGROUP; 0: on each thread, as -p */
	unsigned long pid_flags;
};

/* JIT code: the directory jitdumps go to, the files named, and the code in anonymous
 * memory: the executable mappings (anonymous or not), and the user samples taken in
 * anonymous ones, checked at the end against the captured JIT names.  A sample can be
 * drained before the mapping it ran in (each cpu has its own ring): those wait in
 * pending until the end. */
struct exec_range { uint32_t pid, anon; uint64_t start, end; };
struct xr_hit { uint32_t pid, idx; uint64_t page; };
struct anon_ip { uint32_t pid; uint64_t ip; };

struct rec_jit {
	char *dir;			/* JITDUMPDIR we created, NULL when not ours */
	int ours;			/* we set ONEDNN_JIT_PROFILE/DNNL_JIT_PROFILE */
	int dir_lock;			/* flock()ed while we live; -1 none */
	struct jit_dump { uint32_t pid; char *path; } *dumps;	/* jit-PID.dump files named by
							   mmap records, by whom */
	size_t nr_dumps, alloc_dumps;
	struct exec_range *xr;
	size_t nr_xr, alloc_xr;
	/* the range of a code page met lately (direct-mapped; each user sample asks, and
	 * a scan of every range was ~4% of the reader's CPU) */
	struct xr_hit xr_hits[XR_HITS];
	struct anon_ip *anon_ips, *pending;
	size_t nr_anon_ips, alloc_anon_ips, nr_pending, alloc_pending;
	uint64_t anon_samples;		/* all of them, also those past the array's cap */
	struct jitsyms *syms;		/* the captured perf maps and jitdumps, parsed */
};

/* ITT: the collector's output directory and files, and the libdnnl the workload mapped */
struct rec_itt {
	char *dir;			/* DLPROF_ITT_DIR we created */
	int dir_lock;
	int files;			/* collector output files captured */
	int task_files;			/* ... of them with ITT task events */
	char *dnnl_path;		/* NULL when none */
	/* processes started apart with a collector of ours (record --container-flags):
	 * their DLPROF_ITT_DIR, read from their environment when first seen */
	struct itt_foreign { uint32_t pid; char *dir; } *foreign;
	size_t nr_foreign, alloc_foreign;
	uint32_t dnnl_pid;		/* the first process seen mapping libdnnl */
};

/* Python stacks: read from outside (reader), or in the kernel at the sample (pb,
 * pybpf.h; NULL: from outside) and joined with their samples (python/pykernel.c) */
struct rec_python {
	struct pyreader *reader;	/* NULL: --no-python */
	int wakeup;			/* the command looks like Python: its rings read quickly
					   until it is seen (per sample when no BPF) */
	/* the user stack copy of the sample being stored (sample_fixup), for the reader */
	const unsigned char *smp_stack;
	size_t smp_len;
	uint64_t smp_sp;
	const unsigned char *smp_regs;	/* its user registers (in the ring), NULL: none */
	struct pybpf *pb;
	const char *pb_why;		/* why not (said when Python was read from outside) */
	int stats;			/* the kernel counts the program's runs (pybpf_stats_on) */
	int pb_switch;			/* it runs on the switch-outs too (pykernel_attach) */
	struct u64map pb_tids;		/* tid -> since when it is in the program's map (ns),
					   PB_GONE: taken out */
	struct pb_wait *pb_wait;	/* samples whose chain has not come yet */
	size_t nr_pb_wait, alloc_pb_wait;
	struct pb_chain *pb_chains;	/* chains whose sample has not come yet */
	size_t nr_pb_chains, alloc_pb_chains;
	struct pb_proc *pb_procs;	/* when each Python process's threads were last listed */
	size_t nr_pb_procs, alloc_pb_procs;
	uint64_t pb_unmatched;		/* samples whose chain never came */
	uint64_t pb_join_after;		/* a chain this long after its sample's time is its */
	int pb_exact;			/* the chains carry their samples' own times */
	/* a Python process found: its rings read every PY_POLL_MS until one of its threads
	 * is listed for the kernel (its first samples, taken before the interpreter made
	 * its thread state, list none: 100 ms of samples were then read from outside) */
	int seen;
	uint64_t fast_until;
	/* processes (tid 0) and threads started that may run Python and are not listed for
	 * the program yet: the rings are read every PY_POLL_MS until each is or its time is
	 * up (a list, so that one listed does not end the quick reads another waits for) */
	struct pb_await {
		uint32_t pid, tid;
		uint64_t until;
	} *await;
	size_t nr_await, alloc_await;
	/* the doorbell: a ring per cpu of the command's forks and execs only, waking record
	 * at each, so a Python process started by another (a shell, a launcher, a worker
	 * forked) is read quickly from its start (NULL: none, -p) */
	struct ring *bells;
	int *bell_fds;
	uint64_t pb_hot_until;		/* code objects not read before were met: quick reads
					   until then */
	uint64_t pb_codes;		/* code objects read from outside, at the last drain */
	struct py_pub *pub;		/* Python processes and their mem_shared.py entries */
	size_t nr_pub, alloc_pub;
	unsigned pub_next;		/* the entry to take next when none is free */
};

/* record --metrics (metrics.c): the counters that ride on the sampling event's group */
#define MET_MAX	12
struct rec_metrics {
	int nr;				/* members, after the leader */
	char label[MET_MAX][32];	/* as shown (META metrics) */
	struct perf_event_attr attr[MET_MAX];
	int *fds;			/* every member opened, closed with the events */
	size_t nr_fds, alloc_fds;
	struct u64map last;		/* (tid, cpu) -> struct met_last: the last counts */
	char why[MET_MAX][96];		/* why some could not be counted ... */
	struct strbuf whose[MET_MAX];	/* ... and which */
	struct strbuf asked;		/* ",label,": each counter asked for (met_each) */
	int nr_why;
	unsigned char *copy;		/* the sample whose counts are rewritten */
	int switch_outs;		/* the switch-out event is the group's first member */
	int enable;			/* the leader is started once its group is whole */
	int totals_read;		/* the counts at the end (META metrics_total) */
	int events;			/* each counter sampled on its own (RECORD_MET_EVENTS):
					   r->ev[] with .metric, and the switch-out event's
					   samples for context-switches; no group, no reads */
	uint64_t period[MET_MAX];	/* ... each one's events per sample */
	uint64_t enabled, running, total[MET_MAX + 2];
	/* how long each counted against the threads' CPU time (multiplexing: a PMU shared
	 * with other users gives a counter a share of it): a task-clock beside them, on
	 * the same threads and cpus, not in the group (software: never multiplexed) */
	int *ref_fds;
	size_t nr_ref_fds, alloc_ref_fds;
	int no_ref;				/* one would not open or read: not known */
	uint64_t ref_ns, ran[MET_MAX + 2];	/* (ref_ns 0: not known) */
};

/* The layout of a sample the kernel walked (events_attr_common, dwarf): the records
 * the drain remakes from the walks (kw_sample) */
#define KW_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN | \
		 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

/* record --op-calls (opcalls.c): each PyTorch operator's calls, counted in the kernel */
struct oc_file;
struct opcalls_bpf;
struct rec_opcalls {
	int on;
	struct opcalls_bpf *skel;
	pthread_t th;			/* attaches the program, off the drain */
	int started, closing;
	pthread_mutex_t mu;		/* the jobs */
	pthread_cond_t cv;
	struct oc_job { uint32_t pid; char *path, *shown; uint64_t time; } *jobs;
	size_t nr_jobs, alloc_jobs;
	/* the drain's: the libraries asked for, by the file a mapping holds (its device and
	 * inode, the real file under a container's overlay: what uprobes attach to; ino 0:
	 * not read), or where that could not be read, by path */
	struct oc_seen { uint64_t dev, ino; char *path; } *seen;
	size_t nr_seen, alloc_seen;
	/* the thread's own */
	struct oc_file *files;
	size_t nr_files, alloc_files;
	const char **ops;		/* "aten::add.Tensor" (interned), by index (a link's
					   cookie) */
	size_t nr_ops, alloc_ops;
	struct u64map op_at;		/* an interned name -> index + 1 */
	size_t entries;			/* operators' entries attached to */
	uint64_t mapped_ns, first_ns;	/* the library first mapped; its link made */
	const char *first_path;		/* ... its path (files') */
	uint64_t calls;			/* counted, of the recorded processes */
	size_t nr_counted;		/* operators with a call */
	char why[200];			/* why some or all were not counted */
	struct strbuf meta;		/* META op_calls, made at the end */
};

/* What the recording lacks, said on stderr and kept for report (META warn.N) */
struct rec_warnings {
	struct strbuf lines;		/* NUL-separated */
	int nr;
	char fallback[256];		/* the event fallen back to, said once set up */
	char ring[160];			/* the ring was shrunk to fit the mlock limit */
};

/* The recorder: the events and rings, the writer, and one part per concern */
struct recorder {
	const struct record_opts *opts;
	uint32_t cmd_pid;	/* the command record started, 0 with -p */
	int cmd_exec_seen;	/* its first exec's PROC record was written */
	const char *cg_dir;		/* the cgroup folder the events are on (opts'; a late
					   docker run's own, found as it starts: cg_dir_own) */
	struct strbuf cg_dir_own;
	int cg_dir_made;		/* ... an empty one of ours (removed after) */
	uint32_t unfollowed_run;	/* a process under the command that ran docker or
					   nerdctl "run" (not followed: said at the end) */
	char unfollowed_rt[16];		/* ... which of them */
	/* execs whose command line was not readable yet: the exec record comes before the
	 * kernel has put the new image's arguments in place (read again at the next drains) */
	struct proc_later {
		uint32_t pid;
		int first;
		uint64_t until;
	} *proc_later;
	size_t nr_proc_later, alloc_proc_later;
	uint64_t start_ns;
	time_t start_wall;	/* files newer than this were caused by us */
	/* the events, per cpu (and with -p per thread) */
	struct rec_event ev[MAX_EVENTS];
	int nr_ev;
	int *cpus;
	int nr_cpus;
	int *fds;		/* nr_ev * nr_cpus, -1 when not open; -p: thread-major, then
				   event, then cpu */
	int nr_fds;
	size_t alloc_fds;
	struct ring *rings;	/* one per cpu */
	/* the drain and the writer */
	struct recwriter *w;
	int write_failed;
	struct recunw *ru;	/* unwinding while recording (dwarf), NULL: write directly */
	struct recunw_stats ru_st;
	struct keep_stats keep;	/* containers' files kept in the build-id cache */
	uint64_t samples, lost, lost_records;
	/* samples the kernel walked in place of their copies (kstack.h): the record made
	 * of one (kw_sample), being handed on; those of an event it cannot be made for */
	unsigned char *kw_buf;
	struct strbuf kwq;	/* made, to be read in time order with the rings */
	size_t kwq_off;		/* of it, read */
	int kw_pending;
	uint64_t kw_lost;
	uint64_t ring_bytes;	/* records read from the perf rings */
	uint64_t switch_outs;		/* of the samples, the switch-out event's (--off-cpu) */
	struct u64map kaddrs;	/* kernel ips seen */
	struct u64map pids;	/* processes seen (comm, fork) */
	struct proc_roots roots;	/* their roots and PID namespaces, where not ours */
	struct path_list need_buildid;	/* exec file mappings whose MMAP2 had no build-id */
	unsigned char *scratch;		/* rewritten dwarf samples */
	struct u64map own_ids;		/* our events' ids -> the event (own_event()) */
	size_t own_ids_nr;		/* ... the ids it was made of */
	unsigned char *relabel;		/* a sample given our event's id (sample_own_id()) */
	uint64_t relabel_guessed;	/* samples that came with another event's id, none of
					   our events surely the one that took them */
	const char *relabel_guess;	/* ... the event they were written as */
	size_t cut_head;		/* the sample sample_fixup() read is to be cut (with
					   the unwinding thread): its bytes up to the stack
					   size word, 0: not cut */
	uint64_t cut_keep, cut_dyn;	/* ... to keep bytes of stack, dyn_size cut_dyn */
	struct u64map tcb_at;		/* tid -> its TCB's address (stack_end()) */
	/* dlprof's CPU while the workload ran (all threads but the kernel-symbol loader):
	 * what the samples cost, start-up and the end's work left out (META) */
	uint64_t run_cpu_ns;
	/* the samples' clock (CLOCK_MONOTONIC) against the wall clock as the recording
	 * started and ended (clock_pair()), so recordings of several hosts share one time
	 * axis (META clock_start, clock_end) */
	struct clock_anchor { uint64_t mono, real, err; } clock_start, clock_end;

	struct rec_attach att;
	struct record_host host;	/* for the live reader (record.h) */
	struct rec_jit jit;
	struct rec_itt itt;
	struct rec_python py;
	struct rec_memory mem;
	struct rec_metrics met;
	struct rec_opcalls oc;
	struct rec_warnings warn;
	/* what record gives the workload, for a container it starts (env_container_argv) */
	struct rec_given {
		struct path_list env;		/* variables set */
		struct path_list preload;	/* libraries added to LD_PRELOAD */
		struct path_list ro, rw;	/* our files and folders it reads, writes */
		struct path_list owned;		/* strings of argv */
		const char **argv;		/* the command as run, NULL: as given */
	} given;
};

struct pb_wait {
	uint32_t pid, tid;
	uint64_t time;
	unsigned turns;			/* drains it has waited */
};

struct pb_chain {
	uint32_t tid, n;
	uint64_t time;
	int failed;			/* a read failed, or it was too deep */
	int gil;			/* its thread held the GIL */
	int exact;			/* time is its sample's own (PYBPF_CHAIN_EXACT) */
	int stale;			/* its thread's listed state was not its own */
	unsigned turns;
	uint64_t *chain;
};

struct pb_proc {
	uint32_t pid;
	uint64_t listed;
	int none;			/* its last listing found no Python thread */
	int forked;			/* forked by a Python process, not listed yet */
	uint64_t gil;			/* its GIL's state, as the program's entries have it */
};

struct py_pub {
	uint32_t pid;
	int slot;			/* its entry in mem_shared.py, -1 none */
	uint64_t tried;			/* when it was last tried (CLOCK_MONOTONIC ns) */
};

#define ANON_IPS_MAX (1u << 20)	/* past this, anonymous-code samples are only counted */


/* Python stacks read in the kernel (python/pykernel.c) */
#define PB_LIST_NS	10000000ull	/* a process's threads listed at most this often */
#define PB_LIST_NEW_NS	1000000ull	/* ... while a new thread of it waits to be listed */
#define PB_JOIN_NS	50000ull	/* a chain and its sample are this close at most (the
					   program runs right after the sample's time is taken:
					   measured 0.1-0.4 us; in 1 sample of ~3,000, on this
					   VM guest, 51-52 us after: pb_join_after) */
#define PB_JOIN_MAX_NS	1000000ull	/* ... after it, at most (half a period, below) */
#define PB_TURNS	3		/* drains a sample or a chain waits for the other */
#define PROC_LATER_NS	200000000ull	/* an exec's command line read again until */
#define PB_THREAD_FAST_NS 200000000ull	/* ... a new thread of a Python process's */
#define PB_FAST_NS	2000000000ull	/* a new Python process's quick reads, at most */
#define PB_HOT_NS	50000000ull	/* quick reads after new code objects were met */
#define PB_START_NS	500000000ull	/* ... after a Python process's thread is listed */
#define PB_GONE		((void *)1)

/* /proc/kallsyms, loaded by a thread of its own while the workload runs (capture.c) */
struct ksyms;
struct kallsyms {
	struct ksyms *ks;	/* NULL until loaded */
	uint64_t cpu_ns;	/* the loading thread's CPU time, set as it ends */
};

/*
 * The files of record by concern, each calling only those listed after it
 * (scripts/check-layers.py fails on a circle): record.c (the loop) > env.c (the
 * workload's environment) > drain.c (one callback per perf record) > capture.c (what is
 * captured at the end), meta.c (META), mem-probes.c (--memory's uprobes) > events.c (the
 * events and their rings) > metrics.c, mem.c (--memory's processes and frees), jitcov.c
 * (JIT coverage) > rec-write.c; below them the helpers: attach, container, ctname, kstack,
 * proc-root, python/ (the Python reader, outside and in the kernel), recunwind*, ring,
 * workload.
 */

/* rec-write.c */
void rec_put(struct recorder *r, uint32_t type, const void *a, size_t alen,
	     const void *b, size_t blen);
void rec_put_done(struct recorder *r);
void rec_warn(struct recorder *r, const char *fmt, ...);

/* jitcov.c */
void jitcov_note_anon(struct recorder *r, uint32_t pid, uint64_t ip);
void jitcov_note_map(struct recorder *r, uint32_t pid, uint64_t start, uint64_t len,
		     int anon);
void jitcov_place_pending(struct recorder *r);

/* metrics.c */
/* common: an event's attr as events.c makes one (not the first), for counters sampled
 * on their own */
int metrics_setup(struct recorder *r, const struct perf_event_attr *common);
int metrics_open(struct recorder *r, int leader_fd, pid_t pid, int cpu);
void metrics_switch_outs(struct recorder *r, struct perf_event_attr *a);
void metrics_no_switch_outs(struct recorder *r, const char *why);
/* The group_fd to open event e with: the leader's for the switch-out event */
int metrics_group(const struct recorder *r, int e, int leader_fd);
void metrics_sample(struct recorder *r, unsigned char *read, size_t len, uint32_t tid,
		    uint32_t cpu);
void metrics_totals(struct recorder *r);
void metrics_close(struct recorder *r);
/* META metrics (the counters' names in order), metrics_period (sampled each on its own:
 * their events per sample), metrics_total (the counts at the end) and metrics_ran (the
 * time they ran against, then the time each ran) */
void metrics_meta(struct recorder *r, struct strbuf *names, struct strbuf *periods,
		  struct strbuf *totals, struct strbuf *ran);
void metrics_release(struct recorder *r);
/* record --op-calls (opcalls.c) */
int opcalls_setup(struct recorder *r);
/* pid mapped path at start (len bytes) with PROT_EXEC, at time; root: pid's root where it
 * is not record's (proc_roots_note), else NULL */
void opcalls_mapped(struct recorder *r, uint32_t pid, const char *path, const char *root,
		    uint64_t start, uint64_t len, uint64_t time);
/* The end line on what --op-calls counted */
void opcalls_say(const struct recorder *r);
void opcalls_finish(struct recorder *r);
void opcalls_release(struct recorder *r);

/* mem.c */
struct mem_proc *mem_proc_of(struct recorder *r, uint32_t pid);
void mem_frees_put(struct recorder *r);
void mem_ring_drain(struct recorder *r, int final);
void mem_check(struct recorder *r);

/* events.c */
void events_attr_common(struct recorder *r, struct perf_event_attr *a, int first);
void events_close(struct recorder *r);
size_t events_default_pages(const struct record_opts *o);
unsigned long events_max_sample_rate(void);
int events_online_cpus(int **cpus);
int events_open(struct recorder *r, pid_t pid);
int events_open_targets(struct recorder *r);
int events_python_target(const struct record_opts *o);
/* 1: o samples one event, whose samples come with the registers of their moment (no
 * scheduler's or tracepoint's event, whose registers are made up where it fires) */
int events_one_plain(const struct record_opts *o);
int events_setup(struct recorder *r);
int events_write_attrs(struct recorder *r);

/* mem-probes.c */
int mem_probes_add(struct recorder *r, int *kernel_dropped);
void mem_probes_remove(struct recorder *r);

/* capture.c */
void capture_build_ids(struct recorder *r);
void capture_sym_names(struct recorder *r);
void *capture_kallsyms_load(void *arg);
void capture_kallsyms_free(struct kallsyms *k);
void capture_ksyms(struct recorder *r, struct kallsyms *k);
void capture_vdso(struct recorder *r);
int capture_perf_map_open(struct recorder *r, uint32_t pid, long since, struct stat *st,
			  const char **why, char *shown, size_t size, uint32_t *ns_out);
void capture_perf_maps(struct recorder *r);
void capture_jit_dump_add(struct recorder *r, uint32_t pid, const char *path);
void capture_jit(struct recorder *r);
void capture_itt_foreign(struct recorder *r, uint32_t pid, const char *dir);
void capture_itt(struct recorder *r);

/* meta.c */
void meta_check_missing(struct recorder *r);
void meta_write(struct recorder *r);

/* drain.c */
void drain_all(struct recorder *r, int last);
int drain_record(void *ctx, const struct perf_event_header *rec);
void drain_proc_info(struct recorder *r, uint32_t pid);
void drain_proc_later(struct recorder *r, int last);
int drain_py_emit(void *ctx, uint32_t type, const void *a, size_t alen, const void *b,
		  size_t blen);

/* python/pykernel.c */
void pykernel_attach(struct recorder *r, int base);
void pykernel_fetch(struct recorder *r);
void pykernel_forget(struct recorder *r, uint32_t tid);
void pykernel_new_process(struct recorder *r, uint32_t pid, uint32_t ppid, uint32_t tid);
int pykernel_awaiting(struct recorder *r);
int pykernel_bells_open(struct recorder *r, pid_t pid);
void pykernel_bells_ring(struct recorder *r);
void pykernel_bells_close(struct recorder *r);
void pykernel_list(struct recorder *r, uint32_t pid);
void pykernel_list_read(struct recorder *r, uint32_t pid);
void pykernel_match(struct recorder *r, int last);
struct pb_proc *pykernel_proc_of(struct recorder *r, uint32_t pid);
/* 0: not read in the kernel; 1: read (or to come); 2: read, its thread held the GIL */
int pykernel_sample(struct recorder *r, uint32_t pid, uint32_t tid, uint64_t time,
		    uint32_t *chain_id);

/* env.c */
void env_setup(struct recorder *r);
const char **env_container_argv(struct recorder *r, const char **argv);

#endif
