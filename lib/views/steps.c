/* steps.c - training steps found in the samples (steps.h). */
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "filter.h"
#include "json.h"
#include "output.h"
#include "profile.h"
#include "steps.h"
#include "util.h"

struct st_sample {
	uint64_t time;
	uint32_t pid, tid;
	const char *family;
	int has;		/* FUNC on the stack */
	int py_known;		/* the stack has Python frames (a Python FUNC's absence means
				   something only then) */
	int py_match;		/* FUNC matched a Python frame */
	int64_t pos;		/* where in FUNC: its line, or its return address */
};

struct steps {
	char *func;
	struct st_sample *s;
	size_t nr, alloc;
	struct step *st;
	size_t nr_st, alloc_st;
	const char **fams;
	size_t nr_fams, alloc_fams;
	uint64_t *counts;	/* nr_st x nr_fams */
	uint32_t tid;
};

struct steps *steps_new(const char *func)
{
	struct steps *sp = xcalloc(1, sizeof(*sp));

	sp->func = xstrdup(func);
	return sp;
}

void steps_free(struct steps *sp)
{
	if (!sp)
		return;
	free(sp->func);
	free(sp->s);
	free(sp->st);
	free(sp->fams);
	free(sp->counts);
	free(sp);
}

/* "step" matches "step" and "main.<locals>.step" (a qualified name's last part) */
static int name_matches(const char *name, size_t n, const char *func)
{
	size_t fl = strlen(func);

	if (n == fl)
		return !memcmp(name, func, n);
	return n > fl && name[n - fl - 1] == '.' && !memcmp(name + n - fl, func, fl);
}

/* Is frame f FUNC; where in it? */
static int frame_pos(const struct steps *sp, const struct frame *f, int64_t *pos)
{
	if (f->flags & FRAME_PYTHON) {
		const char *paren = strstr(f->sym, " (");
		const char *colon = strrchr(f->sym, ':');

		if (!name_matches(f->sym, paren ? (size_t)(paren - f->sym) : strlen(f->sym), sp->func))
			return 0;
		*pos = colon ? strtol(colon + 1, NULL, 10) : 0;
		return 1;
	}
	if (strcmp(f->sym, sp->func))
		return 0;
	*pos = (int64_t)f->ip;
	return 1;
}

void steps_sample(struct steps *sp, const struct dlp_sample *s, const struct frame *frames,
		  size_t nr, const char *family)
{
	struct st_sample *x;

	ALLOC_GROW(sp->s, sp->nr + 1, sp->alloc);
	x = &sp->s[sp->nr++];
	memset(x, 0, sizeof(*x));
	x->time = s->time;
	x->pid = s->pid;
	x->tid = s->tid;
	x->family = family;
	/* the outermost FUNC frame: recursion and nested calls belong to its step */
	for (size_t i = nr; i-- > 0;) {
		if (frames[i].flags & FRAME_PYTHON)
			x->py_known = 1;
		if (!x->has && frame_pos(sp, &frames[i], &x->pos)) {
			x->has = 1;
			x->py_match = !!(frames[i].flags & FRAME_PYTHON);
		}
	}
}

static int cmp_thread_time(const void *a, const void *b)
{
	const struct st_sample *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static int cmp_pid_time(const void *a, const void *b)
{
	const struct st_sample *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->time < y->time ? -1 : x->time > y->time;
}

static size_t family_index(struct steps *sp, const char *family)
{
	size_t i;

	for (i = 0; i < sp->nr_fams; i++)
		if (sp->fams[i] == family)
			return i;
	ALLOC_GROW(sp->fams, sp->nr_fams + 1, sp->alloc_fams);
	sp->fams[sp->nr_fams++] = family;
	return i;
}

size_t steps_finish(struct steps *sp, uint64_t period_ns)
{
	size_t i, j, best = 0;
	int python = 0;

	if (!sp->nr)
		return 0;
	for (i = 0; i < sp->nr && !python; i++)
		python = sp->s[i].py_match;
	qsort(sp->s, sp->nr, sizeof(*sp->s), cmp_thread_time);
	for (i = 0; i < sp->nr; i = j) {
		size_t first_step = sp->nr_st, cur = (size_t)-1;

		size_t last = (size_t)-1;	/* the step's last sample that had FUNC */

		for (j = i; j < sp->nr && sp->s[j].pid == sp->s[i].pid && sp->s[j].tid == sp->s[i].tid; j++) {
			const struct st_sample *x = &sp->s[j];
			int boundary;

			/* a sample whose Python stack was not read tells nothing */
			if (python && !x->py_known)
				continue;
			if (!x->has) {
				if (cur != (size_t)-1)
					sp->st[cur].end = sp->s[last].time + period_ns < x->time ?
							  sp->s[last].time + period_ns : x->time;
				cur = (size_t)-1;
				continue;
			}
			boundary = cur == (size_t)-1 || x->pos < sp->s[last].pos;
			last = j;
			if (!boundary)
				continue;
			if (cur != (size_t)-1)
				sp->st[cur].end = x->time;	/* the next step starts here */
			ALLOC_GROW(sp->st, sp->nr_st + 1, sp->alloc_st);
			cur = sp->nr_st++;
			memset(&sp->st[cur], 0, sizeof(sp->st[cur]));
			sp->st[cur].pid = x->pid;
			sp->st[cur].tid = x->tid;
			sp->st[cur].start = x->time;
		}
		if (cur != (size_t)-1)
			sp->st[cur].end = sp->s[last].time + period_ns;
		if (sp->nr_st - first_step > best) {
			best = sp->nr_st - first_step;
			sp->tid = sp->s[i].tid;
		}
	}
	/* every sample of the process inside a step's span counts to it */
	qsort(sp->s, sp->nr, sizeof(*sp->s), cmp_pid_time);
	for (i = 0; i < sp->nr; i++)
		family_index(sp, sp->s[i].family);
	sp->counts = xcalloc((sp->nr_st ? sp->nr_st : 1) * (sp->nr_fams ? sp->nr_fams : 1),
			     sizeof(*sp->counts));
	for (size_t k = 0; k < sp->nr_st; k++) {
		struct step *st = &sp->st[k];
		size_t lo = 0, hi = sp->nr;

		while (lo < hi) {	/* the first sample of the pid at or after start */
			size_t mid = (lo + hi) / 2;

			if (sp->s[mid].pid < st->pid ||
			    (sp->s[mid].pid == st->pid && sp->s[mid].time < st->start))
				lo = mid + 1;
			else
				hi = mid;
		}
		for (i = lo; i < sp->nr && sp->s[i].pid == st->pid && sp->s[i].time < st->end; i++) {
			st->samples++;
			sp->counts[k * sp->nr_fams + family_index(sp, sp->s[i].family)]++;
		}
	}
	return sp->nr_st;
}

const struct step *steps_get(const struct steps *sp, size_t *nr)
{
	*nr = sp->nr_st;
	return sp->st;
}

uint32_t steps_tid(const struct steps *sp)
{
	return sp->tid;
}

uint64_t steps_family_samples(const struct steps *sp, size_t i, const char *family)
{
	for (size_t f = 0; f < sp->nr_fams; f++)
		if (sp->fams[f] == family)
			return i < sp->nr_st ? sp->counts[i * sp->nr_fams + f] : 0;
	return 0;
}

size_t steps_families(const struct steps *sp, const char ***out)
{
	*out = sp->fams;
	return sp->nr_fams;
}

/* ---- report --steps FUNC ---- */

static int sr_sample(void *ctx, const struct attributed *as)
{
	steps_sample(ctx, as->s, as->frames, as->nr, as->a->family);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The step whose duration is the median one (the lower middle). */
static size_t median_step(const struct step *st, size_t n)
{
	uint64_t *d = xcalloc(n, sizeof(*d)), med;
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = st[i].end - st[i].start;
	qsort(d, n, sizeof(*d), cmp_u64);
	med = d[(n - 1) / 2];
	free(d);
	for (i = 0; i < n && st[i].end - st[i].start != med; i++)
		;
	return i < n ? i : 0;
}

struct fam_row {
	const char *family;
	uint64_t slow, med;
};

static int cmp_fam_row(const void *a, const void *b)
{
	const struct fam_row *x = a, *y = b;
	int64_t dx = (int64_t)x->slow - (int64_t)x->med, dy = (int64_t)y->slow - (int64_t)y->med;

	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->family, y->family);
}

int steps_report(const char *input, const char *symfs, const char *func,
		 struct family_rules *rules, struct sample_filter *filt, enum out_format format,
		 int limit, FILE *out)
{
	struct steps *sp = steps_new(func);
	struct attr_view v = { .sample = sr_sample, .ctx = sp };
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	const struct step *s;
	const char **fams;
	struct fam_row *rows;
	size_t n, nt = 0, slow = 0, med, fast = 0, nf, shown = 0, k;
	uint64_t period;
	uint32_t tid;
	int ret;
	char a[32], b[32], m[32];

	memset(&po, 0, sizeof(po));
	po.symfs = symfs;
	ret = attr_stream_run(input, &po, filt, rules, &v, &st, &info);
	if (ret < 0)
		goto out;
	period = st.sample_period_ns ? st.sample_period_ns : 1000000;
	steps_finish(sp, period);
	s = steps_get(sp, &n);
	tid = steps_tid(sp);
	/* the steps of the thread that has the most; the others are other loops */
	{
		struct step *mine = xcalloc(n ? n : 1, sizeof(*mine));

		for (size_t i = 0; i < n; i++)
			if (s[i].tid == tid)
				mine[nt++] = s[i];
		if (nt < 2) {
			free(mine);
			ret = error("'%s': %s: %s", input, func, nt ? "only one step: a step "
				    "function must run more than once" : "on no sample's stack (a Python "
				    "function's name or qualified name, or a native symbol)");
			goto out;
		}
		for (size_t i = 0; i < nt; i++) {
			uint64_t d = mine[i].end - mine[i].start;

			if (d > mine[slow].end - mine[slow].start)
				slow = i;
			if (d < mine[fast].end - mine[fast].start)
				fast = i;
		}
		free(mine);
	}
	/* indexes into s: the thread's steps are consecutive there */
	for (k = 0; k < n && s[k].tid != tid; k++)
		;
	s += k;
	med = median_step(s, nt);
	nf = steps_families(sp, &fams);
	rows = xcalloc(nf ? nf : 1, sizeof(*rows));
	for (size_t f = 0; f < nf; f++) {
		rows[f].family = fams[f];
		rows[f].slow = steps_family_samples(sp, k + slow, fams[f]) * period;
		rows[f].med = steps_family_samples(sp, k + med, fams[f]) * period;
	}
	qsort(rows, nf, sizeof(*rows), cmp_fam_row);
	if (format == OUT_JSON) {
		struct json j;

		json_init(&j, out, JSON_COMPACT);
		json_obj(&j);
		json_kstr(&j, "func", func ? func : "");
		json_ku64(&j, "pid", s[0].pid);
		json_ku64(&j, "tid", tid);
		json_ku64(&j, "period_ns", period);
		json_karr(&j, "steps");
		for (size_t i = 0; i < nt; i++) {
			json_obj(&j);
			json_ku64(&j, "index", i);
			json_ku64(&j, "start_ns", s[i].start);
			json_ku64(&j, "dur_ns", s[i].end - s[i].start);
			json_ku64(&j, "samples", s[i].samples);
			json_end(&j);
		}
		json_end(&j);
		json_ku64(&j, "min_index", fast);
		json_ku64(&j, "median_index", med);
		json_ku64(&j, "max_index", slow);
		json_karr(&j, "families");
		for (size_t f = 0; f < nf; f++) {
			json_obj(&j);
			json_kstr(&j, "family", rows[f].family ? rows[f].family : "");
			json_ku64(&j, "slowest_ns", rows[f].slow);
			json_ku64(&j, "median_ns", rows[f].med);
			json_end(&j);
		}
		json_end(&j);
		json_end(&j);
		json_raw(&j, "\n");
	} else {
		output_duration(a, sizeof(a), s[fast].end - s[fast].start);
		output_duration(m, sizeof(m), s[med].end - s[med].start);
		output_duration(b, sizeof(b), s[slow].end - s[slow].start);
		fprintf(out, "# file:    %s\n# steps:   %zu of %s on thread %u (sampled: a step starts "
			"where %s starts over)\n", input, nt, func, tid, func);
		fprintf(out, "# time:    min %s (step %zu), median %s (step %zu), max %s (step %zu, "
			"at %.3f s)\n\n", a, fast + 1, m, med + 1, b, slow + 1,
			(s[slow].start - s[0].start) / 1e9);
		fprintf(out, "The slowest step against the median one, by family (the samples of every "
			"thread of the process\nin the step, each thread's time counted):\n\n");
		fprintf(out, "%-24s %12s %12s %12s\n", "Family", "slowest", "median", "change");
		for (size_t f = 0; f < nf; f++) {
			char d[32];
			int64_t delta = (int64_t)rows[f].slow - (int64_t)rows[f].med;

			if (!rows[f].slow && !rows[f].med)
				continue;
			if (limit > 0 && shown++ >= (size_t)limit)
				break;
			output_duration(a, sizeof(a), rows[f].slow);
			output_duration(m, sizeof(m), rows[f].med);
			output_duration(d, sizeof(d), (uint64_t)(delta < 0 ? -delta : delta));
			fprintf(out, "%-24s %12s %12s %c%11s\n", rows[f].family, a, m,
				delta < 0 ? '-' : '+', d);
		}
		fputs("\nSteps (start s, duration):\n", out);
		for (size_t i = 0; i < nt; i++) {
			output_duration(a, sizeof(a), s[i].end - s[i].start);
			fprintf(out, "  %4zu %9.3f %10s%s\n", i + 1, (s[i].start - s[0].start) / 1e9, a,
				i == slow ? "  slowest" : i == med ? "  median" : "");
		}
	}
	free(rows);
	ret = ret == 1 || info.bad_records ? 1 : 0;
out:
	steps_free(sp);
	return ret;
}
