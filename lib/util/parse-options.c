/* parse-options.c - see parse-options.h. */
#include "parse-options.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int takes_arg(const struct option *o)
{
	switch (o->type) {
	case OPTION_INT:
	case OPTION_ULONG:
	case OPTION_STRING:
		return 1;
	case OPTION_CALLBACK:
		return !(o->flags & PARSE_OPT_NOARG);
	default:
		return 0;
	}
}

static void opt_name(const struct option *o, int use_long, char *buf, size_t n)
{
	if (use_long && o->long_name)
		snprintf(buf, n, "--%s", o->long_name);
	else
		snprintf(buf, n, "-%c", o->short_name);
}

static int set_value(const struct option *o, const char *arg, int unset, int use_long)
{
	char name[64];
	char *end;

	opt_name(o, use_long, name, sizeof(name));
	switch (o->type) {
	case OPTION_BOOL:
		*(int *)o->value = !unset;
		return 0;
	case OPTION_COUNT:
		*(int *)o->value = unset ? 0 : *(int *)o->value + 1;
		return 0;
	case OPTION_INT: {
		long v;

		errno = 0;
		v = strtol(arg, &end, 10);
		if (!*arg || *end || errno || v < INT_MIN || v > INT_MAX)
			return error("option '%s' expects a number, not '%s'", name, arg);
		*(int *)o->value = (int)v;
		return 0;
	}
	case OPTION_ULONG: {
		unsigned long v;

		errno = 0;
		if (*arg == '-')
			return error("option '%s' expects a positive number, not '%s'", name, arg);
		v = strtoul(arg, &end, 0);
		if (!*arg || *end || errno)
			return error("option '%s' expects a number, not '%s'", name, arg);
		*(unsigned long *)o->value = v;
		return 0;
	}
	case OPTION_STRING:
		*(const char **)o->value = arg;
		return 0;
	case OPTION_CALLBACK:
		return o->callback(o, unset ? NULL : arg) < 0 ? -1 : 0;
	default:
		BUG("option type %d", o->type);
	}
}

static const struct option *find_long(const struct option *opts, const char *name,
				      size_t len, int *unset)
{
	const struct option *o;

	*unset = 0;
	for (o = opts; o->type != OPTION_END; o++)
		if (o->long_name && strlen(o->long_name) == len &&
		    !strncmp(o->long_name, name, len))
			return o;
	if (len > 3 && !strncmp(name, "no-", 3)) {
		for (o = opts; o->type != OPTION_END; o++)
			if (o->type == OPTION_BOOL && o->long_name &&
			    strlen(o->long_name) == len - 3 &&
			    !strncmp(o->long_name, name + 3, len - 3)) {
				*unset = 1;
				return o;
			}
	}
	return NULL;
}

static const struct option *find_short(const struct option *opts, int c)
{
	const struct option *o;

	for (o = opts; o->type != OPTION_END; o++)
		if (o->short_name == c && o->type != OPTION_GROUP)
			return o;
	return NULL;
}

int parse_options(int argc, const char **argv, const struct option *opts,
		  const char *const *usage, int flags)
{
	int i, nout = 0;
	const char **out = argv;
	const char *cmd = argv[0];	/* out[] overwrites argv[] from index 0 */

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || !a[1]) {
			if (flags & PARSE_OPT_STOP_AT_NON_OPTION) {
				while (i < argc)
					out[nout++] = argv[i++];
				break;
			}
			out[nout++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			i++;
			while (i < argc)
				out[nout++] = argv[i++];
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage_with_options(usage, opts, 1);
			return PARSE_OPT_HELP;
		}
		if (!strcmp(a, "--list-opts")) {
			list_options(opts);
			return PARSE_OPT_HELP;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			const char *arg = eq ? eq + 1 : NULL;
			int unset;
			const struct option *o = find_long(opts, name, len, &unset);

			if (!o) {
				error("unknown option '--%.*s' (see 'dlprof %s -h')", (int)len, name, cmd);
				return PARSE_OPT_ERROR;
			}
			if (takes_arg(o) && !arg && !(o->flags & PARSE_OPT_OPTARG)) {
				if (i + 1 >= argc) {
					error("option '--%s' requires a value", o->long_name);
					return PARSE_OPT_ERROR;
				}
				arg = argv[++i];
			} else if (!takes_arg(o) && arg && !(o->flags & PARSE_OPT_OPTARG)) {
				error("option '--%s' takes no value", o->long_name);
				return PARSE_OPT_ERROR;
			}
			if (set_value(o, arg, unset, 1) < 0)
				return PARSE_OPT_ERROR;
			continue;
		}
		/* one or more short options, possibly with an attached argument */
		for (const char *p = a + 1; *p; p++) {
			const struct option *o = find_short(opts, *p);

			if (!o) {
				error("unknown option '-%c' (see 'dlprof %s -h')", *p, cmd);
				return PARSE_OPT_ERROR;
			}
			if (takes_arg(o) && !(o->flags & PARSE_OPT_OPTARG)) {
				const char *arg = p[1] ? p + 1 : NULL;

				if (!arg) {
					if (i + 1 >= argc) {
						error("option '-%c' requires a value", *p);
						return PARSE_OPT_ERROR;
					}
					arg = argv[++i];
				}
				if (set_value(o, arg, 0, 0) < 0)
					return PARSE_OPT_ERROR;
				break;
			}
			if (set_value(o, NULL, 0, 0) < 0)
				return PARSE_OPT_ERROR;
		}
	}
	out[nout] = NULL;
	if (nout && (flags & PARSE_OPT_NO_ARGS)) {
		error("unexpected argument '%s' (see 'dlprof %s -h')", out[0], cmd);
		return PARSE_OPT_ERROR;
	}
	return nout;
}

void usage_with_options(const char *const *usage, const struct option *opts, int to_stdout)
{
	FILE *f = to_stdout ? stdout : stderr;
	const struct option *o;

	fprintf(f, "usage: %s\n", usage[0]);
	for (const char *const *u = usage + 1; *u; u++)
		fprintf(f, "%s%s\n", **u ? "   or: " : "", *u);
	fputc('\n', f);
	for (o = opts; o->type != OPTION_END; o++) {
		char left[80];
		int n = 0;

		if (o->flags & PARSE_OPT_HIDDEN)
			continue;
		if (o->type == OPTION_GROUP) {
			fprintf(f, "\n%s\n", o->help);
			continue;
		}
		n += snprintf(left + n, sizeof(left) - n, "    ");
		if (o->short_name)
			n += snprintf(left + n, sizeof(left) - n, "-%c%s", o->short_name,
				      o->long_name ? ", " : "");
		if (o->long_name)
			n += snprintf(left + n, sizeof(left) - n, "--%s%s", o->long_name,
				      o->type == OPTION_BOOL ? "" : "");
		if (takes_arg(o) && n < (int)sizeof(left))
			n += snprintf(left + n, sizeof(left) - n,
				      (o->flags & PARSE_OPT_OPTARG) ? "[=%s]" : " %s",
				      o->argh ? o->argh : "ARG");
		if (n > 28)
			fprintf(f, "%s\n%30s%s\n", left, "", o->help ? o->help : "");
		else
			fprintf(f, "%-30s%s\n", left, o->help ? o->help : "");
	}
}

void list_options(const struct option *opts)
{
	const struct option *o;

	for (o = opts; o->type != OPTION_END; o++) {
		if (o->type == OPTION_GROUP || (o->flags & PARSE_OPT_HIDDEN))
			continue;
		if (o->long_name)
			printf("--%s\n", o->long_name);
		if (o->short_name)
			printf("-%c\n", o->short_name);
	}
}
