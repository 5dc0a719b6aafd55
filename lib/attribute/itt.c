/* itt.c - read the ITT collector's files (itt.h) into per-thread task intervals, and
 * the oneDNN primitives' executions (version 2) into per-thread execution intervals. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family-rules.h"
#include "itt.h"
#include "rephash.h"
#include "util.h"

/* An execution of a primitive (ITT_BLOCK_EXECS) */
struct exec_iv {
	uint64_t start, end;
	struct itt_prim *prim;
};

struct itt_thread {
	uint32_t pid, tid;
	struct itt_interval *iv;
	size_t nr, alloc;
	uint64_t max_len;	/* longest interval: bounds the backward scan of a lookup */
	size_t first_open;	/* itt_take_calls(): intervals before it are all taken */
	struct exec_iv *ex;
	size_t nr_ex, alloc_ex;
	uint64_t max_ex;	/* longest execution */
};

const char *const itt_md_names[ITT_MD_NR] = {
	"src", "diff_src", "wei", "diff_wei", "dst", "diff_dst",
};

struct name_stat {
	const char *name;
	uint64_t calls, total, call_ns;
};

struct itt_data {
	struct itt_thread *threads;
	size_t nr, alloc;
	struct name_stat *stats;
	size_t nr_stats, alloc_stats;
	size_t nr_intervals;
	struct itt_prim **prims;	/* distinct descriptions, each allocated once */
	size_t nr_prims, alloc_prims;
	char why[128];		/* why the last itt_data_add failed */
};

/* Record why the input is rejected (the caller prints it once, with its context). */
__attribute__((format(printf, 2, 3)))
static int reject(struct itt_data *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->why, sizeof(d->why), fmt, ap);
	va_end(ap);
	return -1;
}

const char *itt_data_error(const struct itt_data *d)
{
	return d->why[0] ? d->why : "no error";
}

struct itt_data *itt_data_new(void)
{
	return xcalloc(1, sizeof(struct itt_data));
}

void itt_data_free(struct itt_data *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr; i++) {
		free(d->threads[i].iv);
		free(d->threads[i].ex);
	}
	free(d->threads);
	free(d->stats);
	for (size_t i = 0; i < d->nr_prims; i++)
		free(d->prims[i]);
	free(d->prims);
	free(d);
}

static struct itt_thread *get_thread(struct itt_data *d, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < d->nr; i++)
		if (d->threads[i].pid == pid && d->threads[i].tid == tid)
			return &d->threads[i];
	ALLOC_GROW(d->threads, d->nr + 1, d->alloc);
	memset(&d->threads[d->nr], 0, sizeof(d->threads[0]));
	d->threads[d->nr].pid = pid;
	d->threads[d->nr].tid = tid;
	return &d->threads[d->nr++];
}

static void add_stat(struct itt_data *d, const char *name, uint64_t dur, int call)
{
	size_t i;

	for (i = 0; i < d->nr_stats; i++)
		if (d->stats[i].name == name)
			break;
	if (i == d->nr_stats) {
		ALLOC_GROW(d->stats, d->nr_stats + 1, d->alloc_stats);
		d->stats[i].name = name;
		d->stats[i].calls = d->stats[i].total = d->stats[i].call_ns = 0;
		d->nr_stats++;
	}
	d->stats[i].total += dur;
	if (call) {
		d->stats[i].calls++;
		d->stats[i].call_ns += dur;
	}
}

#define MAX_DEPTH 64

/* Per thread open-task stack while reading one file. */
struct open_stack {
	uint32_t tid;
	uint32_t depth;
	uint64_t start[MAX_DEPTH];
	const char *name[MAX_DEPTH];
	uint64_t last_time;
};

static void push_interval(struct itt_data *d, uint32_t pid, uint32_t tid, uint64_t start,
			  uint64_t end, const char *name, uint32_t depth)
{
	struct itt_thread *t = get_thread(d, pid, tid);

	ALLOC_GROW(t->iv, t->nr + 1, t->alloc);
	t->iv[t->nr] = (struct itt_interval){ .start = start, .end = end, .name = name,
					      .depth = depth };
	t->nr++;
	if (end - start > t->max_len)
		t->max_len = end - start;
	d->nr_intervals++;
}

/* A primitive's description (itt.h: "NAME=VALUE" lines), the one of the same text from
 * an earlier file or a new one; NULL when it names no kind. */
static struct itt_prim *intern_prim(struct itt_data *d, const char *text, size_t len)
{
	const char *key = str_intern(text, len), *p = text, *end = text + len;
	struct itt_prim pr = { .key = key };
	size_t i;

	for (i = 0; i < d->nr_prims; i++)
		if (d->prims[i]->key == key)
			return d->prims[i];
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p), *eq;
		size_t n;

		if (!nl)
			nl = end;
		eq = memchr(p, '=', nl - p);
		if (eq) {
			const char *v = str_intern(eq + 1, nl - eq - 1);

			n = eq - p;
			if (n == 4 && !memcmp(p, "kind", 4))
				pr.kind = v;
			else if (n == 4 && !memcmp(p, "impl", 4))
				pr.impl = v;
			else if (n == 4 && !memcmp(p, "prop", 4))
				pr.prop = v;
			else if (n == 5 && !memcmp(p, "shape", 5))
				pr.shape = v;
			for (int m = 0; m < ITT_MD_NR; m++)
				if (n == strlen(itt_md_names[m]) && !memcmp(p, itt_md_names[m], n))
					pr.md[m] = v;
		}
		p = nl + 1;
	}
	if (!pr.kind || !*pr.kind)
		return NULL;
	/* the data type the row shows: the first tensor's, as verbose lists them */
	{
		static const int order[] = { ITT_MD_SRC, ITT_MD_DIFF_DST, ITT_MD_DST,
					     ITT_MD_DIFF_SRC, ITT_MD_WEI, ITT_MD_DIFF_WEI };

		for (i = 0; i < ARRAY_SIZE(order) && !pr.dtype; i++) {
			const char *m = pr.md[order[i]], *c = m ? strchr(m, ':') : NULL;

			if (c)
				pr.dtype = str_intern(m, c - m);
		}
	}
	ALLOC_GROW(d->prims, d->nr_prims + 1, d->alloc_prims);
	d->prims[d->nr_prims] = xmalloc(sizeof(pr));
	*d->prims[d->nr_prims] = pr;
	return d->prims[d->nr_prims++];
}

static void push_exec(struct itt_data *d, uint32_t pid, uint32_t tid, uint64_t start,
		      uint64_t end, struct itt_prim *prim)
{
	struct itt_thread *t = get_thread(d, pid, tid);

	if (end < start)
		end = start;
	ALLOC_GROW(t->ex, t->nr_ex + 1, t->alloc_ex);
	t->ex[t->nr_ex++] = (struct exec_iv){ start, end, prim };
	if (end - start > t->max_ex)
		t->max_ex = end - start;
}

int itt_data_add(struct itt_data *d, const void *buf, size_t len)
{
	const unsigned char *p = buf, *end = p + len;
	struct itt_file_header h;
	const char **names = NULL;
	struct itt_prim **prims = NULL;	/* by the file's primitive id - 1 */
	size_t nr_names = 0, nr_prims = 0, pass;
	struct open_stack *stacks = NULL;
	size_t nr_stacks = 0, alloc_stacks = 0, i;
	int ret = -1;

	d->why[0] = 0;
	if (len < sizeof(h))
		return reject(d, "too short for a header (%zu bytes)", len);
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, ITT_MAGIC, sizeof(h.magic)))
		return reject(d, "bad magic");
	if (h.version != 1 && h.version != ITT_VERSION)
		return reject(d, "unsupported version %u", h.version);

	/* pass 0: validate blocks, collect names and primitives; pass 1: check the events'
	 * names and the executions' primitives (so a rejected file leaves no interval
	 * behind; its primitives' descriptions may stay, unused); pass 2: events */
	for (pass = 0; pass < 3; pass++) {
		p = (const unsigned char *)buf + sizeof(h);
		while (p < end) {
			struct itt_block_header bh;

			if ((size_t)(end - p) < sizeof(bh)) {
				reject(d, "truncated block header at offset %zu",
				      (size_t)(p - (const unsigned char *)buf));
				goto out;
			}
			memcpy(&bh, p, sizeof(bh));
			p += sizeof(bh);
			if (bh.len > (size_t)(end - p)) {
				reject(d, "block of %u bytes overruns the file", bh.len);
				goto out;
			}
			if (bh.kind == ITT_BLOCK_NAME) {
				uint32_t id;

				if (bh.len < 4 || bh.len - 4 > ITT_MAX_NAME) {
					reject(d, "bad name block length %u", bh.len);
					goto out;
				}
				memcpy(&id, p, 4);
				if (!id || id > 1000000) {
					reject(d, "bad name id %u", id);
					goto out;
				}
				if (pass == 0) {
					if (id > nr_names) {
						names = xrealloc(names, id * sizeof(*names));
						memset(names + nr_names, 0, (id - nr_names) * sizeof(*names));
						nr_names = id;
					}
					names[id - 1] = str_intern((const char *)p + 4, bh.len - 4);
				}
			} else if (bh.kind == ITT_BLOCK_EVENTS) {
				uint32_t tid, nr;
				struct open_stack *os = NULL;

				if (bh.len < 8) {
					reject(d, "bad event block length %u", bh.len);
					goto out;
				}
				memcpy(&tid, p, 4);
				memcpy(&nr, p + 4, 4);
				if ((uint64_t)nr * sizeof(struct itt_event) != bh.len - 8) {
					reject(d, "event block says %u events in %u bytes", nr, bh.len);
					goto out;
				}
				for (i = 0; pass == 1 && i < nr; i++) {
					struct itt_event ev;

					memcpy(&ev, p + 8 + i * sizeof(ev), sizeof(ev));
					if (ev.name != ITT_END && (ev.name > nr_names || !names[ev.name - 1])) {
						reject(d, "event names unknown id %u", ev.name);
						goto out;
					}
				}
				if (pass == 2) {
					for (i = 0; i < nr_stacks; i++)
						if (stacks[i].tid == tid)
							os = &stacks[i];
					if (!os) {
						ALLOC_GROW(stacks, nr_stacks + 1, alloc_stacks);
						os = &stacks[nr_stacks++];
						memset(os, 0, sizeof(*os));
						os->tid = tid;
					}
					for (i = 0; i < nr; i++) {
						struct itt_event ev;

						memcpy(&ev, p + 8 + i * sizeof(ev), sizeof(ev));
						if (ev.time < os->last_time)
							ev.time = os->last_time;	/* never backwards */
						os->last_time = ev.time;
						if (ev.name == ITT_END) {
							if (!os->depth)
								continue;	/* unmatched end */
							os->depth--;
							push_interval(d, h.pid, tid, os->start[os->depth], ev.time,
								      os->name[os->depth], os->depth);
						} else if (os->depth < MAX_DEPTH) {
							os->start[os->depth] = ev.time;
							os->name[os->depth] = names[ev.name - 1];
							os->depth++;
						}
					}
				}
			} else if (bh.kind == ITT_BLOCK_PRIM && h.version >= 2) {
				uint32_t id;

				if (bh.len < 4 || bh.len - 4 > ITT_MAX_PRIM) {
					reject(d, "bad primitive block length %u", bh.len);
					goto out;
				}
				memcpy(&id, p, 4);
				if (!id || id > 1000000) {
					reject(d, "bad primitive id %u", id);
					goto out;
				}
				if (pass == 0) {
					struct itt_prim *pr = intern_prim(d, (const char *)p + 4, bh.len - 4);

					if (!pr) {
						reject(d, "primitive %u names no kind", id);
						goto out;
					}
					if (id > nr_prims) {
						prims = xrealloc(prims, id * sizeof(*prims));
						memset(prims + nr_prims, 0, (id - nr_prims) * sizeof(*prims));
						nr_prims = id;
					}
					prims[id - 1] = pr;
				}
			} else if (bh.kind == ITT_BLOCK_EXECS && h.version >= 2) {
				uint32_t tid, nr;

				if (bh.len < 8) {
					reject(d, "bad execution block length %u", bh.len);
					goto out;
				}
				memcpy(&tid, p, 4);
				memcpy(&nr, p + 4, 4);
				if ((uint64_t)nr * sizeof(struct itt_exec) != bh.len - 8) {
					reject(d, "execution block says %u executions in %u bytes", nr, bh.len);
					goto out;
				}
				for (i = 0; pass > 0 && i < nr; i++) {
					struct itt_exec ex;

					memcpy(&ex, p + 8 + i * sizeof(ex), sizeof(ex));
					if (!ex.prim || ex.prim > nr_prims || !prims[ex.prim - 1]) {
						reject(d, "execution of unknown primitive %u", ex.prim);
						goto out;
					}
					if (pass == 2)
						push_exec(d, h.pid, tid, ex.start, ex.end, prims[ex.prim - 1]);
				}
			} else {
				reject(d, "unknown block kind %u", bh.kind);
				goto out;
			}
			p += bh.len;
		}
	}
	/* tasks still open: close at the thread's last event */
	for (i = 0; i < nr_stacks; i++)
		while (stacks[i].depth) {
			stacks[i].depth--;
			push_interval(d, h.pid, stacks[i].tid, stacks[i].start[stacks[i].depth],
				      stacks[i].last_time, stacks[i].name[stacks[i].depth],
				      stacks[i].depth);
		}
	ret = 0;
out:
	free(names);
	free(prims);
	free(stacks);
	return ret;
}

static int cmp_ex(const void *a, const void *b)
{
	const struct exec_iv *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;	/* the enclosing one first */
}

static int cmp_iv(const void *a, const void *b)
{
	const struct itt_interval *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

struct iv_ref {
	struct itt_interval *iv;
	uint32_t pid, tid;
};

static int cmp_ref(const void *a, const void *b)
{
	const struct iv_ref *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return cmp_iv(x->iv, y->iv);
}

/* An OpenMP worker's task: oneDNN's parallel() opens, on every worker of the team, a
 * task of the primitive kind its caller is running, so one call shows as one task per
 * thread.  The caller's task encloses the workers' (it opens before the region and
 * closes after its barrier): a task inside a same-named task of another thread of the
 * process is a worker's, not a call. */
static void mark_workers(struct itt_data *d)
{
	struct iv_ref *all = xcalloc(d->nr_intervals + 1, sizeof(*all)), *act = NULL;
	size_t n = 0, nact = 0, alloc_act = 0, i, j, k;

	for (i = 0; i < d->nr; i++)
		for (j = 0; j < d->threads[i].nr; j++)
			all[n++] = (struct iv_ref){ &d->threads[i].iv[j], d->threads[i].pid,
						    d->threads[i].tid };
	if (n)
		qsort(all, n, sizeof(*all), cmp_ref);
	for (i = 0; i < n; i++) {
		struct iv_ref *r = &all[i];

		/* the tasks still open at r's start, of r's process */
		for (j = k = 0; j < nact; j++)
			if (act[j].pid == r->pid && act[j].iv->end >= r->iv->start)
				act[k++] = act[j];
		nact = k;
		r->iv->worker = 0;
		r->iv->caller_tid = 0;
		r->iv->caller = NULL;
		for (j = 0; j < nact; j++)
			if (act[j].tid != r->tid && act[j].iv->name == r->iv->name &&
			    act[j].iv->end >= r->iv->end && !act[j].iv->worker) {
				r->iv->worker = 1;
				r->iv->caller_tid = act[j].tid;
				r->iv->caller = act[j].iv;
				break;
			}
		ALLOC_GROW(act, nact + 1, alloc_act);
		act[nact++] = *r;
	}
	free(act);
	free(all);
}

void itt_data_finish(struct itt_data *d)
{
	for (size_t i = 0; i < d->nr; i++) {
		if (d->threads[i].nr)
			qsort(d->threads[i].iv, d->threads[i].nr, sizeof(struct itt_interval), cmp_iv);
		if (d->threads[i].nr_ex)
			qsort(d->threads[i].ex, d->threads[i].nr_ex, sizeof(struct exec_iv), cmp_ex);
	}
	mark_workers(d);
	for (size_t i = 0; i < d->nr_prims; i++)
		d->prims[i]->calls = d->prims[i]->ns = 0;
	for (size_t i = 0; i < d->nr; i++)
		for (size_t j = 0; j < d->threads[i].nr_ex; j++) {
			struct exec_iv *e = &d->threads[i].ex[j];

			e->prim->calls++;
			e->prim->ns += e->end - e->start;
		}
	for (size_t i = 0; i < d->nr_stats; i++)
		d->stats[i].calls = d->stats[i].total = d->stats[i].call_ns = 0;
	for (size_t i = 0; i < d->nr; i++)
		for (size_t j = 0; j < d->threads[i].nr; j++) {
			const struct itt_interval *iv = &d->threads[i].iv[j];

			add_stat(d, iv->name, iv->end - iv->start, !iv->worker);
		}
}

void itt_each_interval(const struct itt_data *d,
		       void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
		       void *ctx)
{
	for (size_t i = 0; d && i < d->nr; i++)
		for (size_t j = 0; j < d->threads[i].nr; j++)
			fn(ctx, d->threads[i].pid, d->threads[i].tid, &d->threads[i].iv[j]);
}

void itt_each_call(const struct itt_data *d,
		   void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
		   void *ctx)
{
	for (size_t i = 0; d && i < d->nr; i++)
		for (size_t j = 0; j < d->threads[i].nr; j++)
			if (!d->threads[i].iv[j].worker)
				fn(ctx, d->threads[i].pid, d->threads[i].tid, &d->threads[i].iv[j]);
}

uint64_t itt_take_calls(struct itt_data *d, uint64_t hi,
			void (*fn)(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv),
			void *ctx)
{
	uint64_t open = UINT64_MAX;

	for (size_t i = 0; d && i < d->nr; i++) {
		struct itt_thread *th = &d->threads[i];
		size_t j;

		/* by start: the intervals that can end before hi, from the first not taken */
		for (j = th->first_open; j < th->nr && th->iv[j].start < hi; j++) {
			struct itt_interval *iv = &th->iv[j];

			if (iv->taken || iv->end >= hi)
				continue;
			iv->taken = 1;
			if (!iv->worker)
				fn(ctx, th->pid, th->tid, iv);
		}
		while (th->first_open < th->nr && th->iv[th->first_open].taken)
			th->first_open++;
		if (th->first_open < th->nr && th->iv[th->first_open].start < open)
			open = th->iv[th->first_open].start;
	}
	return open;
}

const struct itt_interval *itt_lookup(const struct itt_data *d, uint32_t pid, uint32_t tid,
				      uint64_t t)
{
	const struct itt_thread *th = NULL;
	const struct itt_interval *best = NULL;
	size_t lo, hi, i;

	if (!d)
		return NULL;
	for (i = 0; i < d->nr; i++)
		if (d->threads[i].tid == tid && d->threads[i].pid == pid) {
			th = &d->threads[i];
			break;
		}
	if (!th || !th->nr)
		return NULL;
	/* first interval starting after t */
	lo = 0;
	hi = th->nr;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (th->iv[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* scan back over intervals that may still cover t; the innermost is the latest start */
	for (i = lo; i-- > 0;) {
		const struct itt_interval *iv = &th->iv[i];

		if (t - iv->start > th->max_len)
			break;
		if (iv->end > t && (!best || iv->depth > best->depth))
			best = iv;
	}
	return best;
}

const char *itt_name_stats(const struct itt_data *d, size_t i, uint64_t *calls,
			   uint64_t *total_ns, uint64_t *call_ns)
{
	if (!d || i >= d->nr_stats)
		return NULL;
	*calls = d->stats[i].calls;
	*total_ns = d->stats[i].total;
	if (call_ns)
		*call_ns = d->stats[i].call_ns;
	return d->stats[i].name;
}

size_t itt_nr_intervals(const struct itt_data *d)
{
	return d ? d->nr_intervals : 0;
}

const struct itt_prim *itt_prim_at(const struct itt_data *d, uint32_t pid, uint32_t tid,
				   uint64_t t)
{
	const struct itt_thread *th = NULL;
	const struct exec_iv *best = NULL;
	size_t lo, hi, i;

	if (!d || !d->nr_prims)
		return NULL;
	for (i = 0; i < d->nr; i++)
		if (d->threads[i].tid == tid && d->threads[i].pid == pid) {
			th = &d->threads[i];
			break;
		}
	if (!th || !th->nr_ex)
		return NULL;
	/* first execution starting after t */
	lo = 0;
	hi = th->nr_ex;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (th->ex[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* executions do not nest through the C API; should one (a primitive executed from
	 * a user's callback), the innermost, the latest start, is the one */
	for (i = lo; i-- > 0;) {
		const struct exec_iv *e = &th->ex[i];

		if (t - e->start > th->max_ex)
			break;
		if (e->end > t) {
			best = e;
			break;
		}
	}
	return best ? best->prim : NULL;
}

const struct itt_prim *itt_prim_in(const struct itt_data *d, uint32_t pid, uint32_t tid,
				   const struct itt_interval *iv, uint64_t t)
{
	const struct itt_prim *p = itt_prim_at(d, pid, tid, t);

	if (!p && iv && iv->worker)
		p = itt_prim_at(d, pid, iv->caller_tid, t);
	return p;
}

const struct itt_prim *itt_prim_each(const struct itt_data *d, size_t i)
{
	return d && i < d->nr_prims ? d->prims[i] : NULL;
}

size_t itt_nr_prims(const struct itt_data *d)
{
	return d ? d->nr_prims : 0;
}
