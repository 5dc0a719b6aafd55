/* parse-options.h - table-driven command-line option parsing (git style).
 *
 * A command declares a usage[] array and a struct option table ending in OPT_END(),
 * then calls parse_options() once.  The parser knows -h/--help (usage to stdout) and the
 * hidden --list-opts (one "--long" or "-s" word per line, used to generate completions),
 * so every command gets them for free.
 */
#ifndef DLPROF_PARSE_OPTIONS_H
#define DLPROF_PARSE_OPTIONS_H

enum parse_opt_type {
	OPTION_END,
	OPTION_GROUP,	/* a heading in the usage text */
	OPTION_BOOL,	/* int *: 1 when given, 0 with --no-<long> */
	OPTION_COUNT,	/* int *: incremented each time */
	OPTION_INT,	/* int *: decimal, range checked */
	OPTION_ULONG,	/* unsigned long *: decimal, hex with 0x */
	OPTION_STRING,	/* const char **: the argument itself (points into argv) */
	OPTION_CALLBACK,	/* cb(opt, arg): arg NULL for options without an argument */
};

/* flags */
#define PARSE_OPT_NOARG	  (1 << 0)	/* callback takes no argument */
#define PARSE_OPT_OPTARG  (1 << 1)	/* argument only with --opt=ARG */
#define PARSE_OPT_HIDDEN  (1 << 2)	/* not shown in usage */

struct option;
typedef int parse_opt_cb(const struct option *opt, const char *arg);

struct option {
	enum parse_opt_type type;
	int short_name;
	const char *long_name;
	void *value;
	const char *argh;	/* argument placeholder in usage, e.g. "FILE" */
	const char *help;
	int flags;
	parse_opt_cb *callback;
};

#define OPT_END()		    { OPTION_END, 0, NULL, NULL, NULL, NULL, 0, NULL }
#define OPT_GROUP(h)		    { OPTION_GROUP, 0, NULL, NULL, NULL, (h), 0, NULL }
#define OPT_BOOL(s, l, v, h)	    { OPTION_BOOL, (s), (l), (v), NULL, (h), 0, NULL }
#define OPT_COUNT(s, l, v, h)	    { OPTION_COUNT, (s), (l), (v), NULL, (h), 0, NULL }
#define OPT_INT(s, l, v, a, h)	    { OPTION_INT, (s), (l), (v), (a), (h), 0, NULL }
#define OPT_ULONG(s, l, v, a, h)    { OPTION_ULONG, (s), (l), (v), (a), (h), 0, NULL }
#define OPT_STRING(s, l, v, a, h)   { OPTION_STRING, (s), (l), (v), (a), (h), 0, NULL }
#define OPT_CALLBACK(s, l, v, a, h, cb, f) { OPTION_CALLBACK, (s), (l), (v), (a), (h), (f), (cb) }

/* parse_options() flags */
#define PARSE_OPT_STOP_AT_NON_OPTION (1 << 0)	/* stop at the first non-option (record COMMAND) */
#define PARSE_OPT_NO_ARGS	     (1 << 1)	/* options only: an argument is a usage error */

/* Return values below zero: */
#define PARSE_OPT_HELP	-2	/* usage printed to stdout: exit 0 */
#define PARSE_OPT_ERROR	-1	/* one-line message printed to stderr: exit 64 */

/*
 * Parse argv[1..argc-1] (argv[0] is the command name).  On success returns the number
 * of remaining arguments, which are moved to argv[0..n-1].  A callback returning a
 * negative value aborts parsing with PARSE_OPT_ERROR (it prints its own message).
 */
int parse_options(int argc, const char **argv, const struct option *opts,
		  const char *const *usage, int flags);

/* Print the usage text (to stdout when to_stdout, else stderr). */
void usage_with_options(const char *const *usage, const struct option *opts, int to_stdout);

/* Print one option word per line ("--long", or "-s" where there is no long name). */
void list_options(const struct option *opts);

/* In cmd/ code: turn a negative parse_options() result into the command's return value. */
#define PARSE_OPT_EXIT_CODE(r) ((r) == PARSE_OPT_HELP ? 0 : 64)

#endif
