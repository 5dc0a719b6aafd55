/* report.c - dlprof report: where the time went, as a top-style table, JSON or CSV. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "calltree.h"
#include "cmds.h"
#include "dlview.h"
#include "filter.h"
#include "family.h"
#include "isa.h"
#include "memprof.h"
#include "output.h"
#include "parse-options.h"
#include "profile.h"
#include "steps.h"
#include "rephash.h"
#include "util.h"

static const char *const report_usage[] = {
	"dlprof report [-i FILE] [--sort KEY] [--limit N] [--format table|json|csv] [--srcline] [--no-children] [--raw-irqs] [--off-cpu | --wall]",
	"dlprof report [-i FILE] --steps FUNC [--format table|json] [FILTERS]",
	"dlprof report [-i FILE] --sort family|op|thread|line|pid [--families FILE]",
	"dlprof report [-i FILE] --group family",
	"dlprof report [-i FILE] --isa [--limit N] [--format table|json]   (= check-isa -i)",
	"dlprof report [-i FILE] --memory [--sort self|op|line|family|thread] [--limit N] [--format table|json|csv]",
	NULL
};

/* The families a (symbol, DSO) row's samples fell into: the JSON family column is the
 * majority (kernel leaves, for instance, split by the stack above them). */
#define ROW_FAMS 4
struct row_families {
	const char *fam[ROW_FAMS];
	uint64_t count[ROW_FAMS];
};

struct report_ctx {
	struct calltree *tree;
	struct dlview *view;
	int off_cpu;
	struct u64map row_fams;
	char *cmdline;
	char sampling[64];
	char callgraph[32];
	char **warnings;	/* META warn.N: what the recording lacks */
	int perf_data;		/* META source=perf.data */
	size_t nr_warnings, alloc_warnings;
	/* --off-cpu / --wall --sort family: microseconds and samples per family */
	struct wait_fam {
		const char *family;
		uint64_t us, samples;
	} *wfam;
	size_t nr_wfam, alloc_wfam;
};

static uint64_t row_key(const char *sym, const char *dso)
{
	return hash_bytes(sym, strlen(sym)) ^ hash_u64(dso ? hash_bytes(dso, strlen(dso)) : 0);
}

static void count_row_family(struct report_ctx *r, const char *sym, const char *dso,
			     const char *fam)
{
	void **slot = u64map_slot(&r->row_fams, row_key(sym, dso));
	struct row_families *rf = *slot;
	size_t i;

	if (!rf)
		*slot = rf = xcalloc(1, sizeof(*rf));
	for (i = 0; i < ROW_FAMS; i++) {
		if (!rf->fam[i])
			rf->fam[i] = fam;
		if (rf->fam[i] == fam) {
			rf->count[i]++;
			return;
		}
	}
}

static int rep_stack(void *ctx, struct machine *m, const struct dlp_sample *s,
		     const struct frame *frames, size_t nr, int complete)
{
	struct report_ctx *r = ctx;
	const char *fam = NULL;
	int ret;

	/* off-CPU: a blocking stack weighs the microseconds its thread was off the CPU */
	calltree_add(r->tree, frames, nr, machine_comm_at(m, s->pid, s->tid, s->time), s->tid,
		     r->off_cpu ? (s->period + 500) / 1000 : 1);
	ret = dlview_add(r->view, m, s, frames, nr, &fam);
	if (nr && fam)
		count_row_family(r, frames[0].sym, frames[0].dso, fam);
	if (r->off_cpu && fam) {
		size_t i;

		for (i = 0; i < r->nr_wfam && r->wfam[i].family != fam; i++)
			;
		if (i == r->nr_wfam) {
			ALLOC_GROW(r->wfam, r->nr_wfam + 1, r->alloc_wfam);
			r->wfam[r->nr_wfam++] = (struct wait_fam){ fam, 0, 0 };
		}
		r->wfam[i].us += (s->period + 500) / 1000;
		r->wfam[i].samples++;
	}
	return ret;
}

static int cmp_wait_fam(const void *a, const void *b)
{
	const struct wait_fam *x = a, *y = b;

	if (x->us != y->us)
		return x->us > y->us ? -1 : 1;
	return strcmp(x->family, y->family);
}

/* --off-cpu / --wall --sort family: each family's microseconds (a switch-out weighs its
 * time off the CPU, a CPU sample its period); wait-* families are what threads waited on */
static void print_wait_families(struct report_ctx *r, FILE *out, int fmt, uint64_t total,
				size_t limit)
{
	qsort(r->wfam, r->nr_wfam, sizeof(*r->wfam), cmp_wait_fam);
	if (!total)
		total = 1;
	if (fmt == 1) {
		fputs("{\"families\":[", out);
		for (size_t i = 0; i < r->nr_wfam; i++) {
			fprintf(out, "%s{\"family\":", i ? "," : "");
			fput_json_str(out, r->wfam[i].family);
			fprintf(out, ",\"us\":%llu,\"pct\":%.4f,\"samples\":%llu}",
				(unsigned long long)r->wfam[i].us, 100.0 * r->wfam[i].us / total,
				(unsigned long long)r->wfam[i].samples);
		}
		fputs("]}\n", out);
		return;
	}
	if (fmt == 2) {
		fputs("family,us,pct,samples\n", out);
		for (size_t i = 0; i < r->nr_wfam; i++)
			fprintf(out, "\"%s\",%llu,%.4f,%llu\n", r->wfam[i].family,
				(unsigned long long)r->wfam[i].us, 100.0 * r->wfam[i].us / total,
				(unsigned long long)r->wfam[i].samples);
		return;
	}
	fprintf(out, "\n%8s %12s %8s  %s\n", "Share", "Time", "Samples", "Family");
	for (size_t i = 0; i < r->nr_wfam && (!limit || i < limit); i++) {
		char t[32];

		fmt_duration(t, sizeof(t), r->wfam[i].us * 1000);
		fprintf(out, "%7.2f%% %12s %8llu  %s\n", 100.0 * r->wfam[i].us / total, t,
			(unsigned long long)r->wfam[i].samples, r->wfam[i].family);
	}
}

static int rep_filtered(void *ctx, struct machine *m, const struct dlp_sample *s,
			const struct frame *frames, size_t nr, int complete)
{
	return dlview_filtered(((struct report_ctx *)ctx)->view, m, s, frames, nr, complete);
}

static int rep_switch(void *ctx, struct machine *m, uint32_t pid, uint32_t tid, uint32_t cpu,
		      uint64_t time, int out, int preempt)
{
	struct report_ctx *r = ctx;

	return dlview_context_switch(r->view, m, pid, tid, cpu, time, out, preempt);
}

static int rep_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct report_ctx *r = ctx;

	return dlview_other(r->view, type, data, len);
}

static const char *row_family(void *ctx, const struct ct_row *row)
{
	struct report_ctx *r = ctx;
	struct row_families *rf = u64map_get(&r->row_fams, row_key(row->name, row->dso));
	size_t i, best = 0;

	if (!rf)
		return NULL;
	for (i = 1; i < ROW_FAMS && rf->fam[i]; i++)
		if (rf->count[i] > rf->count[best])
			best = i;
	return rf->fam[best];
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
	} else if (!strcmp(key, "source") && !strcmp(value, "perf.data")) {
		r->perf_data = 1;
	} else if (!strncmp(key, "warn.", 5)) {
		/* what record said the recording lacks: repeated in the header */
		ALLOC_GROW(r->warnings, r->nr_warnings + 1, r->alloc_warnings);
		r->warnings[r->nr_warnings++] = xstrdup(value);
	}
	/* the findings judge the recorded machine (nr_cpus, cpu flags), not this one */
	return dlview_meta(r->view, key, value);
}

/* report --memory: the heap by allocating function, operator, Python line, family or
 * thread (memprof.h) */
static int memory_report(const char *input, const char *sort, int fmt, int limit,
			 struct family_rules *rules, struct sample_filter *filt, int srcline)
{
	static const char *const keys[] = { "self", "op", "line", "family", "thread", NULL };
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	struct memprof *mp;
	int k, ret;

	for (k = 0; keys[k] && strcmp(keys[k], sort); k++)
		;
	if (!keys[k]) {
		error("--memory: unknown sort key '%s' (self, op, line, family, thread)", sort);
		return EXIT_USAGE;
	}
	if (filt->nr_families || filt->nr_ops) {
		error("--memory: --family and --op filters pick CPU samples; use --sort family or op");
		return EXIT_USAGE;
	}
	memset(&po, 0, sizeof(po));
	po.srcline = srcline;
	mp = memprof_new(rules, NULL);
	ret = memprof_run(mp, input, &po, filt, &st, &info);
	if (ret >= 0)
		memprof_print(mp, (enum memprof_key)k, stdout, fmt,
			      limit >= 0 ? (size_t)limit : fmt == 0 ? 40 : 0);
	fflush(stdout);
	memprof_free(mp);
	return ret < 0 ? EXIT_FATAL : ret == 1 || info.bad_records ? EXIT_PARTIAL : EXIT_OK;
}

static void report_ctx_release(struct report_ctx *rc, struct family_rules *rules)
{
	for (size_t i = 0; i < rc->row_fams.cap; i++)
		if (rc->row_fams.used[i])
			free(rc->row_fams.vals[i]);
	u64map_release(&rc->row_fams);
	dlview_free(rc->view);
	family_rules_free(rules);
	calltree_free(rc->tree);
	free(rc->wfam);
	free(rc->cmdline);
	for (size_t i = 0; i < rc->nr_warnings; i++)
		free(rc->warnings[i]);
	free(rc->warnings);
}

int cmd_report(int argc, const char **argv)
{
	const char *input = "dlprof.data", *sort = "self", *format = "table";
	const char *group = NULL, *families = NULL, *event = NULL, *steps_func = NULL;
	struct filter_args fa = { 0 };
	struct sample_filter filt;
	int limit = -1, srcline = 0, no_children = 0, no_findings = 0, isa = 0, raw_irqs = 0;
	int off_cpu = 0, wall = 0, reunwind = 0, check_unwind = 0, memory = 0;
	const struct option options[] = {
		OPT_STRING('i', "input", &input, "FILE", "recording to read (default dlprof.data)"),
		OPT_STRING('s', "sort", &sort, "KEY",
			   "self, total, sym, dso, comm, tid, pid, family, op, thread or line (default self)"),
		OPT_STRING(0, "group", &group, "family", "top symbols under each operator family"),
		OPT_STRING(0, "families", &families, "FILE", "extra family rules, matched before the built-in ones"),
		OPT_STRING('e', "event", &event, "NAME", "count the samples of this event (default the first recorded)"),
		OPT_BOOL(0, "no-findings", &no_findings, "do not print findings under the table"),
		OPT_INT('n', "limit", &limit, "N", "show at most N rows (table default 40, 0: all)"),
		OPT_STRING(0, "format", &format, "FMT", "table, json or csv"),
		OPT_BOOL(0, "srcline", &srcline, "resolve source file:line through DWARF (slower)"),
		OPT_BOOL(0, "no-children", &no_children, "count only the sampled function, hide Total"),
		OPT_BOOL(0, "wall", &wall, "on- and off-CPU time together (record --off-cpu): a thread's total is its wall time"),
		OPT_BOOL(0, "off-cpu", &off_cpu, "where threads waited (record --off-cpu): stacks weighted by time off the CPU"),
		OPT_BOOL(0, "raw-irqs", &raw_irqs, "keep samples taken where interrupts came back on as taken"),
		OPT_BOOL(0, "memory", &memory, "the heap (record --memory): bytes allocated, freed, live at the peak and at exit, by --sort self|op|line|family|thread"),
		OPT_BOOL(0, "isa", &isa, "ISA class of the code the samples landed in (check-isa -i)"),
		OPT_STRING(0, "steps", &steps_func, "FUNC", "training steps: the invocations of FUNC (a Python function or native symbol), min/median/max, the slowest against the median by family"),
		OPT_BOOL(0, "reunwind", &reunwind, "unwind the kept stack copies (record --keep-stacks) instead of using the stacks unwound while recording"),
		OPT_BOOL(0, "check-unwind", &check_unwind, "unwind the kept stack copies (record --keep-stacks) and compare them with the stacks unwound while recording"),
		OPT_FILTERS(fa),
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
	int view = -1;	/* enum dlview_kind when the DL view replaces the symbol table */
	struct family_rules *rules;
	size_t nr;
	int ret, fmt;
	char sampling[128];

	argc = parse_options(argc, argv, options, report_usage, PARSE_OPT_NO_ARGS);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	if (memory)
		;	/* its own keys: memory_report() */
	else if (!strcmp(sort, "self"))
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
	else if (!strcmp(sort, "family"))
		view = DLVIEW_FAMILY;
	else if (!strcmp(sort, "op"))
		view = DLVIEW_OP;
	else if (!strcmp(sort, "thread"))
		view = DLVIEW_THREAD;
	else if (!strcmp(sort, "line"))
		view = DLVIEW_LINE;
	else if (!strcmp(sort, "pid"))
		view = DLVIEW_PROCESS;
	else {
		error("unknown sort key '%s' (self, total, sym, dso, comm, tid, pid, family, op, thread, line)", sort);
		return EXIT_USAGE;
	}
	if (group) {
		if (strcmp(group, "family")) {
			error("unknown group '%s' (family)", group);
			return EXIT_USAGE;
		}
		view = DLVIEW_GROUP_FAMILY;
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
	if (filter_init(&filt, &fa) < 0) {
		filter_release(&filt);
		return EXIT_USAGE;
	}
	if (off_cpu && wall) {
		filter_release(&filt);
		error("--off-cpu or --wall, not both");
		return EXIT_USAGE;
	}
	if ((off_cpu || wall) && ((view >= 0 && view != DLVIEW_FAMILY) || isa || event)) {
		filter_release(&filt);
		error("--off-cpu and --wall give the family, symbol, dso, comm and tid tables (the other DL views count samples, not waits)");
		return EXIT_USAGE;
	}
	if (isa) {
		/* the same view and exit status as check-isa -i */
		if (strcmp(sort, "self") || group || fmt == 2 || srcline || no_children ||
		    filter_active(&filt)) {
			filter_release(&filt);
			error("--isa takes only -i, --limit and --format table|json");
			return EXIT_USAGE;
		}
		filter_release(&filt);
		return isaprof_run(input, fmt == 1, limit >= 0 ? limit : 20, 0);
	}
	if (access(input, R_OK)) {
		error("cannot read '%s': %m", input);
		filter_release(&filt);
		return EXIT_FATAL;
	}

	rules = family_rules_load(families);
	if (!rules) {
		filter_release(&filt);
		return EXIT_FATAL;
	}
	if (memory) {
		if (group || steps_func || off_cpu || wall || isa || event || no_children ||
		    reunwind || check_unwind) {
			error("--memory takes -i, --sort, --limit, --format, --families, --srcline and the thread and time filters");
			ret = EXIT_USAGE;
		} else {
			ret = memory_report(input, sort, fmt, limit, rules, &filt, srcline);
		}
		family_rules_free(rules);
		filter_release(&filt);
		return ret;
	}
	if (steps_func) {
		if (fmt == 2 || strcmp(sort, "self") || group || off_cpu || wall) {
			error("--steps takes only -i, --limit, --format table|json, --families and filters");
			ret = -2;
		} else {
			ret = steps_report(input, steps_func, rules, &filt, fmt == 1, limit, stdout);
		}
		family_rules_free(rules);
		filter_release(&filt);
		return ret == -2 ? EXIT_USAGE : ret < 0 ? EXIT_FATAL : ret ? EXIT_PARTIAL : EXIT_OK;
	}
	memset(&rc, 0, sizeof(rc));
	rc.tree = calltree_new(key);
	rc.view = dlview_new(rules);
	u64map_init(&rc.row_fams);
	memset(&po, 0, sizeof(po));
	po.srcline = srcline;
	po.event = event;
	po.no_children = no_children;
	po.raw_irqs = raw_irqs;
	po.off_cpu = off_cpu;
	po.wall = wall;
	po.reunwind = reunwind;
	po.check_unwind = check_unwind;
	rc.off_cpu = off_cpu || wall;
	memset(&cons, 0, sizeof(cons));
	cons.stack = rep_stack;
	cons.meta = rep_meta;
	cons.context_switch = rep_switch;
	cons.other = rep_other;
	if (view == DLVIEW_OP || view == DLVIEW_LINE)
		cons.filtered = rep_filtered;	/* workers' operators: every master sample */
	cons.ctx = &rc;

	ret = profile_run_filtered(input, &po, &filt, rules, &cons, &st, &info);
	if (ret < 0) {
		report_ctx_release(&rc, rules);
		filter_release(&filt);
		return EXIT_FATAL;
	}
	dlview_set_stats(rc.view, &st);

	memset(&h, 0, sizeof(h));
	h.file = input;
	h.cmdline = rc.cmdline;
	h.event = st.event[0] ? st.event : "?";
	h.other_events = st.other_events;
	snprintf(sampling, sizeof(sampling), "%s%s%s%s", rc.sampling[0] ? rc.sampling : "",
		 rc.callgraph[0] ? (rc.sampling[0] ? ", stacks: " : "stacks: ") : "",
		 rc.callgraph, "");
	if (off_cpu)
		snprintf(sampling, sizeof(sampling), "every switch-out%s%s",
			 rc.callgraph[0] ? ", stacks: " : "", rc.callgraph);
	else if (wall)
		snprintf(sampling, sizeof(sampling), "%s%s and every switch-out (wall time)",
			 rc.sampling, rc.sampling[0] ? "" : "samples");
	h.sampling = sampling[0] ? sampling : NULL;
	h.samples = st.samples;
	h.lost = st.lost;
	if (info.have_stats && info.stats.end_ns > info.stats.start_ns)
		h.duration_ns = info.stats.end_ns - info.stats.start_ns;
	else
		h.duration_ns = st.last_time - st.first_time;
	h.complete_stacks = st.complete_stacks;
	h.named = st.named;
	h.recovered_stacks = st.recovered_stacks;
	h.recorded_stacks = st.recorded_stacks;
	h.copied_stacks = st.copied_stacks;
	h.unwind_checked = st.unwind_checked;
	h.unwind_same = st.unwind_same;
	h.unwind_scan_differs = st.unwind_scan_differs;
	h.unwind_differs = st.unwind_differs;
	h.unwound = !strncmp(rc.callgraph, "dwarf", 5);
	h.no_stacks = !strcmp(rc.callgraph, "none");
	h.perf_data = rc.perf_data;
	h.sample_is_time = st.sample_is_time;
	h.no_time = st.sample_no_time;
	h.ns_per_sample = off_cpu || wall ? 1000 : st.sample_period_ns;
	h.off_cpu = off_cpu ? 1 : wall ? 2 : 0;
	if (off_cpu || wall)
		h.weight_total = calltree_samples(rc.tree);
	h.truncated = ret == 1;
	h.skipped = info.bad_records;
	h.irqs_off = st.irqs_off;
	h.py_records = st.py_records;
	h.py_merged = st.python;
	h.py_moved = st.py_moved;
	h.py_failed = st.py_failed;
	h.py_mismatched = st.py_mismatched;
	h.py_delay_ns = st.py_delay_ns;
	h.raw_irqs = raw_irqs;
	if (filter_active(&filt)) {
		h.filter = filt.desc;
		h.filter_total = st.samples + st.filtered_out;
	}
	h.warnings = (const char *const *)rc.warnings;
	h.nr_warnings = rc.nr_warnings;
	h.key = key == CT_KEY_SYM ? "symbol" : key == CT_KEY_DSO ? "dso" :
		key == CT_KEY_COMM ? "comm" : "tid";

	memset(&oo, 0, sizeof(oo));
	oo.width = output_width();
	oo.color = want_color(1);
	oo.no_children = no_children || key == CT_KEY_COMM || key == CT_KEY_TID;
	oo.limit = limit >= 0 ? (size_t)limit : (fmt == 0 ? 40 : 0);

	if (view >= 0 && (off_cpu || wall)) {
		if (fmt == 0)
			output_header(stdout, &h);
		print_wait_families(&rc, stdout, fmt, h.weight_total, oo.limit);
	} else if (view >= 0) {
		if (fmt == 0)
			output_header(stdout, &h);
		dlview_print(rc.view, (enum dlview_kind)view, stdout,
			     fmt == 0 ? DLVIEW_TABLE : fmt == 1 ? DLVIEW_JSON : DLVIEW_CSV,
			     oo.limit);
	} else {
		nr = calltree_rows(rc.tree, csort, &rows);
		if (fmt == 0)
			output_table(stdout, &h, rows, nr, &oo);
		else if (fmt == 1)
			output_json(stdout, &h, rows, nr, &oo, row_family, &rc);
		else
			output_csv(stdout, &h, rows, nr, &oo);
	}
	if (fmt == 0 && !no_findings)
		dlview_print_findings(rc.view, stdout, DLVIEW_TABLE);
	fflush(stdout);
	report_ctx_release(&rc, rules);
	filter_release(&filt);
	/* partial: cut short, or records skipped as malformed */
	return ret == 1 || info.bad_records ? EXIT_PARTIAL : EXIT_OK;
}
