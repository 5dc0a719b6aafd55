/* record.c - dlprof record: options -> record_opts -> record_run(). */
#include "attach.h"
#include "cmds.h"
#include "parse-options.h"
#include "record.h"

#include <stdlib.h>
#include <string.h>

/* Beyond any kernel.perf_event_max_sample_rate worth having; record_run() checks the
 * frequency against the sysctl itself and says how to raise it. */
#define RECORD_MAX_FREQ 1000000

static const char *const record_usage[] = {
	"dlprof record [-o FILE] [-F HZ | -c PERIOD] [-e EVENT[,EVENT...]] [-g | --call-graph dwarf[=SIZE]|fp|none] [--] COMMAND [ARGS...]",
	"dlprof record [OPTIONS] -p PID[,PID...] [-- COMMAND [ARGS...]]   (attach; until Ctrl-C, exit or COMMAND ends)",
	"dlprof record [OPTIONS] --container NAME|ID | --cgroup PATH [-- COMMAND]   (attach to its processes)",
	"dlprof record [OPTIONS] -a [-- COMMAND [ARGS...]]   (every process; until Ctrl-C or COMMAND ends)",
	NULL
};

static struct record_opts opts = RECORD_OPTS_INIT;

/* --metrics-period N (every counter) or NAME=N,... (those named; the others their own
 * defaults); N > 0.  -1 on bad input (said). */
static int parse_met_period(const char *arg)
{
	const char *p = arg;
	char *end;

	if (*arg >= '0' && *arg <= '9') {
		opts.metrics_period = strtoul(arg, &end, 10);
		if (*end || !opts.metrics_period)
			return error("--metrics-period: '%s' is not a number of events above 0, nor "
				     "NAME=N,...", arg), -1;
		return 0;
	}
	while (*p) {
		size_t len = strcspn(p, ","), name = strcspn(p, "=,");
		unsigned long n;

		if (name == len || !name)
			return error("--metrics-period: '%.*s' is not NAME=N", (int)len, p), -1;
		n = strtoul(p + name + 1, &end, 10);
		if (end != p + len || end == p + name + 1 || !n)
			return error("--metrics-period: '%.*s': N is a number of events above 0",
				     (int)len, p), -1;
		if (name == 16 && !strncmp(p, "context-switches", 16))
			return error("--metrics-period: context switches are the switch-out "
				     "event's samples, one each: no period"), -1;
		p += len + (p[len] == ',');
	}
	opts.metrics_periods = arg;
	return 0;
}
#define NOT_GIVEN ((unsigned long)-1)
static unsigned long freq_opt = NOT_GIVEN, period_opt = NOT_GIVEN, pages_opt;

static int parse_callgraph(const char *arg)
{
	if (!strcmp(arg, "none")) {
		opts.callgraph = RECORD_CG_NONE;
		return 0;
	}
	if (!strcmp(arg, "fp")) {
		opts.callgraph = RECORD_CG_FP;
		return 0;
	}
	if (!strncmp(arg, "dwarf", 5) && (!arg[5] || arg[5] == '=' || arg[5] == ',')) {
		opts.callgraph = RECORD_CG_DWARF;
		if (arg[5]) {
			char *end;
			unsigned long v = strtoul(arg + 6, &end, 0);

			if (end == arg + 6 || *end || !v || v > RECORD_MAX_STACK)
				return error("bad stack size in '--call-graph %s' (8..%d bytes)",
					     arg, RECORD_MAX_STACK);
			opts.stack_size = (unsigned int)((v + 7) & ~7ul);
		}
		return 0;
	}
	return error("unknown call-graph mode '%s' (dwarf[=SIZE], fp or none)", arg);
}

/* --mem-sample BYTES: a number with an optional K, M or G (powers of 1024) */
static int opt_mem_sample(const struct option *o, const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10), mul = 1;

	if (*end == 'K' || *end == 'k')
		mul = 1ul << 10;
	else if (*end == 'M' || *end == 'm')
		mul = 1ul << 20;
	else if (*end == 'G' || *end == 'g')
		mul = 1ul << 30;
	if (mul > 1)
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (end == arg || *end || !v || v > (1ul << 40) / mul || arg[0] == '-')
		return error("bad --mem-sample '%s' (bytes between samples on average, 1 for "
			     "every allocation; K, M, G suffixes)", arg);
	opts.mem_sample = v * mul;
	opts.memory = 1;
	return 0;
}

/* --duration SECONDS */
static int opt_duration(const struct option *o, const char *arg)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v > 0 && v <= 1e7))
		return error("bad --duration '%s' (seconds, more than 0)", arg);
	opts.duration = v;
	return 0;
}

/* --max-size SIZE: megabytes, or with a K, M, G suffix (powers of 1024) */
static int opt_max_size(const struct option *o, const char *arg)
{
	char *end;
	double v = strtod(arg, &end), mul = 1e6;

	if (*end == 'K' || *end == 'k')
		mul = 1024.0, end++;
	else if (*end == 'M' || *end == 'm')
		mul = 1024.0 * 1024, end++;
	else if (*end == 'G' || *end == 'g')
		mul = 1024.0 * 1024 * 1024, end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (end == arg || *end || !(v > 0) || v * mul > 1e15 || v * mul < 4096)
		return error("bad --max-size '%s' (megabytes, or with a K, M or G suffix; 4 KiB "
			     "or more)", arg);
	opts.max_size = (unsigned long long)(v * mul);
	return 0;
}

static int opt_g(const struct option *o, const char *arg)
{
	opts.callgraph = RECORD_CG_FP;
	return 0;
}

static int opt_callgraph(const struct option *o, const char *arg)
{
	return parse_callgraph(arg);
}

int cmd_record(int argc, const char **argv)
{
	int jit = 1, itt = 1, quiet = 0, python = 1, off_cpu = -1, keep_stacks = 0, unwind = 1;
	int bidcache = 1, ct_flags = 0;
	int ret, status;
	struct strbuf output = STRBUF_INIT, pidlist = STRBUF_INIT, cgdir = STRBUF_INIT;
	struct strbuf group = STRBUF_INIT, leader = STRBUF_INIT;
	struct container_follow follow = { 0 };
	struct strbuf follow_why = STRBUF_INIT;
	const char *met_mode = NULL, *met_period = NULL;
	const struct option options[] = {
		OPT_STRING('o', "output", &opts.output, "FILE", "write the recording to FILE (default dlprof.data; %h host, %r rank, %p pid)"),
		OPT_ULONG('F', "freq", &freq_opt, "HZ", "sample HZ times per second of CPU time (default 999)"),
		OPT_ULONG('c', "count", &period_opt, "PERIOD", "sample once every PERIOD events"),
		OPT_STRING('e', "event", &opts.events, "EVENT[,EVENT...]", "events to sample (default cycles, else cpu-clock); '{LEADER,EVENT...}': LEADER sampled, the others read with each sample (as --metrics)"),
		OPT_STRING(0, "metrics", &opts.metrics, "LIST", "counters read with each sample and given to its operator, line and thread (report --metrics): faults, sched, ipc, fp, cache, amx, or event names"),
		OPT_STRING(0, "metrics-mode", &met_mode, "MODE", "group: the counters read with each sample (Linux 6.12 and later); events: each sampled on its own, every --metrics-period events; auto (default): group where the kernel can"),
		OPT_STRING(0, "metrics-period", &met_period, "N|NAME=N,...", "sample each counter (or each one named) on its own every N events (--metrics-mode events; its default: 64 page faults, every major fault, switch and migration, about 2 million cycles or instructions)"),
		OPT_CALLBACK('g', NULL, NULL, NULL, "frame-pointer call chains (--call-graph fp: cheap, but stop in code built without frame pointers)", opt_g, PARSE_OPT_NOARG),
		OPT_CALLBACK(0, "call-graph", NULL, "MODE", "call chains: dwarf[=SIZE] (the default: copy SIZE bytes of user stack, whole stacks through libraries without frame pointers), fp, or none", opt_callgraph, 0),
		OPT_ULONG('m', "mmap-pages", &pages_opt, "PAGES", "ring buffer data pages per cpu (power of two)"),
		OPT_BOOL(0, "unwind", &unwind, "dwarf: unwind the stack copies while recording and keep only the stacks (--no-unwind: keep the copies, report unwinds them)"),
		OPT_BOOL(0, "keep-stacks", &keep_stacks, "dwarf: keep the stack copies next to the stacks unwound while recording (report --reunwind, --check-unwind)"),
		OPT_BOOL(0, "jit", &jit, "make oneDNN publish its JIT code (--no-jit: leave it alone)"),
		OPT_BOOL(0, "buildid-cache", &bidcache, "keep the files of containers and chroots the samples hit in the build-id cache, so that report names them after they are gone (--no-buildid-cache: do not)"),
		OPT_BOOL(0, "itt", &itt, "load the ITT collector for task labels (--no-itt: do not)"),
		OPT_BOOL(0, "off-cpu", &off_cpu, "also sample every context switch with its stack: where threads wait (report/fold --off-cpu); the default with dwarf stacks unwound while recording, no -e and no Python frames to read (--no-off-cpu: do not)"),
		OPT_BOOL(0, "op-calls", &opts.op_calls, "count each PyTorch operator's calls (a uprobe on each operator's entry in libtorch_cpu: about a microsecond a call; report's Calls column)"),
		OPT_BOOL(0, "memory", &opts.memory, "also sample the workload's heap: malloc & co and anonymous mmap, with whole stacks (report/fold/pprof --memory)"),
		OPT_CALLBACK(0, "mem-sample", NULL, "BYTES", "--memory: one allocation sampled per BYTES allocated on average (default 512K; 1: every allocation)", opt_mem_sample, 0),
		OPT_BOOL(0, "python", &python, "read the Python stacks of CPython 3.11-3.13 processes (--no-python: do not)"),
		OPT_CALLBACK(0, "duration", NULL, "SECONDS", "stop recording after SECONDS (the file finished, the reason said); a command runs on, unrecorded, and is waited for", opt_duration, 0),
		OPT_CALLBACK(0, "max-size", NULL, "MB", "stop recording when the file reaches MB megabytes (or a K, M, G suffix); what record adds at the end (symbols, JIT maps) comes on top", opt_max_size, 0),
		OPT_BOOL('q', "quiet", &quiet, "no software-clock note, no summary line, no status line"),
		OPT_STRING('p', "pid", &opts.pids, "PID[,PID...]", "attach to running processes (all their threads)"),
		OPT_STRING(0, "container", &opts.container, "NAME|ID", "attach to every process of a running container (podman, docker or nerdctl names it)"),
		OPT_STRING(0, "cgroup", &opts.cgroup, "PATH", "attach to every process of a cgroup (as /proc/PID/cgroup or /sys/fs/cgroup names it)"),
		OPT_BOOL(0, "container-flags", &ct_flags, "print the podman/docker run flags that give a container started apart what record gives a command (JIT names, oneDNN primitives), and exit"),
		OPT_BOOL('a', "all-cpus", &opts.system_wide, "every process of the machine (per-cpu events, as perf record -a): until Ctrl-C, --duration or the command's end"),
		OPT_END()
	};
	int n = parse_options(argc, argv, options, record_usage, PARSE_OPT_STOP_AT_NON_OPTION);

	if (n < 0)
		return PARSE_OPT_EXIT_CODE(n);
	if (!!opts.pids + !!opts.container + !!opts.cgroup > 1) {
		error("-p, --container and --cgroup choose the processes: give one");
		return EXIT_USAGE;
	}
	if (ct_flags)
		return exit_status(env_container_flags(stdout));
	if (opts.events && opts.events[0] == '{') {
		/* perf's group: its leader samples, the others are read with each sample */
		const char *close = strchr(opts.events, '}');
		const char *comma = close ? memchr(opts.events, ',', (size_t)(close - opts.events)) : NULL;

		if (!close || (close[1] && strcmp(close + 1, ":S")) || !comma || comma == opts.events + 1 ||
		    close == comma + 1) {
			error("-e '%s': a group is '{LEADER,EVENT...}' (optionally :S), and the whole -e",
			      opts.events);
			return EXIT_USAGE;
		}
		if (opts.metrics) {
			error("-e '{...}' and --metrics both name the counters read with each sample: give one");
			return EXIT_USAGE;
		}
		strbuf_add(&group, comma + 1, (size_t)(close - comma - 1));
		strbuf_add(&leader, opts.events + 1, (size_t)(comma - opts.events - 1));
		opts.events = leader.buf;
		opts.metrics = group.buf;
	}
	if (opts.metrics && !*opts.metrics) {
		error("--metrics: no counter given");
		return EXIT_USAGE;
	}
	if (met_mode && strcmp(met_mode, "auto")) {
		if (!strcmp(met_mode, "group"))
			opts.metrics_mode = RECORD_MET_GROUP;
		else if (!strcmp(met_mode, "events"))
			opts.metrics_mode = RECORD_MET_EVENTS;
		else {
			error("--metrics-mode: '%s' is not auto, group or events", met_mode);
			return EXIT_USAGE;
		}
	}
	if (met_period && parse_met_period(met_period) < 0)
		return EXIT_USAGE;
	if ((met_mode || met_period) && !opts.metrics) {
		error("--metrics-mode and --metrics-period say how --metrics counts: give --metrics too");
		return EXIT_USAGE;
	}
	if (met_period && opts.metrics_mode == RECORD_MET_GROUP) {
		error("--metrics-period samples each counter on its own: not with --metrics-mode group");
		return EXIT_USAGE;
	}
	if (met_period)
		opts.metrics_mode = RECORD_MET_EVENTS;
	if (opts.system_wide && (opts.pids || opts.container || opts.cgroup)) {
		error("-a records every process: give it, or -p, --container or --cgroup");
		return EXIT_USAGE;
	}
	if (opts.system_wide && opts.memory) {
		error("--memory samples the allocations of a command or -p processes, not of every process (-a)");
		return EXIT_USAGE;
	}
	if (opts.container || opts.cgroup) {
		long ct_pid;

		ret = container_pids(opts.container, opts.cgroup, &pidlist, &ct_pid);
		if (ret)
			return exit_status(ret);
		opts.pids = pidlist.buf;
		/* per-cpu events on its cgroup, where the counts are not per thread */
		if (opts.metrics || opts.memory)
			opts.cgroup_why = opts.metrics ? "--metrics counts per thread"
						       : "--memory probes each process";
		else if (!container_cgroup_dir(ct_pid, opts.cgroup, &cgdir, &opts.cgroup_why))
			opts.cgroup_dir = cgdir.buf;
	}
	if (!n && !opts.pids && !opts.system_wide) {
		error("no command given (usage: %s)", record_usage[0]);
		return EXIT_USAGE;
	}
	if (freq_opt != NOT_GIVEN && period_opt != NOT_GIVEN) {
		error("-F and -c cannot be used together");
		return EXIT_USAGE;
	}
	if (period_opt != NOT_GIVEN) {
		if (!period_opt || period_opt >> 62) {
			error("bad sample period %lu (-c takes 1 or more events per sample)", period_opt);
			return EXIT_USAGE;
		}
		opts.period = period_opt;
	}
	if (freq_opt != NOT_GIVEN) {
		if (!freq_opt || freq_opt > RECORD_MAX_FREQ) {
			error("bad sampling frequency %lu (-F takes 1..%d)", freq_opt, RECORD_MAX_FREQ);
			return EXIT_USAGE;
		}
		opts.freq = freq_opt;
	}
	if (pages_opt && (pages_opt & (pages_opt - 1))) {
		error("--mmap-pages %lu is not a power of two", pages_opt);
		return EXIT_USAGE;
	}
	if (!*opts.output) {
		error("empty output file name");
		return EXIT_USAGE;
	}
	/* one file per host, rank or process: ranks on a shared filesystem never write one */
	if (strchr(opts.output, '%')) {
		if (attach_output_name(opts.output, &output) < 0)
			return EXIT_USAGE;
		opts.output = output.buf;
	}
	opts.mmap_pages = pages_opt;
	opts.no_jit = !jit;
	opts.no_buildid_cache = !bidcache;
	opts.no_itt = !itt;
	opts.no_python = !python;
	/* by default where it is cheap: the default events, stacks unwound while recording
	 * (a few tens of bytes per switch instead of a stack copy); -e names every event.
	 * With --metrics: each switch-out reads the counters (events.c) */
	if (off_cpu < 0)
		off_cpu = ((!opts.events && opts.callgraph == RECORD_CG_DWARF && unwind) ||
			   opts.metrics) && !opts.system_wide ? 2 : 0;	/* -a: every switch of the machine */
	opts.off_cpu = off_cpu;
	opts.keep_stacks = keep_stacks;
	opts.no_record_unwind = !unwind;
	if (keep_stacks && !unwind) {
		error("--keep-stacks keeps the copies next to the unwound stacks: it needs --unwind");
		return EXIT_USAGE;
	}
	opts.quiet = quiet;
	opts.argv = argv;
	/* docker run: its container comes from the daemon, followed by its cgroup */
	if (n && !opts.pids && !opts.system_wide &&
	    !container_follow_opts(&opts, &follow, &follow_why, "recorded", "record") && !quiet) {
		if (opts.ct_follow == 2)
			info("%s starts its container through a daemon, which makes its cgroup as "
			     "it starts: recording what runs there once it is made",
			     container_runtime(argv[0]));
		else
			info("%s starts its container through a daemon: recording what runs in "
			     "cgroup %s (--cgroup-parent %s)", container_runtime(argv[0]), follow.dir,
			     follow.parent);
	}
	ret = record_run(&opts, &status);
	container_follow_done(&follow);
	strbuf_release(&follow_why);
	strbuf_release(&output);
	strbuf_release(&pidlist);
	strbuf_release(&cgdir);
	strbuf_release(&group);
	strbuf_release(&leader);
	return ret < 0 ? exit_status(ret) : status;
}
