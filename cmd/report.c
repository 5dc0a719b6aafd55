/* report.c - dlprof report: where the time went, as a top-style table, JSON or CSV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "calltree.h"
#include "cmds.h"
#include "output.h"
#include "parse-options.h"
#include "profile.h"
#include "util.h"

static const char *const report_usage[] = {
	"dlprof report [-i FILE] [--sort KEY] [--limit N] [--format table|json|csv] [--srcline] [--no-children]",
	NULL
};

struct report_ctx {
	struct calltree *tree;
	char *cmdline;
	char sampling[64];
	char callgraph[32];
};

static int rep_stack(void *ctx, struct machine *m, const struct dlp_sample *s,
		     const struct frame *frames, size_t nr, int complete)
{
	struct report_ctx *r = ctx;

	calltree_add(r->tree, frames, nr, machine_comm_at(m, s->pid, s->tid, s->time), s->tid, 1);
	return 0;
}

static int rep_meta(void *ctx, const char *key, const char *value)
{
	struct report_ctx *r = ctx;

	if (!strcmp(key, "cmdline")) {
		free(r->cmdline);
		r->cmdline = xstrdup(value);
	} else if (!strcmp(key, "freq")) {
		snprintf(r->sampling, sizeof(r->sampling), "%s Hz", value);
	} else if (!strcmp(key, "period")) {
		snprintf(r->sampling, sizeof(r->sampling), "every %s events", value);
	} else if (!strcmp(key, "callgraph")) {
		snprintf(r->callgraph, sizeof(r->callgraph), "%s", value);
	}
	return 0;
}

static int term_width(void)
{
	struct winsize ws;
	const char *c = getenv("COLUMNS");
	int w = 0;

	if (isatty(1) && !ioctl(1, TIOCGWINSZ, &ws) && ws.ws_col)
		w = ws.ws_col;
	else if (c && atoi(c) > 0)
		w = atoi(c);
	if (w <= 0)
		w = 80;
	if (w < 60)
		w = 60;
	if (w > 200)
		w = 200;
	return w;
}

int cmd_report(int argc, const char **argv)
{
	const char *input = "dlprof.data", *sort = "self", *format = "table";
	int limit = -1, srcline = 0, no_children = 0;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('s', "sort", &sort, "KEY", "self, total, sym, dso, comm or tid (default self)"),
		OPT_INT('n', "limit", &limit, "N", "show at most N rows (table default 40, 0: all)"),
		OPT_STRING(0, "format", &format, "FMT", "table, json or csv"),
		OPT_BOOL(0, "srcline", &srcline, "resolve source file:line through DWARF (slower)"),
		OPT_BOOL(0, "no-children", &no_children, "count only the sampled function, hide Total"),
		OPT_END(),
	};
	struct report_ctx rc;
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	struct profile_consumer cons;
	struct report_header h;
	struct output_opts oo;
	struct ct_row **rows;
	enum ct_key key = CT_KEY_SYM;
	enum ct_sort csort = CT_SORT_SELF;
	size_t nr;
	int ret, fmt;
	char sampling[128];

	argc = parse_options(argc, argv, options, report_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (argc > 0) {
		error("unexpected argument '%s'", argv[0]);
		return EXIT_USAGE;
	}
	if (!strcmp(sort, "self"))
		;
	else if (!strcmp(sort, "total"))
		csort = CT_SORT_TOTAL;
	else if (!strcmp(sort, "sym"))
		csort = CT_SORT_NAME;
	else if (!strcmp(sort, "dso"))
		key = CT_KEY_DSO;
	else if (!strcmp(sort, "comm"))
		key = CT_KEY_COMM;
	else if (!strcmp(sort, "tid"))
		key = CT_KEY_TID;
	else {
		error("unknown sort key '%s' (self, total, sym, dso, comm, tid)", sort);
		return EXIT_USAGE;
	}
	if (!strcmp(format, "table"))
		fmt = 0;
	else if (!strcmp(format, "json"))
		fmt = 1;
	else if (!strcmp(format, "csv"))
		fmt = 2;
	else {
		error("unknown format '%s' (table, json, csv)", format);
		return EXIT_USAGE;
	}
	if (limit < -1) {
		error("--limit must not be negative");
		return EXIT_USAGE;
	}
	if (access(input, R_OK)) {
		error("cannot read '%s': %m", input);
		return EXIT_FATAL;
	}

	memset(&rc, 0, sizeof(rc));
	rc.tree = calltree_new(key);
	memset(&po, 0, sizeof(po));
	po.srcline = srcline;
	po.no_children = no_children;
	memset(&cons, 0, sizeof(cons));
	cons.stack = rep_stack;
	cons.meta = rep_meta;
	cons.ctx = &rc;

	ret = profile_run(input, &po, &cons, &st, &info);
	if (ret < 0) {
		calltree_free(rc.tree);
		free(rc.cmdline);
		return EXIT_FATAL;
	}

	memset(&h, 0, sizeof(h));
	h.file = input;
	h.cmdline = rc.cmdline;
	h.event = st.event[0] ? st.event : "?";
	snprintf(sampling, sizeof(sampling), "%s%s%s%s", rc.sampling[0] ? rc.sampling : "",
		 rc.callgraph[0] ? (rc.sampling[0] ? ", stacks: " : "stacks: ") : "",
		 rc.callgraph, "");
	h.sampling = sampling[0] ? sampling : NULL;
	h.samples = st.samples;
	h.lost = st.lost;
	if (info.have_stats && info.stats.end_ns > info.stats.start_ns)
		h.duration_ns = info.stats.end_ns - info.stats.start_ns;
	else
		h.duration_ns = st.last_time - st.first_time;
	h.complete_stacks = st.complete_stacks;
	h.named = st.named;
	h.sample_is_time = st.sample_is_time;
	h.ns_per_sample = st.sample_period_ns;
	h.truncated = ret == 1;
	h.key = key == CT_KEY_SYM ? "symbol" : key == CT_KEY_DSO ? "dso" :
		key == CT_KEY_COMM ? "comm" : "tid";

	memset(&oo, 0, sizeof(oo));
	oo.width = term_width();
	oo.color = want_color(1);
	oo.no_children = no_children || key == CT_KEY_COMM || key == CT_KEY_TID;
	oo.limit = limit >= 0 ? (size_t)limit : (fmt == 0 ? 40 : 0);

	nr = calltree_rows(rc.tree, csort, &rows);
	if (fmt == 0)
		output_table(stdout, &h, rows, nr, &oo);
	else if (fmt == 1)
		output_json(stdout, &h, rows, nr, &oo, NULL, NULL);
	else
		output_csv(stdout, &h, rows, nr, &oo);
	fflush(stdout);
	calltree_free(rc.tree);
	free(rc.cmdline);
	return ret == 1 ? EXIT_PARTIAL : EXIT_OK;
}
