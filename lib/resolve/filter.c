/* filter.c - which samples a reader counts (see filter.h). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "filter.h"
#include "frame.h"
#include "process.h"
#include "session.h"
#include "util.h"

/* "a,b,c" -> a malloc'd array of malloc'd strings; empty items are an error */
static int split(const char *opt, const char *s, char ***out, size_t *nr)
{
	const char *p = s;
	size_t alloc = 0;

	*out = NULL;
	*nr = 0;
	for (;;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (!len)
			return error("empty item in '--%s %s'", opt, s);
		ALLOC_GROW(*out, *nr + 1, alloc);
		(*out)[(*nr)++] = xstrndup(p, len);
		if (!e)
			return 0;
		p = e + 1;
	}
}

static int ids(const char *opt, const char *s, uint32_t **out, size_t *nr)
{
	char **items;
	size_t n;

	if (split(opt, s, &items, &n))
		return -1;
	*out = xcalloc(n, sizeof(**out));
	*nr = n;
	for (size_t i = 0; i < n; i++) {
		char *end;
		unsigned long v = strtoul(items[i], &end, 10);

		if (end == items[i] || *end || !v || v > 0x7fffffff) {
			error("bad id '%s' in '--%s %s'", items[i], opt, s);
			for (; i < n; i++)
				free(items[i]);
			free(items);
			return -1;
		}
		(*out)[i] = (uint32_t)v;
		free(items[i]);
	}
	free(items);
	return 0;
}

/* "1.5" or "10%" or "" (open: -1) */
static int time_end(const char *s, size_t len, double *v, int *pct)
{
	char buf[64], *end;

	if (!len) {
		*v = -1;
		return 0;
	}
	if (len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*v = strtod(buf, &end);
	if (end == buf || *v < 0)
		return -1;
	if (*end == '%') {
		*pct = 1;
		end++;
		if (*v > 100)
			return -1;
	}
	return *end ? -1 : 0;
}

static void add_desc(struct sample_filter *f, const char *opt, const char *val)
{
	size_t n = strlen(f->desc);

	if (val)
		snprintf(f->desc + n, sizeof(f->desc) - n, "%s--%s %s", n ? " " : "", opt, val);
}

int filter_init(struct sample_filter *f, const struct filter_args *a)
{
	memset(f, 0, sizeof(*f));
	f->t_start = f->t_end = -1;
	u64map_init(&f->kept);
	if (a->pid && ids("pid", a->pid, &f->pids, &f->nr_pids))
		return -1;
	if (a->tid && ids("tid", a->tid, &f->tids, &f->nr_tids))
		return -1;
	if (a->comm && split("comm", a->comm, &f->comms, &f->nr_comms))
		return -1;
	if (a->family && split("family", a->family, &f->families, &f->nr_families))
		return -1;
	if (a->op && split("op", a->op, &f->ops, &f->nr_ops))
		return -1;
	if (a->sym && split("sym", a->sym, &f->syms, &f->nr_syms))
		return -1;
	if (a->time) {
		const char *comma = strchr(a->time, ',');
		int p1 = 0, p2 = 0;

		if (!comma || time_end(a->time, (size_t)(comma - a->time), &f->t_start, &p1) ||
		    time_end(comma + 1, strlen(comma + 1), &f->t_end, &p2) ||
		    (f->t_start >= 0 && f->t_end >= 0 && p1 != p2) ||
		    (f->t_start >= 0 && f->t_end >= 0 && f->t_end < f->t_start))
			return error("bad '--time %s' (START,END: seconds from the first sample, "
				     "or percent of the run, e.g. 1.5,3 or 10%%,50%%; either may be "
				     "empty)", a->time);
		f->t_pct = p1 || p2;
	}
	add_desc(f, "pid", a->pid);
	add_desc(f, "tid", a->tid);
	add_desc(f, "comm", a->comm);
	add_desc(f, "time", a->time);
	add_desc(f, "family", a->family);
	add_desc(f, "op", a->op);
	add_desc(f, "sym", a->sym);
	return 0;
}

static void free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void filter_release(struct sample_filter *f)
{
	free(f->pids);
	free(f->tids);
	free_list(f->comms, f->nr_comms);
	free_list(f->families, f->nr_families);
	free_list(f->ops, f->nr_ops);
	free_list(f->syms, f->nr_syms);
	u64map_release(&f->kept);
}

int filter_active(const struct sample_filter *f)
{
	return f && f->desc[0];
}

static int has_id(const uint32_t *v, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == id)
			return 1;
	return 0;
}

static int globs_match(char *const *globs, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (s && !fnmatch(globs[i], s, 0))
			return 1;
	return 0;
}

int filter_thread(const struct sample_filter *f, uint32_t pid, uint32_t tid, const char *comm,
		  uint64_t time)
{
	if (f->nr_pids && !has_id(f->pids, f->nr_pids, pid))
		return 0;
	if (f->nr_tids && !has_id(f->tids, f->nr_tids, tid))
		return 0;
	if (f->nr_comms && !globs_match(f->comms, f->nr_comms, comm))
		return 0;
	if ((f->t_start >= 0 || f->t_end >= 0) && f->have_bounds) {
		double span = (double)(f->last_time - f->first_time);
		double t = (double)(time - f->first_time);	/* ns from the first sample */
		double lo = f->t_start, hi = f->t_end;

		if (time < f->first_time)
			t = 0;
		if (f->t_pct) {
			lo = lo >= 0 ? lo / 100.0 * span : -1;
			hi = hi >= 0 ? hi / 100.0 * span : -1;
		} else {
			lo = lo >= 0 ? lo * 1e9 : -1;
			hi = hi >= 0 ? hi * 1e9 : -1;
		}
		if ((lo >= 0 && t < lo) || (hi >= 0 && t > hi))
			return 0;
	}
	return 1;
}

static uint64_t sample_key(uint32_t tid, uint64_t time)
{
	return hash_u64(time ^ ((uint64_t)tid << 40) ^ ((uint64_t)tid >> 24));
}

int filter_kept(const struct sample_filter *f, uint32_t tid, uint64_t time)
{
	return u64map_get(&f->kept, sample_key(tid, time)) != NULL;
}

void filter_keep(struct sample_filter *f, uint32_t tid, uint64_t time)
{
	u64map_put(&f->kept, sample_key(tid, time), (void *)1);
}

int filter_attr_match(const struct sample_filter *f, const char *family, const char *op,
		      const char *op_name, const struct frame *frames, size_t nr)
{
	size_t i;

	if (f->nr_syms) {
		for (i = 0; i < nr; i++)
			if (globs_match(f->syms, f->nr_syms, frames[i].sym))
				break;
		if (i == nr)
			return 0;
	}
	if (f->nr_families && !globs_match(f->families, f->nr_families, family))
		return 0;
	/* --op GLOB: the operator as the tables name it ("aten::add") or with its overload
	 * ("aten::add.Tensor") */
	if (f->nr_ops && !globs_match(f->ops, f->nr_ops, op) &&
	    !globs_match(f->ops, f->nr_ops, op_name))
		return 0;
	return 1;
}

static int bounds_sample(void *ctx, const struct dlp_sample *s)
{
	struct sample_filter *f = ctx;

	if (!f->have_bounds || s->time < f->first_time)
		f->first_time = s->time;
	if (!f->have_bounds || s->time > f->last_time)
		f->last_time = s->time;
	f->have_bounds = 1;
	return 0;
}

int filter_bounds(struct sample_filter *f, const char *path)
{
	static const struct session_ops ops = { .sample = bounds_sample };
	struct session_info info;

	f->have_bounds = 0;
	if (f->t_start < 0 && f->t_end < 0)
		return 0;
	return session_process(path, &ops, f, &info) < 0 ? -1 : 0;
}

int filter_reader_inputs(int argc, const char **argv, const char **input,
			 const char ***inputs)
{
	if (argc && *input) {
		error("give the recordings as -i FILE or as FILE..., not both");
		return DLP_USAGE;
	}
	if (!*input)
		*input = "dlprof.data";
	*inputs = argc ? argv : input;
	if (!argc)
		argc = 1;
	for (int k = 0; k < argc; k++)
		if (access((*inputs)[k], R_OK)) {
			error("cannot read '%s': %m", (*inputs)[k]);
			return DLP_FAILED;
		}
	return argc;
}
