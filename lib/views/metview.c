/* metview.c - report --metrics (metview.h) */
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "itt.h"
#include "json.h"
#include "metview.h"
#include "opcounts.h"
#include "process.h"
#include "rephash.h"
#include "tabw.h"
#include "util.h"

#define MV_MAX 16

struct mv_row {
	const char *key;	/* interned */
	const char *comm;	/* the thread table's */
	uint32_t tid;
	uint64_t samples;
	uint64_t calls;		/* a described primitive's executions (ITT), 0: unknown */
	uint64_t v[MV_MAX + 1];	/* [0] the sampling event's own (ns for a clock) */
};

struct metview {
	int kind;
	char *names[MV_MAX];
	int nr;			/* members (META metrics) */
	int clock;		/* the sampling event counts ns (cpu-clock, task-clock) */
	int switch_reads;	/* the switch-outs read the counters too */
	int per_cpu;		/* record -a: a cpu's counters, whichever thread ran */
	int system_wide;	/* record -a */
	int have_total;
	uint64_t total[MV_MAX + 1], enabled, running;
	/* multiplexing (META metrics_ran): the time the counters ran against, the time each
	 * ran ([0] the sampling event's), and where one ran less, the factor its counts are
	 * scaled by */
	int have_ran, scaled;
	uint64_t ref, ran[MV_MAX + 1];
	double scale[MV_MAX + 1];
	uint64_t sum[MV_MAX + 1], samples, switch_outs;
	int events;		/* each counter sampled on its own (META metrics_mode) ... */
	uint64_t period[MV_MAX];	/* ... every so many events (META metrics_period) */
	uint64_t counter_samples;	/* ... their samples */
	struct opcounts opc;	/* record --op-calls: each operator's calls (--sort op) */
	struct u64map rows;
	struct mv_row **list;
	size_t nr_rows, alloc_rows;
};

struct metview *metview_new(int kind)
{
	struct metview *mv = xcalloc(1, sizeof(*mv));

	mv->kind = kind;
	u64map_init(&mv->rows);
	opcounts_init(&mv->opc);
	return mv;
}

void metview_free(struct metview *mv)
{
	if (!mv)
		return;
	for (size_t i = 0; i < mv->nr_rows; i++)
		free(mv->list[i]);
	free(mv->list);
	for (int i = 0; i < mv->nr; i++)
		free(mv->names[i]);
	u64map_release(&mv->rows);
	opcounts_release(&mv->opc);
	free(mv);
}

/* META metrics_ran, "REF R0 R1 ...": the time the counters ran against in *ref, then
 * up to max times each ran in ran[]; 0 when there is no REF */
static int parse_ran(const char *p, uint64_t *ref, uint64_t *ran, int max)
{
	char *end;

	*ref = strtoull(p, &end, 10);
	if (end == p)
		return 0;
	for (int i = 0; i < max && *end; i++)
		ran[i] = strtoull(end, &end, 10);
	return 1;
}

/* A counter that ran less than the time it ran against shared the PMU with other users
 * (multiplexing): its counts are scaled up by the time it missed, as perf stat scales
 * them, and said.  (Software counters run whole: 1.0 to the nanosecond.)  1: as read. */
#define MV_WHOLE 0.99

static double scale_of(uint64_t ref, uint64_t ran)
{
	if (!ref || !ran || ran >= MV_WHOLE * (double)ref)
		return 1;
	return (double)ref / (double)ran;
}

void metview_meta(struct metview *mv, const struct recmeta *m)
{
	const char *total = recmeta_get(m, "metrics_total");
	const char *mode = recmeta_get(m, "metrics_mode");
	const char *ran = recmeta_get(m, "metrics_ran");

	if (m->metrics && !mv->nr)
		mv->nr = (int)list_split(m->metrics, mv->names, MV_MAX);
	if (mv->kind == DLVIEW_OP)
		opcounts_meta(&mv->opc, m);
	if (total) {
		char *end;

		mv->enabled = strtoull(total, &end, 10);
		mv->running = strtoull(end, &end, 10);
		for (int i = 0; i <= MV_MAX && *end; i++)
			mv->total[i] = strtoull(end, &end, 10);
		mv->have_total = 1;
	}
	if (ran)
		mv->have_ran = parse_ran(ran, &mv->ref, mv->ran, MV_MAX + 1) && mv->ref > 0;
	if (mode && !strcmp(mode, "events")) {
		const char *p = recmeta_get(m, "metrics_period");
		char *end;

		mv->events = 1;
		for (int i = 0; p && i < MV_MAX && *p; i++, p = end) {
			mv->period[i] = strtoull(p, &end, 10);
			if (end == p)
				break;
		}
	}
	if (m->system_wide && !mv->events)
		mv->per_cpu = 1;
	mv->system_wide = m->system_wide;
	if (m->metrics_switch_outs)
		mv->switch_reads = 1;
	if (m->event)
		mv->clock = !strncmp(m->event, "cpu-clock", 9) || !strncmp(m->event, "task-clock", 10);
}

const char *metview_missing(const struct metview *mv)
{
	return mv->nr ? NULL : "the recording has no counters read with its samples: record "
			       "it with --metrics (faults, sched, ipc, fp, cache, amx)";
}

static const char *row_key(const struct metview *mv, const struct attributed *as)
{
	const struct sample_attr *a = as->a;

	switch (mv->kind) {
	case DLVIEW_FAMILY:
		return a ? a->family : NULL;
	case DLVIEW_OP:
		return a && a->op ? a->op : "(no op)";
	case DLVIEW_PRIM:	/* (the primitive table's: its description, on one line) */
		if (a && a->prim_desc) {
			/* "kind=convolution\nimpl=jit:avx512_core\n..." as one line */
			char buf[1024];
			size_t n = 0;

			for (const char *p = a->prim_desc->key; *p && n + 1 < sizeof(buf); p++)
				buf[n++] = *p == '\n' ? ' ' : *p;
			return str_intern(buf, n);
		}
		return a && a->prim ? attr_prim_op(a->prim) : "(no primitive)";
	case DLVIEW_LINE:
		return a && a->pyline ? a->pyline : "(no Python line)";
	case DLVIEW_THREAD:
		return machine_comm_at(as->m, as->s->pid, as->s->tid, as->s->time);
	case DLVIEW_PROCESS:
		return machine_comm_at(as->m, as->s->pid, as->s->pid, as->s->time);
	default:
		return as->nr ? as->frames[0].sym : "[unknown]";	/* (report's rows) */
	}
}

void metview_sample(struct metview *mv, const struct attributed *as)
{
	const struct dlp_sample *s = as->s;
	const char *key;
	uint32_t id = 0;
	uint64_t h;
	void **slot;
	struct mv_row *r;
	uint32_t n;

	if (!s->nr_read || !s->read || !mv->nr)
		return;
	n = s->nr_read < (uint32_t)mv->nr + 1 ? s->nr_read : (uint32_t)mv->nr + 1;
	key = row_key(mv, as);
	key = str_intern(key ? key : "?", strlen(key ? key : "?"));
	if (mv->kind == DLVIEW_THREAD)
		id = s->tid;
	else if (mv->kind == DLVIEW_PROCESS)
		id = s->pid;
	h = hash_u64((uint64_t)(uintptr_t)key ^ ((uint64_t)id << 40));
	for (;;) {
		slot = u64map_slot(&mv->rows, h);
		r = *slot;
		if (!r || (r->key == key && r->tid == id))
			break;
		h = hash_u64(h + 1);	/* (another row has the hash: the next) */
	}
	if (!r) {
		*slot = r = xcalloc(1, sizeof(*r));
		r->key = key;
		r->tid = id;
		if (mv->kind == DLVIEW_PRIM && as->a && as->a->prim_desc)
			r->calls = as->a->prim_desc->calls;
		else if (mv->kind == DLVIEW_OP)
			r->calls = opcounts_get(&mv->opc, key);
		ALLOC_GROW(mv->list, mv->nr_rows + 1, mv->alloc_rows);
		mv->list[mv->nr_rows++] = r;
	}
	if (s->counts_only) {
		mv->counter_samples++;	/* (a counter's own sample: no CPU sample) */
	} else if (attr_is_switch(s)) {
		mv->switch_outs++;	/* (a read as its thread left the cpu: no CPU sample) */
	} else {
		r->samples++;
		mv->samples++;
	}
	for (uint32_t i = 0; i < n; i++) {
		r->v[i] += s->read[i];
		mv->sum[i] += s->read[i];
	}
}

/* The row of what no sample took */
static const char *rest_name(const struct metview *mv)
{
	return mv->events ? "(short of a period)" : "(after the last samples)";
}

static int cmp_row(const void *a, const void *b)
{
	const struct mv_row *x = *(const struct mv_row *const *)a;
	const struct mv_row *y = *(const struct mv_row *const *)b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	if (x->key != y->key)
		return strcmp(x->key, y->key);
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int find(const struct metview *mv, const char *name)
{
	for (int i = 0; i < mv->nr; i++)
		if (!strcmp(mv->names[i], name))
			return i + 1;	/* (its index in v[]) */
	return 0;
}

/* What the counts say, beside them */
struct derived {
	int cyc, ins;			/* IPC */
	int miss[MV_MAX];		/* misses per 1000 instructions */
	int nr_miss;
	int fp[MV_MAX];			/* FP operations by width: shares */
	int nr_fp;
	int rate[MV_MAX];		/* per CPU-second */
	int nr_rate;
	int per_call[MV_MAX];		/* per execution (--sort prim; op: --op-calls) */
	int nr_per_call;
};

static void derive(const struct metview *mv, struct derived *d)
{
	memset(d, 0, sizeof(*d));
	d->cyc = find(mv, "cycles");
	d->ins = find(mv, "instructions");
	for (int i = 0; i < mv->nr; i++) {
		const char *n = mv->names[i];

		if (strstr(n, "misses") && d->ins)
			d->miss[d->nr_miss++] = i + 1;
		if (!strncmp(n, "fp-", 3))
			d->fp[d->nr_fp++] = i + 1;
		if (mv->clock && (!strcmp(n, "page-faults") || !strcmp(n, "major-faults") ||
				  !strcmp(n, "context-switches")))
			d->rate[d->nr_rate++] = i + 1;
		if ((mv->kind == DLVIEW_PRIM || (mv->kind == DLVIEW_OP && mv->opc.present)) &&
		    (!strcmp(n, "page-faults") || !strcmp(n, "context-switches")))
			d->per_call[d->nr_per_call++] = i + 1;
	}
}

static void put_row(const struct metview *mv, const struct derived *d, struct tabw *t,
		    const char *key, uint32_t tid, const char *comm, uint64_t samples,
		    uint64_t calls, const uint64_t *v)
{
	uint64_t fp = 0;

	tabw_row(t);
	if (samples == UINT64_MAX)
		tabw_none(t);
	else
		tabw_u64(t, samples);
	if (mv->clock)
		tabw_num(t, v[0] / 1e6, 1);
	for (int i = 1; i <= mv->nr; i++)
		tabw_u64(t, v[i]);
	for (int k = 0; k < d->nr_rate; k++) {
		if (v[0])
			tabw_num(t, v[d->rate[k]] * 1e9 / (double)v[0], 0);
		else
			tabw_none(t);
	}
	if (d->nr_per_call) {
		if (calls)
			tabw_u64(t, calls);
		else
			tabw_none(t);
	}
	for (int k = 0; k < d->nr_per_call; k++) {
		if (calls)
			tabw_num(t, (double)v[d->per_call[k]] / (double)calls, 2);
		else
			tabw_none(t);
	}
	if (d->cyc && d->ins) {
		if (v[d->cyc])
			tabw_num(t, (double)v[d->ins] / (double)v[d->cyc], 2);
		else
			tabw_none(t);
	}
	for (int k = 0; k < d->nr_miss; k++) {
		if (v[d->ins])
			tabw_num(t, v[d->miss[k]] * 1000.0 / (double)v[d->ins], 2);
		else
			tabw_none(t);
	}
	for (int k = 0; k < d->nr_fp; k++)
		fp += v[d->fp[k]];
	for (int k = 0; k < d->nr_fp; k++) {
		if (fp)
			tabw_num(t, 100.0 * v[d->fp[k]] / (double)fp, 1);
		else
			tabw_none(t);
	}
	if (mv->kind == DLVIEW_THREAD || mv->kind == DLVIEW_PROCESS) {
		if (tid)
			tabw_u64(t, tid);
		else
			tabw_none(t);
		tabw_str(t, comm ? comm : key);
	} else {
		tabw_str(t, key);
	}
}

static void set_scales(struct metview *mv)
{
	for (int i = 0; i <= mv->nr; i++) {
		mv->scale[i] = mv->have_ran ? scale_of(mv->ref, mv->ran[i]) : 1;
		if (mv->scale[i] != 1)
			mv->scaled = 1;
	}
}

double metview_meta_scale(const struct recmeta *m, int at)
{
	const char *p = recmeta_get(m, "metrics_ran");
	uint64_t ref, ran[MV_MAX + 1] = { 0 };

	if (!p || at < 0 || at > MV_MAX || !parse_ran(p, &ref, ran, at + 1))
		return 1;
	return scale_of(ref, ran[at]);
}

static void scale_counts(const struct metview *mv, const uint64_t *v, uint64_t *out)
{
	for (int i = 0; i <= mv->nr; i++)
		out[i] = mv->scale[i] == 1 ? v[i] : (uint64_t)((double)v[i] * mv->scale[i] + 0.5);
}

static double ran_share(const struct metview *mv, int i)
{
	return mv->ref ? (double)mv->ran[i] / (double)mv->ref : 0;
}

/* The lines on multiplexing: the counters that never ran, those scaled */
static void say_scales(const struct metview *mv, FILE *out)
{
	const char *of = mv->system_wide ? "the cpus' time" : "their threads' CPU time";
	int never = 0, some = 0;

	if (!mv->have_ran)
		return;
	for (int i = 1; i <= mv->nr; i++)
		if (!mv->ran[i])
			fprintf(out, "%s%s", never++ ? ", " : "# never counted: ", mv->names[i - 1]);
	if (never)
		fprintf(out, " (not once on the PMU: other users held the counters it needs, "
			"e.g. the NMI watchdog: sysctl kernel.nmi_watchdog=0)\n");
	for (int i = 1; i <= mv->nr; i++)
		if (mv->scale[i] != 1)
			fprintf(out, "%s%s %.1f%%", some++ ? ", " : "# multiplexed: counted ",
				mv->names[i - 1], 100 * ran_share(mv, i));
	if (some)
		fprintf(out, " of %s (the PMU was shared with other users): their counts "
			"scaled up by the time they missed, estimates\n", of);
	if (mv->scale[0] != 1)
		fprintf(out, "# the sampling event ran %.1f%% of %s, with the counters: the "
			"samples cover that share of it, CPU ms scaled up\n",
			100 * ran_share(mv, 0), of);
}

static const char *key_head(int kind, const char **json)
{
	switch (kind) {
	case DLVIEW_FAMILY: *json = "family"; return "Family";
	case DLVIEW_OP: *json = "op"; return "Operator";
	case DLVIEW_PRIM: *json = "prim"; return "Primitive";
	case DLVIEW_LINE: *json = "line"; return "Python line";
	case DLVIEW_THREAD: *json = "comm"; return "Thread";
	case DLVIEW_PROCESS: *json = "comm"; return "Command";
	default: *json = "symbol"; return "Symbol";
	}
}

void metview_print(struct metview *mv, FILE *out, enum out_format fmt, size_t limit,
		   int filtered)
{
	struct tabw *t = tabw_new();
	struct derived d;
	const char *kjson, *khead = key_head(mv->kind, &kjson);
	char **heads = xcalloc(3 * MV_MAX + 8, sizeof(*heads));
	size_t nh = 0, shown;
	uint64_t rest[MV_MAX + 1], v[MV_MAX + 1], total[MV_MAX + 1];
	int remainder = 0;

	if (mv->per_cpu)
		mv->clock = 0;	/* (a cpu's clock runs through its idle time: no CPU time) */
	derive(mv, &d);
	set_scales(mv);
	scale_counts(mv, mv->total, total);
	tabw_col(t, "Samples", "samples", TABW_NUM);
	if (mv->clock)
		tabw_col(t, "CPU ms", "cpu_ms", TABW_NUM);
	for (int i = 0; i < mv->nr; i++)
		tabw_col(t, mv->names[i], mv->names[i], TABW_NUM);
	for (int k = 0; k < d.nr_rate; k++) {
		heads[nh] = xasprintf("%s/s", mv->names[d.rate[k] - 1]);
		tabw_col(t, heads[nh], heads[nh], TABW_NUM);
		nh++;
	}
	if (d.nr_per_call)
		tabw_col(t, "Calls", "calls", TABW_NUM);
	for (int k = 0; k < d.nr_per_call; k++) {
		heads[nh] = xasprintf("%s/call", mv->names[d.per_call[k] - 1]);
		tabw_col(t, heads[nh], heads[nh], TABW_NUM);
		nh++;
	}
	if (d.cyc && d.ins)
		tabw_col(t, "IPC", "ipc", TABW_NUM);
	for (int k = 0; k < d.nr_miss; k++) {
		heads[nh] = xasprintf("%s/1k-instr", mv->names[d.miss[k] - 1]);
		tabw_col(t, heads[nh], heads[nh], TABW_NUM);
		nh++;
	}
	for (int k = 0; k < d.nr_fp; k++) {
		heads[nh] = xasprintf("%s%%", mv->names[d.fp[k] - 1]);
		heads[nh + 1] = xasprintf("%s_pct", mv->names[d.fp[k] - 1]);
		tabw_col(t, heads[nh], heads[nh + 1], TABW_NUM);
		nh += 2;
	}
	if (mv->kind == DLVIEW_THREAD || mv->kind == DLVIEW_PROCESS)
		tabw_col(t, mv->kind == DLVIEW_THREAD ? "TID" : "PID",
			 mv->kind == DLVIEW_THREAD ? "tid" : "pid", TABW_NUM);
	tabw_col(t, khead, kjson, TABW_TEXT);

	if (mv->nr_rows)
		qsort(mv->list, mv->nr_rows, sizeof(*mv->list), cmp_row);
	shown = limit && limit < mv->nr_rows ? limit : mv->nr_rows;
	for (size_t i = 0; i < shown; i++) {
		scale_counts(mv, mv->list[i]->v, v);
		put_row(mv, &d, t, mv->list[i]->key, mv->list[i]->tid, NULL, mv->list[i]->samples,
			mv->list[i]->calls, v);
	}
	/* what no sample took: the counts after each thread's last sample on a cpu, and
	 * those of threads that never had one */
	if (mv->have_total && !filtered) {
		for (int i = 0; i <= mv->nr; i++)
			rest[i] = mv->total[i] > mv->sum[i] ? mv->total[i] - mv->sum[i] : 0;
		if (mv->system_wide)
			rest[0] = 0;	/* (a cpu's clock counts its idle time, not sampled) */
		remainder = 1;
		scale_counts(mv, rest, v);
		put_row(mv, &d, t, rest_name(mv), 0, rest_name(mv), UINT64_MAX, 0, v);
	}

	if (fmt == OUT_JSON) {
		struct json j;

		json_init(&j, out, JSON_SPACED);
		json_obj(&j);
		json_karr(&j, "metrics");
		for (int i = 0; i < mv->nr; i++)
			json_str(&j, mv->names[i] ? mv->names[i] : "");
		json_end(&j);
		json_kstr(&j, "mode", mv->events ? "events" : "group");
		if (mv->events) {
			json_kobj(&j, "periods");
			for (int i = 0; i < mv->nr; i++)
				json_ku64(&j, mv->names[i], mv->period[i]);
			json_end(&j);
			json_ku64(&j, "counter_samples", mv->counter_samples);
		}
		json_ku64(&j, "samples", mv->samples);
		json_ku64(&j, "switch_out_reads", mv->switch_outs);
		json_kbool(&j, "filtered", filtered);
		if (mv->have_total) {
			json_kobj(&j, "totals");
			for (int i = 0; i < mv->nr; i++)
				json_ku64(&j, mv->names[i], total[i + 1]);
			json_end(&j);
			json_ku64(&j, "enabled_ns", mv->enabled);
			json_ku64(&j, "running_ns", mv->running);
		}
		if (mv->have_ran) {
			/* each one's time on the PMU over its threads' CPU time (-a: the cpus'
			 * time); under 0.99 its counts (rows, totals) are scaled up */
			json_kobj(&j, "counted_share");
			json_knum(&j, "sampling_event", "%.6f", ran_share(mv, 0));
			for (int i = 0; i < mv->nr; i++)
				json_knum(&j, mv->names[i], "%.6f", ran_share(mv, i + 1));
			json_end(&j);
		}
		json_kbool(&j, "scaled", mv->scaled);
		json_key(&j, "rows");
		tabw_json(t, &j);
		json_end(&j);
		json_raw(&j, "\n");
	} else if (fmt == OUT_CSV) {
		tabw_print(t, out, OUT_CSV);
	} else {
		fprintf(out, "# metrics: ");
		for (int i = 0; i < mv->nr; i++)
			fprintf(out, "%s%s", i ? ", " : "", mv->names[i]);
		if (mv->events) {
			fprintf(out, ": each sampled on its own (");
			for (int i = 0; i < mv->nr; i++)
				fprintf(out, "%s%s every %llu", i ? ", " : "", mv->names[i],
					(unsigned long long)mv->period[i]);
			fprintf(out, "; %llu samples); a row gets the events of the samples taken "
				"in it, each counter's off by less than its period a stint\n",
				(unsigned long long)(mv->counter_samples + mv->switch_outs));
		} else if (mv->per_cpu)
			fprintf(out, ": every process (-a), read at each sample, per cpu; a row "
				"gets the counts of its cpu since the read before there, whichever "
				"thread ran\n");
		else
			fprintf(out, ": read %s, per thread and cpu (%llu reads); a row gets the "
				"counts up to each read since the one before\n", mv->switch_reads ?
				"at each sample and where a thread left the cpu" : "at each sample",
				(unsigned long long)(mv->samples + mv->switch_outs));
		if (mv->have_total) {
			fprintf(out, "# at the end:");
			for (int i = 0; i < mv->nr; i++)
				fprintf(out, "%s %s %llu (%.1f%% in the rows)", i ? "," : "",
					mv->names[i], (unsigned long long)total[i + 1],
					mv->total[i + 1] ? 100.0 * (double)mv->sum[i + 1] /
					(double)mv->total[i + 1] : 100.0);
			fputc('\n', out);
		}
		say_scales(mv, out);
		if (mv->kind == DLVIEW_FAMILY && (mv->switch_reads || mv->events))
			fprintf(out, "# %s goes to the wait family of its stack (wait-preempted, "
				"wait-gil, ...)\n", mv->events ? "a context switch" :
				"a read as a thread left the cpu");
		if (remainder && mv->events)
			fprintf(out, "# %s: what the counters counted short of a period's end, in "
				"each thread on each cpu\n", rest_name(mv));
		else if (remainder)
			fprintf(out, "# (after the last samples): counted after each thread's last "
				"read on a cpu, or in threads that had none\n");
		fputc('\n', out);
		tabw_print(t, out, OUT_TEXT);
		if (shown < mv->nr_rows)
			fprintf(out, "(%zu more rows: --limit 0 shows all)\n", mv->nr_rows - shown);
	}
	for (size_t i = 0; i < nh; i++)
		free(heads[i]);
	free(heads);
	tabw_free(t);
}
