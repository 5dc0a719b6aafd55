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
#include "output.h"
#include "profile.h"
#include "rephash.h"
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
	if (m->metrics && d->metric)
		d->metric_at = list_index(m->metrics, d->metric);
	return 0;
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
	if (d->metric) {
		/* the switch-outs read the counters too: delivered, counted in no stat */
		po.wall = 2;
		po.waits_apart = 1;
		v.sample = on_metric_sample;
		ret = attr_stream_run(path, &po, d->filter, d->rules, &v, &st, &info);
		if (ret >= 0 && !d->metric_at) {
			error("'%s' has no counter '%s' (record --metrics)", path, d->metric);
			ret = -1;
		}
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

static void print_table(struct diff *d, FILE *out, struct diff_row *rows, size_t nr,
			size_t limit, int width)
{
	uint64_t tot[2];
	int no_time = d->side[0].no_time || d->side[1].no_time;
	/* columns before the name: 7+1+7+1+9+1+9+1+10+2; the name gets the rest (24 at
	 * least, the line grows past a narrower terminal) */
	size_t name_w = width > 48 + 1 + 24 ? (size_t)width - 48 - 1 : 24, dso_w = 0;
	char a[48], b[64], c[48], name[512], dso[128], sym[512];

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
	if (d->key == DIFF_SYMBOL) {
		dso_w = name_w / 3 < 8 ? 8 : name_w / 3 > 20 ? 20 : name_w / 3;
		name_w -= dso_w + 1;
		fprintf(out, "%7s %7s %9s %9s %10s  %-*s %s\n", "Base%", "New%", "Base", "New",
			"Change", (int)name_w, "Symbol", "DSO");
	} else {
		fprintf(out, "%7s %7s %9s %9s %10s  %s\n", "Base%", "New%", "Base", "New", "Change",
			d->key == DIFF_FAMILY ? "Family" : d->key == DIFF_OP ? "Operator" : "DSO");
	}
	for (size_t i = 0; i < nr && (!limit || i < limit); i++) {
		const struct diff_row *r = &rows[i];

		if (no_time) {
			snprintf(a, sizeof(a), "%" PRIu64, r->n[0]);
			snprintf(b, sizeof(b), "%" PRIu64, r->n[1]);
			snprintf(c, sizeof(c), "%+" PRId64, (int64_t)r->n[1] - (int64_t)r->n[0]);
		} else {
			output_duration(a, sizeof(a), r->n[0] * d->side[0].ns_per_sample);
			output_duration(b, sizeof(b), r->n[1] * d->side[1].ns_per_sample);
			fmt_delta(c, sizeof(c), r->delta_ns);
		}
		if (d->key == DIFF_SYMBOL) {
			size_t sl;
			const char *ds = key_dso(r->key, &sl);

			snprintf(sym, sizeof(sym), "%.*s", (int)sl, r->key);
			/* "lib.so!func@0x.." beside a DSO column: "func@0x.." */
			if (ds && !strncmp(sym, ds, strlen(ds)) && sym[strlen(ds)] == '!')
				memmove(sym, sym + strlen(ds) + 1, strlen(sym + strlen(ds) + 1) + 1);
			output_shorten_name(sym, name_w, name, sizeof(name));
			output_shorten_dso(ds ? ds : "", dso_w, dso, sizeof(dso));
		} else {
			output_shorten_name(r->key, name_w, name, sizeof(name));
		}
		fprintf(out, "%6.2f%% %6.2f%% %9s %9s %10s  ", pct(r->n[0], d->side[0].samples),
			pct(r->n[1], d->side[1].samples), r->n[0] ? a : "-", r->n[1] ? b : "-", c);
		if (d->key == DIFF_SYMBOL)
			fprintf(out, "%s%*s %s\n", name, (int)(name_w - utf8_cols(name, strlen(name))), "", dso);
		else
			fprintf(out, "%s\n", name);
	}
	if (limit && nr > limit)
		fprintf(out, "... %zu more rows (--limit 0 shows all)\n", nr - limit);
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

static void print_json(struct diff *d, FILE *out, struct diff_row *rows, size_t nr,
		       size_t limit)
{
	struct json j;

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
	json_karr(&j, "rows");
	for (size_t i = 0; i < nr && (!limit || i < limit); i++) {
		const struct diff_row *r = &rows[i];

		json_pre(&j, "\n  ");
		json_obj(&j);
		json_kstr(&j, "name", key_text(d, r->key));
		json_ku64(&j, "base_samples", r->n[0]);
		json_ku64(&j, "new_samples", r->n[1]);
		json_knum(&j, "base_pct", "%.4f", pct(r->n[0], d->side[0].samples));
		json_knum(&j, "new_pct", "%.4f", pct(r->n[1], d->side[1].samples));
		json_ku64(&j, "base_ns", r->n[0] * d->side[0].ns_per_sample);
		json_ku64(&j, "new_ns", r->n[1] * d->side[1].ns_per_sample);
		json_ki64(&j, "delta_ns", r->delta_ns);
		json_end(&j);
	}
	json_raw(&j, "\n");
	json_end(&j);
	json_end(&j);
	json_raw(&j, "\n");
}

static void print_csv(struct diff *d, FILE *out, struct diff_row *rows, size_t nr,
		      size_t limit)
{
	fprintf(out, "%s,base_samples,new_samples,base_pct,new_pct,base_ns,new_ns,delta_ns\n",
		key_name(d->key));
	for (size_t i = 0; i < nr && (!limit || i < limit); i++) {
		const struct diff_row *r = &rows[i];

		fput_csv_str(out, key_text(d, r->key));
		fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%" PRIu64 ",%" PRIu64 ",%" PRId64
			"\n", r->n[0], r->n[1], pct(r->n[0], d->side[0].samples),
			pct(r->n[1], d->side[1].samples), r->n[0] * d->side[0].ns_per_sample,
			r->n[1] * d->side[1].ns_per_sample, r->delta_ns);
	}
}

void diff_print(struct diff *d, FILE *out, enum out_format fmt, size_t limit, int width)
{
	size_t nr;
	struct diff_row *rows = collect(d, &nr);

	if (fmt == OUT_JSON)
		print_json(d, out, rows, nr, limit);
	else if (fmt == OUT_CSV)
		print_csv(d, out, rows, nr, limit);
	else
		print_table(d, out, rows, nr, limit, width);
	free(rows);
}
