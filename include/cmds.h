/* cmds.h - subcommand entry points (cmd/<name>.c), listed in cmd/dlprof.c. */
#ifndef DLPROF_CMDS_H
#define DLPROF_CMDS_H

int cmd_record(int argc, const char **argv);
int cmd_report(int argc, const char **argv);
int cmd_fold(int argc, const char **argv);
int cmd_pprof(int argc, const char **argv);
int cmd_diff(int argc, const char **argv);
int cmd_check_isa(int argc, const char **argv);
int cmd_families(int argc, const char **argv);

/* Exit codes (documented in --help): */
#define EXIT_OK		0
#define EXIT_PARTIAL	1	/* result printed, but the input was incomplete (e.g. truncated recording) */
#define EXIT_FATAL	2
#define EXIT_USAGE	64

#endif
