/* diff.c - dlprof diff: where the time moved between two recordings. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "diff.h"
#include "filter.h"
#include "family.h"
#include "output.h"
#include "parse-options.h"
#include "util.h"

static const char *const diff_usage[] = {
	"dlprof diff [--sort family|op|sym|dso] [--limit N] [--format table|json|csv] [--families FILE] [--metric NAME] [--raw-irqs] BASE.data NEW.data",
	NULL
};

int cmd_diff(int argc, const char **argv)
{
	const char *sort = "family", *format = "table", *families = NULL, *event = NULL, *metric = NULL;
	int limit = -1, raw_irqs = 0;
	struct filter_args fa = { 0 };
	struct sample_filter filt;
	const struct option options[] = {
		OPT_STRING('s', "sort", &sort, "KEY", "compare by family, op, sym or dso (default family)"),
		OPT_INT('n', "limit", &limit, "N", "show at most N rows (table default 30, 0: all)"),
		OPT_STRING(0, "format", &format, "FMT", "table, json or csv"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "compare the samples of this event (default each file's first)"),
		OPT_STRING(0, "metric", &metric, "NAME", "compare the counts of a counter of record --metrics (page-faults, context-switches, ...) instead of samples"),
		OPT_BOOL(0, "raw-irqs", &raw_irqs, "keep samples taken where interrupts came back on as taken"),
		OPT_FILTERS(fa),
		OPT_END(),
	};
	enum diff_key key;
	enum out_format fmt;
	struct family_rules *rules;
	struct diff *d;
	int r0, r1;

	argc = parse_options(argc, argv, options, diff_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (argc != 2) {
		error("give two recordings: BASE.data NEW.data");
		return EXIT_USAGE;
	}
	if (!strcmp(sort, "family"))
		key = DIFF_FAMILY;
	else if (!strcmp(sort, "op"))
		key = DIFF_OP;
	else if (!strcmp(sort, "sym") || !strcmp(sort, "symbol"))
		key = DIFF_SYMBOL;
	else if (!strcmp(sort, "dso"))
		key = DIFF_DSO;
	else {
		error("unknown sort key '%s' (family, op, sym, dso)", sort);
		return EXIT_USAGE;
	}
	if (out_format_parse(format, OUT_ALL, &fmt) < 0)
		return EXIT_USAGE;
	if (limit < -1) {
		error("--limit must not be negative");
		return EXIT_USAGE;
	}
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	for (int i = 0; i < 2; i++)
		if (access(argv[i], R_OK)) {
			error("cannot read '%s': %m", argv[i]);
			filter_release(&filt);
			return EXIT_FATAL;
		}
	rules = family_rules_load(families);
	if (!rules) {
		filter_release(&filt);
		return EXIT_FATAL;
	}
	d = diff_new(key, rules, event);
	diff_set_raw_irqs(d, raw_irqs);
	diff_set_metric(d, metric);
	diff_set_filter(d, &filt);
	r0 = diff_load(d, 0, argv[0]);
	r1 = r0 < 0 ? -1 : diff_load(d, 1, argv[1]);
	if (r0 >= 0 && r1 >= 0)
		diff_print(d, stdout, fmt, limit >= 0 ? (size_t)limit : fmt == OUT_TEXT ? 30 : 0,
			   output_width());
	fflush(stdout);
	diff_free(d);
	family_rules_free(rules);
	filter_release(&filt);
	if (r0 < 0 || r1 < 0)
		return EXIT_FATAL;
	return r0 == 1 || r1 == 1 ? EXIT_PARTIAL : EXIT_OK;
}
