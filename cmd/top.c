/* top.c - dlprof top: options -> top_opts -> top_run(). */
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "parse-options.h"
#include "record.h"
#include "top.h"

static const char *const top_usage[] = {
	"dlprof top [-a | -p PID[,PID...] | -- COMMAND [ARGS...]] [--sort self|family|op|thread] [-d SECONDS] [-e EVENT] [-F HZ] [-o FILE]",
	"   (no command and no -p: every process, as -a and perf top)",
	NULL
};

int cmd_top(int argc, const char **argv)
{
	struct top_opts o;
	const char *sort = "self", *delay = "2", *event = NULL, *pids = NULL, *output = NULL;
	const char *families = NULL;
	int ret, status;
	unsigned long freq = RECORD_DEFAULT_FREQ, window = 10;
	long iterations = 0;
	int rows = 0, all = 0;
	char *end;
	const struct option options[] = {
		OPT_BOOL('a', "all-cpus", &all, "watch every process of the machine (the default without a command or -p)"),
		OPT_STRING('p', "pid", &pids, "PID[,PID...]", "watch running processes (all their threads) until q or they end"),
		OPT_STRING('s', "sort", &sort, "VIEW", "the view to start with: self (functions), family, op, thread"),
		OPT_STRING('d', "delay", &delay, "SECONDS", "seconds between refreshes (default 2)"),
		OPT_ULONG('w', "window", &window, "SECONDS", "the window column covers the last SECONDS (1-60, default 10)"),
		OPT_STRING('e', "event", &event, "EVENT", "the event to sample (default cycles, else cpu-clock)"),
		OPT_ULONG('F', "freq", &freq, "HZ", "samples per second of CPU time per thread (default 999)"),
		OPT_STRING('o', "output", &output, "FILE", "also keep a recording of what was shown (for report, fold, ...)"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_INT('n', "iterations", &iterations, "N", "quit after N refreshes"),
		OPT_INT(0, "rows", &rows, "N", "rows per table when not on a terminal (default 20)"),
		OPT_END()
	};
	int n = parse_options(argc, argv, options, top_usage, PARSE_OPT_STOP_AT_NON_OPTION);

	if (n < 0)
		return PARSE_OPT_EXIT_CODE(n);
	memset(&o, 0, sizeof(o));
	if (n && pids) {
		error("-p watches running processes: give it or a command, not both");
		return EXIT_USAGE;
	}
	if (all && (n || pids)) {
		error("-a watches every process: give it, -p or a command");
		return EXIT_USAGE;
	}
	if (!strcmp(sort, "self") || !strcmp(sort, "sym") || !strcmp(sort, "symbol"))
		o.view = TOP_SELF;
	else if (!strcmp(sort, "family"))
		o.view = TOP_FAMILY;
	else if (!strcmp(sort, "op"))
		o.view = TOP_OP;
	else if (!strcmp(sort, "thread") || !strcmp(sort, "tid"))
		o.view = TOP_THREAD;
	else {
		error("unknown view '%s' (self, family, op, thread)", sort);
		return EXIT_USAGE;
	}
	o.delay = strtod(delay, &end);
	if (end == delay || *end || !(o.delay >= 0.1 && o.delay <= 3600)) {
		error("bad delay '%s' (seconds between refreshes, 0.1 to 3600)", delay);
		return EXIT_USAGE;
	}
	if (!window || window > 60) {
		error("bad window %lu (1 to 60 seconds)", window);
		return EXIT_USAGE;
	}
	if (!freq || freq > 1000000) {
		error("bad sampling frequency %lu (-F takes 1..1000000)", freq);
		return EXIT_USAGE;
	}
	if (iterations < 0 || rows < 0) {
		error("-n and --rows take a positive number");
		return EXIT_USAGE;
	}
	if (output && !*output) {
		error("empty output file name");
		return EXIT_USAGE;
	}
	o.argv = n ? argv : NULL;
	o.pids = pids;
	o.system_wide = !n && !pids;
	o.event = event;
	o.freq = freq;
	o.output = output;
	o.families = families;
	o.window = (unsigned)window;
	o.iterations = iterations;
	o.rows = rows;
	ret = top_run(&o, &status);
	return ret < 0 ? exit_status(ret) : status;
}
