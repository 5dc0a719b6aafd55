/* report.c - dlprof report's view: where the time went, as a top-style table, JSON or
 * CSV, of one recording or of several (report.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlview.h"
#include "filter.h"
#include "json.h"
#include "metview.h"
#include "output.h"
#include "readings.h"
#include "ranks.h"
#include "report.h"
#include "tabw.h"
#include "util.h"

/* The families a (symbol, DSO) row's samples fell into: the JSON family column is the
 * majority (kernel leaves, for instance, split by the stack above them). */
#define ROW_FAMS 4
struct row_families {
	const char *fam[ROW_FAMS];
	uint64_t count[ROW_FAMS];
};

struct report_ctx {
	const struct report_opts *o;
	struct calltree *tree;
	struct dlview *view;
	struct attr_view rv;
	struct metview *mv;	/* --metrics */
	int off_cpu;
	struct u64map row_fams;
	struct readings rd;
	/* several recordings / --by-input: one row per recording */
	struct input_row *rows_in;
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

	if (s->counts_only || (!r->off_cpu && attr_is_switch(s))) {
		/* (dlview_waits_apart: passed on for the counters it read) */
		if (r->mv)
			metview_sample(r->mv, as);
		return 0;
	}
	/* off-CPU: a blocking stack weighs the microseconds its thread was off the CPU */
	calltree_add(r->tree, as->frames, as->nr,
		     machine_comm_at(as->m, s->pid, s->tid, s->time), s->tid,
		     r->off_cpu ? (s->period + 500) / 1000 : 1);
	if (as->nr)
		count_row_family(r, as->frames[0].sym, as->frames[0].dso, fam);
	if (r->mv)
		metview_sample(r->mv, as);
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
static void print_wait_families(struct report_ctx *r, FILE *out, enum out_format fmt, uint64_t total,
				size_t limit)
{
	struct tabw *t = tabw_new();
	struct json j;

	qsort(r->wfam, r->nr_wfam, sizeof(*r->wfam), cmp_wait_fam);
	if (!total)
		total = 1;
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "Family", "family", TABW_TEXT, .gap = 2, .text_at = 4 });
	tabw_add(t, &(struct tabw_colspec){ "Time", "us", TABW_NUM, .width = 12, .text_at = 2 });
	tabw_add(t, &(struct tabw_colspec){ "Share", "pct", TABW_NUM, .width = 8, .text_at = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Samples", "samples", TABW_NUM, .width = 8, .text_at = 3 });
	for (size_t i = 0; i < r->nr_wfam && (!limit || i < limit); i++) {
		char text[32], val[32];

		tabw_row(t);
		tabw_str(t, r->wfam[i].family);
		output_duration(text, sizeof(text), r->wfam[i].us * 1000);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)r->wfam[i].us);
		tabw_cell(t, text, val);
		snprintf(text, sizeof(text), "%.2f%%", 100.0 * r->wfam[i].us / total);
		snprintf(val, sizeof(val), "%.4f", 100.0 * r->wfam[i].us / total);
		tabw_cell(t, text, val);
		tabw_count(t, r->wfam[i].samples);
	}
	if (fmt == OUT_JSON) {
		json_init(&j, out, JSON_COMPACT);
		json_obj(&j);
		json_key(&j, "families");
		tabw_json_rows(t, "", NULL);
		tabw_json(t, &j);
		json_end(&j);
		json_raw(&j, "\n");
	} else {
		if (fmt == OUT_TEXT)
			fputc('\n', out);
		tabw_print(t, out, fmt);
	}
	tabw_free(t);
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

static int rep_meta(void *ctx, const struct recmeta *m)
{
	struct report_ctx *r = ctx;

	readings_meta(&r->rd, m);
	if (r->mv)
		metview_meta(r->mv, m);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* --by-input: a row per recording, so a rank (a host) that differs stands out: its
 * samples against the median recording's, its largest families, where it ran */
static void print_inputs(FILE *out, const struct readings *rd, struct input_row *in,
			 enum out_format fmt)
{
	size_t n = rd->nr;
	uint64_t *v = xcalloc(n ? n : 1, sizeof(*v)), total = 0, median;
	uint64_t ns_per = rd->st.sample_period_ns;
	struct tabw *t = tabw_new();
	struct json js;

	for (size_t i = 0; i < n; i++) {
		v[i] = rd->in[i].st.samples;
		total += v[i];
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	median = n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
	free(v);
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ "Input", "input", TABW_TEXT, .gap = 2, .text_at = 10 });
	tabw_add(t, &(struct tabw_colspec){ "Samples", "samples", TABW_NUM, .width = 8, .text_at = 2 });
	tabw_add(t, &(struct tabw_colspec){ "Share", "pct", TABW_NUM, .width = 7, .text_at = 1 });
	tabw_add(t, &(struct tabw_colspec){ "vs.med", "vs_median_pct", TABW_NUM, .width = 7, .text_at = 3 });
	tabw_add(t, &(struct tabw_colspec){ "CPU", "cpu_ns", TABW_NUM, .width = 9, .text_at = 4 });
	tabw_add(t, &(struct tabw_colspec){ "Lost", "lost", TABW_NUM, .width = 6, .text_at = 6 });
	tabw_add(t, &(struct tabw_colspec){ "Wall", "duration_ns", TABW_NUM, .width = 9, .text_at = 5 });
	tabw_add(t, &(struct tabw_colspec){ "Host", "host", TABW_TEXT, .width = 12, .cut = 1, .text_at = 8 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "rank_lo", TABW_NUM, .in = TABW_IN_JSON | TABW_IN_CSV,
					    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "rank_hi", TABW_NUM, .in = TABW_IN_JSON | TABW_IN_CSV,
					    .omit = 1 });
	tabw_add(t, &(struct tabw_colspec){ "Ranks", NULL, TABW_NUM, .in = TABW_IN_TEXT, .width = 5,
					    .text_at = 9 });
	/* the three largest families: a list in JSON, three pairs in CSV, one cell of text */
	tabw_add(t, &(struct tabw_colspec){ NULL, "families", TABW_TEXT, .in = TABW_IN_JSON });
	for (int k = 0; k < 3; k++) {
		static const char *const keys[][2] = { { "family1", "family1_pct" },
						       { "family2", "family2_pct" },
						       { "family3", "family3_pct" } };

		tabw_add(t, &(struct tabw_colspec){ NULL, keys[k][0], TABW_TEXT, .in = TABW_IN_CSV });
		tabw_add(t, &(struct tabw_colspec){ NULL, keys[k][1], TABW_NUM, .in = TABW_IN_CSV });
	}
	tabw_add(t, &(struct tabw_colspec){ "Top families", NULL, TABW_TEXT, .in = TABW_IN_TEXT,
					    .width = 38, .cut = 1, .gap = 2, .text_at = 7 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "cmdline", TABW_TEXT, .in = TABW_IN_JSON | TABW_IN_CSV });
	for (size_t i = 0; i < n; i++) {
		const struct reading *rf = &rd->in[i];
		const struct input_row *r = &in[i];
		uint64_t samples = rf->st.samples;
		double vs = median ? 100.0 * ((double)samples - (double)median) / (double)median : 0;
		size_t top[3] = { IN_FAMS, IN_FAMS, IN_FAMS };
		char fb[128], text[32], val[32], *list;
		struct json_mem m;
		struct json *j;

		/* the three largest families */
		for (size_t k = 0; k < 3; k++)
			for (size_t f = 0; f < IN_FAMS && r->fam[f]; f++)
				if ((k < 1 || f != top[0]) && (k < 2 || f != top[1]) &&
				    (top[k] == IN_FAMS || r->fam_n[f] > r->fam_n[top[k]]))
					top[k] = f;
		tabw_row(t);
		tabw_str(t, rf->file);
		tabw_count(t, samples);
		tabw_pct(t, total ? 100.0 * samples / total : 0, 2);
		snprintf(text, sizeof(text), "%+.1f%%", vs);
		snprintf(val, sizeof(val), "%.2f", vs);
		tabw_cell(t, text, val);
		output_duration(text, sizeof(text), samples * ns_per);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)(samples * ns_per));
		tabw_cell(t, text, val);
		tabw_count(t, rf->st.lost);
		output_duration(text, sizeof(text), rf->duration_ns);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)rf->duration_ns);
		tabw_cell(t, text, val);
		tabw_cell_str(t, rf->host ? rf->host : "?", rf->host);
		if (r->rank_lo < 0) {
			tabw_none(t);
			tabw_none(t);
			tabw_cell(t, "-", NULL);
		} else {
			snprintf(val, sizeof(val), "%d", r->rank_lo);
			tabw_cell(t, val, val);
			snprintf(val, sizeof(val), "%d", r->rank_hi);
			tabw_cell(t, val, val);
			if (r->rank_lo == r->rank_hi)
				snprintf(text, sizeof(text), "%d", r->rank_lo);
			else
				snprintf(text, sizeof(text), "%d-%d", r->rank_lo, r->rank_hi);
			tabw_cell(t, text, NULL);
		}
		j = json_mem_open(&m, JSON_SPACED);
		json_arr(j);
		for (size_t k = 0; k < 3 && top[k] < IN_FAMS; k++) {
			json_obj(j);
			json_kstr(j, "family", r->fam[top[k]] ? r->fam[top[k]] : "");
			json_knum(j, "pct", "%.2f", samples ? 100.0 * r->fam_n[top[k]] / samples : 0);
			json_end(j);
		}
		json_end(j);
		list = json_mem_close(&m);
		tabw_cell(t, "", list);
		free(list);
		fb[0] = '\0';
		for (size_t k = 0; k < 3; k++) {
			snprintf(val, sizeof(val), "%.2f", top[k] < IN_FAMS && samples ?
				 100.0 * r->fam_n[top[k]] / samples : 0.0);
			tabw_cell_str(t, "", top[k] < IN_FAMS ? r->fam[top[k]] : "");
			tabw_cell(t, "", val);
			if (top[k] < IN_FAMS)
				snprintf(fb + strlen(fb), sizeof(fb) - strlen(fb), "%s%s %.0f%%",
					 k ? ", " : "", r->fam[top[k]],
					 samples ? 100.0 * r->fam_n[top[k]] / samples : 0.0);
		}
		tabw_str(t, fb);
		tabw_cell_str(t, "", rf->cmdline);
	}
	if (fmt == OUT_JSON) {
		json_init(&js, out, JSON_SPACED);
		json_obj(&js);
		json_kstr(&js, "kind", "input");
		tabw_json_last(t, &js, "rows");
	} else {
		if (fmt == OUT_TEXT)
			fputc('\n', out);
		tabw_print(t, out, fmt);
	}
	tabw_free(t);
}

static void report_ctx_release(struct report_ctx *rc)
{
	for (size_t i = 0; i < rc->row_fams.cap; i++)
		if (rc->row_fams.used[i])
			free(rc->row_fams.vals[i]);
	u64map_release(&rc->row_fams);
	dlview_free(rc->view);
	metview_free(rc->mv);
	calltree_free(rc->tree);
	free(rc->wfam);
	free(rc->rows_in);
	readings_release(&rc->rd);
}

/* One recording into the tables; a fresh attribution for each */
static int read_one(void *ctx, struct readings *rd, size_t k, struct profile_stats *st,
		    struct session_info *info)
{
	struct report_ctx *rc = ctx;
	struct profile_opts po = rc->o->po;

	rc->in = &rc->rows_in[k];
	rc->in->rank_lo = rc->in->rank_hi = -1;
	if (k) {
		dlview_free(rc->view);
		rc->view = dlview_new(rc->o->rules, &rc->rv);
	}
	readings_opts(rd, &po);
	po.metric_samples = 1;	/* (the DL view's fault finding reads them too) */
	if ((rc->o->view == DLVIEW_THREAD || rc->o->view == DLVIEW_OP || rc->mv) &&
	    !po.off_cpu && !po.wall) {
		/* the switch-outs too, for the threads' waits for the GIL, the time they
		 * kept each operator's threads off the CPU, and with --metrics for the
		 * counts they read (metview.h) */
		po.wall = 2;
		po.waits_apart = 1;
		dlview_waits_apart(rc->view, rc->mv != NULL);
	}
	return dlview_run(rc->view, rd->in[k].file, &po, rc->o->filt, st, info);
}

int report_run(const struct report_opts *o)
{
	enum out_format fmt = o->format;
	int off_cpu = o->po.off_cpu, wall = o->po.wall;
	int several = o->nr_inputs > 1 || o->by_input;
	struct report_ctx rc;
	struct report_header h;
	struct output_opts oo;
	struct ct_row **rows;
	size_t nr;
	int ret;
	char sampling[128];

	if (o->view == DLVIEW_RANK)
		return ranks_report(o);
	memset(&rc, 0, sizeof(rc));
	rc.o = o;
	rc.tree = calltree_new(o->key);
	rc.rv = (struct attr_view){ .sample = rep_sample, .meta = rep_meta, .end = rep_end,
				    .ctx = &rc };
	rc.view = dlview_new(o->rules, &rc.rv);
	u64map_init(&rc.row_fams);
	rc.off_cpu = off_cpu || wall;
	if (o->metrics)
		rc.mv = metview_new(o->view);
	rc.rows_in = xcalloc(o->nr_inputs, sizeof(*rc.rows_in));
	ret = readings_run(&rc.rd, o->inputs, o->nr_inputs, read_one, &rc);
	rc.in = NULL;
	if (ret < 0) {
		report_ctx_release(&rc);
		return DLP_FAILED;
	}
	dlview_set_stats(rc.view, &rc.rd.st);

	readings_header(&rc.rd, &h, off_cpu, wall, sampling, sizeof(sampling));
	h.leaf_only = o->po.no_children;
	if (off_cpu || wall)
		h.weight_total = calltree_samples(rc.tree);
	h.truncated = rc.rd.truncated;
	h.raw_irqs = o->po.raw_irqs;
	if (filter_active(o->filt)) {
		h.filter = o->filt->desc;
		h.filter_total = rc.rd.st.samples + rc.rd.st.filtered_out;
	}
	h.key = o->key == CT_KEY_SYM ? "symbol" : o->key == CT_KEY_DSO ? "dso" :
		o->key == CT_KEY_COMM ? "comm" : "tid";

	memset(&oo, 0, sizeof(oo));
	oo.width = output_width();
	oo.color = want_color(1);
	oo.no_children = o->po.no_children || o->key == CT_KEY_COMM || o->key == CT_KEY_TID;
	oo.limit = o->limit >= 0 ? (size_t)o->limit : (fmt == OUT_TEXT ? 40 : 0);

	if (rc.mv && metview_missing(rc.mv)) {
		error("%s", metview_missing(rc.mv));
		report_ctx_release(&rc);
		return DLP_FAILED;
	} else if (rc.mv) {
		if (fmt == OUT_TEXT)
			output_header(stdout, &h);
		metview_print(rc.mv, stdout, fmt, oo.limit, filter_active(o->filt));
	} else if (o->by_input) {
		if (fmt == OUT_TEXT)
			output_header(stdout, &h);
		print_inputs(stdout, &rc.rd, rc.rows_in, fmt);
	} else if (o->view >= 0 && (off_cpu || wall)) {
		if (fmt == OUT_TEXT)
			output_header(stdout, &h);
		print_wait_families(&rc, stdout, fmt, h.weight_total, oo.limit);
	} else if (o->view >= 0) {
		if (fmt == OUT_TEXT)
			output_header(stdout, &h);
		dlview_print(rc.view, (enum dlview_kind)o->view, stdout, fmt, oo.limit);
	} else {
		nr = calltree_rows(rc.tree, o->sort, &rows);
		if (fmt == OUT_TEXT)
			output_table(stdout, &h, rows, nr, &oo);
		else if (fmt == OUT_JSON)
			output_json(stdout, &h, rows, nr, &oo, row_family, &rc);
		else
			output_csv(stdout, &h, rows, nr, &oo);
	}
	/* findings judge one recording (its machine, its threads) */
	if (fmt == OUT_TEXT && !o->no_findings && !several)
		dlview_print_findings(rc.view, stdout, OUT_TEXT);
	fflush(stdout);
	report_ctx_release(&rc);
	return ret;
}
