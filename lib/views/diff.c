/* diff.c - where the time moved between two recordings (see diff.h). */
#include "diff.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "dlview.h"
#include "family.h"
#include "filter.h"
#include "json.h"
#include "metview.h"
#include "output.h"
#include "profile.h"
#include "rephash.h"
#include "tabw.h"
#include "util.h"

struct diff_side {
	const char *path;
	char *cmdline;
	char event[64];
	uint64_t samples, ns_per_sample, duration_ns;
	uint64_t filter_total;		/* samples before the filter */
	int no_time;			/* the event stands for no time (page-faults) */
	struct u64map counts;		/* interned key -> (uintptr_t) samples */
};

struct diff_row {
	const char *key;
	uint64_t n[2];
	int64_t delta_ns;
};

struct diff {
	enum diff_key key;
	const struct family_rules *rules;
	const char *event;
	struct strpool pool;
	struct diff_side side[2];
	struct dlview *view;		/* the side being loaded (family and op keys) */
	struct sample_filter *filter;	/* NULL: every sample */
	int raw_irqs;
	struct diff_side *cur;
	struct strbuf tmp;
	const char *metric;		/* diff_set_metric(), NULL: samples */
	int metric_at;			/* its place in the current side's reads, 0: none */
	uint64_t metric_sum;
	double metric_scale;		/* where it shared the PMU: scaled up (metview.h) */
};

struct diff *diff_new(enum diff_key key, const struct family_rules *rules, const char *event)
{
	struct diff *d = xcalloc(1, sizeof(*d));

	d->key = key;
	d->event = event;
	d->rules = rules;
	strpool_init(&d->pool);
	u64map_init(&d->side[0].counts);
	u64map_init(&d->side[1].counts);
	return d;
}

void diff_free(struct diff *d)
{
	if (!d)
		return;
	for (int i = 0; i < 2; i++) {
		u64map_release(&d->side[i].counts);
		free(d->side[i].cmdline);
	}
	strpool_release(&d->pool);
	strbuf_release(&d->tmp);
	free(d);
}

static void count(struct diff *d, const char *key, uint64_t n)
{
	void **slot = u64map_slot(&d->cur->counts, (uintptr_t)strpool_intern(&d->pool, key));

	*slot = (void *)((uintptr_t)*slot + (uintptr_t)n);
}

/* The sym and dso keys: the leaf's (NULL: none is known), n to its row */
static void count_leaf(struct diff *d, const struct frame *leaf, uint64_t n)
{
	const char *dso = leaf && leaf->dso ? leaf->dso : "[unknown]";

	strbuf_reset(&d->tmp);
	if (d->key == DIFF_DSO)
		strbuf_addstr(&d->tmp, dso);
	else	/* split again for the table's columns */
		strbuf_addf(&d->tmp, "%s\1%s", leaf ? leaf->sym : "[unknown]", dso);
	count(d, d->tmp.buf, n);
}

static int on_sample(void *ctx, const struct attributed *as)
{
	if (as->nr)
		count_leaf(ctx, as->frames, 1);
	return 0;
}

static int on_meta(void *ctx, const struct recmeta *m)
{
	struct diff *d = ctx;

	if (m->cmdline) {
		free(d->cur->cmdline);
		d->cur->cmdline = xstrdup(m->cmdline);
	}
	if (m->metrics && d->metric) {
		d->metric_at = list_index(m->metrics, d->metric);
		d->metric_scale = metview_meta_scale(m, d->metric_at);
	}
	return 0;
}

/* A counter that shared the PMU: its rows and sum scaled up, as report's */
static void scale_side(struct diff_side *sd, double scale, uint64_t *sum)
{
	for (size_t i = 0; i < sd->counts.cap; i++)
		if (sd->counts.used[i])
			sd->counts.vals[i] = (void *)(uintptr_t)((double)(uintptr_t)sd->counts.vals[i] *
								 scale + 0.5);
	*sum = (uint64_t)((double)*sum * scale + 0.5);
}

/* diff_set_metric: a read's count of the counter to its row (a switch-out's too) */
static int on_metric_sample(void *ctx, const struct attributed *as)
{
	struct diff *d = ctx;
	const struct dlp_sample *s = as->s;
	uint64_t n;

	if (!d->metric_at || !s->read || s->nr_read <= (uint32_t)d->metric_at)
		return 0;
	n = s->read[d->metric_at];
	d->metric_sum += n;
	if (d->key == DIFF_FAMILY)
		count(d, as->a->family, n);
	else if (d->key == DIFF_OP)
		count(d, as->a->op ? as->a->op : "(no op)", n);
	else	/* (a read has counts even without a stack) */
		count_leaf(d, as->nr ? as->frames : NULL, n);
	return 0;
}

void diff_set_metric(struct diff *d, const char *name)
{
	d->metric = name;
}

static void count_view(void *ctx, const char *key, uint64_t n)
{
	count(ctx, key, n);
}

void diff_set_raw_irqs(struct diff *d, int raw)
{
	d->raw_irqs = raw;
}

void diff_set_filter(struct diff *d, struct sample_filter *filter)
{
	d->filter = filter_active(filter) ? filter : NULL;
}

int diff_load(struct diff *d, int side, const char *path)
{
	struct diff_side *sd = &d->side[side];
	struct profile_opts po;
	struct attr_view v = { .meta = on_meta, .ctx = d };
	struct profile_stats st;
	struct session_info info;
	int ret;

	sd->path = path;
	d->cur = sd;
	memset(&po, 0, sizeof(po));
	po.event = d->event;
	po.raw_irqs = d->raw_irqs;
	memset(&info, 0, sizeof(info));
	d->metric_at = 0;
	d->metric_sum = 0;
	d->metric_scale = 1;
	if (d->metric) {
		/* the switch-outs read the counters too: delivered, counted in no stat */
		po.wall = 2;
		po.waits_apart = 1;
		po.metric_samples = 1;	/* (a counter sampled on its own: its samples) */
		v.sample = on_metric_sample;
		ret = attr_stream_run(path, &po, d->filter, d->rules, &v, &st, &info);
		if (ret >= 0 && !d->metric_at) {
			error("'%s' has no counter '%s' (record --metrics)", path, d->metric);
			ret = -1;
		}
		if (d->metric_scale != 1)
			scale_side(sd, d->metric_scale, &d->metric_sum);
		st.samples = d->metric_sum;	/* the shares are of the counts */
		st.sample_no_time = 1;
		st.sample_period_ns = 0;
		snprintf(st.event, sizeof(st.event), "%s", d->metric);
	} else if (d->key == DIFF_FAMILY || d->key == DIFF_OP) {
		d->view = dlview_new(d->rules, &v);
		ret = dlview_run(d->view, path, &po, d->filter, &st, &info);
	} else {
		v.sample = on_sample;
		v.plain = 1;
		ret = attr_stream_run(path, &po, d->filter, d->rules, &v, &st, &info);
	}
	if (ret >= 0) {
		sd->samples = st.samples;
		sd->filter_total = st.samples + st.filtered_out;
		sd->ns_per_sample = st.sample_period_ns;
		sd->no_time = st.sample_no_time;
		snprintf(sd->event, sizeof(sd->event), "%s", st.event);
		if (info.have_stats && info.stats.end_ns > info.stats.start_ns)
			sd->duration_ns = info.stats.end_ns - info.stats.start_ns;
		else
			sd->duration_ns = st.last_time - st.first_time;
		if (d->view) {
			dlview_set_stats(d->view, &st);
			dlview_each(d->view, d->key == DIFF_OP ? DLVIEW_OP : DLVIEW_FAMILY,
				    count_view, d);
		}
		if (info.bad_records)
			ret = 1;
	}
	dlview_free(d->view);
	d->view = NULL;
	return ret;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct diff_row *x = a, *y = b;
	int64_t ax = x->delta_ns < 0 ? -x->delta_ns : x->delta_ns;
	int64_t ay = y->delta_ns < 0 ? -y->delta_ns : y->delta_ns;
	uint64_t dx = x->n[1] > x->n[0] ? x->n[1] - x->n[0] : x->n[0] - x->n[1];
	uint64_t dy = y->n[1] > y->n[0] ? y->n[1] - y->n[0] : y->n[0] - y->n[1];

	if (ax != ay)
		return ax > ay ? -1 : 1;
	if (dx != dy)	/* events that stand for no time: by the change of count */
		return dx > dy ? -1 : 1;
	if (x->n[1] + x->n[0] != y->n[1] + y->n[0])
		return x->n[1] + x->n[0] > y->n[1] + y->n[0] ? -1 : 1;
	return strcmp(x->key, y->key);
}

static struct diff_row *collect(struct diff *d, size_t *nr)
{
	struct u64map idx;
	struct diff_row *rows = NULL;
	size_t n = 0, alloc = 0;

	u64map_init(&idx);
	for (int s = 0; s < 2; s++) {
		const struct u64map *c = &d->side[s].counts;

		for (size_t i = 0; i < c->cap; i++) {
			void **slot;

			if (!c->used[i])
				continue;
			slot = u64map_slot(&idx, c->keys[i]);
			if (!*slot) {
				ALLOC_GROW(rows, n + 1, alloc);
				memset(&rows[n], 0, sizeof(rows[n]));
				rows[n].key = (const char *)(uintptr_t)c->keys[i];
				*slot = (void *)(uintptr_t)++n;
			}
			rows[(uintptr_t)*slot - 1].n[s] = (uintptr_t)c->vals[i];
		}
	}
	for (size_t i = 0; i < n; i++)
		rows[i].delta_ns = (int64_t)(rows[i].n[1] * d->side[1].ns_per_sample) -
				   (int64_t)(rows[i].n[0] * d->side[0].ns_per_sample);
	if (n)
		qsort(rows, n, sizeof(*rows), cmp_rows);
	u64map_release(&idx);
	*nr = n;
	return rows;
}

static const char *key_name(enum diff_key k)
{
	return k == DIFF_FAMILY ? "family" : k == DIFF_OP ? "operator" :
	       k == DIFF_DSO ? "dso" : "symbol";
}

/* "+1.23 s" / "-45.6 ms" */
static void fmt_delta(char *buf, size_t sz, int64_t ns)
{
	char t[32];

	output_duration(t, sizeof(t), (uint64_t)(ns < 0 ? -ns : ns));
	snprintf(buf, sz, "%s%s", ns < 0 ? "-" : ns > 0 ? "+" : " ", t);
}

/* A symbol row's key is "sym\1dso": the name part and the DSO part. */
static const char *key_dso(const char *key, size_t *sym_len)
{
	const char *sep = strchr(key, '\1');

	*sym_len = sep ? (size_t)(sep - key) : strlen(key);
	return sep ? sep + 1 : NULL;
}

/* The header lines of the text */
static void print_header(struct diff *d, FILE *out)
{
	uint64_t tot[2];
	int no_time = d->side[0].no_time || d->side[1].no_time;
	char a[48], b[64];

	for (int s = 0; s < 2; s++) {
		const struct diff_side *sd = &d->side[s];

		tot[s] = no_time ? sd->samples : sd->samples * sd->ns_per_sample;
		output_duration(a, sizeof(a), tot[s]);
		fprintf(out, "# %s %s: %s\n", s ? "new: " : "base:", sd->path,
			sd->cmdline ? sd->cmdline : "?");
		if (no_time)
			snprintf(b, sizeof(b), " (events, not time)");
		else
			snprintf(b, sizeof(b), ", %s on CPU", a);
		if (d->metric)
			fprintf(out, "#       %" PRIu64 " %s, read with the samples (record --metrics)\n",
				sd->samples, d->metric);
		else
			fprintf(out, "#       %" PRIu64 " samples of %s%s\n", sd->samples,
				sd->event[0] ? sd->event : "?", b);
		if (d->filter)
			fprintf(out, "#       filter %s: %" PRIu64 " of %" PRIu64 " samples kept\n",
				d->filter->desc, sd->samples, sd->filter_total);
	}
	if (no_time) {
		fprintf(out, "# change: %+" PRId64 " samples (%+.1f%%); rows by how much their "
			"count changed\n\n", (int64_t)tot[1] - (int64_t)tot[0],
			tot[0] ? 100.0 * ((double)tot[1] - (double)tot[0]) / (double)tot[0] : 0.0);
	} else {
		fmt_delta(a, sizeof(a), (int64_t)tot[1] - (int64_t)tot[0]);
		fprintf(out, "# change: %s on CPU (%+.1f%%); rows by how much their time "
			"changed\n\n", a,
			tot[0] ? 100.0 * ((double)tot[1] - (double)tot[0]) / (double)tot[0] : 0.0);
	}
}

/* A key as JSON and CSV show it: "sym [dso]" for symbols. */
static const char *key_text(struct diff *d, const char *key)
{
	size_t sl;
	const char *ds = key_dso(key, &sl);

	if (!ds)
		return key;
	strbuf_reset(&d->tmp);
	/* pseudo DSOs ("[jit]", "[kernel.kallsyms]") carry their own brackets */
	strbuf_addf(&d->tmp, ds[0] == '[' ? "%.*s %s" : "%.*s [%s]", (int)sl, key, ds);
	return d->tmp.buf;
}

/* The rows as one table for the three formats.  The text's names are fitted to the
 * terminal: the columns before the name take 7+1+7+1+9+1+9+1+10+2, the name the rest
 * (24 at least: the line grows past a narrower terminal), a symbol's DSO a third of it. */
static struct tabw *diff_table(struct diff *d, struct diff_row *rows, size_t nr, size_t limit,
			       int width)
{
	int no_time = d->side[0].no_time || d->side[1].no_time, sym = d->key == DIFF_SYMBOL;
	size_t name_w = width > 48 + 1 + 24 ? (size_t)width - 48 - 1 : 24, dso_w = 0;
	struct tabw *t = tabw_new();

	if (sym) {
		dso_w = name_w / 3 < 8 ? 8 : name_w / 3 > 20 ? 20 : name_w / 3;
		name_w -= dso_w + 1;
	}
	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ NULL, "name", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ NULL, key_name(d->key), TABW_TEXT, .in = TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ sym ? "Symbol" : d->key == DIFF_FAMILY ? "Family" :
					    d->key == DIFF_OP ? "Operator" : "DSO", NULL, TABW_TEXT,
					    .in = TABW_IN_TEXT, .width = sym ? (int)name_w : 0,
					    .gap = 2, .text_at = 6 });
	tabw_add(t, &(struct tabw_colspec){ "DSO", NULL, TABW_TEXT,
					    .in = sym ? TABW_IN_TEXT : TABW_IN_NONE, .text_at = 7 });
	tabw_add(t, &(struct tabw_colspec){ NULL, "base_samples", TABW_NUM, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ NULL, "new_samples", TABW_NUM, .in = TABW_IN_JSON | TABW_IN_CSV });
	tabw_add(t, &(struct tabw_colspec){ "Base%", "base_pct", TABW_NUM, .width = 7, .text_at = 1 });
	tabw_add(t, &(struct tabw_colspec){ "New%", "new_pct", TABW_NUM, .width = 7, .text_at = 2 });
	tabw_add(t, &(struct tabw_colspec){ "Base", "base_ns", TABW_NUM, .width = 9, .text_at = 3 });
	tabw_add(t, &(struct tabw_colspec){ "New", "new_ns", TABW_NUM, .width = 9, .text_at = 4 });
	tabw_add(t, &(struct tabw_colspec){ "Change", "delta_ns", TABW_NUM, .width = 10, .text_at = 5 });
	for (size_t i = 0; i < nr && (!limit || i < limit); i++) {
		const struct diff_row *r = &rows[i];
		char a[48], b[48], name[512], dso[128], text[32], val[32];

		tabw_row(t);
		tabw_str(t, key_text(d, r->key));
		tabw_str(t, key_text(d, r->key));
		if (sym) {
			size_t sl;
			const char *ds = key_dso(r->key, &sl);
			char s[512];

			snprintf(s, sizeof(s), "%.*s", (int)sl, r->key);
			/* "lib.so!func@0x.." beside a DSO column: "func@0x.." */
			if (ds && !strncmp(s, ds, strlen(ds)) && s[strlen(ds)] == '!')
				memmove(s, s + strlen(ds) + 1, strlen(s + strlen(ds) + 1) + 1);
			output_shorten_name(s, name_w, name, sizeof(name));
			output_shorten_dso(ds ? ds : "", dso_w, dso, sizeof(dso));
		} else {
			output_shorten_name(r->key, name_w, name, sizeof(name));
			dso[0] = '\0';
		}
		tabw_str(t, name);
		tabw_str(t, dso);
		tabw_count(t, r->n[0]);
		tabw_count(t, r->n[1]);
		for (int s = 0; s < 2; s++) {
			snprintf(text, sizeof(text), "%.2f%%", pct(r->n[s], d->side[s].samples));
			snprintf(val, sizeof(val), "%.4f", pct(r->n[s], d->side[s].samples));
			tabw_cell(t, text, val);
		}
		if (no_time) {
			snprintf(a, sizeof(a), "%" PRIu64, r->n[0]);
			snprintf(b, sizeof(b), "%" PRIu64, r->n[1]);
		} else {
			output_duration(a, sizeof(a), r->n[0] * d->side[0].ns_per_sample);
			output_duration(b, sizeof(b), r->n[1] * d->side[1].ns_per_sample);
		}
		snprintf(val, sizeof(val), "%" PRIu64, r->n[0] * d->side[0].ns_per_sample);
		tabw_cell(t, r->n[0] ? a : "-", val);
		snprintf(val, sizeof(val), "%" PRIu64, r->n[1] * d->side[1].ns_per_sample);
		tabw_cell(t, r->n[1] ? b : "-", val);
		if (no_time)
			snprintf(a, sizeof(a), "%+" PRId64, (int64_t)r->n[1] - (int64_t)r->n[0]);
		else
			fmt_delta(a, sizeof(a), r->delta_ns);
		snprintf(val, sizeof(val), "%" PRId64, r->delta_ns);
		tabw_cell(t, a, val);
	}
	return t;
}

void diff_print(struct diff *d, FILE *out, enum out_format fmt, size_t limit, int width)
{
	size_t nr;
	struct diff_row *rows = collect(d, &nr);
	struct tabw *t = diff_table(d, rows, nr, limit, width);
	struct json j;

	if (fmt == OUT_JSON) {
		json_init(&j, out, JSON_SPACED);
		json_obj(&j);
		json_kstr(&j, "key", key_name(d->key));
		for (int s = 0; s < 2; s++) {
			const struct diff_side *sd = &d->side[s];

			json_kobj(&j, s ? "new" : "base");
			json_kstr(&j, "file", sd->path ? sd->path : "");
			json_kstr(&j, "cmdline", sd->cmdline ? sd->cmdline : "");
			json_kstr(&j, "event", sd->event);
			json_ku64(&j, "samples", sd->samples);
			json_ku64(&j, "ns_per_sample", sd->ns_per_sample);
			json_ku64(&j, "duration_ns", sd->duration_ns);
			json_end(&j);
		}
		tabw_json_last(t, &j, "rows");
	} else if (fmt == OUT_CSV) {
		tabw_print(t, out, fmt);
	} else {
		print_header(d, out);
		tabw_print(t, out, fmt);
		if (limit && nr > limit)
			fprintf(out, "... %zu more rows (--limit 0 shows all)\n", nr - limit);
	}
	tabw_free(t);
	free(rows);
}
