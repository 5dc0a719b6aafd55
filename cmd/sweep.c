/* sweep.c - dlprof sweep: options -> sweep_opts -> sweep_run(). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "parse-options.h"
#include "sweep.h"

static const char *const sweep_usage[] = {
	"dlprof sweep [--threads LIST] [--wait LIST] [--repeat N] [--metric REGEX [--higher]] [-o DIR] [-F HZ] [--format table|json] -- COMMAND [ARGS...]",
	NULL
};

int cmd_sweep(int argc, const char **argv)
{
	struct sweep_opts o;
	const char *format = "table";
	unsigned long freq = 99;
	int repeat = 1, higher = 0, ret;
	char self[PATH_MAX];
	ssize_t n;
	const struct option options[] = {
		OPT_STRING(0, "threads", &o.threads, "LIST", "thread counts to add to 1, one socket's cores and all cores (\"1,2,4\")"),
		OPT_STRING(0, "wait", &o.wait, "LIST", "OpenMP wait policies to try: active, passive, default (OMP_WAIT_POLICY, GOMP_SPINCOUNT, KMP_BLOCKTIME)"),
		OPT_INT(0, "repeat", &repeat, "N", "runs per setting, interleaved (the table gives medians and the spread)"),
		OPT_STRING(0, "metric", &o.metric, "REGEX", "the workload's own figure: an extended regex whose first group is the number, e.g. 'median_step=([0-9.]+)ms'"),
		OPT_BOOL(0, "higher", &higher, "the --metric figure is better when higher (a throughput)"),
		OPT_STRING('o', "output", &o.dir, "DIR", "directory for the recordings and outputs (default dlprof-sweep)"),
		OPT_ULONG('F', "freq", &freq, "HZ", "record's sampling rate for each run (default 99)"),
		OPT_STRING(0, "format", &format, "FMT", "table or json"),
		OPT_END()
	};

	memset(&o, 0, sizeof(o));
	o.dir = "dlprof-sweep";
	argc = parse_options(argc, argv, options, sweep_usage, PARSE_OPT_STOP_AT_NON_OPTION);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (!argc) {
		error("no command given (usage: %s)", sweep_usage[0]);
		return EXIT_USAGE;
	}
	if (out_format_parse(format, 1u << OUT_TEXT | 1u << OUT_JSON, &o.format) < 0)
		return EXIT_USAGE;
	if (!freq || freq > 100000) {
		error("bad sampling frequency %lu", freq);
		return EXIT_USAGE;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		error("cannot find this dlprof (/proc/self/exe)");
		return EXIT_FATAL;
	}
	self[n] = '\0';
	o.argv = argv;
	o.repeat = repeat;
	o.metric_higher = higher;
	o.freq = freq;
	o.self = self;
	ret = sweep_run(&o);
	return ret == DLP_PARTIAL ? 130 : exit_status(ret);
}
