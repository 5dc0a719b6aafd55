/* pystack.c - the recorded Python stacks (pystack.h), merged into the native stacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "pystack.h"
#include "recfile.h"
#include "rephash.h"
#include "util.h"

struct pycode_info {
	uint32_t id;
	uint32_t firstlineno;
	const char *qualname, *file, *base;	/* interned */
	unsigned char *linetable;	/* a recording made before DLP_PYCODE_LINES */
	size_t linetable_len;
	struct py_line { uint32_t instr; int32_t line; } *lines;	/* DLP_PYCODE_LINES */
	size_t nr_lines, alloc_lines;
	int by_lines, lines_sorted;
	/* the frame names of its lines, made once each: line -> "qualname (file:line)" */
	struct { int line; const char *sym, *srcline; } *names;
	size_t nr_names, alloc_names;
};

struct pyst {
	uint64_t time;
	uint32_t pid, tid;
	uint32_t first;		/* index into frames */
	uint16_t nr;
	uint8_t state;
	uint8_t exact;		/* read as the sample was taken (DLP_PYSTACK_OWN, _KERNEL): 1,
				   | 2 when its thread held the GIL (DLP_PYSTACK_GIL) */
};

/* a DLP_REC_PYCHAIN: its frames in frames[] */
struct pychain {
	uint32_t first;
	uint16_t nr;
};

/* a thread's previous stack (DLP_REC_PYSTACK's `same`): its first frame in frames[] */
struct pyprev {
	uint32_t pid, tid;
	uint32_t first;
	uint16_t nr;
};

#define PY_MAX_CODES	(1u << 20)	/* code objects of a recording */
#define PY_MAX_DEPTH	512		/* frames of a stack, as record writes them */
#define PY_MAX_LINES	(1u << 20)	/* instruction lines of a code object */
/* The distinct stacks' frames kept: at most PY_REPEAT_CAP per frame the records carry,
 * plus PY_REPEAT_SLACK (a hostile file of records that each repeat 511 frames and add
 * one would otherwise make 512 frames of memory per 16 bytes of file) */
#define PY_REPEAT_CAP	32
#define PY_REPEAT_SLACK	(8u << 20)

struct pystacks {
	size_t own_frames;	/* frames stored in the records */
	int capped;
	struct pyprev *prev;
	size_t nr_prev, alloc_prev;
	struct pycode_info *codes;	/* by id - 1 */
	size_t nr_codes;
	struct pyst *st;
	size_t nr_st, alloc_st;
	size_t nr_gil;		/* of them, ones whose thread held the GIL */
	struct pychain *chains;		/* by id - 1 */
	size_t nr_chains, alloc_chains;
	struct dlp_pyframe *frames;	/* the distinct stacks, each stored once */
	size_t nr_frames, alloc_frames;
	struct u64map distinct;		/* hash of a stack's frames -> its first + 1 */
	struct u64map interp;		/* pid -> the DSO its eval loop ran in (interned) */
	int sorted;
	struct pystacks_stats stats;
	const char *eval;		/* "_PyEval_EvalFrameDefault", interned */
	const char *dso;		/* "[python]" */
};

struct pystacks *pystacks_new(void)
{
	struct pystacks *ps = xcalloc(1, sizeof(*ps));

	ps->eval = str_intern("_PyEval_EvalFrameDefault", 24);
	ps->dso = str_intern("[python]", 8);
	return ps;
}

void pystacks_free(struct pystacks *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->nr_codes; i++) {
		free(ps->codes[i].linetable);
		free(ps->codes[i].lines);
		free(ps->codes[i].names);
	}
	free(ps->codes);
	free(ps->prev);
	free(ps->st);
	free(ps->chains);
	free(ps->frames);
	u64map_release(&ps->distinct);
	u64map_release(&ps->interp);
	free(ps);
}

/* A DLP_PYCODE_LINES record's (code unit, line) pairs */
static void add_lines(struct pycode_info *c, const char *p, size_t len)
{
	for (size_t i = 0; i + 8 <= len && c->nr_lines < PY_MAX_LINES; i += 8) {
		ALLOC_GROW(c->lines, c->nr_lines + 1, c->alloc_lines);
		memcpy(&c->lines[c->nr_lines].instr, p + i, 4);
		memcpy(&c->lines[c->nr_lines].line, p + i + 4, 4);
		c->nr_lines++;
	}
	c->lines_sorted = 0;
}

static void add_code(struct pystacks *ps, const void *data, size_t len)
{
	struct dlp_pycode_rec r;
	const char *p = (const char *)data + sizeof(r);
	struct pycode_info *c;
	const char *slash;
	int by_lines;

	if (len < sizeof(r))
		return;
	memcpy(&r, data, sizeof(r));
	if (!r.id || r.id > PY_MAX_CODES ||
	    (uint64_t)r.qualname_len + r.file_len + r.linetable_len > len - sizeof(r))
		return;
	by_lines = !!(r.flags & DLP_PYCODE_LINES);
	if (r.id > ps->nr_codes) {
		size_t n = r.id;

		ps->codes = xrealloc(ps->codes, n * sizeof(*ps->codes));
		memset(ps->codes + ps->nr_codes, 0, (n - ps->nr_codes) * sizeof(*ps->codes));
		ps->nr_codes = n;
	}
	c = &ps->codes[r.id - 1];
	if (c->id) {
		/* seen: the lines of more instructions, or the next part of its line table */
		if (by_lines && c->by_lines) {
			add_lines(c, p + r.qualname_len + r.file_len, r.linetable_len);
		} else if (!by_lines && !c->by_lines && r.linetable_off == c->linetable_len &&
			   r.linetable_len &&
			   c->linetable_len + (uint64_t)r.linetable_len <= (1u << 24)) {
			c->linetable = xrealloc(c->linetable, c->linetable_len + r.linetable_len + 1);
			memcpy(c->linetable + c->linetable_len, p + r.qualname_len + r.file_len,
			       r.linetable_len);
			c->linetable_len += r.linetable_len;
			c->nr_names = 0;	/* names made from the shorter table */
		}
		return;
	}
	if (!by_lines && r.linetable_off)
		return;	/* a continuation without its start */
	c->id = r.id;
	c->firstlineno = r.firstlineno;
	c->qualname = str_intern(p, r.qualname_len);
	c->file = str_intern(p + r.qualname_len, r.file_len);
	slash = strrchr(c->file, '/');
	c->base = slash ? str_intern(slash + 1, strlen(slash + 1)) : c->file;
	c->by_lines = by_lines;
	if (by_lines) {
		add_lines(c, p + r.qualname_len + r.file_len, r.linetable_len);
		return;
	}
	c->linetable_len = r.linetable_len;
	c->linetable = xmalloc(r.linetable_len + 1);
	memcpy(c->linetable, p + r.qualname_len + r.file_len, r.linetable_len);
}

static struct pyprev *prev_of(struct pystacks *ps, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < ps->nr_prev; i++)
		if (ps->prev[i].tid == tid && ps->prev[i].pid == pid)
			return &ps->prev[i];
	ALLOC_GROW(ps->prev, ps->nr_prev + 1, ps->alloc_prev);
	ps->prev[ps->nr_prev] = (struct pyprev){ pid, tid, 0, 0 };
	return &ps->prev[ps->nr_prev++];
}

/* The nr frames staged at ps->frames + nr_frames kept: where a stored stack with the
 * same frames starts, else where they are now (stored); SIZE_MAX past the cap. */
static size_t keep_frames(struct pystacks *ps, size_t nr)
{
	uint64_t h = hash_bytes(ps->frames + ps->nr_frames, nr * sizeof(struct dlp_pyframe)) ^ nr;
	void **slot = u64map_slot(&ps->distinct, h);
	size_t first = SIZE_MAX;

	if (*slot) {
		first = (size_t)(uintptr_t)*slot - 1;
		if (first + nr > ps->nr_frames ||
		    memcmp(ps->frames + first, ps->frames + ps->nr_frames,
			   nr * sizeof(struct dlp_pyframe)))
			first = SIZE_MAX;	/* another stack with that hash: stored anew */
	}
	if (first != SIZE_MAX)
		return first;
	if (ps->nr_frames + nr > PY_REPEAT_CAP * ps->own_frames + PY_REPEAT_SLACK) {
		if (!ps->capped++)
			warning("Python stacks: records that repeat more frames than the "
				"recording holds: the rest ignored");
		return SIZE_MAX;
	}
	first = ps->nr_frames;
	ps->nr_frames += nr;
	if (!*slot)
		*slot = (void *)(uintptr_t)(first + 1);
	return first;
}

static void count_stack(struct pystacks *ps, uint8_t state, uint8_t flags, uint32_t delay_ns)
{
	ps->stats.records++;
	ps->stats.trusted += state == DLP_PY_TRUSTED;
	ps->stats.unchecked += state == DLP_PY_UNCHECKED;
	ps->stats.moved += state == DLP_PY_MOVED;
	ps->stats.failed += state == DLP_PY_FAILED;
	ps->stats.delay_sum_ns += delay_ns;
	ps->stats.at_sample += !!(flags & (DLP_PYSTACK_OWN | DLP_PYSTACK_KERNEL));
	if (delay_ns > ps->stats.delay_max_ns)
		ps->stats.delay_max_ns = delay_ns;
}

/* DLP_REC_PYCHAIN: its own frames, then the root side of its base chain */
static void add_chain(struct pystacks *ps, const void *data, size_t len)
{
	struct dlp_pychain_rec r;
	const struct pychain *b = NULL;
	size_t own, first;

	if (len < sizeof(r))
		return;
	memcpy(&r, data, sizeof(r));
	own = r.same <= r.nr ? (size_t)(r.nr - r.same) : 0;
	if (r.id != ps->nr_chains + 1 || r.same > r.nr || r.nr > PY_MAX_DEPTH ||
	    own * sizeof(struct dlp_pyframe) > len - sizeof(r))
		return;	/* ids come in order */
	if (r.same) {
		if (!r.base || r.base > ps->nr_chains || ps->chains[r.base - 1].nr < r.same)
			return;
		b = &ps->chains[r.base - 1];
	}
	ps->own_frames += own;
	ALLOC_GROW(ps->frames, ps->nr_frames + r.nr + 1, ps->alloc_frames);	/* (+1: never NULL) */
	memcpy(ps->frames + ps->nr_frames, (const char *)data + sizeof(r),
	       own * sizeof(struct dlp_pyframe));
	if (b)
		memcpy(ps->frames + ps->nr_frames + own, ps->frames + b->first + (b->nr - r.same),
		       r.same * sizeof(struct dlp_pyframe));
	first = keep_frames(ps, r.nr);
	ALLOC_GROW(ps->chains, ps->nr_chains + 1, ps->alloc_chains);
	/* past the cap: an empty chain, its samples keep their native stacks */
	ps->chains[ps->nr_chains++] = first == SIZE_MAX ? (struct pychain){ 0, 0 } :
				      (struct pychain){ (uint32_t)first, r.nr };
}

static void add_stack(struct pystacks *ps, const void *data, size_t len)
{
	struct dlp_pystack_rec r;
	struct pyprev *pv = NULL;
	struct pyst *s;
	size_t own, first;

	if (len < sizeof(r))
		return;
	memcpy(&r, data, sizeof(r));
	if (r.flags & DLP_PYSTACK_CHAIN) {
		/* a sample kept as it came, its stack a chain's */
		uint32_t id;

		if (len < sizeof(r) + 4)
			return;
		memcpy(&id, (const char *)data + sizeof(r), 4);
		if (!id || id > ps->nr_chains)
			return;
		first = ps->chains[id - 1].first;
		r.nr = ps->chains[id - 1].nr;
		goto store;
	}
	own = r.same <= r.nr ? (size_t)(r.nr - r.same) : 0;
	if (r.same > r.nr || r.nr > PY_MAX_DEPTH ||
	    own * sizeof(struct dlp_pyframe) > len - sizeof(r))
		return;
	pv = prev_of(ps, r.pid, r.tid);
	if (r.same > pv->nr)
		r.same = pv->nr, r.nr = (uint16_t)(own + r.same);	/* a record went missing */
	ps->own_frames += own;
	/* its own frames, then the root side of the thread's previous stack, built after
	 * the stored ones: kept there only when no stored stack has the same frames */
	ALLOC_GROW(ps->frames, ps->nr_frames + r.nr + 1, ps->alloc_frames);	/* (+1: never NULL) */
	memcpy(ps->frames + ps->nr_frames, (const char *)data + sizeof(r),
	       own * sizeof(struct dlp_pyframe));
	memcpy(ps->frames + ps->nr_frames + own, ps->frames + pv->first + (pv->nr - r.same),
	       r.same * sizeof(struct dlp_pyframe));
	first = keep_frames(ps, r.nr);
	if (first == SIZE_MAX)
		return;
store:
	count_stack(ps, r.state, r.flags, r.delay_ns);
	ALLOC_GROW(ps->st, ps->nr_st + 1, ps->alloc_st);
	s = &ps->st[ps->nr_st++];
	s->time = r.time;
	s->pid = r.pid;
	s->tid = r.tid;
	s->nr = r.nr;
	s->state = r.state;
	s->exact = r.flags & (DLP_PYSTACK_OWN | DLP_PYSTACK_KERNEL) ?
		   (uint8_t)(1 | (r.flags & DLP_PYSTACK_GIL ? 2 : 0)) : 0;
	ps->nr_gil += !!(s->exact & 2);
	s->first = (uint32_t)first;
	if (pv) {
		pv->first = s->first;
		pv->nr = r.nr;
	}
	ps->sorted = 0;
}

void pystacks_add(struct pystacks *ps, uint32_t type, const void *data, size_t len)
{
	if (type == DLP_REC_PYCODE_PACKED || type == DLP_REC_PYCHAIN_PACKED) {
		struct strbuf plain = STRBUF_INIT;
		uint32_t ptype;

		if (!pyrec_unpack(type, data, len, &plain, &ptype))
			pystacks_add(ps, ptype, plain.buf, plain.len);
		strbuf_release(&plain);
		return;
	}
	if (type == DLP_REC_PYCODE)
		add_code(ps, data, len);
	else if (type == DLP_REC_PYSTACK)
		add_stack(ps, data, len);
	else if (type == DLP_REC_PYCHAIN)
		add_chain(ps, data, len);
}

void pystacks_count_chain(struct pystacks *ps, unsigned flags, unsigned state)
{
	count_stack(ps, (uint8_t)state, (uint8_t)flags, 0);
}

void pystacks_late_delays(struct pystacks *ps, const char *value)
{
	unsigned long long n, sum, max;

	if (sscanf(value, "%llu %llu %llu", &n, &sum, &max) != 3)
		return;
	ps->stats.delay_sum_ns += sum;
	if (max > ps->stats.delay_max_ns)
		ps->stats.delay_max_ns = max;
}

static int cmp_st(const void *a, const void *b)
{
	const struct pyst *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Pass 1 is over: index the stacks */
static void pystacks_finish(struct pystacks *ps)
{
	if (ps->nr_st && !ps->sorted)
		qsort(ps->st, ps->nr_st, sizeof(*ps->st), cmp_st);
	ps->sorted = 1;
}

void pystacks_get_stats(const struct pystacks *ps, struct pystacks_stats *st)
{
	*st = ps->stats;
}

static const struct pyst *find_st(struct pystacks *ps, uint32_t pid, uint32_t tid, uint64_t time)
{
	size_t lo = 0, hi = ps->nr_st;

	pystacks_finish(ps);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct pyst *s = &ps->st[mid];

		if (s->tid < tid || (s->tid == tid && s->time < time))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ps->nr_st && ps->st[lo].tid == tid && ps->st[lo].time == time &&
	    ps->st[lo].pid == pid)
		return &ps->st[lo];
	return NULL;
}

static int line_cmp(const void *a, const void *b)
{
	const struct py_line *x = a, *y = b;

	return x->instr < y->instr ? -1 : x->instr > y->instr;
}

/* The line record gave for instruction instr of c, -1 when it gave none. */
static int code_line(struct pycode_info *c, uint32_t instr)
{
	size_t lo = 0, hi;

	if (!c->lines_sorted) {
		qsort(c->lines, c->nr_lines, sizeof(c->lines[0]), line_cmp);
		c->lines_sorted = 1;
	}
	hi = c->nr_lines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->lines[mid].instr == instr)
			return c->lines[mid].line;
		if (c->lines[mid].instr < instr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* "qualname (file.py:LINE)" for the frame, made once per (code, line); in DSO, the
 * interpreter's that ran it (its eval loop's), else "[python]" */
static void py_frame(struct pystacks *ps, const struct dlp_pyframe *pf, const char *dso,
		     struct frame *f)
{
	struct pycode_info *c = pf->code && pf->code <= ps->nr_codes ? &ps->codes[pf->code - 1] : NULL;
	uint32_t instr = pf->instr & ~DLP_PY_ENTRY;
	int line;
	size_t i;
	char buf[1024];
	int n;

	memset(f, 0, sizeof(*f));
	f->flags = FRAME_PYTHON;
	f->dso = dso ? dso : ps->dso;
	if (!c || !c->id) {
		f->sym = str_intern("[python]", 8);
		return;
	}
	line = instr == DLP_PY_NO_INSTR ? (int)c->firstlineno :
	       c->by_lines ? code_line(c, instr) :
	       pyrec_py311_line(c->linetable, c->linetable_len, (int)c->firstlineno, instr);
	if (line < 0)
		line = (int)c->firstlineno;
	f->dso_path = c->file;
	for (i = 0; i < c->nr_names; i++)
		if (c->names[i].line == line)
			break;
	if (i == c->nr_names) {
		ALLOC_GROW(c->names, c->nr_names + 1, c->alloc_names);
		n = snprintf(buf, sizeof(buf), "%s (%s:%d)", c->qualname, c->base, line);
		c->names[i].line = line;
		c->names[i].sym = str_intern(buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
		n = snprintf(buf, sizeof(buf), "%s:%d", c->file, line);
		c->names[i].srcline = str_intern(buf, n < (int)sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
		c->nr_names++;
	}
	f->sym = c->names[i].sym;	/* the line is in the name: no srcline */
}

static int is_eval(const struct pystacks *ps, const struct frame *f)
{
	return f->sym && (f->sym == ps->eval || !strcmp(f->sym, ps->eval)) &&
	       !(f->flags & (FRAME_KERNEL | FRAME_INLINE));
}

int pystacks_gil(struct pystacks *ps, uint32_t pid, uint32_t tid, uint64_t time)
{
	const struct pyst *s = ps->nr_gil ? find_st(ps, pid, tid, time) : NULL;

	return s && (s->exact & 2);
}

int pystacks_merge(struct pystacks *ps, uint32_t pid, uint32_t tid, uint64_t time,
		   uint32_t chain, int chain_exact, struct frame *fr, size_t *nr, size_t max,
		   int complete)
{
	const struct pyst *s = chain ? NULL : find_st(ps, pid, tid, time);
	struct pyst one;
	const struct dlp_pyframe *pf;
	size_t seg_start[256], nseg = 0, evals = 0, i, k, out;
	struct frame *tmp;

	if (chain && chain <= ps->nr_chains) {
		/* the chain its record names (trusted and unchecked stacks merge alike) */
		one = (struct pyst){ time, pid, tid, ps->chains[chain - 1].first,
				     ps->chains[chain - 1].nr, DLP_PY_TRUSTED, !!chain_exact };
		s = &one;
	}
	if (!s || !s->nr || (s->state != DLP_PY_TRUSTED && s->state != DLP_PY_UNCHECKED))
		return 0;
	pf = ps->frames + s->first;
	/* segments: the frames one eval loop ran, up to (and with) its entry frame */
	seg_start[nseg++] = 0;
	for (i = 0; i < s->nr && nseg < ARRAY_SIZE(seg_start); i++)
		if ((pf[i].instr & DLP_PY_ENTRY) && i + 1 < s->nr)
			seg_start[nseg++] = i + 1;
	for (i = 0; i < *nr; i++)
		evals += is_eval(ps, &fr[i]);
	if (!evals && !complete && s->exact) {
		/* a native stack that stopped short of the interpreter (frame pointers:
		 * Debian's python3.11 keeps none), with a Python stack read at its instant:
		 * the Python frames go on its root side, where they ran */
		const char *dso = u64map_get(&ps->interp, pid);

		for (i = 0; i < s->nr && *nr < max; i++)
			py_frame(ps, &pf[i], dso, &fr[(*nr)++]);
		ps->stats.merged++;
		return 1;
	}
	if (!evals || evals > nseg || (evals < nseg && complete)) {
		ps->stats.mismatched++;
		return -1;
	}
	tmp = xmalloc(max * sizeof(*tmp));
	for (i = 0, k = 0, out = 0; i < *nr && out < max; i++) {
		if (!is_eval(ps, &fr[i])) {
			tmp[out++] = fr[i];
			continue;
		}
		/* the interpreter of the process: for its stacks that stop short of the loop */
		if (fr[i].dso && u64map_get(&ps->interp, pid) != fr[i].dso)
			u64map_put(&ps->interp, pid, (void *)fr[i].dso);
		size_t end = k + 1 < nseg ? seg_start[k + 1] : s->nr;

		for (size_t j = seg_start[k]; j < end && out < max; j++)
			py_frame(ps, &pf[j], fr[i].dso, &tmp[out++]);
		k++;
	}
	memcpy(fr, tmp, out * sizeof(*fr));
	*nr = out;
	free(tmp);
	ps->stats.merged++;
	return 1;
}
