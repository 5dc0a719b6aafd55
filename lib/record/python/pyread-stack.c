/* pyread-stack.c - a sample's Python frames: read from outside while the thread is
 * stopped at its sample or just after (checked against the sample), or taken from the
 * chain the kernel read (pybpf.h), and written as PYSTACK records. */
#include <string.h>

#include "memevent.h"
#include "pyread-priv.h"
#include "pyread.h"
#include "recfile.h"

/* The 72 bytes of the interpreter frame at addr, through a window read once for several
 * frames (a thread's frames sit together in its data stack, older ones below). */
static const unsigned char *get_frame(struct pyreader *pr, uint32_t pid, uint64_t addr)
{
	uint64_t lo;

	/* a frame pointer read while the interpreter was changing it can be anything:
	 * near the top of the address space, addr + FR_SIZE would wrap */
	if (addr > UINT64_MAX - FR_SIZE)
		return NULL;
	if (pr->win_pid == pid && addr >= pr->win_base &&
	    addr - pr->win_base <= pr->win_len - FR_SIZE)
		return pr->win + (addr - pr->win_base);
	/* as far down as the frame's page allows, up to the window size */
	lo = addr + FR_SIZE > WINDOW ? addr + FR_SIZE - WINDOW : 0;
	if (lo < (addr & ~4095ull))
		lo = addr & ~4095ull;
	pr->win_pid = 0;
	if (pyread_rd(pid, lo, pr->win, (size_t)(addr + FR_SIZE - lo)) < 0) {
		lo = addr;
		if (pyread_rd(pid, lo, pr->win, FR_SIZE) < 0)
			return NULL;
	}
	pr->win_pid = pid;
	pr->win_base = lo;
	pr->win_len = (size_t)(addr + FR_SIZE - lo);
	return pr->win + (addr - lo);
}

static struct last_stack *last_of(struct pyreader *pr, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < pr->nr_last; i++)
		if (pr->last[i].tid == tid && pr->last[i].pid == pid)
			return &pr->last[i];
	ALLOC_GROW(pr->last, pr->nr_last + 1, pr->alloc_last);
	memset(&pr->last[pr->nr_last], 0, sizeof(pr->last[0]));
	pr->last[pr->nr_last].pid = pid;
	pr->last[pr->nr_last].tid = tid;
	return &pr->last[pr->nr_last++];
}

/* What a frame whose code object was freed before it could be read shows: one code
 * record per process, at an address no object has. */
static const struct pycode *gone_code(struct pyreader *pr, struct pyproc *p)
{
	static const char name[] = "(code freed before dlprof read it)";
	struct pycode *c = pyread_code_slot(p, 1);

	if (!c->addr) {
		c->addr = 1;
		c->id = ++pr->next_code;
		c->qualname = xstrdup(name);
		c->qlen = sizeof(name) - 1;
		c->file = xstrdup("?");
		c->flen = 1;
		c->tab = xmalloc(1);
		p->nr_codes++;
		pr->st.codes++;
		pyread_code_emit(pr, p, c, DLP_PY_NO_INSTR, 1);
	}
	return c;
}

/* A frame of code object `code` running instruction pointer `instr` onto pr->frames[*n]
 * (gen: a generator's frame; entry: the first of its eval loop).  A frame still being
 * set up (3.11's _PyFrame_IsIncomplete) is left out.  A code object that cannot be read
 * is an error (-1), or with gone_ok the frame is named as freed. */
static int put_frame(struct pyreader *pr, struct pyproc *p, uint64_t code, uint64_t instr,
		     int gen, int entry, int gone_ok, size_t *n)
{
	int64_t idx = ((int64_t)instr - (int64_t)(code + p->ob_base + p->lay->co_code)) / 2;
	uint32_t ins = idx < 0 || idx >= DLP_PY_NO_INSTR ? DLP_PY_NO_INSTR : (uint32_t)idx;
	const struct pycode *c = pyread_code_get(pr, p, code, ins);

	if (!c && !gone_ok)
		return -1;
	if (!c) {
		pr->st.gone++;
		c = gone_code(pr, p);
		ins = DLP_PY_NO_INSTR;
	}
	if (!gen && idx < c->firsttrace)
		return 0;
	pr->frames[*n].code = c->id;
	pr->frames[*n].instr = ins | (entry ? DLP_PY_ENTRY : 0);
	(*n)++;
	return 0;
}

static void count_stack(struct pyreader *pr, const struct dlp_pystack_rec *rec)
{
	pr->st.samples++;
	pr->st.trusted += rec->state == DLP_PY_TRUSTED;
	pr->st.unchecked += rec->state == DLP_PY_UNCHECKED;
	pr->st.moved += rec->state == DLP_PY_MOVED;
	pr->st.failed += rec->state == DLP_PY_FAILED;
	pr->st.own += !!(rec->flags & DLP_PYSTACK_OWN);
	pr->st.kernel += !!(rec->flags & DLP_PYSTACK_KERNEL);
	pr->st.delay_sum_ns += rec->delay_ns;
	if (rec->delay_ns > pr->st.delay_max_ns)
		pr->st.delay_max_ns = rec->delay_ns;
}

/* Write the sample's record, rec filled but for nr and same: n frames in pr->frames. */
static void put_stack(struct pyreader *pr, struct dlp_pystack_rec *rec, size_t n)
{
	rec->nr = (uint16_t)n;
	count_stack(pr, rec);
	/* the root-side frames the thread's previous record had too are not repeated */
	struct last_stack *ls = last_of(pr, rec->pid, rec->tid);
	size_t same = 0;

	while (same < n && same < ls->n &&
	       !memcmp(&pr->frames[n - 1 - same], &ls->frames[ls->n - 1 - same],
		       sizeof(pr->frames[0])))
		same++;
	rec->same = (uint16_t)same;
	ALLOC_GROW(ls->frames, n + 1, ls->alloc);
	memcpy(ls->frames, pr->frames, n * sizeof(pr->frames[0]));
	ls->n = n;
	pr->emit(pr->ctx, DLP_REC_PYSTACK, rec, sizeof(*rec), pr->frames,
		 (n - same) * sizeof(pr->frames[0]));
}

static uint32_t put_chain(struct pyreader *pr, uint32_t pid, uint32_t tid, size_t n);

/* The sample's stack, rec filled but for nr: n frames in pr->frames, counted and written
 * as a chain; its id, for the sample's own record to name. */
static uint32_t name_stack(struct pyreader *pr, struct dlp_pystack_rec *rec, size_t n)
{
	rec->nr = (uint16_t)n;
	count_stack(pr, rec);
	return put_chain(pr, rec->pid, rec->tid, n);
}

/* The id of the chain of n frames in pr->frames (thread tid's), its DLP_REC_PYCHAIN
 * written when new: the root-side frames it shares with the thread's previous chain are
 * not repeated. */
static uint32_t put_chain(struct pyreader *pr, uint32_t pid, uint32_t tid, size_t n)
{
	size_t bytes = n * sizeof(pr->frames[0]);
	uint64_t h = hash_bytes(pr->frames, bytes) ^ n;
	uintptr_t id = (uintptr_t)u64map_get(&pr->chain_ids, h);
	struct last_stack *ls = last_of(pr, pid, tid);
	struct dlp_pychain_rec rec;
	const struct chain_ent *b;
	size_t same = 0;

	if (id && pr->chains[id - 1].nr == n &&
	    (!bytes || !memcmp(pr->chain_frames + pr->chains[id - 1].first, pr->frames, bytes))) {
		ls->chain = (uint32_t)id;
		return (uint32_t)id;
	}
	memset(&rec, 0, sizeof(rec));
	rec.id = (uint32_t)(pr->nr_chains + 1);
	rec.nr = (uint16_t)n;
	b = ls->chain ? &pr->chains[ls->chain - 1] : NULL;
	if (b) {
		/* (no frames kept yet: chain_frames may be NULL, and NULL + 0 is undefined) */
		const struct dlp_pyframe *bf = b->nr ? pr->chain_frames + b->first : NULL;

		while (same < n && same < b->nr &&
		       !memcmp(&pr->frames[n - 1 - same], &bf[b->nr - 1 - same],
			       sizeof(pr->frames[0])))
			same++;
		rec.base = ls->chain;
		rec.same = (uint16_t)same;
	}
	pr->emit(pr->ctx, DLP_REC_PYCHAIN, &rec, sizeof(rec), pr->frames,
		 (n - same) * sizeof(pr->frames[0]));
	if (pr->nr_chains >= CHAIN_MAX) {
		/* not remembered: later samples write theirs again */
		ls->chain = 0;
		pr->nr_chains++;
		return rec.id;
	}
	ALLOC_GROW(pr->chains, pr->nr_chains + 1, pr->alloc_chains);
	ALLOC_GROW(pr->chain_frames, pr->nr_chain_frames + n, pr->alloc_chain_frames);
	if (bytes)
		memcpy(pr->chain_frames + pr->nr_chain_frames, pr->frames, bytes);
	pr->chains[pr->nr_chains] = (struct chain_ent){ pr->nr_chain_frames, (uint16_t)n };
	pr->nr_chain_frames += n;
	pr->nr_chains++;
	if (!id)
		u64map_put(&pr->chain_ids, h, (void *)(uintptr_t)rec.id);
	ls->chain = rec.id;
	return rec.id;
}

/*
 * The thread's running frame: that of the state whose _PyCFrame is in the sample's stack
 * copy (*checked set, *at_sample the frame the copy says ran then), else of the one
 * running a frame (3.13, without _PyCFrame: the first running a frame; the walk checks
 * it against the copy).  0: it ran no Python code.
 */
static uint64_t running_frame(struct pyproc *p, uint32_t pid, const uint64_t *tss, size_t nts,
			      const unsigned char *stack, size_t len, uint64_t sp,
			      uint64_t *at_sample, int *checked)
{
	const struct pylayout *lay = p->lay;
	uint64_t cur = 0;

	if (lay->cf_current == NO_CFRAME) {
		for (size_t t = 0; t < nts && !cur; t++)
			if (pyread_rd64(pid, tss[t] + lay->ts_cframe, &cur) < 0)
				cur = 0;
		return cur;
	}
	for (size_t t = 0; t < nts && !*checked; t++) {
		uint64_t cf, c, at = 0;
		int in_copy = 0;

		if (pyread_rd64(pid, tss[t] + lay->ts_cframe, &cf) < 0 || !cf ||
		    pyread_rd64(pid, cf + lay->cf_current, &c) < 0 || !c)
			continue;
		/* The running frame at the sample: the innermost _PyCFrame that was on the C
		 * stack then is the first of the live chain (tstate->cframe, ->previous, ...)
		 * at or above the sample's stack pointer, and the copy holds it as it was. */
		for (int k = 0; stack && sp && cf && k < 256; k++) {
			if (cf >= sp && cf - sp + lay->cf_previous + 8 <= len) {
				memcpy(&at, stack + (cf - sp) + lay->cf_current, 8);
				in_copy = 1;
				break;
			}
			if (cf > sp || pyread_rd64(pid, cf + lay->cf_previous, &cf) < 0)
				break;	/* past the copy (a deep stack), or unreadable */
		}
		if (in_copy || !cur) {
			cur = c;
			*at_sample = at;
			*checked = in_copy;
		}
	}
	return cur;
}

int pyreader_sample(struct pyreader *pr, uint32_t pid, uint32_t tid, uint64_t time,
		    const unsigned char *stack, size_t len, uint64_t sp, struct pychain_ref *ref)
{
	struct pyproc *p = pyread_proc(pr, pid);
	struct dlp_pystack_rec rec;
	uint64_t now, tss[8], cur = 0, at_sample = 0, fa = 0;
	size_t n = 0, nts;
	int checked = 0, found = 0;
	/* 3.13: which eval loop's entry frame the walk met first at or above the sample's
	 * stack pointer: 0 none yet, 1 one inside the copy, 2 one beyond it */
	int v313, entry_at = 0;
	const struct pylayout *lay;

	if (ref)
		ref->chain = 0;
	if (!p->state)
		pyread_probe(pr, p);
	if (p->state != 1)
		return 0;
	lay = p->lay;
	v313 = lay->cf_current == NO_CFRAME;
	now = now_ns();
	nts = pyread_tstates_of(p, tid, now, tss, ARRAY_SIZE(tss));
	if (!nts)
		return 0;	/* not a Python thread (an OpenMP worker, ...) */
	memset(&rec, 0, sizeof(rec));
	rec.pid = pid;
	rec.tid = tid;
	rec.time = time;
	rec.delay_ns = now > time ? (uint32_t)(now - time < UINT32_MAX ? now - time : UINT32_MAX) : 0;
	rec.state = DLP_PY_FAILED;
	pr->win_pid = 0;
	cur = running_frame(p, pid, tss, nts, stack, len, sp, &at_sample, &checked);
	if (!cur) {
		rec.state = DLP_PY_UNCHECKED;	/* running no Python code: no frames */
		goto out;
	}
	/* steps, not frames: skipped frames count too, so a chain that loops (memory
	 * changing under the read) ends */
	for (int attempt = 0;; attempt++) {
		n = 0;
		found = 0;
		entry_at = 0;
		pr->nr_verify = 0;
		fa = cur;
		for (unsigned steps = 0; fa && n < MAX_FRAMES; steps++) {
			const unsigned char *f = steps < 4 * MAX_FRAMES ? get_frame(pr, pid, fa) : NULL;
			uint64_t code, prev, instr;

			if (!f)
				goto out;
			memcpy(&code, f + lay->fr_code, 8);
			memcpy(&prev, f + lay->fr_previous, 8);
			memcpy(&instr, f + lay->fr_prev_instr, 8);
			if (f[lay->fr_owner] == MEM_PY_OWNED_BY_CSTACK) {
				/* 3.12, 3.13: the shim outside an eval loop's first frame, the one
				 * inside it (3.11 flags that frame itself, is_entry) */
				if (v313 && stack && len && !entry_at) {
					/* the shim lives on its eval loop's C stack: one below the
					 * sample's stack pointer is a loop entered since, whose
					 * frames are newer than the sample */
					if (fa < sp) {
						n = 0;
						fa = prev;
						continue;
					}
					entry_at = fa - sp < len ? 1 : 2;
				}
				if (n && checked == found)
					pr->frames[n - 1].instr |= DLP_PY_ENTRY;
				fa = prev;
				continue;
			}
			if (checked && !found) {
				if (fa != at_sample) {
					fa = prev;	/* newer than the sample: not its frames */
					continue;
				}
				found = 1;
			}
			if (put_frame(pr, p, code, instr,
				      f[lay->fr_owner] == MEM_PY_OWNED_BY_GENERATOR,
				      lay->fr_is_entry && f[lay->fr_is_entry], 0, &n) < 0)
				goto out;
			fa = prev;
		}
		/* a code object the cache knew under an address that now holds another: the walk
		 * again, reading those as new */
		if (attempt || now - p->last_verify < VERIFY_EVERY_NS)
			break;
		p->last_verify = now;
		if (!pyread_verify_codes(pr, pid))
			break;
	}
	if (v313 && stack && len) {
		/* checked when the sample's innermost eval loop is the live chain's: its
		 * frames then are those of the loop that ran at the sample (which of them ran
		 * at that instant the copy does not say: calls inside a loop keep no C frame) */
		rec.state = entry_at == 1 ? DLP_PY_TRUSTED : entry_at == 2 ? DLP_PY_UNCHECKED :
			    DLP_PY_MOVED;
		if (!entry_at)
			n = 0;
	} else if (checked && !found) {
		rec.state = DLP_PY_MOVED;
		n = 0;
	} else {
		rec.state = checked ? DLP_PY_TRUSTED : DLP_PY_UNCHECKED;
	}
out:
	if (rec.state == DLP_PY_FAILED || !cur)
		n = 0;
	if (ref && (rec.state == DLP_PY_TRUSTED || rec.state == DLP_PY_UNCHECKED)) {
		/* named by its sample's record; the delays, summed, go in META */
		pr->st.late_named++;
		pr->st.late_delay_sum_ns += rec.delay_ns;
		if (rec.delay_ns > pr->st.late_delay_max_ns)
			pr->st.late_delay_max_ns = rec.delay_ns;
		ref->chain = name_stack(pr, &rec, n);
		ref->state = rec.state;
		return 1;
	}
	put_stack(pr, &rec, n);
	return 1;
}

int pyreader_sample_chain(struct pyreader *pr, uint32_t pid, uint32_t tid, uint64_t time,
			  const uint64_t *chain, size_t nchain, unsigned flags, uint32_t *chain_id)
{
	struct pyproc *p = pyread_proc(pr, pid);
	struct dlp_pystack_rec rec;
	uint64_t now;
	size_t n = 0;

	if (!p->state)
		pyread_probe(pr, p);
	if (p->state != 1)
		return 0;
	memset(&rec, 0, sizeof(rec));
	rec.pid = pid;
	rec.tid = tid;
	rec.time = time;
	rec.state = DLP_PY_TRUSTED;
	rec.flags = (uint8_t)flags;
	if (chain_id)
		*chain_id = 0;
	if (!chain) {
		rec.state = DLP_PY_FAILED;	/* the reader's reads failed */
		put_stack(pr, &rec, 0);
		return 1;
	}
	/* read in the kernel with its code objects: each frame's is the one of its time */
	pr->cur_time = pr->kernel_codes && (flags & DLP_PYSTACK_KERNEL) ?
		       (pr->chain_time ? pr->chain_time : time ? time : 1) : 0;
	pr->chain_time = 0;
	for (int attempt = 0;; attempt++) {
		n = 0;
		pr->nr_verify = 0;
		for (size_t i = 0; i < nchain && n < MAX_FRAMES; i++) {
			unsigned ff = (unsigned)(chain[2 * i] & 7);

			if (ff & MEM_PY_SHIM) {
				/* outside an eval loop's first frame: that frame is its entry */
				if (n)
					pr->frames[n - 1].instr |= DLP_PY_ENTRY;
				continue;
			}
			/* a code object freed since (a module's code once its import is over)
			 * leaves its frame, named so, for the stack to line up with the loops */
			put_frame(pr, p, chain[2 * i] & ~7ull, chain[2 * i + 1], !!(ff & MEM_PY_GEN),
				  !!(ff & MEM_PY_ENTRY), 1, &n);
		}
		/* as a walk does: cached code objects whose addresses hold others now (the
		 * clock read only then: a system call where it has no vDSO) */
		if (attempt || pr->cur_time || (now = now_ns()) - p->last_verify < VERIFY_EVERY_NS)
			break;
		p->last_verify = now;
		if (!pyread_verify_codes(pr, pid))
			break;
	}
	pr->cur_time = 0;
	if (chain_id) {
		*chain_id = name_stack(pr, &rec, n);
		return 1;
	}
	put_stack(pr, &rec, n);
	return 1;
}
