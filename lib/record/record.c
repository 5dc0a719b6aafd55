/* record.c - the record loop: start, drain the rings until the workload ends, finish.
 *
 * Events: one fd per (event, online cpu) on the workload's pid with inherit, so every
 * thread, child process and exec is followed.  The first event of each cpu owns that
 * cpu's ring; later events are redirected into it (PERF_EVENT_IOC_SET_OUTPUT).  Side-band
 * records (mmap2 with build-ids, comm, fork/exit, context switches) come from the first
 * event only, so they are not duplicated.
 *
 * Dwarf mode: the kernel copies sample_stack_user bytes per sample whatever the stack
 * depth.  Before writing a sample we trim that copy to the bytes actually used (dyn_size,
 * rounded up to 8) and shrink the record's stack size field and header size to match, so
 * the stored record is a valid PERF_RECORD_SAMPLE whose stack size field equals the
 * bytes present (followed by the original dyn_size, as the kernel lays it out).
 */
#include "python/pybpf-prog.h"
#include "recorder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>

/* ---- main loop ---- */

/*
 * --container, --cgroup: one counter per event and cpu on the cgroup's folder, as perf
 * -G opens them: the kernel samples only the tasks of that cgroup (and below), so a
 * process started in it later is recorded too.  1 opened; 0 the kernel refuses cgroup
 * events here (said, kept in the recording's warnings: the events go on each thread of
 * the processes running now, as -p); -1 failed.
 */
static int cgroup_open(struct recorder *r)
{
	const char *dir = r->cg_dir;
	int cg = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, ret;

	fd = cg < 0 ? -1 : event_open(&r->ev[0].attr, cg, r->cpus[0], -1,
				      PERF_FLAG_FD_CLOEXEC | PERF_FLAG_PID_CGROUP);
	if (fd < 0 && r->opts->ct_follow)
		return error("the kernel refused events on cgroup %s (%s): the container "
			     "cannot be followed", dir, strerror(errno)), -1;
	if (fd < 0) {
		rec_warn(r, "the kernel refused events on cgroup %s (%s): recording the %d "
			 "processes in it now, as -p; processes started in it later are not "
			 "recorded", dir, strerror(errno), r->att.nr);
		if (cg >= 0)
			close(cg);
		return 0;
	}
	close(fd);
	/* per cpu: nothing to inherit; the idle task is no container's */
	for (int e = 0; e < r->nr_ev; e++)
		r->ev[e].attr.inherit = 0;
	r->att.pid_flags = PERF_FLAG_PID_CGROUP;
	ret = events_open(r, cg);
	close(cg);	/* each event holds the cgroup */
	return ret < 0 ? -1 : 1;
}

/*
 * -p: counters on every thread of the targets (with --container or --cgroup, per cpu
 * on their cgroup where the kernel can: cgroup_open()), then what the kernel will not
 * tell: their threads' names and their code mappings, stamped with the time before the
 * counters opened, so a mapping the kernel reports later replaces ours.
 */
static int attach_open(struct recorder *r)
{
	int on_cgroup = 0;
	struct rlimit rl;
	time_t earliest = 0;

	/* threads x events x cpus descriptors: a big server needs more than 1024 */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* another user's process: say so, rather than the paranoid advice (not the cause) */
	for (int t = 0; t < r->att.nr; t++) {
		char path[32];
		struct stat st;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d", (int)r->att.targets[t]);
		if (stat(path, &st) < 0 || st.st_uid == geteuid() || !geteuid())
			continue;
		fd = event_open(&r->ev[0].attr, r->att.targets[t], -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0) {
			close(fd);	/* allowed (CAP_SYS_PTRACE, CAP_PERFMON) */
			continue;
		}
		if (errno == EACCES || errno == EPERM)
			return error("cannot attach to pid %d: %s: it belongs to another user "
				     "(uid %u); attaching needs root or CAP_SYS_PTRACE",
				     (int)r->att.targets[t], strerror(errno), (unsigned)st.st_uid);
	}
	if (r->cg_dir) {
		on_cgroup = cgroup_open(r);
		if (on_cgroup < 0)
			return -1;
	} else if (r->opts->cgroup_why) {
		rec_warn(r, "%s: recording the %d processes in the %s now, as -p; processes "
			 "started in it later are not recorded", r->opts->cgroup_why, r->att.nr,
			 r->opts->container ? "container" : "cgroup");
	}
	if ((!on_cgroup && events_open_targets(r) < 0) || events_write_attrs(r) < 0)
		return -1;
	for (int t = 0; t < r->att.nr; t++) {
		time_t start = attach_start_wall(r->att.targets[t]);

		if (t)
			strbuf_addstr(&r->att.cmdline, "; ");
		if (attach_cmdline(r->att.targets[t], &r->att.cmdline) < 0)
			strbuf_addstr(&r->att.cmdline, "?");
		strbuf_addf(&r->att.cmdline, " (pid %d, attached)", (int)r->att.targets[t]);

		attach_synthesize(r->att.targets[t], &r->ev[0].attr, r->ev[0].ids[0], r->start_ns,
				  drain_record, r);
		drain_proc_info(r, (uint32_t)r->att.targets[t]);
		if (start && (!earliest || start < earliest))
			earliest = start;
	}
	if (on_cgroup && !r->opts->ct_follow)
		strbuf_addf(&r->att.cmdline, "; and what starts in cgroup %s", r->cg_dir);
	/* a perf map written after the process started is its own (capture_perf_maps) */
	r->start_wall = earliest ? earliest - 1 : 0;
	return 0;
}

/*
 * -a: one counter per event and cpu on every task (pid -1), then, as for -p, what the
 * kernel will not tell of the processes running already: their threads' names, their
 * code mappings and their command lines, read from /proc.  A process that starts later
 * is told by the kernel (its fork, exec and mappings come in the rings).
 */
static int system_open(struct recorder *r)
{
	DIR *d;
	struct dirent *de;
	size_t n = 0;

	if (events_open(r, -1) < 0 || events_write_attrs(r) < 0)
		return -1;
	d = opendir("/proc");
	if (!d)
		return error("cannot read /proc: %s", strerror(errno));
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		if (attach_synthesize((pid_t)pid, &r->ev[0].attr, r->ev[0].ids[0], r->start_ns,
				      drain_record, r) < 0)
			continue;	/* gone meanwhile */
		drain_proc_info(r, (uint32_t)pid);
		n++;
	}
	closedir(d);
	strbuf_addf(&r->att.cmdline, "every process (%zu running at the start)", n);
	/* a perf map is taken when written after its process started (capture_perf_maps) */
	r->start_wall = 0;
	return 0;
}

/*
 * Native stacks walked in the kernel (kstack.h, issue 48), by default: in place of the
 * stack copies where the walk reaches the thread's root (the copy for the others);
 * DLPROF_KSTACK=compare beside them (each sample walked both ways and the two compared;
 * so too with --keep-stacks, which keeps the copies); DLPROF_KSTACK=0 the copies alone.
 * Only for dwarf stacks unwound while recording, and not in place of the copies with
 * --metrics (whose samples carry counts the walk's record has not).  The walk is a part
 * of the program that reads Python frames: with --no-python it is loaded for the walk
 * alone.  Where BPF cannot run the walk, the copies serve, as with DLPROF_KSTACK=0.
 */
static int native_mode(const struct record_opts *o)
{
	const char *e = getenv("DLPROF_KSTACK");

	if ((e && !strcmp(e, "0")) || o->callgraph != RECORD_CG_DWARF || o->no_record_unwind)
		return PYBPF_NATIVE_OFF;
	if ((e && !strcmp(e, "compare")) || o->keep_stacks)
		return PYBPF_NATIVE_BESIDE;
	return o->metrics ? PYBPF_NATIVE_OFF : PYBPF_NATIVE_INSTEAD;
}

/* DLPROF_KSTACK set to walk: the walk's own end line, and the BPF program's time */
static int kstack_asked(void)
{
	const char *e = getenv("DLPROF_KSTACK");

	return e && *e && strcmp(e, "0");
}

/* The end line of the native walk (kstack.h) */
static void say_kstack(const struct recorder *r)
{
	const struct kstack_stats *k = &r->ru_st.ks;
	uint64_t stop = 0, late = k->stopped[KW_NO_PROC] + k->stopped[KW_NO_MAP];

	/* by default the summary says what share was walked; this line where asked, or
	 * where a sample was lost */
	if (!kstack_asked() && !r->kw_lost)
		return;
	for (int i = 1; i < KW_NR; i++)
		stop += k->stopped[i];
	if (k->instead || !k->matched) {
		fprintf(stderr, "dlprof: native stacks walked in the kernel: %llu of %llu samples "
			"in place of their stack copy, %.1f frames a walk; the copy for %llu (the "
			"walk stopped: a table not made yet %llu, a mapping or process not told "
			"yet %llu, other %llu)", (unsigned long long)k->instead,
			(unsigned long long)(k->instead + stop + k->kept),
			k->instead ? (double)k->frames / k->instead : 0.0,
			(unsigned long long)stop, (unsigned long long)k->stopped[KW_NO_TAB],
			(unsigned long long)late,
			(unsigned long long)(stop - k->stopped[KW_NO_TAB] - late));
		if (k->kept)
			fprintf(stderr, " and %llu switch-outs", (unsigned long long)k->kept);
	} else {
		fprintf(stderr, "dlprof: native stacks walked in the kernel: %llu of %llu samples "
			"compared with their copy's walk: %llu the same, %llu further (the copy "
			"ended first), %llu stopped early (a table not made yet %llu, a mapping or "
			"process not told yet %llu, other %llu), %llu different; %.1f frames a "
			"walk", (unsigned long long)k->matched, (unsigned long long)k->samples,
			(unsigned long long)k->same, (unsigned long long)k->further,
			(unsigned long long)stop, (unsigned long long)k->stopped[KW_NO_TAB],
			(unsigned long long)late, (unsigned long long)(stop - k->stopped[KW_NO_TAB] -
								       late),
			(unsigned long long)k->differ,
			k->matched ? (double)k->frames / k->matched : 0.0);
		if (k->past_same || k->past_differ)
			fprintf(stderr, "; of the stacks deeper than their copy, rooted through "
				"the thread's last walk, %llu the same as the kernel's whole walk, "
				"%llu different", (unsigned long long)k->past_same,
				(unsigned long long)k->past_differ);
		if (r->ru_st.kernel_walked)
			fprintf(stderr, "; the kernel's stack recorded for %llu (report "
				"--check-unwind holds them to the copies kept)",
				(unsigned long long)r->ru_st.kernel_walked);
	}
	fprintf(stderr, "; %llu tables (%llu kept from an earlier run), %llu rows, %.1f MB, "
		"%.2f s to make or read", (unsigned long long)k->tables,
		(unsigned long long)k->tables_kept, (unsigned long long)k->rows,
		k->table_bytes / 1e6, k->table_ns / 1e9);
	if (k->table_failed)
		fprintf(stderr, ", %llu files without", (unsigned long long)k->table_failed);
	if (k->rules_cut)
		fprintf(stderr, ", %llu rows of rules past the %u a table holds (the walk stops "
			"there)", (unsigned long long)k->rules_cut, KUNW_MAX_RULES);
	if (k->proc_failed || k->maps_over)
		fprintf(stderr, "; the kernel not told all of a process's code mappings %llu "
			"times (more than %u, or refused): their samples keep their copy",
			(unsigned long long)(k->proc_failed + k->maps_over), KUNW_MAX_MAPS);
	if (k->dropped)
		fprintf(stderr, "; %llu walks dropped (its buffer was full)",
			(unsigned long long)k->dropped);
	if (r->kw_lost)
		fprintf(stderr, "; %llu samples lost (an event it cannot write them for)",
			(unsigned long long)r->kw_lost);
	fputc('\n', stderr);
}

static void print_summary(struct recorder *r, const char *path, int incomplete)
{
	uint64_t bytes = recwriter_bytes(r->w);
	int color = want_color(2) && r->lost;
	const struct kstack_stats *k = &r->ru_st.ks;
	char mode[192], sw[64];

	/* the call-graph mode and what it cost on disk; which way native stacks were
	 * walked: in the kernel (the copies for the rest), or from the copies (and why) */
	if (r->opts->callgraph == RECORD_CG_DWARF && r->ru_st.samples && r->ru_st.kstack &&
	    !k->matched) {
		uint64_t walked = k->instead + k->kept;

		for (int i = 1; i < KW_NR; i++)
			walked += k->stopped[i];
		snprintf(mode, sizeof(mode), "stacks: dwarf, %.1f%% walked in the kernel and "
			 "%.1f%% from their copies, %.1f%% unwound while recording",
			 walked ? 100.0 * k->instead / walked : 0.0,
			 walked ? 100.0 * (walked - k->instead) / walked : 0.0,
			 100.0 * r->ru_st.unwound / r->ru_st.samples);
	} else if (r->opts->callgraph == RECORD_CG_DWARF && r->ru_st.samples &&
		   native_mode(r->opts) && !r->ru_st.kstack && !kstack_asked()) {
		snprintf(mode, sizeof(mode), "stacks: dwarf, copies (not walked in the kernel: "
			 "%s), %.1f%% unwound while recording", !r->py.pb ? (r->py.pb_why ?
			 r->py.pb_why : "no BPF program") : "the kernel would not run the walk",
			 100.0 * r->ru_st.unwound / r->ru_st.samples);
	} else if (r->opts->callgraph == RECORD_CG_DWARF && r->ru_st.samples)
		snprintf(mode, sizeof(mode), "stacks: dwarf, %.1f%% unwound while recording",
			 100.0 * r->ru_st.unwound / r->ru_st.samples);
	else if (r->opts->callgraph == RECORD_CG_DWARF)
		snprintf(mode, sizeof(mode), "stacks: dwarf, %u bytes copied", r->opts->stack_size);
	else
		snprintf(mode, sizeof(mode), "stacks: %s",
			 r->opts->callgraph == RECORD_CG_FP ? "fp" : "none");
	/* the samples as report counts them, the switch-outs (--off-cpu) apart; the bytes
	 * over every sample record */
	snprintf(sw, sizeof(sw), "; %llu switch-outs beside them", (unsigned long long)r->switch_outs);
	fprintf(stderr, "dlprof: %llu samples, %s%llu lost%s, wrote %s (%.*f MB, %s, %.0f bytes "
		"per sample%s%s)\n",
		(unsigned long long)(r->samples - r->switch_outs), color ? "\033[1;31m" : "",
		(unsigned long long)r->lost, color ? "\033[m" : "", path,
		bytes < 100000 ? 3 : 2, bytes / 1e6, mode,
		r->samples ? (double)bytes / r->samples : 0.0, r->switch_outs ? sw : "",
		incomplete ? ", incomplete: only the chunks written before the error" : "");
	if (r->keep.files || r->keep.had || r->keep.failed) {
		fprintf(stderr, "dlprof: files of other roots (containers, chroots) the samples hit: "
			"%llu kept in the build-id cache (%.1f MB, %.2f s)", (unsigned long long)
			r->keep.files, r->keep.bytes / 1e6, r->keep.ns / 1e9);
		if (r->keep.had)
			fprintf(stderr, ", %llu there already", (unsigned long long)r->keep.had);
		if (r->keep.failed)
			fprintf(stderr, ", %llu could not be (%s first): report names their samples "
				"only while they are where they were", (unsigned long long)
				r->keep.failed, r->keep.first_failed ? r->keep.first_failed : "?");
		fputc('\n', stderr);
	}
	if (pyreader_active(r->py.reader)) {
		struct pyreader_stats ps;

		pyreader_get_stats(r->py.reader, &ps);
		uint64_t late = ps.samples - ps.own - ps.kernel;	/* read from outside */

		fprintf(stderr, "dlprof: python: %llu samples read (%.1f%% checked against the "
			"sample, %.1f%% moved on, %.1f%% unreadable)", (unsigned long long)ps.samples,
			ps.samples ? 100.0 * ps.trusted / ps.samples : 0.0,
			ps.samples ? 100.0 * ps.moved / ps.samples : 0.0,
			ps.samples ? 100.0 * ps.failed / ps.samples : 0.0);
		if (ps.kernel)
			fprintf(stderr, "; %llu read in the kernel at the sample",
				(unsigned long long)ps.kernel);
		if (ps.own)
			fprintf(stderr, "; %llu allocations' read by their own thread as they were "
				"made", (unsigned long long)ps.own);
		if (ps.gone)
			fprintf(stderr, "; %llu frames whose code object was freed before it was "
				"read", (unsigned long long)ps.gone);
		if (r->py.pb && r->py.pb_unmatched)
			fprintf(stderr, "; %llu whose kernel read never came", (unsigned long long)
				r->py.pb_unmatched);
		if (r->py.pb && pybpf_dropped(r->py.pb))
			fprintf(stderr, "; %llu kernel reads dropped (its buffer was full)",
				(unsigned long long)pybpf_dropped(r->py.pb));
		if (late)
			fprintf(stderr, "; %llu read from outside, %.2f ms after the sample on average",
				(unsigned long long)late, ps.delay_sum_ns / 1e6 / late);
		if (!r->py.pb && r->py.pb_why)
			fprintf(stderr, " (in the kernel: %s)", r->py.pb_why);
		if (r->py.pb && pybpf_codes_off(r->py.pb) && ps.kernel)
			fprintf(stderr, "; code objects read from outside (%s)",
				pybpf_codes_off(r->py.pb));
		fputc('\n', stderr);
	}
	if (r->ru_st.kstack)
		say_kstack(r);
	else if (native_mode(r->opts) && r->ru_st.samples && kstack_asked())
		fprintf(stderr, "dlprof: native stacks: unwound from the copies, not in the kernel "
			"(DLPROF_KSTACK: %s)\n", !r->py.pb ? (r->py.pb_why ? r->py.pb_why :
			"no BPF program") : "the kernel would not run the walk (bpf_loop, 5.17)");
	opcalls_say(r);
	if (r->py.pb && r->py.stats) {
		uint64_t runs, ns;

		if (!pybpf_stats(r->py.pb, &runs, &ns) && runs)
			fprintf(stderr, "dlprof: BPF program: %llu runs, %.2f us a run in the kernel\n",
				(unsigned long long)runs, ns / 1e3 / runs);
	}
	if (r->opts->memory) {
		unsigned long mean = r->opts->mem_sample ? r->opts->mem_sample : MEM_DEFAULT_SAMPLE;

		if (mean == 1)
			fprintf(stderr, "dlprof: memory: %llu allocations and %llu frees (every one)",
				(unsigned long long)r->mem.allocs, (unsigned long long)r->mem.frees);
		else
			fprintf(stderr, "dlprof: memory: %llu allocations sampled (one per %lu bytes "
				"on average), %llu of them freed", (unsigned long long)r->mem.allocs,
				mean, (unsigned long long)r->mem.frees);
		if (r->mem.waits)
			fprintf(stderr, "; threads waited for dlprof to catch up %llu times",
				(unsigned long long)r->mem.waits);
		fputc('\n', stderr);
	}
	if (r->ru_st.samples && r->ru_st.unwound < r->ru_st.samples)
		fprintf(stderr, "dlprof: stacks: %llu kept as copies for report to unwind (%llu "
			"with no frame found, %llu while the unwinder was behind)\n",
			(unsigned long long)(r->ru_st.samples - r->ru_st.unwound),
			(unsigned long long)r->ru_st.incomplete, (unsigned long long)r->ru_st.behind);
}

/* The one-line status on a terminal: elapsed, samples, MB written, lost. */
static void show_progress(struct recorder *r, int last)
{
	uint64_t s = (now_ns() - r->start_ns) / 1000000000ull;

	if (last) {
		fputs("\r\033[K", stderr);
		return;
	}
	fprintf(stderr, "\rdlprof: recording %llu:%02llu  %llu samples  %.1f MB  %llu lost\033[K",
		(unsigned long long)(s / 60), (unsigned long long)(s % 60),
		(unsigned long long)(r->samples - r->switch_outs), recwriter_bytes(r->w) / 1e6,
		(unsigned long long)r->lost);
}

/*
 * A signal for the command: a terminal's ^C reaches the workload too (same process
 * group); a signal sent to dlprof alone by a process is passed on.  One after 2 s
 * since the first (first_ns) ends a workload that does not listen.
 */
static void pass_signal(struct workload *wl, const struct signalfd_siginfo *si,
			uint64_t first_ns, int *killed)
{
	if (si->ssi_code == SI_USER || si->ssi_code == SI_QUEUE || si->ssi_code == SI_TKILL)
		kill(wl->pid, (int)si->ssi_signo);
	if (now_ns() - first_ns > 2000000000ull && !*killed) {
		info("the workload still runs 2 s after the first signal: killing it");
		kill(wl->pid, SIGKILL);
		*killed = 1;
	}
}

/* A limit ended the recording (finished and closed): the command runs on; wait for it,
 * passing signals on as before.  Returns its status. */
static int wait_unrecorded(struct workload *wl, int sfd)
{
	int status = 2, killed = 0;
	uint64_t first_sig_ns = 0;

	info("waiting for the command (pid %d) to end; Ctrl-C ends it", (int)wl->pid);
	for (;;) {
		struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { wl->pidfd, POLLIN, 0 } };
		struct signalfd_siginfo si;

		if (workload_reap(wl, 0, &status) != 0)
			return status;
		if (poll(pfd, 2, 100) < 0 && errno != EINTR)
			return workload_reap(wl, 1, &status) > 0 ? status : 2;
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGCHLD)
				continue;
			if (!first_sig_ns)
				first_sig_ns = now_ns();
			pass_signal(wl, &si, first_sig_ns, &killed);
		}
	}
}

/* One run of record_run(): the workload, the signals, what the loop watches, and how
 * the run ended. */
struct run {
	const struct record_opts *o;
	struct event_warm warm;		/* the scheduler's perf hooks, on while it starts */
	struct workload wl;
	int have_cmd, attach;
	struct sigaction orig_act[WORKLOAD_NR_SIGNALS];
	sigset_t orig_mask;
	int sfd;			/* the signals, as a signalfd; -1: not taken */
	struct pollfd *pfd;		/* the rings, sfd, the workload, the -p targets, live */
	int npfd, live_at, bells_at, rings_at;
	int *target_fd, targets_left;	/* -p: a pidfd per target */
	struct kallsyms ksyms;		/* loaded by a thread while the workload runs */
	pthread_t ksyms_thread;
	int ksyms_started;
	char *old;			/* where the previous recording went */
	uint64_t run_cpu0, end_ns;
	/* how it ended */
	int status;			/* the command's exit status */
	int interrupted, killed, reaped;
	uint64_t first_sig_ns, quit_ns;
	const char *limit;		/* the limit that ended the recording */
};

/* What the options ask that this machine or the ring cannot do */
static int check_opts(struct recorder *r, const struct record_opts *o, const struct run *x)
{
	int ret;

	if (!x->have_cmd && !x->attach && !o->system_wide)
		return error("no command to record"), DLP_USAGE;
	if (x->attach && !o->ct_follow) {
		ret = attach_parse_pids(o->pids, &r->att.targets);
		if (ret < 0)
			return ret == -1 ? DLP_USAGE : DLP_FAILED;
		r->att.nr = ret;
	}
	if (!o->period && o->freq > events_max_sample_rate()) {
		error("-F %lu is above kernel.perf_event_max_sample_rate (%lu): lower -F, or raise "
		      "the limit with 'sysctl -w kernel.perf_event_max_sample_rate=%lu'",
		      o->freq, events_max_sample_rate(), o->freq);
		return DLP_FAILED;
	}
	if (o->callgraph == RECORD_CG_DWARF &&
	    events_default_pages(o) * (size_t)sysconf(_SC_PAGESIZE) < (size_t)o->stack_size + 1024) {
		size_t psz = (size_t)sysconf(_SC_PAGESIZE), need = 1;

		while (need * psz < 2 * ((size_t)o->stack_size + 1024))
			need *= 2;
		error("-m %zu: a ring of %zu KiB cannot hold one sample with %u bytes of stack; "
		      "use -m %zu or more", events_default_pages(o), events_default_pages(o) * psz / 1024,
		      o->stack_size, need);
		return DLP_USAGE;
	}
	return DLP_OK;
}

/* record_host for a live reader (top): the processes' roots and perf maps */
static const char *host_root_at(void *ctx, uint32_t pid, uint64_t time)
{
	return proc_roots_at(&((struct recorder *)ctx)->roots, pid, time);
}

static int host_perf_map_open(void *ctx, uint32_t pid, long since, struct stat *st,
			      const char **why)
{
	char shown[160];
	uint32_t ns;

	return capture_perf_map_open(ctx, pid, since, st, why, shown, sizeof(shown), &ns);
}

/* The recording file, and what writes into it as the samples come: the unwinder, the
 * Python reader.  Like perf, the previous recording is kept as FILE.old (a regular file
 * only: never move a directory or a device aside). */
static int open_writer(struct recorder *r, struct run *x)
{
	const struct record_opts *o = x->o;

	if (o->output) {
		struct stat st;

		if (!stat(o->output, &st) && S_ISDIR(st.st_mode))
			return error("'%s' is a directory", o->output);
		if (!lstat(o->output, &st) && S_ISREG(st.st_mode)) {
			x->old = xasprintf("%s.old", o->output);
			if (rename(o->output, x->old) < 0) {
				warning("cannot rename '%s' to '%s': %s", o->output, x->old,
					strerror(errno));
				free(x->old);
				x->old = NULL;
			}
		}
	}
	r->w = o->output ? recwriter_open(o->output) : recwriter_open_discard();
	if (!r->w)
		return -1;
	if (o->live && o->live->started) {
		r->host = (struct record_host){ r, host_root_at, host_perf_map_open };
		o->live->started(o->live->ctx, &r->host);
	}
	if (o->live)
		recwriter_set_tap(r->w, o->live->tap, o->live->ctx);
	recwriter_split_samples(r->w);
	/* deflate in idle time, not on the workload's cores; at most BG_CAP queued */
	recwriter_set_background(r->w, BG_CAP);
	/* dwarf stacks: unwound as they are drained, the copies dropped */
	if ((r->ev[0].attr.sample_type & PERF_SAMPLE_STACK_USER) && !o->no_record_unwind)
		r->ru = recunw_new(r->w, o->keep_stacks, &r->roots);
	if (r->ru && r->py.pb)
		recunw_set_native(r->ru, r->py.pb, o->no_buildid_cache);
	/* without the copies (or fp stacks) a sample is ~100 bytes before compression:
	 * deflate harder, it costs little (level 3: docs/record.md) */
	if ((r->ru && !o->keep_stacks) || !(r->ev[0].attr.sample_type & PERF_SAMPLE_STACK_USER))
		recwriter_set_level(r->w, 3);
	if (!o->no_python) {
		r->py.reader = pyreader_new(drain_py_emit, r);
		if (r->py.pb && !pybpf_codes_off(r->py.pb))
			pyreader_codes_in_kernel(r->py.reader);
	}
	return 0;
}

/* Signals: taken through a signalfd; the child gets the original setup back */
static int take_signals(struct run *x)
{
	struct sigaction act;
	sigset_t block;

	sigemptyset(&block);
	for (int i = 0; i < WORKLOAD_NR_SIGNALS; i++)
		if (workload_signals[i] != SIGPIPE)
			sigaddset(&block, workload_signals[i]);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &x->orig_mask);
	memset(&act, 0, sizeof(act));
	for (int i = 0; i < WORKLOAD_NR_SIGNALS; i++) {
		act.sa_handler = workload_signals[i] == SIGPIPE ? SIG_IGN : SIG_DFL;
		sigaction(workload_signals[i], &act, &x->orig_act[i]);
	}
	x->sfd = signalfd(-1, &block, SFD_CLOEXEC | SFD_NONBLOCK);
	if (x->sfd < 0)
		return error("cannot create a signalfd: %s", strerror(errno));
	return 0;
}

static void give_signals_back(struct run *x)
{
	if (x->sfd < 0)
		return;
	close(x->sfd);
	for (int i = 0; i < WORKLOAD_NR_SIGNALS; i++)
		sigaction(workload_signals[i], &x->orig_act[i], NULL);
	sigprocmask(SIG_SETMASK, &x->orig_mask, NULL);
}

/*
 * docker run followed late (its daemon's driver makes the container's cgroup as the
 * container starts: container_follow()): the command has gone; the container's id comes
 * in the run's cidfile as it is created, its cgroup as runc makes it, runc's init
 * waiting there for the start.  Looked for each millisecond (the whole hierarchy every
 * 50 ms) while the command runs and no signal came.  0: r->cg_dir and the processes in
 * it now in r->att; -1: none came (r->cg_dir an empty cgroup of our own, said).
 */
static int late_container(struct recorder *r, struct run *x)
{
	const struct record_opts *o = x->o;
	struct strbuf pids = STRBUF_INIT;
	uint64_t last_full = 0;
	int id_seen = 0, found = 0;

	for (;;) {
		struct pollfd p = { x->sfd, POLLIN, 0 };
		siginfo_t si;
		uint64_t now = now_ns();
		int full = id_seen && now - last_full > 50000000ull;

		if (full)
			last_full = now;
		strbuf_reset(&r->cg_dir_own);
		if (!container_late_cgroup(o->ct_cidfile, o->ct_parent, full, &r->cg_dir_own,
					   &id_seen)) {
			found = 1;
			break;
		}
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)x->wl.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid)
			break;	/* the command ended first */
		if (poll(&p, 1, 1) > 0)
			break;	/* a signal: the loop takes it */
	}
	if (!found) {
		strbuf_reset(&r->cg_dir_own);
		if (container_empty_cgroup(&r->cg_dir_own) < 0)
			return error("%s: no container came, and no cgroup can be made to wait "
				     "on", container_runtime(o->argv[0])), -1;
		r->cg_dir = r->cg_dir_own.buf;
		r->cg_dir_made = 1;
		return 0;
	}
	r->cg_dir = r->cg_dir_own.buf;
	if (container_cgroup_pids(r->cg_dir, &pids)) {
		for (char *s = pids.buf, *e; *s; s = *e ? e + 1 : e) {
			long pid = strtol(s, &e, 10);

			if (pid > 0 && !kill((pid_t)pid, 0)) {
				r->att.targets = xrealloc(r->att.targets,
							  ((size_t)r->att.nr + 1) * sizeof(pid_t));
				r->att.targets[r->att.nr++] = (pid_t)pid;
			}
		}
	}
	strbuf_release(&pids);
	return 0;
}

/* ... found after its program started (runc's own processes, "runc:[2:INIT]" waiting
 * for the start, are not the program): the CPU time it had used, not recorded, said */
static void late_said(struct recorder *r)
{
	long tck = sysconf(_SC_CLK_TCK);
	unsigned long long ticks = 0;
	int late = 0;

	for (int t = 0; t < r->att.nr; t++) {
		char path[64];
		struct strbuf comm = STRBUF_INIT;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)r->att.targets[t]);
		if (strbuf_read_file(&comm, path, 64) >= 0 && comm.len && strncmp(comm.buf, "runc", 4)) {
			late = 1;
			ticks += attach_cpu_ticks(r->att.targets[t]);
		}
		strbuf_release(&comm);
	}
	if (late && tck > 0)	/* (counted in clock ticks: none is under one) */
		rec_warn(r, "the container's program had started before its cgroup was found "
			    "(its daemon makes it as the container starts): %s%.0f ms of its CPU "
			    "time then are not recorded", ticks ? "" : "less than ",
			    (double)(ticks ? ticks : 1) * 1e3 / tck);
}

/* The command forked and held, the counters opened on it (or on the -p targets), then
 * the command let go.  -1: nothing to record (x->status 127 when the command could not
 * be run). */
static int start(struct recorder *r, struct run *x)
{
	const struct record_opts *o = x->o;
	const char **argv;

	if ((!x->attach || o->ct_follow) && x->have_cmd)
		env_setup(r);
	/* with -p, a command is only the timer: it runs without counters */
	/* a container it starts gets the same (podman/docker run: -e and -v added) */
	argv = x->attach && !o->ct_follow ? o->argv : env_container_argv(r, o->argv);
	if (x->have_cmd && workload_prepare_stdio(&x->wl, argv, &x->orig_mask, x->orig_act,
						  o->live ? o->live->stdio : NULL) < 0)
		return -1;
	if (x->have_cmd && !x->attach)
		r->cmd_pid = (uint32_t)x->wl.pid;
	/* A workload that keeps every core busy (64 threads on 2 cores, OpenMP on all of
	 * them) must not starve this thread, the rings' only reader: where we may (root,
	 * CAP_SYS_NICE, RLIMIT_NICE) it runs at nice -10, after the command was forked (it
	 * keeps its own; nice is per thread on Linux); the unwinding thread raises itself
	 * (recunwind.c), the compressing one stays idle-class.  Not allowed: the default
	 * weight, as perf runs (docs/record.md). */
	(void)setpriority(PRIO_PROCESS, 0, RECORD_NICE);
	if (o->ct_follow == 2) {
		/* the command first: its container is followed once it is made */
		if (workload_start(&x->wl, argv[0]) < 0) {
			workload_reap(&x->wl, 1, &x->status);
			x->status = 127;
			return -1;
		}
		if (late_container(r, x) < 0) {
			workload_abort(&x->wl);
			return -1;
		}
		clock_pair(&r->clock_start.mono, &r->clock_start.real, &r->clock_start.err);
		r->start_ns = r->clock_start.mono;
		if (attach_open(r) < 0) {
			workload_abort(&x->wl);
			return -1;
		}
		if (!r->cg_dir_made)
			late_said(r);
		return 0;
	}
	if (x->attach || o->system_wide) {
		clock_pair(&r->clock_start.mono, &r->clock_start.real, &r->clock_start.err);
		r->start_ns = r->clock_start.mono;
		if ((x->attach ? attach_open(r) : system_open(r)) < 0) {
			if (x->have_cmd)
				workload_abort(&x->wl);
			return -1;
		}
	} else {
		if (o->cgroup_why)	/* a container the command starts, not followed */
			rec_warn(r, "%s", o->cgroup_why);
		if (events_open(r, x->wl.pid) < 0 || events_write_attrs(r) < 0) {
			workload_abort(&x->wl);
			return -1;
		}
		clock_pair(&r->clock_start.mono, &r->clock_start.real, &r->clock_start.err);
		r->start_ns = r->clock_start.mono;
		r->start_wall = time(NULL) - 1;
	}
	if (x->have_cmd && workload_start(&x->wl, argv[0]) < 0) {
		workload_reap(&x->wl, 1, &x->status);
		x->status = 127;	/* as a shell says it */
		return -1;
	}
	return 0;
}

/* What the loop polls: every cpu's ring, the signals, the command, each -p target (not
 * our children: a pidfd says when they end), the live reader's descriptor */
static void watch(struct recorder *r, struct run *x)
{
	const struct record_opts *o = x->o;
	int at = r->nr_cpus, rings[2];

	x->npfd = r->nr_cpus + 2 + r->att.nr;
	x->live_at = x->npfd;
	if (o->live && o->live->fd >= 0)
		x->npfd++;
	x->bells_at = x->npfd;
	if (r->py.bells)
		x->npfd += r->nr_cpus;
	x->rings_at = x->npfd;
	x->npfd += pybpf_poll_fds(r->py.pb, rings);
	x->pfd = xcalloc((size_t)x->npfd, sizeof(*x->pfd));
	for (int c = 0; c < r->nr_cpus; c++)
		x->pfd[c] = (struct pollfd){ r->fds[c], POLLIN, 0 };
	x->pfd[at] = (struct pollfd){ x->sfd, POLLIN, 0 };
	x->pfd[at + 1] = (struct pollfd){ x->wl.pidfd, POLLIN, 0 };
	x->target_fd = xcalloc((size_t)r->att.nr + 1, sizeof(int));
	for (int t = 0; t < r->att.nr; t++) {
		x->target_fd[t] = (int)syscall(SYS_pidfd_open, r->att.targets[t], 0);
		x->pfd[at + 2 + t] = (struct pollfd){ x->target_fd[t], POLLIN, 0 };
		x->targets_left++;
	}
	if (x->live_at < x->bells_at)
		x->pfd[x->live_at] = (struct pollfd){ o->live->fd, POLLIN, 0 };
	for (int c = 0; r->py.bells && c < r->nr_cpus; c++)
		x->pfd[x->bells_at + c] = (struct pollfd){ r->py.bell_fds[c], POLLIN, 0 };
	for (int k = x->rings_at; k < x->npfd; k++)	/* (drained each turn, as they are) */
		x->pfd[k] = (struct pollfd){ rings[k - x->rings_at], POLLIN, 0 };
}

/* A Python process: its stacks are read as soon as the sample is in; when the kernel
 * reads them (pybpf.h), only their code objects are, while new ones come (where the
 * kernel does not read those too), and until the first Python process is seen and a new
 * one's threads are listed for the kernel (until then they are read from outside) */
static int poll_soon(struct recorder *r)
{
	if (r->py.pb && pyreader_active(r->py.reader) != r->py.seen) {
		r->py.seen = pyreader_active(r->py.reader);
		r->py.fast_until = now_ns() + PB_FAST_NS;
	}
	/* the kernel walk: as a command starts, and while its walks wait for mappings */
	if (r->ru && kstack_instead(recunw_kstack(r->ru)) &&
	    (now_ns() - r->start_ns < KS_START_NS || kstack_behind(recunw_kstack(r->ru))))
		return 1;
	if (!r->py.pb)
		return pyreader_active(r->py.reader);
	return now_ns() < r->py.pb_hot_until || (r->py.wakeup && !r->py.seen) ||
	       (r->py.fast_until && now_ns() < r->py.fast_until) || pykernel_awaiting(r);
}

/* The -p targets that ended; 1 when the last one did and no command times the run */
static int targets_ended(struct recorder *r, struct run *x)
{
	int done = 0;

	for (int t = 0; t < r->att.nr; t++) {
		struct pollfd *p = &x->pfd[r->nr_cpus + 2 + t];

		if (r->att.targets[t] <= 0)
			continue;
		if ((x->target_fd[t] >= 0 && (p->revents & POLLIN)) ||
		    (x->target_fd[t] < 0 && kill(r->att.targets[t], 0) < 0 && errno == ESRCH)) {
			p->fd = -1;
			r->att.targets[t] = -r->att.targets[t];	/* ended */
			if (!--x->targets_left && !x->have_cmd)
				done = 1;
		}
	}
	return done;
}

/* The signals that came: SIGCHLD is news of the command (*check_exit); another ends a
 * -p recording, or is passed on to the command.  1: the recording is done. */
static int take_signal(struct run *x, int *check_exit)
{
	struct signalfd_siginfo si;
	int done = 0;

	/* (only when poll said so: with a Python command the loop turns for every sample,
	 * and a read that fails is a system call for nothing) */
	while (read(x->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD) {
			*check_exit = 1;
			continue;
		}
		if (!x->interrupted)
			x->first_sig_ns = now_ns();
		x->interrupted = 1;
		if (!x->have_cmd) {
			done = 1;	/* -p: the end of the recording, not of the process */
			continue;
		}
		pass_signal(&x->wl, &si, x->first_sig_ns, &x->killed);
	}
	return done;
}

/* The live reader (top) is done: -p stops here, a command is asked to end, and killed
 * 2 s later.  1: the recording is done. */
static int live_quit(struct run *x)
{
	const struct record_opts *o = x->o;
	int done = 0;

	if (o->live && o->live->poll(o->live->ctx, x->live_at < x->bells_at &&
				     (x->pfd[x->live_at].revents & (POLLIN | POLLHUP))) &&
	    !x->quit_ns) {
		x->quit_ns = now_ns();
		x->interrupted = 1;
		if (!x->have_cmd)
			done = 1;
		else
			kill(x->wl.pid, SIGTERM);
	}
	if (x->quit_ns && x->have_cmd && !x->killed && now_ns() - x->quit_ns > 2000000000ull) {
		kill(x->wl.pid, SIGKILL);
		x->killed = 1;
	}
	return done;
}

/* Drain the rings until the command ends, the -p targets end, a signal or the live
 * reader says so, or a limit is reached. */
static void loop(struct recorder *r, struct run *x)
{
	const struct record_opts *o = x->o;
	int done = 0, progress = !o->quiet && !o->live && isatty(STDERR_FILENO);
	uint64_t last_flush = now_ns(), last_progress = 0;

	while (!done) {
		int check_exit = x->have_cmd && x->wl.pidfd < 0;

		if (poll(x->pfd, (nfds_t)x->npfd, poll_soon(r) ? PY_POLL_MS : POLL_MS) < 0 &&
		    errno != EINTR) {
			error("poll failed: %s", strerror(errno));
			break;
		}
		for (int c = 0; c < r->nr_cpus; c++)
			if (x->pfd[c].revents & (POLLHUP | POLLERR))
				x->pfd[c].fd = -1;	/* keep draining it, stop polling it */
		for (int c = x->bells_at; c < x->npfd; c++)
			if (x->pfd[c].revents & (POLLHUP | POLLERR))
				x->pfd[c].fd = -1;
		pykernel_bells_ring(r);
		drain_all(r, 0);
		if (x->pfd[r->nr_cpus + 1].revents & POLLIN)
			check_exit = 1;
		done |= targets_ended(r, x);
		if (x->pfd[r->nr_cpus].revents & POLLIN)
			done |= take_signal(x, &check_exit);
		done |= live_quit(x);
		if (x->have_cmd && check_exit && workload_reap(&x->wl, 0, &x->status) != 0)
			done = x->reaped = 1;
		if (!done && o->duration > 0 &&
		    now_ns() - r->start_ns >= (uint64_t)(o->duration * 1e9))
			x->limit = "--duration";
		if (!done && o->max_size && recwriter_bytes(r->w) >= o->max_size)
			x->limit = "--max-size";
		if (x->limit)
			done = 1;
		if (progress && (now_ns() - last_progress >= 1000000000ull || done)) {
			show_progress(r, done);
			last_progress = now_ns();
		}
		if (now_ns() - last_flush >= FLUSH_NS) {
			mem_frees_put(r);
			if (r->ru)
				recunw_flush(r->ru);
			else if (recwriter_flush(r->w) < 0)
				r->write_failed = 1;
			last_flush = now_ns();
		}
	}
	clock_pair(&r->clock_end.mono, &r->clock_end.real, &r->clock_end.err);
	x->end_ns = r->clock_end.mono;
	if (!x->have_cmd)
		x->status = 0;	/* -p: the recording went as asked */
}

/* The run is over: why, said; the last samples, Python stacks and frees in */
static void end_of_run(struct recorder *r, struct run *x)
{
	const struct record_opts *o = x->o;
	int sig = x->wl.term_sig;

	if (x->limit) {
		char lim[64];

		if (!strcmp(x->limit, "--duration"))
			snprintf(lim, sizeof(lim), "%s %g s", x->limit, o->duration);
		else
			snprintf(lim, sizeof(lim), "%s %.1f MB", x->limit, o->max_size / 1e6);
		if (x->have_cmd && !x->reaped)
			rec_warn(r, "recording stopped at %s: the command ran on unrecorded", lim);
		else
			rec_warn(r, "recording stopped at %s", lim);
	}
	/* a crash is news; the death by the signal we passed on is not */
	if (sig && !(x->interrupted && (sig == SIGINT || sig == SIGTERM || sig == SIGHUP ||
					sig == SIGQUIT || sig == SIGKILL)))
		info("workload killed by signal %d (%s)", sig, strsignal(sig));
	drain_all(r, 1);
	events_close(r);
	opcalls_finish(r);	/* (the workload's counts, whole once it is gone) */
	drain_proc_later(r, 1);
	mem_ring_drain(r, 1);
	if (r->py.pb)
		pykernel_match(r, 1);
	if (r->py.reader)
		pyreader_flush(r->py.reader);
	if (r->mem.shared && x->reaped) {
		/* (the command ended: a recording cut short by a limit has events made after) */
		uint64_t made = __atomic_load_n(&r->mem.shared->produced, __ATOMIC_ACQUIRE);

		if (made > r->mem.alloc_events)
			rec_warn(r, "--memory: %llu of %llu sampled allocations never arrived from "
				    "the kernel (its uprobe missed them: it does, at times, for the first "
				    "calls of a thread of a process just forked); their frees show as "
				    "frees of addresses no sample had", (unsigned long long)
				    (made - r->mem.alloc_events), (unsigned long long)made);
	}
	if (r->mem.ring_lost)
		rec_warn(r, "--memory: %llu frees lost (their process ended while writing them)",
			    (unsigned long long)r->mem.ring_lost);
	rec_put_done(r);
	/* the samples out first: what follows is side-band, and STATS ends the file */
	if (!r->write_failed && recwriter_flush(r->w) < 0)
		r->write_failed = 1;
	r->run_cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - x->run_cpu0;
	if (x->ksyms_started) {
		/* a fixed cost, read beside the workload: not the samples' */
		uint64_t k = __atomic_load_n(&x->ksyms.cpu_ns, __ATOMIC_ACQUIRE);

		if (!k)	/* still at it */
			k = thread_cpu_ns(x->ksyms_thread);
		r->run_cpu_ns = r->run_cpu_ns > k ? r->run_cpu_ns - k : 0;
	}
}

/* What report needs later and cannot find then, the statistics last; the file closed.
 * -1 when it could not all be written. */
static int finish_file(struct recorder *r, struct run *x)
{
	const struct record_opts *o = x->o;
	int unrecorded = x->limit && x->have_cmd && !x->reaped;
	struct dlp_stats st;

	capture_build_ids(r);
	capture_sym_names(r);
	capture_vdso(r);
	if (x->ksyms_started) {
		pthread_join(x->ksyms_thread, NULL);
		x->ksyms_started = 0;
		capture_ksyms(r, &x->ksyms);
	}
	capture_jit(r);
	capture_itt(r);
	meta_check_missing(r);
	mem_check(r);
	meta_write(r);
	memset(&st, 0, sizeof(st));
	st.samples = r->samples;
	st.lost = r->lost;
	st.lost_records = r->lost_records;
	st.start_ns = r->start_ns;
	st.end_ns = x->end_ns;
	st.exit_status = unrecorded ? -1 : x->status;
	st.flags = (x->interrupted ? DLP_STATS_INTERRUPTED : 0) | (x->limit ? DLP_STATS_LIMIT : 0);
	recwriter_add(r->w, DLP_REC_STATS, &st, sizeof(st));
	if (!r->write_failed && recwriter_flush(r->w) < 0)
		r->write_failed = 1;
	recwriter_sync(r->w);	/* the summary gives the size on disk */
	if (!r->write_failed && recwriter_flush(r->w) < 0)
		r->write_failed = 1;	/* the compressor thread failed to write */
	if ((!o->quiet || r->write_failed) && o->output)
		print_summary(r, o->output, r->write_failed);
	/* a write error was reported when it happened (disk full): not again */
	if (recwriter_close(r->w) < 0)
		r->write_failed = 1;
	r->w = NULL;
	if (unrecorded)
		x->status = wait_unrecorded(&x->wl, x->sfd);
	return r->write_failed ? -1 : 0;
}

/* Nothing was recorded: no stub file, and the previous one back in place */
static void discard_file(struct recorder *r, struct run *x)
{
	const char *out = x->o->output;

	recwriter_close(r->w);
	r->w = NULL;
	if (out)
		unlink(out);
	if (x->old && out && rename(x->old, out) < 0)
		warning("cannot rename '%s' back to '%s': %s", x->old, out, strerror(errno));
}

static void run_release(struct recorder *r, struct run *x)
{
	if (x->ksyms_started)
		pthread_join(x->ksyms_thread, NULL);
	capture_kallsyms_free(&x->ksyms);
	free(x->old);
	workload_release(&x->wl);
	give_signals_back(x);
	free(x->pfd);
	if (x->target_fd)
		for (int t = 0; t < r->att.nr; t++)
			if (x->target_fd[t] >= 0)
				close(x->target_fd[t]);
	free(x->target_fd);
}

/* Everything the recorder holds, given back (temporary directories removed) */
static void recorder_release(struct recorder *r)
{
	events_close(r);
	mem_probes_remove(r);
	if (r->jit.dir) {
		remove_tree(r->jit.dir);
		free(r->jit.dir);
		if (r->jit.dir_lock >= 0)
			close(r->jit.dir_lock);
	}
	if (r->itt.dir) {
		remove_tree(r->itt.dir);
		free(r->itt.dir);
		if (r->itt.dir_lock >= 0)
			close(r->itt.dir_lock);
	}
	for (int e = 0; e < r->nr_ev; e++)
		free(r->ev[e].ids);
	u64map_release(&r->kaddrs);
	u64map_release(&r->pids);
	proc_roots_release(&r->roots);
	u64map_release(&r->mem.pids);
	if (r->mem.shared)
		munmap(r->mem.shared, MEM_SHARED_SIZE);
	memrec_enc_release(&r->mem.frees_enc);
	if (r->mem.shared_path)
		unlink(r->mem.shared_path);
	free(r->mem.shared_path);
	free(r->mem.procs);
	free(r->py.pub);
	pykernel_bells_close(r);
	pybpf_free(r->py.pb);
	u64map_release(&r->py.pb_tids);
	u64map_release(&r->tcb_at);
	free(r->py.pb_wait);
	free(r->proc_later);
	free(r->py.await);
	for (size_t i = 0; i < r->py.nr_pb_chains; i++)
		free(r->py.pb_chains[i].chain);
	free(r->py.pb_chains);
	free(r->py.pb_procs);
	free(r->mem.lib);
	path_list_clear(&r->need_buildid);
	for (size_t i = 0; i < r->jit.nr_dumps; i++)
		free(r->jit.dumps[i].path);
	free(r->jit.dumps);
	free(r->keep.first_failed);
	for (size_t i = 0; i < r->keep.nr_names; i++)
		free(r->keep.names[i].name);
	free(r->keep.names);
	path_list_clear(&r->given.env);
	path_list_clear(&r->given.preload);
	path_list_clear(&r->given.ro);
	path_list_clear(&r->given.rw);
	path_list_clear(&r->given.owned);
	free(r->given.argv);
	free(r->scratch);
	free(r->kw_buf);
	strbuf_release(&r->kwq);
	free(r->relabel);
	u64map_release(&r->own_ids);
	metrics_release(r);
	opcalls_release(r);
	free(r->cpus);
	free(r->att.targets);
	u64map_release(&r->att.tids_open);
	strbuf_release(&r->att.cmdline);
	if (r->cg_dir_made)
		(void)rmdir(r->cg_dir_own.buf);
	strbuf_release(&r->cg_dir_own);
	strbuf_release(&r->warn.lines);
	free(r->itt.dnnl_path);
	for (size_t i = 0; i < r->itt.nr_foreign; i++)
		free(r->itt.foreign[i].dir);
	free(r->itt.foreign);
	free(r->jit.xr);
	free(r->jit.anon_ips);
	free(r->jit.pending);
	jitsyms_free(r->jit.syms);
	pyreader_free(r->py.reader);
}


int record_run(const struct record_opts *o, int *exit_status)
{
	struct recorder rec, *r = &rec;
	struct run x;
	int ret, result = DLP_FAILED;

	*exit_status = -1;
	memset(r, 0, sizeof(*r));
	memset(&x, 0, sizeof(x));
	x.o = o;
	x.wl.pid = -1;
	x.wl.go_fd = x.wl.err_fd = x.wl.pidfd = -1;
	x.sfd = -1;
	x.warm.fd = -1;
	x.status = -1;
	x.have_cmd = o->argv && o->argv[0];
	x.attach = o->pids != NULL || o->ct_follow;
	r->opts = o;
	r->cg_dir = o->cgroup_dir;
	memrec_enc_init(&r->mem.frees_enc);
	ret = check_opts(r, o, &x);
	if (ret) {
		free(r->att.targets);
		return ret;
	}
	r->py.wakeup = !o->no_python && events_python_target(o);
	event_warm_start(&x.warm);	/* beside the BPF program's load */
	u64map_init(&r->py.pb_tids);
	u64map_init(&r->tcb_at);
	proc_roots_init(&r->roots);
	/* whatever the command: a Python process it starts (under a shell, a launcher,
	 * torchrun, srun, mpirun; a forked or spawned worker) is read in the kernel too;
	 * where no Python process runs, the program finds no thread listed at a sample */
	if (!o->no_python || native_mode(o) != PYBPF_NATIVE_OFF) {
		struct pyframe_layout lays[8];

		/* --no-python: the program walks native stacks, no thread is listed */
		r->py.pb = pybpf_new(lays, o->no_python ? 0 :
				     pyreader_frame_layouts(lays, ARRAY_SIZE(lays)),
				     native_mode(o), events_one_plain(o), &r->py.pb_why);
		/* the program's cost, counted by the kernel (said at the end) */
		if (r->py.pb && (getenv("DLPROF_BPF_STATS") ||
				 (kstack_asked() && pybpf_native(r->py.pb))))
			r->py.stats = !pybpf_stats_on(r->py.pb);
	}
	ret = events_setup(r);
	if (!ret && o->memory) {
		int dropped = 0;	/* user space only: events_setup said so already */

		ret = mem_probes_add(r, &dropped);
	}
	if (!ret)
		ret = opcalls_setup(r);
	if (ret) {
		event_warm_end(&x.warm);
		free(r->att.targets);
		return ret;
	}
	r->nr_cpus = events_online_cpus(&r->cpus);
	if (r->nr_cpus <= 0)
		return event_warm_end(&x.warm), error("cannot list the online cpus"), DLP_FAILED;
	r->scratch = xmalloc(65536);
	r->jit.syms = jitsyms_new();
	jitsyms_set_quiet(r->jit.syms, 1);	/* report warns about the records it reads */

	if (open_writer(r, &x) < 0)
		goto out;
	if (r->warn.fallback[0] && !o->quiet)	/* said once the recording can go ahead */
		info("%s", r->warn.fallback);
	if (take_signals(&x) < 0)
		goto out;
	ret = start(r, &x);
	event_warm_end(&x.warm);	/* its events are open (or will not be) */
	if (ret < 0) {
		if (x.status == 127)
			result = DLP_OK;	/* the command's status says it */
		goto out;
	}
	/* the kernel's symbols the samples hit, kept in the file (capture_ksyms): not
	 * without one (top without -o), whose reader reads /proc/kallsyms itself */
	if (!r->ev[0].attr.exclude_kernel && o->output)
		x.ksyms_started = !pthread_create(&x.ksyms_thread, NULL, capture_kallsyms_load, &x.ksyms);
	x.run_cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	watch(r, &x);
	loop(r, &x);
	end_of_run(r, &x);
	/* failed: the workload ran to its end; the recording did not */
	result = finish_file(r, &x) < 0 ? DLP_FAILED : DLP_OK;
out:
	event_warm_end(&x.warm);
	rec_put_done(r);
	if (r->w)
		discard_file(r, &x);
	run_release(r, &x);
	recorder_release(r);
	*exit_status = x.status;
	return result;
}

