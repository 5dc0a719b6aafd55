/* memprof.c - the heap of a record --memory recording (memprof.h). */
#include "memprof.h"

#include <stdlib.h>
#include <string.h>

#include "attr-stream.h"
#include "json.h"
#include "memevent.h"
#include "memrec.h"
#include "recfile.h"
#include "rephash.h"
#include "tabw.h"
#include "util.h"

struct mem_free {
	uint64_t time, key;	/* mem_alloc.key */
	uint32_t pid;
};

/* A page-fault sample (record -e page-faults beside --memory): first touch of memory */
struct mem_fault {
	const char *self, *family, *op, *pyline, *thread;	/* interned */
	double bytes;		/* faults it stands for x the page size */
};

/* The operators an allocation was made under, each name once (interned in the pool) */
struct op_set {
	const char **ops;
	size_t n;
};

struct memprof {
	const struct family_rules *rules;
	struct mem_fault *faults;
	size_t nr_faults, alloc_faults;
	int have_faults;		/* the recording has a page-faults event */
	struct fold *fold;
	struct strpool pool;
	const char **texts;		/* stack id -> folded text (interned) */
	size_t nr_texts, alloc_texts;
	struct u64map text_ids;		/* interned text -> id + 1 */
	struct op_set *sets;		/* mem_alloc.ops - 1 */
	size_t nr_sets, alloc_sets;
	struct u64map set_ids;		/* hash of a set's names -> its index + 1 */
	struct mem_alloc *allocs;
	size_t nr_allocs, alloc_allocs;
	struct mem_free *frees;
	size_t nr_frees, alloc_frees;
	struct memprof_summary sum;
	char *cmdline;
	struct strbuf warnings;		/* what record said the recording lacks, one a line */
	memprof_frames_cb *frames_cb;
	void *frames_ctx;
};

void memprof_set_frames_cb(struct memprof *mp, memprof_frames_cb *cb, void *ctx)
{
	mp->frames_cb = cb;
	mp->frames_ctx = ctx;
}

struct memprof *memprof_new(const struct family_rules *rules, const struct fold_opts *fold)
{
	struct memprof *mp = xcalloc(1, sizeof(*mp));
	struct fold_opts fo = { 0, 1 };

	mp->rules = rules;
	mp->fold = fold_new(fold ? fold : &fo);
	strpool_init(&mp->pool);
	u64map_init(&mp->text_ids);
	u64map_init(&mp->set_ids);
	strbuf_init(&mp->warnings, 0);
	return mp;
}

void memprof_free(struct memprof *mp)
{
	if (!mp)
		return;
	free(mp->faults);
	fold_free(mp->fold);
	strpool_release(&mp->pool);
	u64map_release(&mp->text_ids);
	for (size_t i = 0; i < mp->nr_sets; i++)
		free(mp->sets[i].ops);
	free(mp->sets);
	u64map_release(&mp->set_ids);
	free(mp->texts);
	free(mp->allocs);
	free(mp->frees);
	free(mp->cmdline);
	strbuf_release(&mp->warnings);
	free(mp);
}

static const char *intern(struct memprof *mp, const char *s)
{
	return s ? strpool_intern(&mp->pool, s) : NULL;
}

static uint32_t text_id(struct memprof *mp, const char *text)
{
	const char *t = intern(mp, text);
	void **slot = u64map_slot(&mp->text_ids, (uintptr_t)t);

	if (!*slot) {
		ALLOC_GROW(mp->texts, mp->nr_texts + 1, mp->alloc_texts);
		mp->texts[mp->nr_texts++] = t;
		*slot = (void *)(uintptr_t)mp->nr_texts;
	}
	return (uint32_t)((uintptr_t)*slot - 1);
}

/* The set of operators on an allocation's stack, names without overloads: its index + 1
 * (0: none), each distinct set kept once */
static uint32_t op_set(struct memprof *mp, const char *const *on, size_t n)
{
	const char *names[32];
	size_t k = 0;
	struct op_set *set;
	void **slot;

	for (size_t i = 0; i < n; i++) {
		const char *o = intern(mp, attr_op_name(on[i], NULL));
		size_t j;

		for (j = 0; j < k && names[j] != o; j++)
			;
		if (j == k)
			names[k++] = o;	/* two overloads of one op: once */
	}
	if (!k)
		return 0;
	slot = u64map_slot(&mp->set_ids, hash_bytes(names, k * sizeof(names[0])));
	if (*slot) {
		set = &mp->sets[(uintptr_t)*slot - 1];
		if (set->n == k && !memcmp(set->ops, names, k * sizeof(names[0])))
			return (uint32_t)(uintptr_t)*slot;
	}
	/* new (or another set with that hash: kept apart, not found by it) */
	ALLOC_GROW(mp->sets, mp->nr_sets + 1, mp->alloc_sets);
	set = &mp->sets[mp->nr_sets++];
	set->ops = xmalloc(k * sizeof(names[0]));
	memcpy(set->ops, names, k * sizeof(names[0]));
	set->n = k;
	if (!*slot)
		*slot = (void *)(uintptr_t)mp->nr_sets;
	return (uint32_t)mp->nr_sets;
}

static int mp_sample(void *ctx, const struct attributed *as)
{
	struct memprof *mp = ctx;
	const struct dlp_sample *s = as->s;
	const struct frame *frames = as->frames;
	const struct sample_attr *a = as->a;
	size_t nr = as->nr, first = attr_alloc_stack_start(as->frames, as->nr), self = as->leaf;
	struct session_mem_alloc args;
	struct mem_alloc *al;
	const char *comm;
	char *text, thread[64];

	if (session_mem_alloc(s, &args) < 0)
		return 0;	/* not an allocation event */
	comm = machine_comm_at(as->m, s->pid, s->tid, s->time);
	ALLOC_GROW(mp->allocs, mp->nr_allocs + 1, mp->alloc_allocs);
	al = &mp->allocs[mp->nr_allocs++];
	memset(al, 0, sizeof(*al));
	al->time = s->time;
	/* named by its number where the library gave one, else by its address */
	al->key = args.seq ? args.seq | MEM_KEY_SEQ : args.addr;
	al->size = args.size;
	al->weight = args.weight >= args.size ? args.weight : args.size;
	al->pid = s->pid;
	al->tid = s->tid;
	al->kind = (uint8_t)args.kind;
	text = fold_text(mp->fold, frames + first, nr - first, comm);
	al->stack = text_id(mp, text);
	free(text);
	al->self = intern(mp, self < nr ? frames[self].sym : "[unknown]");
	al->family = intern(mp, a->family);
	al->op = intern(mp, attr_op_name(a->op, NULL));
	al->pyline = intern(mp, a->pyline);
	al->ops = op_set(mp, as->ops, as->nr_ops);
	snprintf(thread, sizeof(thread), "%s (%u)", comm ? comm : "?", s->tid);
	al->thread = intern(mp, thread);
	if (mp->frames_cb)
		al->tag = mp->frames_cb(mp->frames_ctx, frames + first, nr - first, comm, s->tid,
					al->family);
	return 0;
}

static int mp_other_sample(void *ctx, const struct dlp_sample *s)
{
	struct memprof *mp = ctx;
	uint64_t key;

	if (!s->evsel || strcmp(s->evsel->name, "mem-free") ||
	    session_sample_reg(s, MEM_REG_DI, &key))
		return 0;
	ALLOC_GROW(mp->frees, mp->nr_frees + 1, mp->alloc_frees);
	mp->frees[mp->nr_frees++] = (struct mem_free){ s->time, key, s->pid };
	return 0;
}

static int mp_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct memprof *mp = ctx;

	if (type == DLP_REC_MEMFREES) {
		/* the frees that came through the library's ring */
		struct memrec_dec d;
		struct memrec_free f;

		if (memrec_free_begin(&d, data, len) < 0)
			return error("corrupt memory free record (%zu bytes)", len);
		while (memrec_free_next(&d, &f) > 0) {
			ALLOC_GROW(mp->frees, mp->nr_frees + 1, mp->alloc_frees);
			mp->frees[mp->nr_frees++] = (struct mem_free){ f.time, f.key, f.pid };
		}
		return 0;
	}
	if (type == DLP_REC_MEMFREE) {
		/* format 4: the frees that came through the library's ring, by address */
		size_t n = len / sizeof(struct dlp_memfree);

		ALLOC_GROW(mp->frees, mp->nr_frees + n, mp->alloc_frees);
		for (size_t i = 0; i < n; i++) {
			struct dlp_memfree f;

			memcpy(&f, (const char *)data + i * sizeof(f), sizeof(f));
			mp->frees[mp->nr_frees++] = (struct mem_free){ f.time, f.addr, f.pid };
		}
		return 0;
	}
	return 0;
}

static int mp_meta(void *ctx, const struct recmeta *m)
{
	struct memprof *mp = ctx;
	const char *mean = recmeta_get(m, "mem_sample");

	if (m->cmdline) {
		free(mp->cmdline);
		mp->cmdline = xstrdup(m->cmdline);
	}
	for (size_t i = 0; i < m->nr_warn; i++)
		strbuf_addf(&mp->warnings, "# warning: %s\n", m->warn[i]);
	if (mean)
		mp->sum.mean = strtoull(mean, NULL, 10);
	if (m->event && (list_index(m->event, "page-faults") > 0 ||
			 list_index(m->event, "faults") > 0))
		mp->have_faults = 1;
	return 0;
}

static int cmp_alloc_time(const void *a, const void *b)
{
	const struct mem_alloc *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

static int cmp_free_time(const void *a, const void *b)
{
	const struct mem_free *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

static uint64_t live_key(uint32_t pid, uint64_t key)
{
	return hash_u64(key ^ ((uint64_t)pid << 48) ^ pid);
}

/* Find the live allocation (pid, key) in the open-addressing table of indexes + 1. */
struct live_tab {
	uint32_t *v;		/* alloc index + 1; 0 empty; UINT32_MAX removed */
	size_t cap, used;
};

static size_t live_find(struct live_tab *t, const struct mem_alloc *allocs, uint32_t pid,
			uint64_t key, int *found)
{
	size_t i = live_key(pid, key) & (t->cap - 1), tomb = (size_t)-1;

	for (;; i = (i + 1) & (t->cap - 1)) {
		uint32_t v = t->v[i];

		if (!v) {
			*found = 0;
			return tomb != (size_t)-1 ? tomb : i;
		}
		if (v == UINT32_MAX) {
			if (tomb == (size_t)-1)
				tomb = i;
			continue;
		}
		if (allocs[v - 1].pid == pid && allocs[v - 1].key == key) {
			*found = 1;
			return i;
		}
	}
}

/* Time order, frees matched, the live bytes over time: the peak and what was live then. */
static void finish(struct memprof *mp)
{
	struct memprof_summary *sum = &mp->sum;
	struct live_tab t;
	size_t i = 0, j = 0;
	double live = 0, peak = 0;
	uint64_t peak_time = 0;

	qsort(mp->allocs, mp->nr_allocs, sizeof(*mp->allocs), cmp_alloc_time);
	qsort(mp->frees, mp->nr_frees, sizeof(*mp->frees), cmp_free_time);
	t.cap = 1024;
	while (t.cap < 2 * mp->nr_allocs + 16)
		t.cap *= 2;
	t.v = xcalloc(t.cap, sizeof(*t.v));
	t.used = 0;
	sum->samples = mp->nr_allocs;
	if (mp->nr_allocs)
		sum->first_time = mp->allocs[0].time;
	/* an allocation and a free at the same instant: the free first (the address was
	 * given back before it could be handed out again) */
	while (i < mp->nr_allocs || j < mp->nr_frees) {
		int found;
		size_t slot;

		if (j < mp->nr_frees && (i == mp->nr_allocs || mp->frees[j].time <= mp->allocs[i].time)) {
			const struct mem_free *f = &mp->frees[j++];

			slot = live_find(&t, mp->allocs, f->pid, f->key, &found);
			if (!found) {
				sum->unmatched_frees++;
				continue;
			}
			struct mem_alloc *al = &mp->allocs[t.v[slot] - 1];

			al->free_time = f->time ? f->time : 1;
			t.v[slot] = UINT32_MAX;
			live -= (double)al->weight;
			sum->frees++;
			sum->freed_bytes += (double)al->weight;
			sum->freed_count += (double)al->weight / (double)(al->size ? al->size : 1);
			continue;
		}
		struct mem_alloc *al = &mp->allocs[i];

		slot = live_find(&t, mp->allocs, al->pid, al->key, &found);
		if (found) {
			/* its free was not seen: gone by now */
			struct mem_alloc *old = &mp->allocs[t.v[slot] - 1];

			old->free_time = al->time ? al->time : 1;
			live -= (double)old->weight;
			sum->unseen_frees++;
		}
		t.v[slot] = (uint32_t)(i + 1);
		live += (double)al->weight;
		sum->alloc_bytes += (double)al->weight;
		sum->alloc_count += (double)al->weight / (double)(al->size ? al->size : 1);
		if (live > peak) {
			peak = live;
			peak_time = al->time;
		}
		i++;
	}
	free(t.v);
	sum->peak_bytes = peak;
	sum->peak_time = peak_time;
	for (size_t k = 0; k < mp->nr_allocs; k++) {
		struct mem_alloc *al = &mp->allocs[k];

		al->at_peak = al->time <= peak_time && (!al->free_time || al->free_time > peak_time);
		if (!al->free_time) {
			sum->exit_bytes += (double)al->weight;
			sum->exit_count += (double)al->weight / (double)(al->size ? al->size : 1);
		}
	}
}

static int mf_sample(void *ctx, const struct attributed *as)
{
	struct memprof *mp = ctx;
	const struct dlp_sample *s = as->s;
	const struct frame *frames = as->frames;
	const char *comm = machine_comm_at(as->m, s->pid, s->tid, s->time);
	size_t nr = as->nr;
	struct mem_fault *f;
	char thread[64];

	ALLOC_GROW(mp->faults, mp->nr_faults + 1, mp->alloc_faults);
	f = &mp->faults[mp->nr_faults++];
	memset(f, 0, sizeof(*f));
	f->bytes = (double)(s->period ? s->period : 1) * 4096.0;
	/* the function that touched the page: the first one that is not the kernel's, libc's
	 * or our interposer's (memset, the allocator's own headers: their caller touched it) */
	for (size_t i = 0; i < nr; i++)
		if (!(frames[i].flags & FRAME_KERNEL) &&
		    !(frames[i].dso && i + 1 < nr && (!strncmp(frames[i].dso, "libc.so", 7) ||
						      attr_mem_library_frame(&frames[i])))) {
			f->self = intern(mp, frames[i].sym ? frames[i].sym : "[unknown]");
			break;
		}
	if (!f->self)
		f->self = intern(mp, "[unknown]");
	f->family = intern(mp, as->a->family);
	f->op = intern(mp, attr_op_name(as->a->op, NULL));
	f->pyline = intern(mp, as->a->pyline);
	snprintf(thread, sizeof(thread), "%s (%u)", comm ? comm : "?", s->tid);
	f->thread = intern(mp, thread);
	mp->sum.fault_bytes += f->bytes;
	return 0;
}

int memprof_run(struct memprof *mp, const char *path, struct profile_opts *po,
		struct sample_filter *filt, struct profile_stats *st, struct session_info *info)
{
	struct attr_view v = { .sample = mp_sample, .other_sample = mp_other_sample,
			       .other = mp_other, .meta = mp_meta, .ctx = mp, .want_ops = 1 };
	int ret;

	po->event = "mem-alloc";
	ret = attr_stream_run(path, po, filt, mp->rules, &v, st, info);
	if (ret < 0)
		return ret;
	finish(mp);
	if (mp->have_faults) {
		/* resident growth beside the heap: the page-fault samples, attributed alike */
		struct attr_view fv = { .sample = mf_sample, .ctx = mp };
		struct profile_stats fst;
		struct session_info finfo;
		int r2;

		po->event = "page-faults";
		r2 = attr_stream_run(path, po, filt, mp->rules, &fv, &fst, &finfo);
		if (r2 < 0)
			return r2;
		mp->sum.fault_samples = mp->nr_faults;
		if (r2 > ret)
			ret = r2;
	}
	return ret;
}

size_t memprof_allocs(struct memprof *mp, const struct mem_alloc **out)
{
	*out = mp->allocs;
	return mp->nr_allocs;
}

const char *memprof_text(const struct memprof *mp, uint32_t stack)
{
	return stack < mp->nr_texts ? mp->texts[stack] : "";
}

const struct memprof_summary *memprof_summary(const struct memprof *mp)
{
	return &mp->sum;
}

const char *memprof_cmdline(const struct memprof *mp)
{
	return mp->cmdline;
}

/* ---- report --memory ---- */

struct mrow {
	const char *name;
	double alloc, count, freed, peak, exit;
	double total;		/* op keys: in the op and the ops it called */
	double faulted;		/* page-fault samples' bytes (first touch) */
};

static int cmp_mrow(const void *a, const void *b)
{
	const struct mrow *x = a, *y = b;

	if (x->alloc != y->alloc)
		return x->alloc > y->alloc ? -1 : 1;
	if (x->peak != y->peak)
		return x->peak > y->peak ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_mrow_total(const void *a, const void *b)
{
	const struct mrow *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return cmp_mrow(a, b);
}

/* A row's name by KEY, from an allocation's or a page fault's attribution */
static const char *key_pick(enum memprof_key key, const char *self, const char *op,
			    const char *pyline, const char *family, const char *thread)
{
	switch (key) {
	case MEM_KEY_SELF:
		return self;
	case MEM_KEY_OP:
	case MEM_KEY_TOTAL:
		return op;
	case MEM_KEY_LINE:
		return pyline ? pyline : "(no Python)";
	case MEM_KEY_FAMILY:
		return family ? family : "other";
	case MEM_KEY_THREAD:
		return thread;
	}
	return "?";
}

static const char *key_of(const struct mem_alloc *al, enum memprof_key key)
{
	return key_pick(key, al->self, al->op, al->pyline, al->family, al->thread);
}

static const char *fault_key(const struct mem_fault *f, enum memprof_key key)
{
	return key_pick(key, f->self, f->op, f->pyline, f->family, f->thread);
}

/* "12.3 MiB" */
static void fmt_bytes(char *buf, size_t sz, double b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (b >= 1024 * 0.995 && u < 4) {
		b /= 1024;
		u++;
	}
	if (!u)
		snprintf(buf, sz, "%.0f B", b);
	else
		snprintf(buf, sz, "%.*f %s", b < 9.95 ? 2 : b < 99.5 ? 1 : 0, b, unit[u]);
}

static void fmt_count(char *buf, size_t sz, double c)
{
	if (c < 9999.5)
		snprintf(buf, sz, "%.0f", c);
	else if (c < 9999.5e3)
		snprintf(buf, sz, "%.1fk", c / 1e3);
	else
		snprintf(buf, sz, "%.1fM", c / 1e6);
}

static const char *const key_names[] = { "function", "op", "line", "family", "thread", "op" };

static struct mrow *mrow_get(struct u64map *idx, struct mrow **rows, size_t *nr, size_t *alloc,
			     const char *k)
{
	void **slot = u64map_slot(idx, (uintptr_t)k);

	if (!*slot) {
		ALLOC_GROW(*rows, *nr + 1, *alloc);
		memset(&(*rows)[*nr], 0, sizeof((*rows)[*nr]));
		(*rows)[*nr].name = k;
		*slot = (void *)(uintptr_t)++*nr;
	}
	return &(*rows)[(uintptr_t)*slot - 1];
}

/* Total of an op row: each allocation counts once to its op and to every op on its stack */
static void add_total(struct memprof *mp, struct u64map *idx, struct mrow **rows, size_t *nr,
		      size_t *alloc, const struct mem_alloc *al)
{
	const struct op_set *set = al->ops ? &mp->sets[al->ops - 1] : NULL;

	mrow_get(idx, rows, nr, alloc, al->op)->total += (double)al->weight;
	for (size_t i = 0; set && i < set->n; i++)
		if (set->ops[i] != al->op)
			mrow_get(idx, rows, nr, alloc, set->ops[i])->total += (double)al->weight;
}

/* bytes: "1.2 MB" in text, their number in JSON and CSV */
static void bytes_cell(struct tabw *t, double v)
{
	char text[32], val[32];

	fmt_bytes(text, sizeof(text), v);
	snprintf(val, sizeof(val), "%.0f", v);
	tabw_cell(t, text, val);
}

static void share_cell(struct tabw *t, double v, double all)
{
	char text[32], val[32];

	snprintf(text, sizeof(text), "%.2f%%", all ? 100.0 * v / all : 0.0);
	snprintf(val, sizeof(val), "%.4f", all ? 100.0 * v / all : 0.0);
	tabw_cell(t, text, val);
}

/* The rows' table for the three formats: the key's name last in text, first in JSON
 * ("name") and CSV (the key's) */
static struct tabw *mem_table(const struct memprof *mp, const struct memprof_summary *sm,
			      enum memprof_key key, int opkey, const struct mrow *rows, size_t nr)
{
	struct tabw *t = tabw_new();
	char text[32], val[32];

	tabw_gap(t, 1);
	tabw_add(t, &(struct tabw_colspec){ NULL, "name", TABW_TEXT, .in = TABW_IN_JSON });
	tabw_add(t, &(struct tabw_colspec){ key == MEM_KEY_SELF ? "Function" : opkey ? "Operator" :
					    key == MEM_KEY_LINE ? "Python line" :
					    key == MEM_KEY_FAMILY ? "Family" : "Thread",
					    key_names[key], TABW_TEXT, .in = TABW_IN_TEXT | TABW_IN_CSV,
					    .gap = 2, .text_at = 10 });
	tabw_add(t, &(struct tabw_colspec){ "Allocated", "alloc_bytes", TABW_NUM, .width = 10 });
	tabw_add(t, &(struct tabw_colspec){ "Share", "pct", TABW_NUM, .width = 7 });
	tabw_add(t, &(struct tabw_colspec){ "Allocs", "allocs", TABW_NUM, .width = 8 });
	tabw_add(t, &(struct tabw_colspec){ "Freed", "freed_bytes", TABW_NUM, .width = 10 });
	tabw_add(t, &(struct tabw_colspec){ "At peak", "peak_bytes", TABW_NUM, .width = 10 });
	tabw_add(t, &(struct tabw_colspec){ "At exit", "exit_bytes", TABW_NUM, .width = 10 });
	tabw_add(t, &(struct tabw_colspec){ "Total", "total_bytes", TABW_NUM,
					    .in = opkey ? 0 : TABW_IN_NONE, .width = 10 });
	tabw_add(t, &(struct tabw_colspec){ "Share", "total_pct", TABW_NUM,
					    .in = opkey ? TABW_IN_TEXT | TABW_IN_JSON : TABW_IN_NONE,
					    .width = 7 });
	tabw_add(t, &(struct tabw_colspec){ "Faulted", "faulted_bytes", TABW_NUM,
					    .in = mp->have_faults ? 0 : TABW_IN_NONE, .width = 10 });
	for (size_t i = 0; i < nr; i++) {
		tabw_row(t);
		tabw_str(t, rows[i].name);
		tabw_str(t, rows[i].name);
		bytes_cell(t, rows[i].alloc);
		share_cell(t, rows[i].alloc, sm->alloc_bytes);
		fmt_count(text, sizeof(text), rows[i].count);
		snprintf(val, sizeof(val), "%.0f", rows[i].count);
		tabw_cell(t, text, val);
		bytes_cell(t, rows[i].freed);
		bytes_cell(t, rows[i].peak);
		bytes_cell(t, rows[i].exit);
		bytes_cell(t, rows[i].total);
		share_cell(t, rows[i].total, sm->alloc_bytes);
		bytes_cell(t, rows[i].faulted);
	}
	return t;
}

int memprof_print(struct memprof *mp, enum memprof_key key, FILE *out,
		  enum out_format format, size_t limit)
{
	const struct memprof_summary *sm = &mp->sum;
	struct u64map idx;
	struct mrow *rows = NULL;
	size_t nr = 0, alloc = 0;
	char a[32], b[32], c[32], d[32], e[32];
	int opkey = key == MEM_KEY_OP || key == MEM_KEY_TOTAL;
	struct tabw *t;

	u64map_init(&idx);
	for (size_t i = 0; i < mp->nr_allocs; i++) {
		const struct mem_alloc *al = &mp->allocs[i];
		double w = (double)al->weight;
		struct mrow *r;

		if (opkey)	/* first: it may add rows (and move them) */
			add_total(mp, &idx, &rows, &nr, &alloc, al);
		r = mrow_get(&idx, &rows, &nr, &alloc, intern(mp, key_of(al, key)));
		r->alloc += w;
		r->count += w / (double)(al->size ? al->size : 1);
		if (al->free_time)
			r->freed += w;
		else
			r->exit += w;
		if (al->at_peak)
			r->peak += w;
	}
	for (size_t i = 0; i < mp->nr_faults; i++)
		mrow_get(&idx, &rows, &nr, &alloc, intern(mp, fault_key(&mp->faults[i], key)))->faulted +=
			mp->faults[i].bytes;
	u64map_release(&idx);
	qsort(rows, nr, sizeof(*rows), key == MEM_KEY_TOTAL ? cmp_mrow_total : cmp_mrow);
	if (limit && nr > limit)
		nr = limit;
	t = mem_table(mp, sm, key, opkey, rows, nr);

	if (format == OUT_JSON) {
		struct json j;

		json_init(&j, out, JSON_COMPACT);
		json_obj(&j);
		json_kobj(&j, "memory");
		json_ku64(&j, "sample_bytes", sm->mean);
		json_ku64(&j, "samples", sm->samples);
		json_ku64(&j, "frees", sm->frees);
		json_ku64(&j, "unmatched_frees", sm->unmatched_frees);
		json_knum(&j, "alloc_bytes", "%.0f", sm->alloc_bytes);
		json_knum(&j, "allocs", "%.0f", sm->alloc_count);
		json_knum(&j, "freed_bytes", "%.0f", sm->freed_bytes);
		json_knum(&j, "peak_bytes", "%.0f", sm->peak_bytes);
		json_knum(&j, "peak_s", "%.6f", sm->peak_time > sm->first_time ?
			  (sm->peak_time - sm->first_time) / 1e9 : 0.0);
		json_knum(&j, "exit_bytes", "%.0f", sm->exit_bytes);
		json_ku64(&j, "fault_samples", sm->fault_samples);
		json_knum(&j, "faulted_bytes", "%.0f", sm->fault_bytes);
		json_end(&j);
		json_kstr(&j, "key", key_names[key]);
		json_key(&j, "rows");
		tabw_json_rows(t, "", NULL);
		tabw_json(t, &j);
		json_end(&j);
		json_raw(&j, "\n");
		tabw_free(t);
		free(rows);
		return 0;
	}
	if (format == OUT_CSV) {
		tabw_print(t, out, format);
		tabw_free(t);
		free(rows);
		return 0;
	}
	fmt_bytes(a, sizeof(a), sm->alloc_bytes);
	fmt_count(b, sizeof(b), sm->alloc_count);
	fmt_bytes(c, sizeof(c), sm->freed_bytes);
	fmt_bytes(d, sizeof(d), sm->peak_bytes);
	fmt_bytes(e, sizeof(e), sm->exit_bytes);
	if (mp->cmdline)
		fprintf(out, "# command: %s\n", mp->cmdline);
	if (mp->warnings.len)
		fputs(mp->warnings.buf, out);
	if (sm->mean == 1)
		fprintf(out, "# heap: every allocation recorded (%llu, %llu freed)\n",
			(unsigned long long)sm->samples, (unsigned long long)sm->frees);
	else
		fprintf(out, "# heap: %llu allocations sampled, one per %llu bytes on average (%llu "
			"freed): the figures are estimates\n", (unsigned long long)sm->samples,
			(unsigned long long)sm->mean, (unsigned long long)sm->frees);
	fprintf(out, "# allocated %s in %s allocations, freed %s; peak %s at %.3f s; live at exit %s\n",
		a, b, c, d,
		sm->peak_time > sm->first_time ? (sm->peak_time - sm->first_time) / 1e9 : 0.0, e);
	if (sm->unmatched_frees)
		fprintf(out, "# %llu frees of addresses no live sample had (allocated before the "
			"samples shown, a forked child freeing its parent's memory, ...)\n", (unsigned long long)sm->unmatched_frees);
	if (mp->have_faults) {
		fmt_bytes(a, sizeof(a), sm->fault_bytes);
		fprintf(out, "# page faults: %llu samples, %s of memory first touched (resident "
			"growth): Faulted, by who touched it\n", (unsigned long long)sm->fault_samples,
			a);
	}
	if (opkey)
		fprintf(out, "# Allocated: in the operator itself (the innermost on the stack); Total: "
			"in it and the operators it called\n");
	fputc('\n', out);
	tabw_print(t, out, format);
	tabw_free(t);
	free(rows);
	return 0;
}

int memprof_key_parse(const char *name)
{
	static const char *const keys[] = { [MEM_KEY_SELF] = "self", [MEM_KEY_OP] = "op",
		[MEM_KEY_LINE] = "line", [MEM_KEY_FAMILY] = "family",
		[MEM_KEY_THREAD] = "thread", [MEM_KEY_TOTAL] = "total" };

	for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
		if (!strcmp(keys[k], name))
			return (int)k;
	return -1;
}

int memprof_report(const char *input, const char *symfs, enum memprof_key key,
		   enum out_format format, int limit, const struct family_rules *rules,
		   struct sample_filter *filt, int srcline)
{
	struct profile_opts po;
	struct profile_stats st;
	struct session_info info;
	struct memprof *mp;
	int ret;

	memset(&po, 0, sizeof(po));
	po.srcline = srcline;
	po.symfs = symfs;
	mp = memprof_new(rules, NULL);
	ret = memprof_run(mp, input, &po, filt, &st, &info);
	if (ret >= 0)
		memprof_print(mp, key, stdout, format,
			      limit >= 0 ? (size_t)limit : format == OUT_TEXT ? 40 : 0);
	fflush(stdout);
	memprof_free(mp);
	return profile_result(ret, &info);
}
