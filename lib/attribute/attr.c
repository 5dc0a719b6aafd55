/* attr.c - each sample's attribution: family, operator, oneDNN primitive, Python line (attr.h). */
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "family-rules.h"
#include "itt.h"
#include "recfile.h"
#include "rephash.h"
#include "util.h"

/* A sample whose op is known from its own stack (a mark), or an OpenMP worker's sample
 * waiting for its master's (pending). */
struct op_mark {
	uint64_t time;
	uint32_t pid, tid;
	const char *op;		/* the op; of a Python mark, the Python chain */
	const char *line;	/* of a Python mark, the innermost Python frame */
};

struct marks {
	struct op_mark *v;
	size_t nr, alloc;
	size_t sorted;		/* v[0 .. sorted) in order (sort_marks) */
	struct op_mark *tmp;	/* the merge's */
	size_t tmp_alloc;
};

struct pending {
	uint64_t time;
	uint32_t handle;
	const struct itt_interval *call;	/* the caller's oneDNN call the sample is in */
	uint32_t caller_tid;
	int sw;				/* a switch-out: read the switch-outs' marks */
	struct sample_attr a;
};

struct call_count {
	const char *op, *prim;
	uint64_t calls, ns;
};

struct attr {
	const struct family_rules *rules;
	struct itt_data *itt;
	int itt_ready;
	/* samples with an operator, with Python frames on their own stack: [0] the CPU
	 * samples', [1] the switch-outs'.  A deferred sample reads its own kind's only, so
	 * a CPU sample's operator does not depend on whether a view reads the switch-outs
	 * too (report --wall, timeline) or not, nor a switch-out's on the CPU samples */
	struct marks ops[2];
	struct marks py[2];
	struct pending *pending;
	size_t nr_pending, alloc_pending;
	uint32_t handles;	/* handed out (attr_settle forgets pending ones) */
	struct call_count *calls;
	size_t nr_calls, alloc_calls;
	int resolved;
	const char *no_op, *ph_init, *ph_import, *ph_exit, *other;
	struct u64map memo;	/* stack_key() -> struct stack_memo (a chain of them) */
	size_t nr_memo;
};

/*
 * What the rules make of a stack, once a stack: the family (for a kind of sample and a
 * primitive) and the operator its frames name.  A stack is its frames' symbols, files,
 * flags and traits, all interned (the same frame, the same pointers), so a stack is
 * known again by them; a CNN meets a few thousand stacks in hundreds of thousands of
 * samples, and each classification went through every rule (globs over the frames),
 * each operator through every frame's memo under its lock: 21% of dlprof top's CPU
 * watching every process.  Dropped whole past STACK_MEMO_MAX stacks (top runs on).
 */
#define STACK_MEMO_MAX	32768

struct memo_frame {
	const char *sym, *dso, *dso_path;
	unsigned flags, traits;
};

struct stack_memo {
	struct stack_memo *next;	/* another stack of the same key */
	const char *prim, *op;
	const char *leaf;		/* the leaf's symbol, interned (str_intern) */
	const char *family;		/* NULL until a sample asks (attr_observe does not) */
	unsigned kind;
	uint32_t nr;
	struct memo_frame f[];
};

static uint64_t stack_key(const struct frame *frames, size_t nr, unsigned kind, const char *prim)
{
	uint64_t h = hash_u64((uint64_t)nr << 8 | kind) ^ hash_u64((uint64_t)(uintptr_t)prim);

	for (size_t i = 0; i < nr; i++)
		h = hash_u64(h ^ (uint64_t)(uintptr_t)frames[i].sym) ^
		    hash_u64((uint64_t)(uintptr_t)frames[i].dso_path ^
			     (uint64_t)(uintptr_t)frames[i].dso << 1 ^
			     ((uint64_t)frames[i].flags << 32 | frames[i].traits));
	return h | 1;	/* (never 0) */
}

static int memo_is(const struct stack_memo *m, const struct frame *frames, size_t nr,
		   unsigned kind, const char *prim)
{
	if (m->nr != nr || m->kind != kind || m->prim != prim)
		return 0;
	for (size_t i = 0; i < nr; i++)
		if (m->f[i].sym != frames[i].sym || m->f[i].dso != frames[i].dso ||
		    m->f[i].dso_path != frames[i].dso_path || m->f[i].flags != frames[i].flags ||
		    m->f[i].traits != frames[i].traits)
			return 0;
	return 1;
}

static void memo_clear(struct attr *a)
{
	for (size_t i = 0; i < a->memo.cap; i++) {
		struct stack_memo *m = a->memo.used[i] ? a->memo.vals[i] : NULL;

		while (m) {
			struct stack_memo *next = m->next;

			free(m);
			m = next;
		}
	}
	u64map_release(&a->memo);
	u64map_init(&a->memo);
	a->nr_memo = 0;
}

/* The operator of a stack, and its family where want_family (kind, prim: family_ctx) */
static const struct stack_memo *stack_memo(struct attr *a, const struct frame *frames,
					   size_t nr, unsigned kind, const char *prim,
					   int want_family)
{
	uint64_t key = stack_key(frames, nr, kind, prim);
	void **slot = u64map_slot(&a->memo, key);
	struct stack_memo *m;
	struct family_ctx fctx = { kind, prim };
	const char *f;

	for (m = *slot; m; m = m->next)
		if (memo_is(m, frames, nr, kind, prim))
			break;
	if (!m) {
		if (a->nr_memo >= STACK_MEMO_MAX) {
			memo_clear(a);
			slot = u64map_slot(&a->memo, key);
		}
		m = xmalloc(sizeof(*m) + nr * sizeof(m->f[0]));
		m->prim = prim;
		m->kind = kind;
		m->nr = (uint32_t)nr;
		for (size_t i = 0; i < nr; i++)
			m->f[i] = (struct memo_frame){ frames[i].sym, frames[i].dso,
						       frames[i].dso_path, frames[i].flags,
						       frames[i].traits };
		m->family = NULL;
		m->op = family_op_from_stack(frames, nr);
		m->leaf = nr ? str_intern(frames[0].sym, strlen(frames[0].sym)) : NULL;
		m->next = *slot;
		*slot = m;
		a->nr_memo++;
	}
	if (want_family && !m->family) {
		f = family_classify_ctx(a->rules, frames, nr, &fctx, NULL);
		m->family = str_intern(f, strlen(f));
	}
	return m;
}

struct attr *attr_new(const struct family_rules *rules)
{
	struct attr *a = xcalloc(1, sizeof(*a));

	a->rules = rules;
	a->no_op = str_intern("(no op)", 7);
	a->ph_init = str_intern("(library init)", 14);
	a->ph_import = str_intern("(import)", 8);
	a->ph_exit = str_intern("(exit)", 6);
	a->other = str_intern("other", 5);
	u64map_init(&a->memo);
	return a;
}

void attr_free(struct attr *a)
{
	if (!a)
		return;
	itt_data_free(a->itt);
	for (int k = 0; k < 2; k++) {
		free(a->ops[k].v);
		free(a->ops[k].tmp);
		free(a->py[k].v);
		free(a->py[k].tmp);
	}
	free(a->pending);
	free(a->calls);
	memo_clear(a);
	u64map_release(&a->memo);
	free(a);
}

int attr_other(struct attr *a, uint32_t type, const void *data, size_t len)
{
	const char *p = data;
	size_t off;

	if (type != DLP_REC_ITT)
		return 0;
	/* payload: the collector's file, possibly behind a small header */
	for (off = 0; off + 8 <= len && off <= 64; off += 8)
		if (!memcmp(p + off, ITT_MAGIC, 8))
			break;
	if (off + 8 > len || off > 64) {
		warning("ITT record without the collector's magic: ignored");
		return 0;
	}
	if (!a->itt)
		a->itt = itt_data_new();
	if (itt_data_add(a->itt, p + off, len - off))
		warning("ITT record ignored: %s", itt_data_error(a->itt));
	a->itt_ready = 0;
	return 0;
}

const struct itt_data *attr_itt(struct attr *a)
{
	if (a->itt && !a->itt_ready) {
		itt_data_finish(a->itt);
		a->itt_ready = 1;
	}
	return a->itt;
}

const char *attr_prim_op(const char *prim)
{
	char buf[128];
	int n = snprintf(buf, sizeof(buf), "dnnl:%s", prim);

	return str_intern(buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

const char *attr_op_name(const char *op, const char **overload)
{
	const char *dot = op && !strncmp(op, "aten::", 6) ? strchr(op + 6, '.') : NULL;

	if (overload)
		*overload = dot ? str_intern(dot + 1, strlen(dot + 1)) : NULL;
	return dot ? str_intern(op, dot - op) : op;
}

static int is_fw_code(const struct frame *f)
{
	const char *d = f->dso ? f->dso : "";

	return (f->flags & (FRAME_JIT | FRAME_ANON)) || !strncmp(d, "libtorch", 8) ||
	       !strncmp(d, "libdnnl", 7) || !strncmp(d, "libc10", 6);
}

/* Outside any operator, the phase of the process when its stack shows one: loading a
 * library (static constructors: torch registers its operators and kernels there, and
 * the Python extension's module init), or exiting (destructors deregister them, the
 * interpreter's teardown and atexit handlers).  ld.so's and libc's own names where they
 * have symbols; where they are stripped (Debian 13's, in a container: t1015) the
 * functions they export, which the paths run through: dlopen, exit, and CPython's
 * Py_FinalizeEx and Py_Exit.  Between them, importing a Python module: importlib's
 * _find_and_load on the Python stack (outside operators, the import of torch 2.6's
 * modules was 47 of the 56 samples of torch's code left "(no op)" on the CNN in the
 * Debian 13 container: its Python-side operator registrations and schema parsing).
 * Innermost first: a library a handler loads is init, an extension module's is too. */
static const char *phase_from_stack(struct attr *a, const struct frame *frames, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		const char *s = frames[i].sym;

		if (!s || (frames[i].flags & FRAME_KERNEL))
			continue;
		if (frames[i].flags & FRAME_PYTHON) {
			if (!strncmp(s, "_find_and_load (", 16) &&
			    strstr(s, "(<frozen importlib._bootstrap"))
				return a->ph_import;
			continue;
		}
		if (!strcmp(s, "_dl_init") || !strcmp(s, "call_init") ||
		    !strcmp(s, "dl_open_worker") || !strcmp(s, "initModule") ||
		    !strncmp(s, "PyInit_", 7) || !strcmp(s, "dlopen") || !strcmp(s, "dlmopen"))
			return a->ph_init;
		if (!strcmp(s, "__run_exit_handlers") || !strcmp(s, "_dl_fini") ||
		    !strcmp(s, "exit") || !strcmp(s, "Py_FinalizeEx") || !strcmp(s, "Py_Exit"))
			return a->ph_exit;
	}
	return NULL;
}

/* A thread an OpenMP runtime started: its stack holds a libgomp/libiomp5/libomp frame
 * and no operator frame (the operator's frames are on the team master's stack). */
static int omp_worker_stack(const struct dlp_sample *s, const struct frame *frames, size_t nr)
{
	if (s->tid == s->pid)
		return 0;
	for (size_t i = 0; i < nr; i++)
		if (family_omp_runtime_dso(frames[i].dso))
			return 1;
	return 0;
}

static void add_mark(struct marks *m, const struct dlp_sample *s, const char *op,
		     const char *line)
{
	ALLOC_GROW(m->v, m->nr + 1, m->alloc);
	m->v[m->nr++] = (struct op_mark){ s->time, s->pid, s->tid, op, line };
}

/* The Python frames of the stack (pystack.h), root first, as one interned string
 * "f1;f2;...;fN", and the innermost one in *line; NULL when there are none. */
static const char *py_chain(const struct frame *frames, size_t nr, const char **line)
{
	struct strbuf sb = STRBUF_INIT;
	const char *chain = NULL;

	*line = NULL;
	for (size_t i = nr; i-- > 0;) {
		if (!(frames[i].flags & FRAME_PYTHON))
			continue;
		if (sb.len)
			strbuf_addch(&sb, ';');
		strbuf_addstr(&sb, frames[i].sym);
		*line = frames[i].sym;
	}
	if (sb.len)
		chain = str_intern(sb.buf, sb.len);
	strbuf_release(&sb);
	return chain;
}

const char *attr_collective_frame(const struct frame *frames, size_t nr)
{
	static const char *const prefixes[] = { "c10d::", "gloo::", "MPI_", "PMPI_", "ompi_",
						"ccl::", NULL };

	for (size_t i = 0; i < nr; i++) {
		const char *sym = frames[i].sym, *end;

		for (const char *const *p = prefixes; sym && *p; p++) {
			if (strncmp(sym, *p, strlen(*p)))
				continue;
			/* "c10d::Reducer::finalize_backward()" -> "c10d::Reducer::finalize_backward" */
			end = strchr(sym, '(');
			return str_intern(sym, end ? (size_t)(end - sym) : strlen(sym));
		}
	}
	return NULL;
}

int attr_is_switch(const struct dlp_sample *s)
{
	return s->evsel && s->evsel->attr.type == PERF_TYPE_SOFTWARE &&
	       s->evsel->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES;
}

void attr_sample(struct attr *a, const struct dlp_sample *s, const struct frame *frames,
		 size_t nr, struct sample_attr *out)
{
	const struct itt_interval *iv = NULL;
	const struct stack_memo *m;
	const char *op;
	int sw = attr_is_switch(s);

	memset(out, 0, sizeof(*out));
	out->pid = s->pid;
	out->tid = s->tid;
	out->family = a->other;
	out->op = a->no_op;
	out->sym = a->no_op;
	if (!nr)
		return;
	if (attr_itt(a) && (iv = itt_lookup(a->itt, s->pid, s->tid, s->time))) {
		out->prim = iv->name;
		out->prim_desc = itt_prim_in(a->itt, s->pid, s->tid, iv, s->time);
	}
	m = stack_memo(a, frames, nr, sw ? FAMILY_SAMPLE_WAIT : FAMILY_SAMPLE_CPU, out->prim, 1);
	out->family = m->family;
	out->sym = m->leaf;
	out->fw = is_fw_code(&frames[0]);
	if ((out->pychain = py_chain(frames, nr, &out->pyline)))
		add_mark(&a->py[sw], s, out->pychain, out->pyline);
	if ((op = m->op)) {
		out->op = op;
		out->src = ATTR_STACK;
		add_mark(&a->ops[sw], s, op, NULL);
	} else if (omp_worker_stack(s, frames, nr)) {
		/* the op comes from the team master (attr_resolve) */
		out->op = NULL;
		out->src = ATTR_NONE;
		ALLOC_GROW(a->pending, a->nr_pending + 1, a->alloc_pending);
		out->deferred = ++a->handles;
		a->pending[a->nr_pending].handle = out->deferred;
		a->pending[a->nr_pending].time = s->time;
		a->pending[a->nr_pending].call = iv && iv->worker ? iv->caller : NULL;
		a->pending[a->nr_pending].caller_tid = iv && iv->worker ? iv->caller_tid : 0;
		a->pending[a->nr_pending].sw = sw;
		a->pending[a->nr_pending++].a = *out;
	} else if (out->prim) {
		out->op = attr_prim_op(out->prim);
		out->src = ATTR_ITT;
	} else if ((op = phase_from_stack(a, frames, nr))) {
		out->op = op;
		out->src = ATTR_PHASE;
	}
}

void attr_observe(struct attr *a, const struct dlp_sample *s, const struct frame *frames,
		  size_t nr)
{
	const char *op = nr ? stack_memo(a, frames, nr, attr_is_switch(s) ? FAMILY_SAMPLE_WAIT :
					 FAMILY_SAMPLE_CPU, NULL, 0)->op : NULL;

	const char *line, *chain = nr ? py_chain(frames, nr, &line) : NULL;
	int sw = attr_is_switch(s);

	if (op)
		add_mark(&a->ops[sw], s, op, NULL);
	if (chain)
		add_mark(&a->py[sw], s, chain, line);
}

/* ---- operators of OpenMP worker threads ----
 * A worker of an OpenMP team runs the body of a parallel region that an operator opened
 * on the team's master thread; its own stack starts at start_thread -> libgomp and holds
 * no operator frame.  While the region runs, the master executes the same operator (it
 * takes a share of the iterations, then waits at the closing barrier inside the
 * operator's frames), so the master's samples around the worker's sample time name it.
 * Method: collect every sample whose op came from its own stack (time, thread, op); for a
 * worker sample take the op of the nearest such sample of another thread of the same
 * process within ATTR_MASTER_WINDOW_NS (10 ms: on a busy 2-core machine the master is
 * often descheduled for a few ms while its worker runs; 4 ms left 4% of the worker
 * samples of the CNN run without op, 10 ms none).  A worker's sample inside a oneDNN
 * primitive's ITT task knows its caller exactly (the enclosing task of the same kind on
 * another thread, itt.h): it takes the operator of that call, as the call's count does.
 * Nothing is found when the master ran outside any operator (a oneDNN program without a framework, or workers spinning after
 * the region while Python runs): the worker's ITT task names it, else "(no op)". */
#define ATTR_MASTER_WINDOW_NS 10000000ull

static int cmp_mark(const void *x_, const void *y_)
{
	const struct op_mark *x = x_, *y = y_;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The first mark at or after (pid, time). */
static size_t first_mark(const struct marks *mk, uint32_t pid, uint64_t time)
{
	size_t lo = 0, hi = mk->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct op_mark *m = &mk->v[mid];

		if (m->pid < pid || (m->pid == pid && m->time < time))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The mark nearest to TIME within the window, of thread tid (same) or of any other
 * thread of pid (!same); NULL when none. */
static const struct op_mark *nearest(const struct marks *m, uint32_t pid, uint32_t tid,
				     int same, uint64_t time)
{
	size_t lo = first_mark(m, pid, time), best = SIZE_MAX, i;
	uint64_t bd = UINT64_MAX;

	for (i = lo; i < m->nr && m->v[i].pid == pid; i++) {
		uint64_t d = m->v[i].time - time;

		if (d > ATTR_MASTER_WINDOW_NS || d >= bd)
			break;
		if ((m->v[i].tid == tid) == same) {
			best = i;
			bd = d;
			break;
		}
	}
	for (i = lo; i-- > 0 && m->v[i].pid == pid;) {
		uint64_t d = time - m->v[i].time;

		if (d > ATTR_MASTER_WINDOW_NS || d >= bd)
			break;
		if ((m->v[i].tid == tid) == same) {
			best = i;
			bd = d;
			break;
		}
	}
	return best == SIZE_MAX ? NULL : &m->v[best];
}

static const char *nearest_op(const struct marks *ops, uint32_t pid, uint32_t tid, int same,
			      uint64_t time)
{
	const struct op_mark *m = nearest(ops, pid, tid, same, time);

	return m ? m->op : NULL;
}

/* The op of thread tid's last mark before (dir < 0) or first after (dir > 0) TIME,
 * within the window; NULL when none. */
static const char *side_op(const struct marks *m, uint32_t pid, uint32_t tid, uint64_t time,
			   int dir)
{
	size_t i = first_mark(m, pid, time);

	if (dir > 0) {
		for (; i < m->nr && m->v[i].pid == pid; i++) {
			if (m->v[i].time - time > ATTR_MASTER_WINDOW_NS)
				break;
			if (m->v[i].tid == tid && m->v[i].time > time)
				return m->v[i].op;
		}
	} else {
		while (i-- > 0 && m->v[i].pid == pid) {
			if (time - m->v[i].time > ATTR_MASTER_WINDOW_NS)
				break;
			if (m->v[i].tid == tid)
				return m->v[i].op;
		}
	}
	return NULL;
}

/* The operator a oneDNN call ran in: the op of the calling thread's samples inside the
 * call; when none fell inside (a short call), the op of its samples just before and just
 * after, if they agree; else "dnnl:PRIM", a call of no known operator. */
static const char *call_op(const struct marks *m, uint32_t pid, uint32_t tid,
			   const struct itt_interval *iv)
{
	const char *before, *after;

	for (size_t i = first_mark(m, pid, iv->start);
	     i < m->nr && m->v[i].pid == pid && m->v[i].time <= iv->end; i++)
		if (m->v[i].tid == tid)
			return m->v[i].op;
	before = side_op(m, pid, tid, iv->start, -1);
	after = side_op(m, pid, tid, iv->end, 1);
	return before && before == after ? before : attr_prim_op(iv->name);
}

static void count_call(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv)
{
	struct attr *a = ctx;
	const char *op = call_op(&a->ops[0], pid, tid, iv);	/* its CPU samples' */
	size_t i;

	for (i = 0; i < a->nr_calls; i++)
		if (a->calls[i].op == op && a->calls[i].prim == iv->name)
			break;
	if (i == a->nr_calls) {
		ALLOC_GROW(a->calls, a->nr_calls + 1, a->alloc_calls);
		a->calls[a->nr_calls++] = (struct call_count){ op, iv->name, 0, 0 };
	}
	a->calls[i].calls++;
	a->calls[i].ns += iv->end - iv->start;
}

/* m in order: the marks added since the last time sorted (stably), then merged after
 * those in order already, the earlier first among equals (as a stable sort of the whole
 * gives; a settle each 100 ms sorted every mark kept each time) */
static void sort_one(struct marks *m)
{
	struct op_mark *tail, *swap;
	size_t k, i = 0, j = 0, n = 0, alloc;

	if (m->sorted >= m->nr)
		return;
	tail = m->v + m->sorted;
	k = m->nr - m->sorted;
	qsort(tail, k, sizeof(*tail), cmp_mark);
	if (m->sorted && cmp_mark(&m->v[m->sorted - 1], tail) > 0) {
		ALLOC_GROW(m->tmp, m->nr, m->tmp_alloc);
		while (i < m->sorted && j < k)
			m->tmp[n++] = cmp_mark(&tail[j], &m->v[i]) < 0 ? tail[j++] : m->v[i++];
		while (i < m->sorted)
			m->tmp[n++] = m->v[i++];
		while (j < k)
			m->tmp[n++] = tail[j++];
		swap = m->v;
		m->v = m->tmp;
		m->tmp = swap;
		alloc = m->alloc;
		m->alloc = m->tmp_alloc;
		m->tmp_alloc = alloc;
	}
	m->sorted = m->nr;
}

static void sort_marks(struct attr *a)
{
	for (int k = 0; k < 2; k++) {
		sort_one(&a->ops[k]);
		sort_one(&a->py[k]);
	}
}

/* A deferred sample's operator and Python line, from the marks of its kind (sorted). */
static void resolve_pending(struct attr *a, struct pending *p)
{
	struct sample_attr *w = &p->a;
	const struct marks *ops = &a->ops[p->sw], *py = &a->py[p->sw];
	const char *op;

	/* in a oneDNN call: the operator of the call (its caller's stack); else the
	 * nearest operator sample of another thread */
	if (p->call)
		op = call_op(ops, w->pid, p->caller_tid, p->call);
	else
		op = nearest_op(ops, w->pid, w->tid, 0, p->time);
	if (op && !strncmp(op, "dnnl:", 5))
		op = NULL;
	w->src = op ? ATTR_MASTER : w->prim ? ATTR_ITT : ATTR_NONE;
	w->op = op ? op : w->prim ? attr_prim_op(w->prim) : a->no_op;
	/* and the Python line the work was dispatched from: the caller's, else the
	 * nearest Python sample of another thread */
	if (!w->pychain) {
		const struct op_mark *pm = NULL;

		if (p->call)
			pm = nearest(py, w->pid, p->caller_tid, 1, p->time);
		if (!pm)
			pm = nearest(py, w->pid, w->tid, 0, p->time);
		if (pm) {
			w->pychain = pm->op;
			w->pyline = pm->line;
		}
	}
}

void attr_resolve(struct attr *a)
{
	if (a->resolved)
		return;
	a->resolved = 1;
	sort_marks(a);
	for (size_t i = 0; i < a->nr_pending; i++)
		resolve_pending(a, &a->pending[i]);
	if (attr_itt(a))	/* those attr_settle() did not count */
		itt_take_calls(a->itt, UINT64_MAX, count_call, a);
}

/* Keep the marks at or after t, in their order. */
static void prune_marks(struct marks *m, uint64_t t)
{
	size_t k = 0, sorted = 0;

	for (size_t i = 0; i < m->nr; i++)
		if (m->v[i].time >= t) {
			m->v[k++] = m->v[i];
			sorted += i < m->sorted;
		}
	m->nr = k;
	m->sorted = sorted;
}

void attr_settle(struct attr *a, uint64_t before, attr_settled_fn *cb, void *ctx)
{
	uint64_t oldest = before;	/* of the samples still deferred */
	size_t k = 0;

	sort_marks(a);
	for (size_t i = 0; i < a->nr_pending; i++) {
		struct pending *p = &a->pending[i];

		if (p->time < before) {
			resolve_pending(a, p);
			cb(ctx, p->handle, &p->a);
		} else {
			if (p->time < oldest)
				oldest = p->time;
			a->pending[k++] = *p;
		}
	}
	a->nr_pending = k;
	/* oneDNN calls over by then are counted to their operators now, while the marks
	 * around them are in hand; one still open keeps the marks from its start on */
	if (attr_itt(a) && before > ATTR_MASTER_WINDOW_NS) {
		uint64_t open = itt_take_calls(a->itt, before - ATTR_MASTER_WINDOW_NS, count_call, a);

		if (open < oldest)
			oldest = open;
	}
	/* what the samples still deferred, the calls still open, and those to come may need */
	oldest = oldest > 2 * ATTR_MASTER_WINDOW_NS ? oldest - 2 * ATTR_MASTER_WINDOW_NS : 0;
	for (int sw = 0; sw < 2; sw++) {
		prune_marks(&a->ops[sw], oldest);
		prune_marks(&a->py[sw], oldest);
	}
}

const struct sample_attr *attr_deferred(struct attr *a, uint32_t handle)
{
	attr_resolve(a);
	if (!handle || handle > a->nr_pending)
		return NULL;
	return &a->pending[handle - 1].a;
}

size_t attr_nr_deferred(const struct attr *a)
{
	return a->nr_pending;
}

int attr_calls(const struct attr *a, size_t i, const char **op, const char **prim,
	       uint64_t *calls, uint64_t *call_ns)
{
	if (i >= a->nr_calls)
		return 0;
	*op = a->calls[i].op;
	*prim = a->calls[i].prim;
	*calls = a->calls[i].calls;
	*call_ns = a->calls[i].ns;
	return 1;
}
