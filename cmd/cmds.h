/* cmds.h - subcommand entry points (cmd/<name>.c), listed in cmd/dlprof.c. */
#ifndef DLPROF_CMDS_H
#define DLPROF_CMDS_H

#include "util.h"

int cmd_record(int argc, const char **argv);
int cmd_report(int argc, const char **argv);
int cmd_fold(int argc, const char **argv);
int cmd_flamegraph(int argc, const char **argv);
int cmd_pprof(int argc, const char **argv);
int cmd_timeline(int argc, const char **argv);
int cmd_speedscope(int argc, const char **argv);
int cmd_diff(int argc, const char **argv);
int cmd_check_isa(int argc, const char **argv);
int cmd_families(int argc, const char **argv);
int cmd_sweep(int argc, const char **argv);
int cmd_top(int argc, const char **argv);

/* The sample filters of the readers (filter.h), into a struct filter_args a (fold has
 * --family[=GLOB] and --op[=GLOB] of its own: the root frame, and the filter). */
#define OPT_FILTERS_NO_DL(a) \
	OPT_STRING(0, "pid", &(a).pid, "PID,...", "only the samples of these processes"), \
	OPT_STRING(0, "tid", &(a).tid, "TID,...", "only the samples of these threads"), \
	OPT_STRING(0, "comm", &(a).comm, "GLOB,...", "only threads whose name matches"), \
	OPT_STRING(0, "time", &(a).time, "START,END", "seconds from the first sample (or N%,M% of the run)"), \
	OPT_STRING(0, "sym", &(a).sym, "GLOB,...", "only samples with a matching function on the stack")
#define OPT_FILTERS(a) \
	OPT_FILTERS_NO_DL(a), \
	OPT_STRING(0, "family", &(a).family, "GLOB,...", "only samples of these operator families"), \
	OPT_STRING(0, "op", &(a).op, "GLOB,...", "only samples of these framework operators")

/* Exit codes (documented in --help): */
#define EXIT_OK		0
#define EXIT_PARTIAL	1	/* result printed, but the input was incomplete (e.g. truncated recording) */
#define EXIT_FATAL	2
#define EXIT_USAGE	64

/* The exit status of a library result (enum dlp_result, util.h) */
static inline int exit_status(int result)
{
	return result == DLP_USAGE ? EXIT_USAGE : result < 0 ? EXIT_FATAL :
	       result ? EXIT_PARTIAL : EXIT_OK;
}

#endif
