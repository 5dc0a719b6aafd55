/* dlprof.c - main: the command table and dispatch. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "paths.h"
#include "util.h"
#include "version.h"

struct cmd_struct {
	const char *name;
	int (*fn)(int argc, const char **argv);
	const char *summary;
};

static const struct cmd_struct commands[] = {
	{ "record", cmd_record, "run a command and record its profile into dlprof.data" },
	{ "report", cmd_report, "show where the time went: by symbol, DSO, family, operator, thread" },
	{ "fold", cmd_fold, "print folded stacks for flamegraph.pl" },
	{ "flamegraph", cmd_flamegraph, "write an interactive flame graph (SVG) coloured by operator family" },
	{ "diff", cmd_diff, "compare two recordings: where the time moved, by family, op or symbol" },
	{ "pprof", cmd_pprof, "write the profile for pprof / speedscope (profile.proto, gzipped)" },
	{ "speedscope", cmd_speedscope, "write the profile in speedscope's file format (one profile per thread)" },
	{ "timeline", cmd_timeline, "write the recording in time as a Chrome trace (Perfetto, chrome://tracing)" },
	{ "check-isa", cmd_check_isa, "what vector ISA this CPU, its libraries and a profile use" },
	{ "sweep", cmd_sweep, "run a workload with 1, one socket's and all cores (and more): which setting is fastest, and why" },
	{ "top", cmd_top, "a live table of where the time goes (functions, families, operators, threads), like perf top" },
	{ "families", cmd_families, "list the operator-family rules, or explain a symbol's family" },
};

static void main_usage(FILE *f)
{
	fprintf(f, "usage: dlprof [--version] [--help] <command> [<args>]\n\ncommands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "   %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'dlprof help <command>' or 'dlprof <command> -h' shows a command's options.\n"
		   "exit codes: 0 ok, 1 partial result (e.g. truncated recording), 2 error, 64 usage;\n"
		   "record exits with the workload's status (128+N when killed by signal N).\n");
}

static const struct cmd_struct *find_cmd(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, const char **argv)
{
	const struct cmd_struct *c;

	dlprof_set_argv0(argv[0]);
	if (argc < 2) {
		main_usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		main_usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("dlprof %s\n", DLPROF_VERSION);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--list-cmds")) {
		for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
			printf("%s\n", commands[i].name);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		const char *help_argv[] = { NULL, "-h", NULL };

		if (argc < 3) {
			main_usage(stdout);
			return EXIT_OK;
		}
		c = find_cmd(argv[2]);
		if (!c) {
			error("unknown command '%s' (see 'dlprof --help')", argv[2]);
			return EXIT_USAGE;
		}
		help_argv[0] = c->name;
		return c->fn(2, help_argv);
	}
	c = find_cmd(argv[1]);
	if (!c) {
		error("unknown command '%s' (see 'dlprof --help')", argv[1]);
		return EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
