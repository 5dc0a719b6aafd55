/* attr-stream.c - the attribution stage between the resolve pipeline and the views
 * (attr-stream.h). */
#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "filter.h"
#include "memevent.h"
#include "util.h"

/* A worker's sample waiting for its master's operator */
struct held {
	uint32_t handle;
	int complete, done;
	size_t leaf;
	struct dlp_sample s;	/* callchain, stack copy and walk dropped; registers kept */
	uint64_t *regs;
	uint64_t *read;		/* its counts (record --metrics) */
	struct frame *frames;
	size_t nr;
};

struct attr_stream {
	const struct family_rules *rules;
	struct attr *attr;
	struct attr_view view;
	struct held *held;	/* in handle order */
	size_t first, nr_held, alloc_held;
	uint64_t newest, settled_at;
	struct machine *m;	/* of the sample being handed on */
	int err;
};

struct attr_stream *attr_stream_new(const struct family_rules *rules,
				    const struct attr_view *view)
{
	struct attr_stream *as = xcalloc(1, sizeof(*as));

	as->rules = rules;
	as->attr = view->plain ? NULL : attr_new(rules);
	as->view = *view;
	return as;
}

static void held_release(struct held *h)
{
	free(h->regs);
	free(h->read);
	free(h->frames);
}

void attr_stream_free(struct attr_stream *as)
{
	if (!as)
		return;
	for (size_t i = as->first; i < as->nr_held; i++)
		if (!as->held[i].done)
			held_release(&as->held[i]);
	free(as->held);
	attr_free(as->attr);
	free(as);
}

struct attr *attr_stream_attr(struct attr_stream *as)
{
	return as->attr;
}

int attr_mem_library_frame(const struct frame *f)
{
	return f->dso && !strcmp(f->dso, MEM_LIBRARY);
}

size_t attr_alloc_stack_start(const struct frame *frames, size_t nr)
{
	size_t first = 0;

	while (first < nr && (frames[first].flags & FRAME_KERNEL))
		first++;
	while (first + 1 < nr && attr_mem_library_frame(&frames[first]) &&
	       attr_mem_library_frame(&frames[first + 1]))
		first++;
	return first;
}

/* The allocation functions between the workload's code and the allocator: "self" is
 * the frame under them (prefixes of demangled names). */
static const char *const alloc_funcs[] = {
	"operator new", "operator new[]", "c10::alloc_cpu", "c10::DefaultCPUAllocator::",
	"at::detail::empty_generic", "at::detail::empty_cpu",
	"c10::DefaultMobileCPUAllocator", "c10::(anonymous namespace)::", "PyMem_", "_PyMem_",
	"PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "_PyObject_Malloc",
	"_PyObject_Calloc", "_PyObject_Realloc", "_PyObject_ArenaMmap", "new_arena",
	"__libc_", "__GI___libc_", "xmalloc", "xcalloc", "xrealloc", "g_malloc", "g_malloc0",
	"_dl_", "strdup", "strndup", "__strdup",
	NULL
};

static int is_alloc_func(const struct frame *f)
{
	if (!f->sym)
		return 0;
	/* c10's allocator classes have no symbols in Debian's build: its unnamed code */
	if ((f->flags & FRAME_FDE) && f->dso && !strncmp(f->dso, "libc10.so", 9))
		return 1;
	for (const char *const *p = alloc_funcs; *p; p++)
		if (!strncmp(f->sym, *p, strlen(*p)))
			return 1;
	return 0;
}

/* An allocation (record --memory) is the code's that called the allocator: the frame
 * below the kernel's, dlprof's interposer's and the allocator functions' */
static size_t attr_leaf(const struct dlp_sample *s, const struct frame *frames, size_t nr)
{
	size_t first, self;

	if (!s->evsel || strcmp(s->evsel->name, "mem-alloc"))
		return 0;
	first = attr_alloc_stack_start(frames, nr);
	self = first < nr && attr_mem_library_frame(&frames[first]) ? first + 1 : first;
	while (self + 1 < nr && is_alloc_func(&frames[self]))
		self++;
	return self;
}

static int hand_on(struct attr_stream *as, struct machine *m, const struct dlp_sample *s,
		   const struct frame *frames, size_t nr, int complete, size_t leaf,
		   const struct sample_attr *a)
{
	struct attributed at = { m, s, frames, nr, complete, leaf, a, NULL, 0 };
	const char *ops[32];

	if (as->err || !as->view.sample)
		return as->err;
	if (a && as->view.want_ops) {
		at.nr_ops = family_ops_on_stack(frames, nr, ops, ARRAY_SIZE(ops));
		at.ops = ops;
	}
	if (as->view.sample(as->view.ctx, &at) < 0)
		as->err = -1;
	return as->err;
}

static void settled(void *ctx, uint32_t handle, const struct sample_attr *a)
{
	struct attr_stream *as = ctx;
	size_t lo = as->first, hi = as->nr_held;
	struct held *h;

	/* settled in time order: mostly, not always, the order of their handles */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (as->held[mid].handle < handle)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == as->nr_held || as->held[lo].handle != handle || as->held[lo].done)
		BUG("settled sample %u not held", handle);
	h = &as->held[lo];
	hand_on(as, as->m, &h->s, h->frames, h->nr, h->complete, h->leaf, a);
	held_release(h);
	h->done = 1;
	while (as->first < as->nr_held && as->held[as->first].done)
		as->first++;
}

void attr_stream_settle(struct attr_stream *as, uint64_t before)
{
	attr_settle(as->attr, before, settled, as);
	if (as->first == as->nr_held)
		as->first = as->nr_held = 0;
	else if (as->first > as->nr_held / 2) {
		memmove(as->held, as->held + as->first, (as->nr_held - as->first) * sizeof(*as->held));
		as->nr_held -= as->first;
		as->first = 0;
	}
}

static void hold(struct attr_stream *as, const struct dlp_sample *s, const struct frame *frames,
		 size_t nr, int complete, size_t leaf, uint32_t handle)
{
	struct held *h;
	size_t nregs = __builtin_popcountll(s->user_regs_mask);

	ALLOC_GROW(as->held, as->nr_held + 1, as->alloc_held);
	h = &as->held[as->nr_held++];
	memset(h, 0, sizeof(*h));
	h->handle = handle;
	h->complete = complete;
	h->leaf = leaf;
	h->s = *s;
	h->s.nr_callchain = 0;
	h->s.callchain = NULL;
	h->s.stack_size = 0;
	h->s.stack = NULL;
	h->s.nr_ustack = 0;
	h->s.ustack = NULL;
	h->s.ustack_scanned = NULL;
	h->s.ustack_id = NULL;
	if (s->user_regs && nregs) {
		h->regs = xmalloc(nregs * sizeof(*h->regs));
		memcpy(h->regs, s->user_regs, nregs * sizeof(*h->regs));
		h->s.user_regs = h->regs;
	} else {
		h->s.user_regs = NULL;
	}
	if (s->read && s->nr_read) {
		h->read = xmalloc(s->nr_read * sizeof(*h->read));
		memcpy(h->read, s->read, s->nr_read * sizeof(*h->read));
		h->s.read = h->read;
	} else {
		h->s.read = NULL;
		h->s.nr_read = 0;
	}
	h->nr = nr;
	if (nr) {
		h->frames = xmalloc(nr * sizeof(*frames));
		memcpy(h->frames, frames, nr * sizeof(*frames));
	}
}

static int st_stack(void *ctx, struct machine *m, const struct dlp_sample *s,
		    const struct frame *frames, size_t nr, int complete)
{
	struct attr_stream *as = ctx;
	struct sample_attr a;
	size_t leaf;

	if (!as->attr)
		return hand_on(as, m, s, frames, nr, complete, 0, NULL);
	leaf = nr ? attr_leaf(s, frames, nr) : 0;
	/* on a long recording the held samples are settled as the samples go by (each
	 * second of samples, those older than the lag), so memory does not grow with the
	 * recording's length */
	as->m = m;
	if (s->time > as->newest)
		as->newest = s->time;
	if (!as->view.live && as->newest - as->settled_at >= 1000000000ull &&
	    as->newest > DLPROF_SETTLE_LAG) {
		attr_stream_settle(as, as->newest - DLPROF_SETTLE_LAG);
		as->settled_at = as->newest;
	}
	attr_sample(as->attr, s, frames + (leaf < nr ? leaf : 0), leaf < nr ? nr - leaf : 0, &a);
	if (a.deferred) {
		hold(as, s, frames, nr, complete, leaf, a.deferred);
		return as->err;
	}
	return hand_on(as, m, s, frames, nr, complete, leaf, &a);
}

static int st_filtered(void *ctx, struct machine *m, const struct dlp_sample *s,
		       const struct frame *frames, size_t nr, int complete)
{
	attr_observe(((struct attr_stream *)ctx)->attr, s, frames, nr);
	return 0;
}

static int st_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct attr_stream *as = ctx;

	if (as->attr && attr_other(as->attr, type, data, len) < 0)
		return -1;
	return as->view.other ? as->view.other(as->view.ctx, type, data, len) : 0;
}

static int st_switch(void *ctx, struct machine *m, uint32_t pid, uint32_t tid, uint32_t cpu,
		     uint64_t time, int out, int preempt)
{
	struct attr_stream *as = ctx;

	return as->view.context_switch(as->view.ctx, m, pid, tid, cpu, time, out, preempt);
}

static int st_exit(void *ctx, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct attr_stream *as = ctx;

	return as->view.thread_exit(as->view.ctx, pid, tid, time);
}

static int st_meta(void *ctx, const struct recmeta *m)
{
	struct attr_stream *as = ctx;

	return as->view.meta(as->view.ctx, m);
}

static int st_other_sample(void *ctx, const struct dlp_sample *s)
{
	struct attr_stream *as = ctx;

	return as->view.other_sample(as->view.ctx, s);
}

void attr_stream_finish(struct attr_stream *as, struct machine *m)
{
	if (!as->attr)
		return;
	if (m)
		as->m = m;
	attr_stream_settle(as, UINT64_MAX);
	attr_resolve(as->attr);
}

static int st_end(void *ctx, struct machine *m)
{
	struct attr_stream *as = ctx;

	attr_stream_finish(as, m);
	if (!as->err && as->view.end && as->view.end(as->view.ctx, m) < 0)
		as->err = -1;
	return as->err;
}

void attr_stream_consumer(struct attr_stream *as, struct profile_consumer *c)
{
	memset(c, 0, sizeof(*c));
	c->stack = st_stack;
	if (as->attr)
		c->filtered = st_filtered;	/* workers' operators: every master sample */
	c->other = st_other;
	c->context_switch = as->view.context_switch ? st_switch : NULL;
	c->thread_exit = as->view.thread_exit ? st_exit : NULL;
	c->meta = as->view.meta ? st_meta : NULL;
	c->other_sample = as->view.other_sample ? st_other_sample : NULL;
	c->end = st_end;
	c->ctx = as;
}

/* ---- filters by attribution: --family, --op, --sym ----
 * A worker's operator is known once its master's samples are in, so the samples these
 * filters keep are found in a pass of their own before the reader's. */

static int prep_sample(void *ctx, const struct attributed *as)
{
	struct sample_filter *f = ctx;

	if (filter_attr_match(f, as->a->family, as->a->op, attr_op_name(as->a->op, NULL),
			      as->frames, as->nr))
		filter_keep(f, as->s->tid, as->s->time);
	return 0;
}

static int prepare(struct sample_filter *f, const char *path, const struct profile_opts *po,
		   const struct family_rules *rules)
{
	if (filter_bounds(f, path) < 0)
		return -1;
	if (f->nr_families || f->nr_ops || f->nr_syms) {
		struct attr_view v = { .sample = prep_sample, .ctx = f };
		struct profile_consumer c;
		struct profile_opts o = *po;
		struct profile_stats st;
		struct session_info info;
		struct attr_stream *as;
		int ret;

		if (!rules)
			return error("--family and --op need the family rules");
		as = attr_stream_new(rules, &v);
		attr_stream_consumer(as, &c);
		o.filter = f;	/* the thread and time filters first */
		f->have_kept = 0;
		ret = profile_run(path, &o, &c, &st, &info);
		attr_stream_free(as);
		if (ret < 0)
			return -1;
		f->have_kept = 1;
	}
	f->seen = f->passed = 0;
	return 0;
}

int attr_stream_run_filtered(struct attr_stream *as, const char *path, struct profile_opts *po,
			     struct sample_filter *filt, struct profile_stats *st,
			     struct session_info *info)
{
	struct profile_consumer c;

	if (filter_active(filt)) {
		po->filter = filt;
		if (prepare(filt, path, po, as->rules) < 0)
			return -1;
	}
	attr_stream_consumer(as, &c);
	return profile_run(path, po, &c, st, info);
}

int attr_stream_run(const char *path, struct profile_opts *po, struct sample_filter *filt,
		    const struct family_rules *rules, const struct attr_view *view,
		    struct profile_stats *st, struct session_info *info)
{
	struct attr_stream *as = attr_stream_new(rules, view);
	int ret = attr_stream_run_filtered(as, path, po, filt, st, info);

	attr_stream_free(as);
	return ret;
}
