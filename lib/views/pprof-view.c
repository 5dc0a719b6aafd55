/* pprof-view.c - dlprof pprof: recordings as a pprof profile (pprof-view.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "memprof.h"
#include "pprof-view.h"
#include "pprof.h"
#include "readings.h"
#include "util.h"

struct pprof_ctx {
	const struct pprof_view_opts *o;
	struct pprof *pp;
	struct readings *rd;
	struct frame *buf;
	size_t alloc_buf;
	uint64_t mem_mean;	/* --memory: bytes per sample on average */
	char *mem_cmdline;	/* --memory: the recording's command */
};

/* --no-kernel: the stack without its kernel frames (in c->buf) */
static void user_only(struct pprof_ctx *c, const struct frame **frames, size_t *nr)
{
	size_t n = 0;

	if (!c->o->no_kernel)
		return;
	ALLOC_GROW(c->buf, *nr + 1, c->alloc_buf);
	for (size_t i = 0; i < *nr; i++)
		if (!((*frames)[i].flags & FRAME_KERNEL))
			c->buf[n++] = (*frames)[i];
	*frames = c->buf;
	*nr = n;
}

static int pp_sample(void *ctx, const struct attributed *as)
{
	struct pprof_ctx *c = ctx;
	const struct dlp_sample *s = as->s;
	const char *comm = machine_comm_at(as->m, s->pid, s->tid, s->time);
	const struct proc_entry *e = proc_table_find(machine_procs(as->m), s->pid);
	const struct reading *in = &c->rd->in[c->rd->cur];
	const struct frame *frames = as->frames;
	size_t nr = as->nr;

	user_only(c, &frames, &nr);
	/* the labels: its recording (several), host, process and the process's rank */
	pprof_set_source(c->pp, c->rd->nr > 1 ? in->file : NULL, in->host, s->pid,
			 e ? e->rank : NULL);
	pprof_add(c->pp, frames, nr, comm, s->tid, as->a->family, attr_op_name(as->a->op, NULL),
		  1, s->period);
	return 0;
}

static int pp_meta(void *ctx, const struct recmeta *m)
{
	struct pprof_ctx *c = ctx;

	readings_meta(c->rd, m);
	return 0;
}

/* --memory: each sampled allocation's stack (its tag: the pprof handle), its values
 * added once its free is known */
static uint32_t pp_mem_frames(void *ctx, const struct frame *frames, size_t nr,
			      const char *comm, uint32_t tid, const char *family)
{
	struct pprof_ctx *c = ctx;

	user_only(c, &frames, &nr);
	return pprof_add_deferred(c->pp, frames, nr, comm, tid, family, 0, 0);
}

static int pprof_memory(struct pprof_ctx *c, const char *input, struct profile_opts *po,
			struct profile_stats *st, struct session_info *sinfo)
{
	struct memprof *mp = memprof_new(c->o->rules, NULL);
	const struct mem_alloc *al;
	size_t nr;
	int ret;

	memprof_set_frames_cb(mp, pp_mem_frames, c);
	ret = memprof_run(mp, input, po, c->o->filt, st, sinfo);
	nr = ret >= 0 ? memprof_allocs(mp, &al) : 0;
	for (size_t i = 0; i < nr; i++) {
		double count = (double)al[i].weight / (double)(al[i].size ? al[i].size : 1);
		uint64_t v[4] = { (uint64_t)(count + 0.5), al[i].weight, 0, 0 };

		if (!al[i].free_time) {
			v[2] = v[0];
			v[3] = v[1];
		}
		pprof_add_memory(c->pp, al[i].tag, al[i].op, v);
	}
	if (ret >= 0 && memprof_cmdline(mp))
		c->mem_cmdline = xstrdup(memprof_cmdline(mp));
	c->mem_mean = memprof_summary(mp)->mean;
	memprof_free(mp);
	return ret;
}

/* One recording into the profile: its own attribution (its pids, threads and clock) */
static int pprof_one(void *ctx, struct readings *rd, size_t k, struct profile_stats *st,
		     struct session_info *info)
{
	struct pprof_ctx *c = ctx;
	struct profile_opts po = c->o->po;
	struct attr_view v = { .sample = pp_sample, .meta = pp_meta, .ctx = c };

	readings_opts(rd, &po);
	if (c->o->memory)
		return pprof_memory(c, rd->in[k].file, &po, st, info);
	return attr_stream_run(rd->in[k].file, &po, c->o->filt, c->o->rules, &v, st, info);
}

static int write_profile(struct pprof_ctx *c, const struct readings *rd)
{
	const struct pprof_view_opts *o = c->o;
	const char *cmdline = rd->cmdline ? rd->cmdline : c->mem_cmdline;
	struct pprof_info pi;
	FILE *out;
	char comment[512];

	memset(&pi, 0, sizeof(pi));
	/* one profile: the first event, and the longest recording's duration */
	pi.event = rd->st.event[0] ? rd->st.event : NULL;
	pi.event_is_time = rd->st.sample_is_time;
	pi.ns_per_sample = o->memory ? c->mem_mean : rd->st.sample_period_ns;
	pi.duration_ns = rd->duration_ns;
	snprintf(comment, sizeof(comment), "dlprof: %s%s", cmdline ? cmdline : o->inputs[0],
		 rd->nr > 1 ? " (and more recordings)" : "");
	pi.comment = comment;
	out = out_open(o->output, "wb");
	if (!out)
		return -1;
	return out_close(out, o->output, pprof_write(c->pp, &pi, out) < 0);
}

int pprof_view_run(const struct pprof_view_opts *o)
{
	struct readings rd;
	struct pprof_ctx c = { .o = o, .rd = &rd };
	uint64_t samples;
	size_t nfuncs, nstacks;
	int ret;

	memset(&rd, 0, sizeof(rd));
	c.pp = o->memory ? pprof_new_memory() : pprof_new();
	ret = readings_run(&rd, o->inputs, o->nr_inputs, pprof_one, &c);
	if (ret >= 0 && write_profile(&c, &rd) < 0)
		ret = DLP_FAILED;
	if (ret >= 0) {
		pprof_counts(c.pp, &samples, &nfuncs, &nstacks);
		if (strcmp(o->output, "-"))
			fprintf(stderr, "dlprof: wrote %s: %llu samples, %zu functions, "
				"%zu stacks%s\n", o->output, (unsigned long long)samples, nfuncs,
				nstacks, rd.nr > 1 ? " (labels input, host, pid, rank)" : "");
		if (filter_active(o->filt))
			info("pprof: %s: %llu of %llu samples kept", o->filt->desc,
			     (unsigned long long)rd.st.samples,
			     (unsigned long long)(rd.st.samples + rd.st.filtered_out));
	}
	pprof_free(c.pp);
	free(c.buf);
	free(c.mem_cmdline);
	readings_release(&rd);
	return ret;
}
