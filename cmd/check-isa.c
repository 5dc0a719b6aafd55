/* check-isa.c - is the fast vector path available, chosen and used?
 *
 *   dlprof check-isa                 the platform (CPU, OS, AMX permission, cpuinfo) and
 *                                    what the DL libraries will choose
 *   dlprof check-isa FILE...         the instruction classes in ELF files' code
 *   dlprof check-isa -i dlprof.data  the ISA class of the code where samples landed
 */
#include <string.h>

#include "cmds.h"
#include "isa.h"
#include "parse-options.h"

static const char *const check_isa_usage[] = {
	"dlprof check-isa [--format table|json] [--no-python]",
	"dlprof check-isa [--functions [--top N]] FILE.so|EXECUTABLE...",
	"dlprof check-isa -i dlprof.data",
	"",
	"exit status: 0 AVX-512 usable (files: contain AVX-512 code; -i: hot code uses it),",
	"             1 not, 2 error, 64 usage",
	NULL
};


int cmd_check_isa(int argc, const char **argv)
{
	struct isa_check_opts o = { .top = 20 };
	const char *format = "table", *input = NULL;
	int no_python = 0, python_timeout = 0, no_cache = 0, refresh = 0;
	const struct option options[] = {
		OPT_STRING(0, "format", &format, "FMT", "output format: table or json"),
		OPT_STRING('i', "input", &input, "FILE", "classify the samples of a recording"),
		OPT_BOOL(0, "functions", &o.functions, "per function (files), per symbol (-i)"),
		OPT_INT(0, "top", &o.top, "N", "show the N functions with most vector instructions (0: all)"),
		OPT_BOOL(0, "no-python", &no_python, "do not run python3 to ask torch"),
		OPT_BOOL(0, "no-libs", &o.no_libs, "platform only: do not ask the libraries"),
		OPT_INT(0, "python-timeout", &python_timeout, "SEC", "time allowed for python3 -c 'import torch' (default 20)"),
		OPT_STRING(0, "python", &o.libs.python, "PATH", "python interpreter that has torch (default /usr/bin/python3)"),
		OPT_BOOL(0, "no-cache", &no_cache, "neither read nor write the per-build-id cache"),
		OPT_BOOL(0, "refresh", &refresh, "rescan files even when cached"),
		{ OPTION_STRING, 0, "cpuinfo", &o.cpuinfo, "FILE", "read flags from FILE instead of /proc/cpuinfo",
		  PARSE_OPT_HIDDEN, NULL },
		OPT_END()
	};
	int n, ret;

	n = parse_options(argc, argv, options, check_isa_usage, 0);
	if (n < 0)
		return PARSE_OPT_EXIT_CODE(n);
	if (out_format_parse(format, 1u << OUT_TEXT | 1u << OUT_JSON, &o.format) < 0)
		return EXIT_USAGE;
	if (o.top < 0 || python_timeout < 0) {
		error("--top and --python-timeout take a number >= 0");
		return EXIT_USAGE;
	}
	if (input && n) {
		error("give either -i FILE or files to scan, not both");
		return EXIT_USAGE;
	}
	o.libs.no_python = no_python;
	o.libs.python_timeout_ms = python_timeout * 1000;
	o.scan_flags = (no_cache ? ISA_SCAN_NO_CACHE : 0) | (refresh ? ISA_SCAN_REFRESH : 0);
	if (input)
		ret = isaprof_run(input, NULL, o.format, o.top, no_cache ? ISA_SCAN_NO_CACHE : 0);
	else if (n)
		ret = isa_check_files(n, argv, &o);
	else
		ret = isa_check_platform(&o);
	/* the verdict is the exit status (the man page's) */
	return ret < 0 ? exit_status(ret) : ret;
}
