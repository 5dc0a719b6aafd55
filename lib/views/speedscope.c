/* speedscope.c - the profile in speedscope's file format (speedscope.h). */
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "filter.h"
#include "json.h"
#include "speedscope.h"
#include "util.h"

struct ss_frame {
	const char *name, *file;	/* pooled; file NULL when none */
	int line;			/* 0: none */
};

/* A thread's profile: its samples in time order, consecutive equal stacks merged */
struct ss_profile {
	uint32_t pid, tid;
	const char *comm;
	uint32_t *stacks;	/* each: count, then count frame ids, root first */
	size_t len, alloc;
	uint64_t *weights;	/* per stack entry */
	size_t nr, alloc_w;
	size_t last;		/* offset of the last stack in stacks */
	uint64_t total;
};

struct speedscope {
	struct strpool pool;
	struct u64map frame_ids;	/* pooled "name\1file\1line" -> id + 1 */
	struct ss_frame *frames;
	size_t nr_frames, alloc_frames;
	struct ss_profile *profiles;
	size_t nr_profiles, alloc_profiles;
	struct strbuf key;
	uint32_t *scratch;
	size_t alloc_scratch;
};

struct speedscope *speedscope_new(void)
{
	struct speedscope *ss = xcalloc(1, sizeof(*ss));

	strpool_init(&ss->pool);
	u64map_init(&ss->frame_ids);
	return ss;
}

void speedscope_free(struct speedscope *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->nr_profiles; i++) {
		free(ss->profiles[i].stacks);
		free(ss->profiles[i].weights);
	}
	free(ss->profiles);
	free(ss->frames);
	free(ss->scratch);
	strbuf_release(&ss->key);
	u64map_release(&ss->frame_ids);
	strpool_release(&ss->pool);
	free(ss);
}

/* A frame's speedscope identity: its function, file and line (Python), or its symbol
 * and library. */
static uint32_t frame_id(struct speedscope *ss, const struct frame *f)
{
	const char *name = f->sym ? f->sym : "[unknown]", *file = f->dso_path ? f->dso_path : f->dso;
	char fn[1024];
	int line = 0;
	void **slot;

	if (f->flags & FRAME_PYTHON) {
		/* "qualname (file.py:LINE)": the function, and the line apart */
		const char *open = strrchr(name, '('), *colon = open ? strrchr(open, ':') : NULL;

		if (open && colon && open > name + 1) {
			snprintf(fn, sizeof(fn), "%.*s", (int)(open - 1 - name), name);
			line = atoi(colon + 1);
			name = fn;
		}
	}
	strbuf_reset(&ss->key);
	strbuf_addf(&ss->key, "%s\1%s\1%d", name, file ? file : "", line);
	slot = u64map_slot(&ss->frame_ids, (uintptr_t)strpool_intern(&ss->pool, ss->key.buf));
	if (!*slot) {
		ALLOC_GROW(ss->frames, ss->nr_frames + 1, ss->alloc_frames);
		ss->frames[ss->nr_frames].name = strpool_intern(&ss->pool, name);
		ss->frames[ss->nr_frames].file = file ? strpool_intern(&ss->pool, file) : NULL;
		ss->frames[ss->nr_frames].line = line;
		*slot = (void *)(uintptr_t)++ss->nr_frames;
	}
	return (uint32_t)((uintptr_t)*slot - 1);
}

static struct ss_profile *get_profile(struct speedscope *ss, uint32_t pid, uint32_t tid)
{
	for (size_t i = ss->nr_profiles; i-- > 0;)
		if (ss->profiles[i].tid == tid && ss->profiles[i].pid == pid)
			return &ss->profiles[i];
	ALLOC_GROW(ss->profiles, ss->nr_profiles + 1, ss->alloc_profiles);
	memset(&ss->profiles[ss->nr_profiles], 0, sizeof(ss->profiles[0]));
	ss->profiles[ss->nr_profiles].pid = pid;
	ss->profiles[ss->nr_profiles].tid = tid;
	return &ss->profiles[ss->nr_profiles++];
}

void speedscope_add(struct speedscope *ss, uint32_t pid, uint32_t tid, const char *comm,
		    const struct frame *frames, size_t nr, uint64_t weight)
{
	struct ss_profile *p = get_profile(ss, pid, tid);
	size_t n = 0;

	if (comm)
		p->comm = strpool_intern(&ss->pool, comm);
	ALLOC_GROW(ss->scratch, nr + 1, ss->alloc_scratch);
	for (size_t i = nr; i-- > 0;)	/* root first */
		ss->scratch[n++] = frame_id(ss, &frames[i]);
	p->total += weight;
	/* the same stack as the thread's previous sample: one entry, weights added */
	if (p->nr && p->stacks[p->last] == n &&
	    !memcmp(p->stacks + p->last + 1, ss->scratch, n * sizeof(uint32_t))) {
		p->weights[p->nr - 1] += weight;
		return;
	}
	ALLOC_GROW(p->stacks, p->len + n + 1, p->alloc);
	p->last = p->len;
	p->stacks[p->len++] = (uint32_t)n;
	memcpy(p->stacks + p->len, ss->scratch, n * sizeof(uint32_t));
	p->len += n;
	ALLOC_GROW(p->weights, p->nr + 1, p->alloc_w);
	p->weights[p->nr++] = weight;
}

static int cmp_profile(const void *a, const void *b)
{
	const struct ss_profile *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int speedscope_write(struct speedscope *ss, FILE *out, const char *name, int time_unit)
{
	struct json j;

	if (ss->nr_profiles)
		qsort(ss->profiles, ss->nr_profiles, sizeof(*ss->profiles), cmp_profile);
	json_init(&j, out, JSON_SPACED);
	json_obj(&j);
	json_kstr(&j, "$schema", "https://www.speedscope.app/file-format-schema.json");
	json_kstr(&j, "exporter", "dlprof");
	json_kstr(&j, "name", name ? name : "dlprof");
	json_ku64(&j, "activeProfileIndex", 0);
	json_kobj(&j, "shared");
	json_karr(&j, "frames");
	for (size_t i = 0; i < ss->nr_frames; i++) {
		json_pre(&j, "\n");
		json_obj(&j);
		json_kstr(&j, "name", ss->frames[i].name ? ss->frames[i].name : "");
		if (ss->frames[i].file)
			json_kstr(&j, "file", ss->frames[i].file);
		if (ss->frames[i].line)
			json_ki64(&j, "line", ss->frames[i].line);
		json_end(&j);
	}
	json_raw(&j, "\n");
	json_end(&j);
	json_end(&j);
	json_karr(&j, "profiles");
	for (size_t i = 0; i < ss->nr_profiles; i++) {
		const struct ss_profile *p = &ss->profiles[i];
		char pname[160];
		size_t off = 0;

		snprintf(pname, sizeof(pname), "%s (pid %u, tid %u)", p->comm ? p->comm : "?",
			 p->pid, p->tid);
		json_pre(&j, "\n");
		json_obj(&j);
		json_kstr(&j, "type", "sampled");
		json_kstr(&j, "name", pname);
		json_kstr(&j, "unit", time_unit ? "nanoseconds" : "none");
		json_ku64(&j, "startValue", 0);
		json_ku64(&j, "endValue", p->total);
		/* the stacks and weights as compact as a stack is deep */
		json_karr(&j, "samples");
		json_layout(&j, JSON_COMPACT);
		for (size_t k = 0; k < p->nr; k++) {
			uint32_t n = p->stacks[off++];

			json_arr(&j);
			for (uint32_t f = 0; f < n; f++)
				json_u64(&j, p->stacks[off + f]);
			json_end(&j);
			off += n;
		}
		json_end(&j);
		json_layout(&j, JSON_SPACED);
		json_karr(&j, "weights");
		json_layout(&j, JSON_COMPACT);
		for (size_t k = 0; k < p->nr; k++)
			json_u64(&j, p->weights[k]);
		json_end(&j);
		json_layout(&j, JSON_SPACED);
		json_end(&j);
	}
	json_raw(&j, "\n");
	json_end(&j);
	json_end(&j);
	json_raw(&j, "\n");
	return ferror(out) ? -1 : 0;
}

/* ---- dlprof speedscope ---- */

struct ss_ctx {
	struct speedscope *ss;
	int no_kernel;
	uint64_t period;	/* ns per sample of a clock event, else 0 (weight 1) */
	struct frame *buf;
	size_t alloc_buf;
	char *cmdline;
};

static int ss_sample(void *ctx, const struct attributed *as)
{
	struct ss_ctx *c = ctx;
	const struct dlp_sample *s = as->s;
	const struct frame *frames = as->frames;
	size_t nr = as->nr;

	if (c->no_kernel) {
		size_t n = 0;

		ALLOC_GROW(c->buf, nr + 1, c->alloc_buf);
		for (size_t i = 0; i < nr; i++)
			if (!(frames[i].flags & FRAME_KERNEL))
				c->buf[n++] = frames[i];
		frames = c->buf;
		nr = n;
	}
	speedscope_add(c->ss, s->pid, s->tid, machine_comm_at(as->m, s->pid, s->tid, s->time),
		       frames, nr, s->period ? s->period : 1);
	return 0;
}

static int ss_meta(void *ctx, const struct recmeta *m)
{
	struct ss_ctx *c = ctx;

	if (m->cmdline) {
		free(c->cmdline);
		c->cmdline = xstrdup(m->cmdline);
	}
	return 0;
}

int speedscope_run(const struct speedscope_opts *o)
{
	struct ss_ctx c;
	struct profile_opts po = o->po;
	struct profile_stats st;
	struct session_info sinfo;
	struct attr_view v = { .sample = ss_sample, .meta = ss_meta, .ctx = &c, .plain = 1 };
	FILE *out;
	int ret;

	memset(&c, 0, sizeof(c));
	c.ss = speedscope_new();
	c.no_kernel = o->no_kernel;
	memset(&sinfo, 0, sizeof(sinfo));
	ret = attr_stream_run(o->input, &po, o->filt, NULL, &v, &st, &sinfo);
	if (ret >= 0) {
		out = out_open(o->output, "w");
		if (!out || out_close(out, o->output,
				      speedscope_write(c.ss, out, c.cmdline ? c.cmdline : o->input,
						       st.sample_is_time) < 0) < 0)
			ret = -1;
		else if (strcmp(o->output, "-"))
			fprintf(stderr, "dlprof: wrote %s: %llu samples\n", o->output,
				(unsigned long long)st.samples);
	}
	speedscope_free(c.ss);
	free(c.buf);
	free(c.cmdline);
	return profile_result(ret, &sinfo);
}
