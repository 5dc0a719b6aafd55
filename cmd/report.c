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
#include "process.h"
#include "profile.h"
#include "recfile.h"
#include "steps.h"
#include "rephash.h"
#include "util.h"

static const char *const report_usage[] = {
	"dlprof report [-i FILE] [--sort KEY] [--limit N] [--format table|json|csv] [--srcline] [--no-children] [--raw-irqs] [--off-cpu | --wall]",
	"dlprof report [-i FILE] --steps FUNC [--format table|json] [FILTERS]",
	"dlprof report [-i FILE] --sort family|op|thread|line|pid [--families FILE]",
	"dlprof report [-i FILE] --group family",
	"dlprof report [-i FILE] --isa [--limit N] [--format table|json]   (= check-isa -i)",
	"dlprof report [-i FILE] --memory [--sort self|op|total|line|family|thread] [--limit N] [--format table|json|csv]",
	"dlprof report [OPTIONS] [--by-input] FILE...   (several recordings, e.g. one per rank: one table, or a row per recording)",
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
	/* several recordings / --by-input: one row per recording */
	struct input_row *in;	/* the recording being read */
	/* --off-cpu / --wall --sort family: microseconds and samples per family */
	struct wait_fam {
		const char *family;
		uint64_t us, samples;
	} *wfam;
	size_t nr_wfam, alloc_wfam;
};

/* A recording of several (report a.data b.data, --by-input) */
#define IN_FAMS 16
struct input_row {
	const char *file;
	char *host, *cmdline;
	uint64_t samples, lost, duration_ns;
	int rank_lo, rank_hi;		/* the ranks of its processes, -1 none */
	const char *fam[IN_FAMS];	/* families by samples (interned) */
	uint64_t fam_n[IN_FAMS], fam_other;
};

static void input_count_family(struct input_row *in, const char *fam)
{
	size_t i;

	for (i = 0; i < IN_FAMS && in->fam[i] && in->fam[i] != fam; i++)
		;
	if (i == IN_FAMS) {
		in->fam_other++;
		return;
	}
	in->fam[i] = fam;
	in->fam_n[i]++;
}

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

/* The symbol table's share of a sample (the DL view has counted it) */
static int rep_sample(void *ctx, const struct attributed *as)
{
	struct report_ctx *r = ctx;
	const struct dlp_sample *s = as->s;
	const char *fam = as->a->family;

	/* off-CPU: a blocking stack weighs the microseconds its thread was off the CPU */
	calltree_add(r->tree, as->frames, as->nr,
		     machine_comm_at(as->m, s->pid, s->tid, s->time), s->tid,
		     r->off_cpu ? (s->period + 500) / 1000 : 1);
	if (as->nr)
		count_row_family(r, as->frames[0].sym, as->frames[0].dso, fam);
	if (r->in)
		input_count_family(r->in, fam);
	if (r->off_cpu) {
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
	return 0;
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

/* A recording of several: the ranks of its processes, from the process model */
static int rep_end(void *ctx, struct machine *m)
{
	struct report_ctx *r = ctx;
	const struct proc_table *t = machine_procs(m);

	for (size_t i = 0; r->in && i < t->nr; i++) {
		int rank;

		if (!t->v[i].rank)
			continue;
		rank = atoi(t->v[i].rank);
		if (r->in->rank_lo < 0 || rank < r->in->rank_lo)
			r->in->rank_lo = rank;
		if (rank > r->in->rank_hi)
			r->in->rank_hi = rank;
	}
	return 0;
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

	if (r->in && !strcmp(key, "hostname")) {
		free(r->in->host);
		r->in->host = xstrdup(value);
	}
	if (r->in && !strcmp(key, "cmdline")) {
		free(r->in->cmdline);
		r->in->cmdline = xstrdup(value);
	}
	if (!strcmp(key, "cmdline")) {
		if (!r->cmdline)	/* several recordings: the first one's */
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
	return 0;
}

/* report --memory: the heap by allocating function, operator, Python line, family or
 * thread (memprof.h) */
static int memory_report(const char *input, const char *sort, int fmt, int limit,
			 struct family_rules *rules, struct sample_filter *filt, int srcline)
{
	static const char *const keys[] = { "self", "op", "line", "family", "thread", "total",
					    NULL };
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	struct memprof *mp;
	int k, ret;

	for (k = 0; keys[k] && strcmp(keys[k], sort); k++)
		;
	if (!keys[k]) {
		error("--memory: unknown sort key '%s' (self, op, line, family, thread, total)", sort);
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* --by-input: a row per recording, so a rank (a host) that differs stands out: its
 * samples against the median recording's, its largest families, where it ran */
static void print_inputs(FILE *out, struct input_row *in, size_t n, int fmt, uint64_t ns_per)
{
	uint64_t *v = xcalloc(n ? n : 1, sizeof(*v)), total = 0, median;

	for (size_t i = 0; i < n; i++) {
		v[i] = in[i].samples;
		total += in[i].samples;
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	median = n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
	free(v);
	if (fmt == 1)
		fputs("{\"kind\": \"input\", \"rows\": [", out);
	else if (fmt == 2)
		fputs("input,samples,pct,vs_median_pct,cpu_ns,lost,duration_ns,host,rank_lo,rank_hi,family1,family1_pct,family2,family2_pct,family3,family3_pct,cmdline\n", out);
	else
		fprintf(out, "\n%7s %8s %7s %9s %9s %6s  %-38s %-12s %5s  %s\n", "Share", "Samples",
			"vs.med", "CPU", "Wall", "Lost", "Top families", "Host", "Ranks", "Input");
	for (size_t i = 0; i < n; i++) {
		struct input_row *r = &in[i];
		double vs = median ? 100.0 * ((double)r->samples - (double)median) / (double)median : 0;
		size_t top[3] = { IN_FAMS, IN_FAMS, IN_FAMS };
		char fb[128], ranks[32], b1[32], b2[32];

		/* the three largest families */
		for (size_t k = 0; k < 3; k++)
			for (size_t j = 0; j < IN_FAMS && r->fam[j]; j++)
				if ((k < 1 || j != top[0]) && (k < 2 || j != top[1]) &&
				    (top[k] == IN_FAMS || r->fam_n[j] > r->fam_n[top[k]]))
					top[k] = j;
		if (r->rank_lo < 0)
			snprintf(ranks, sizeof(ranks), "-");
		else if (r->rank_lo == r->rank_hi)
			snprintf(ranks, sizeof(ranks), "%d", r->rank_lo);
		else
			snprintf(ranks, sizeof(ranks), "%d-%d", r->rank_lo, r->rank_hi);
		if (fmt == 1) {
			fprintf(out, "%s\n  {\"input\": ", i ? "," : "");
			fput_json_str(out, r->file);
			fprintf(out, ", \"samples\": %llu, \"pct\": %.2f, \"vs_median_pct\": %.2f, "
				"\"cpu_ns\": %llu, \"lost\": %llu, \"duration_ns\": %llu, \"host\": ",
				(unsigned long long)r->samples, total ? 100.0 * r->samples / total : 0, vs,
				(unsigned long long)(r->samples * ns_per), (unsigned long long)r->lost,
				(unsigned long long)r->duration_ns);
			if (r->host)
				fput_json_str(out, r->host);
			else
				fputs("null", out);
			if (r->rank_lo >= 0)
				fprintf(out, ", \"rank_lo\": %d, \"rank_hi\": %d", r->rank_lo, r->rank_hi);
			fputs(", \"families\": [", out);
			for (size_t k = 0; k < 3 && top[k] < IN_FAMS; k++) {
				fprintf(out, "%s{\"family\": ", k ? ", " : "");
				fput_json_str(out, r->fam[top[k]]);
				fprintf(out, ", \"pct\": %.2f}", r->samples ? 100.0 * r->fam_n[top[k]] / r->samples : 0);
			}
			fputs("], \"cmdline\": ", out);
			if (r->cmdline)
				fput_json_str(out, r->cmdline);
			else
				fputs("null", out);
			fputc('}', out);
		} else if (fmt == 2) {
			fput_csv_str(out, r->file);
			fprintf(out, ",%llu,%.2f,%.2f,%llu,%llu,%llu,", (unsigned long long)r->samples,
				total ? 100.0 * r->samples / total : 0, vs,
				(unsigned long long)(r->samples * ns_per), (unsigned long long)r->lost,
				(unsigned long long)r->duration_ns);
			fput_csv_str(out, r->host ? r->host : "");
			if (r->rank_lo >= 0)
				fprintf(out, ",%d,%d", r->rank_lo, r->rank_hi);
			else
				fputs(",,", out);
			for (size_t k = 0; k < 3; k++) {
				fputc(',', out);
				fput_csv_str(out, top[k] < IN_FAMS ? r->fam[top[k]] : "");
				fprintf(out, ",%.2f", top[k] < IN_FAMS && r->samples ?
					100.0 * r->fam_n[top[k]] / r->samples : 0.0);
			}
			fputc(',', out);
			fput_csv_str(out, r->cmdline ? r->cmdline : "");
			fputc('\n', out);
		} else {
			fb[0] = '\0';
			for (size_t k = 0; k < 3 && top[k] < IN_FAMS; k++)
				snprintf(fb + strlen(fb), sizeof(fb) - strlen(fb), "%s%s %.0f%%",
					 k ? ", " : "", r->fam[top[k]],
					 r->samples ? 100.0 * r->fam_n[top[k]] / r->samples : 0.0);
			fmt_duration(b1, sizeof(b1), r->samples * ns_per);
			fmt_duration(b2, sizeof(b2), r->duration_ns);
			fprintf(out, "%6.2f%% %8llu %+6.1f%% %9s %9s %6llu  %-38.38s %-12.12s %5s  %s\n",
				total ? 100.0 * r->samples / total : 0, (unsigned long long)r->samples, vs,
				b1, b2, (unsigned long long)r->lost, fb, r->host ? r->host : "?", ranks,
				r->file);
		}
	}
	if (fmt == 1)
		fputs("\n]}\n", out);
}

static void inputs_free(struct input_row *in, int n)
{
	for (int k = 0; in && k < n; k++) {
		free(in[k].host);
		free(in[k].cmdline);
	}
	free(in);
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
	const char *input = NULL, *sort = "self", *format = "table";
	const char **inputs;
	struct input_row *rows_in = NULL;
	int nr_inputs, by_input = 0;
	const char *symfs = NULL;
	char *files = NULL;
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
		OPT_BOOL(0, "memory", &memory, "the heap (record --memory): bytes allocated, freed, live at the peak and at exit, by --sort self|op|total|line|family|thread (op, total: with the bytes of the operators each called)"),
		OPT_BOOL(0, "isa", &isa, "ISA class of the code the samples landed in (check-isa -i)"),
		OPT_STRING(0, "steps", &steps_func, "FUNC", "training steps: the invocations of FUNC (a Python function or native symbol), min/median/max, the slowest against the median by family"),
		OPT_BOOL(0, "reunwind", &reunwind, "unwind the kept stack copies (record --keep-stacks) instead of using the stacks unwound while recording"),
		OPT_STRING(0, "symfs", &symfs, "DIR", "read the recorded files under DIR (a copy of the recording machine's files; default $DLPROF_SYMFS)"),
		OPT_BOOL(0, "by-input", &by_input, "a row per recording (report FILE...: e.g. one per rank or host): samples against the median, top families, host, ranks"),
		OPT_BOOL(0, "check-unwind", &check_unwind, "unwind the kept stack copies (record --keep-stacks) and compare them with the stacks unwound while recording"),
		OPT_FILTERS(fa),
		OPT_END(),
	};
	struct report_ctx rc;
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	struct attr_view rv = { .sample = rep_sample, .meta = rep_meta, .end = rep_end };
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

	argc = parse_options(argc, argv, options, report_usage, 0);
	if (argc < 0)
		return PARSE_OPT_EXIT_CODE(argc);
	nr_inputs = reader_inputs(argc, argv, &input, symfs, &inputs);
	if (nr_inputs < 0)
		return nr_inputs == -1 ? EXIT_USAGE : EXIT_FATAL;
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
	if (nr_inputs > 1 || by_input) {
		/* each recording keeps its own attribution; what adds up across them is the
		 * symbol, dso, comm and tid tables and the table of recordings */
		if ((view >= 0 && view != DLVIEW_FAMILY) || (view == DLVIEW_FAMILY && !by_input) ||
		    group || memory || steps_func || off_cpu || wall || reunwind || check_unwind) {
			filter_release(&filt);
			error("several recordings give the self, total, sym, dso, comm and tid tables and --by-input; read one at a time for the others");
			return EXIT_USAGE;
		}
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
	rv.ctx = &rc;
	rc.view = dlview_new(rules, &rv);
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

	if (nr_inputs == 1 && !by_input) {
		ret = dlview_run(rc.view, input, &po, &filt, &st, &info);
	} else {
		/* one after the other into the same tables; a fresh attribution for each */
		struct profile_stats st1;
		struct session_info info1;

		rows_in = xcalloc((size_t)nr_inputs, sizeof(*rows_in));
		memset(&st, 0, sizeof(st));
		memset(&info, 0, sizeof(info));
		ret = 0;
		for (int k = 0; k < nr_inputs && ret >= 0; k++) {
			int r1;

			rows_in[k].file = inputs[k];
			rows_in[k].rank_lo = rows_in[k].rank_hi = -1;
			rc.in = &rows_in[k];
			if (k) {
				dlview_free(rc.view);
				rc.view = dlview_new(rules, &rv);
			}
			r1 = dlview_run(rc.view, inputs[k], &po, &filt, &st1, &info1);
			if (r1 < 0) {
				ret = -1;
				break;
			}
			if (r1 == 1)
				ret = 1;
			rows_in[k].samples = st1.samples;
			rows_in[k].lost = st1.lost;
			rows_in[k].duration_ns = info1.have_stats && info1.stats.end_ns > info1.stats.start_ns ?
						 info1.stats.end_ns - info1.stats.start_ns :
						 st1.last_time - st1.first_time;
			if (!k) {
				st = st1;
				info = info1;
			} else {
				st.samples += st1.samples;
				st.lost += st1.lost;
				st.filtered_out += st1.filtered_out;
				st.complete_stacks += st1.complete_stacks;
				st.named += st1.named;
				st.recovered_stacks += st1.recovered_stacks;
				st.recorded_stacks += st1.recorded_stacks;
				st.copied_stacks += st1.copied_stacks;
				st.irqs_off += st1.irqs_off;
				info.bad_records += info1.bad_records;
				if (rows_in[k].duration_ns > rows_in[0].duration_ns)
					info = info1;	/* the header's duration: the longest */
			}
		}
		rc.in = NULL;
	}
	if (ret < 0) {
		report_ctx_release(&rc, rules);
		filter_release(&filt);
		inputs_free(rows_in, nr_inputs);
		return EXIT_FATAL;
	}
	dlview_set_stats(rc.view, &st);

	memset(&h, 0, sizeof(h));
	h.file = input;
	if (nr_inputs > 1) {
		size_t len = 0;

		for (int k = 0; k < nr_inputs; k++)
			len += strlen(inputs[k]) + 2;
		files = xmalloc(len + 32);
		files[0] = '\0';
		for (int k = 0; k < nr_inputs; k++)
			sprintf(files + strlen(files), "%s%s", k ? ", " : "", inputs[k]);
		sprintf(files + strlen(files), " (%d recordings)", nr_inputs);
		h.file = files;
	}
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
	h.leaf_only = no_children;
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
	h.py_at_sample = st.py_at_sample;
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

	if (by_input) {
		if (fmt == 0)
			output_header(stdout, &h);
		print_inputs(stdout, rows_in, (size_t)nr_inputs, fmt, st.sample_period_ns);
	} else if (view >= 0 && (off_cpu || wall)) {
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
	/* findings judge one recording (its machine, its threads) */
	if (fmt == 0 && !no_findings && nr_inputs == 1 && !by_input)
		dlview_print_findings(rc.view, stdout, DLVIEW_TABLE);
	fflush(stdout);
	report_ctx_release(&rc, rules);
	filter_release(&filt);
	inputs_free(rows_in, nr_inputs);
	free(files);
	/* partial: cut short, or records skipped as malformed */
	return ret == 1 || info.bad_records ? EXIT_PARTIAL : EXIT_OK;
}
