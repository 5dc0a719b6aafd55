/* unwind-memo.c - while recording, each thread's last walk is kept (its frames, the
 * walk's state as it recorded each, and every read of the copied stack it made from
 * there on); a walk that reaches a frame in the same state, with the same reads above
 * it, takes the rest of its frames from the last walk (unwind.c explains). */
#include <stdlib.h>
#include <string.h>

#include "unwind-priv.h"
#include "util.h"

/* the registers a memo keeps (unwind-priv.h), which the walk restores too */
const unsigned char unw_callee_saved[NR_CALLEE_SAVED] = { DW_RBX, DW_RBP, DW_R12, DW_R13, DW_R14, DW_R15 };

void unw_set_unmapped(struct walk *w)
{
	w->unmapped = 1;
	w->unmapped_seq = w->seq;
}

/* Do the reads the last walk made after its frame r give the same with this copy?  The
 * first w->held of them are known to (the log is root first, and the frames a walk tries
 * to join go toward the root: each read is compared once a walk); on a difference,
 * w->held is the read's index.  A read of the stack past this copy's end (toward the
 * root: the stack is deeper than the copy) is taken as it was: the frame is the one the
 * last walk met, in the same state, so its callers' frames are where they were; w->beyond
 * says the first such read (the Debian 13 container's imports, 236 frames deep, ran past
 * the 32 KiB copy in 4% of the CNN's samples, every one stopping short of the root). */
static int memo_reads_hold(struct walk *w, const struct memo *old, size_t r)
{
	const unsigned char *st = w->s->stack;
	uint64_t lo = w->stack_lo;

	for (size_t i = w->held; i < old->fr[r].reads; i++) {
		const struct memo_read *e = &old->log[i];
		uint64_t a = e->addr & ~(MR_FILE | MR_SCAN);
		int ok;

		if (!(e->addr & (MR_FILE | MR_SCAN))) {
			ok = in_copy(w, a, 8) ? !memcmp(st + (a - lo), &e->val, 8) :
			     a >= w->stack_hi;
			if (ok && a >= w->stack_hi && !w->beyond)
				w->beyond = i + 1;
		} else if (e->addr & MR_FILE) {
			ok = !in_copy(w, a, 8);
		} else {
			struct memo_scan sc;

			memcpy(&sc, old->bytes + e->val, sizeof(sc));
			ok = (!sc.len || (in_copy(w, a, sc.len) &&
					  !memcmp(st + (a - lo), old->bytes + e->val + sizeof(sc),
						  sc.len))) &&
			     (!sc.to || sc.to == scan_end(w, a));
		}
		if (!ok) {
			w->held = i;
			return 0;
		}
	}
	if (old->fr[r].reads > w->held)
		w->held = old->fr[r].reads;
	return 1;
}

/*
 * The walk is about to record its frame w->n: note it (and the state it is in) for the
 * thread's next walk, and see whether the last walk recorded a frame in this same state.
 * Returns 1 when it did and everything that walk read from there on reads the same here:
 * the rest of this walk would be that one's.
 */
int unw_memo_note(struct walk *w, int initial, int activation)
{
	struct memo *m = w->rec, *old = w->old;
	struct memo_frame *f, *o;

	if (w->n >= m->alloc_fr)
		ALLOC_GROW(m->fr, w->n + 1, m->alloc_fr);
	f = &m->fr[w->n];
	f->rsp = w->regs[DW_RSP];
	f->rip = w->regs[DW_RIP];
	for (size_t i = 0; i < ARRAY_SIZE(unw_callee_saved); i++)
		f->cs[i] = w->regs_set & (1u << unw_callee_saved[i]) ? w->regs[unw_callee_saved[i]] : 0;
	f->regs_set = w->regs_set & KEY_REGS;
	f->reads = (uint32_t)m->nr_log;
	f->seq = (uint32_t)w->seq;
	f->scans = (uint16_t)w->scans;
	/* (after a pass's first frame the scan logic's view of it, how many frames the
	 * pass has, no longer matters) */
	f->joinable = !initial && (w->regs_set & (1u << DW_RSP));
	f->activation = (uint8_t)activation;
	if (!old || !f->joinable)
		return 0;
	while (w->cursor && old->fr[w->cursor - 1].rsp < f->rsp)
		w->cursor--;
	if (!w->cursor) {
		w->old = NULL;	/* above all of its frames */
		return 0;
	}
	o = &old->fr[w->cursor - 1];
	if (o->rsp != f->rsp || !o->joinable || old->other < o->seq || o->rip != f->rip ||
	    o->regs_set != f->regs_set || o->activation != f->activation ||
	    /* (the scans behind a frame need not be the same: the walk from there does
	     * the same ones as long as neither walk meets the cap on them; a walk that
	     * went through JIT code has one behind each frame above it, one that began
	     * above it none, and half the frames of the CNN that were met again in the
	     * same state were so) */
	    old->scans >= MAX_SCANS || f->scans + o->scans >= MAX_SCANS ||
	    memcmp(o->cs, f->cs, sizeof(f->cs)) || w->n + w->cursor >= w->max)
		return 0;
	if (!memo_reads_hold(w, old, w->cursor - 1)) {
		/* every frame of the last walk's from here to the one that read it read
		 * it after */
		while (w->cursor && old->fr[w->cursor - 1].reads > w->held)
			w->cursor--;
		if (!w->cursor)
			w->old = NULL;
		return 0;
	}
	return 1;
}

/* This walk joined the last one at its frame cursor - 1: the frames from there to the
 * root are that walk's. */
void unw_memo_join(struct walk *w)
{
	const struct memo *old = w->old;
	const struct memo_frame *o = &old->fr[w->cursor - 1];
	size_t k = w->n, rest = w->cursor;

	for (size_t i = 0; i < rest; i++)
		w->ips[k + i] = old->ips[rest - 1 - i];
	if (w->flags)
		for (size_t i = 0; i < rest; i++)
			w->flags[k + i] = old->flags[rest - 1 - i];
	if (old->unmapped < o->seq) {
		w->unmapped = 1;
		w->unmapped_seq = w->seq + (o->seq - old->unmapped);
	}
	w->seq += o->seq;
	w->scans += o->scans;
	w->n = k + rest;
}

/*
 * Run one pass from w->regs: record frames until the walk ends or is implausible.
 * Returns 1 when it ended at the outermost frame (or in a thread-root function), 2 when
 * it joined the thread's last walk (unw_memo_join() writes the rest).
 */

void unw_memo_begin(struct walk *w)
{
	struct space *sp = w->sp;
	struct memo **slot;

	/* (a sample from before the latest change of mappings seen: its walk saw fewer
	 * mappings than the thread's next will) */
	if (w->s->time < sp->maps_time)
		return;
	slot = (struct memo **)u64map_slot(&sp->memos, w->s->tid);
	if (!*slot) {
		/* (threads that come and go: their walks are freed when they exit, and a
		 * process with more at once keeps the first ones') */
		if (sp->nr_memos >= MEMO_THREADS)
			return;
		*slot = xcalloc(1, sizeof(struct memo));
		sp->nr_memos++;
	}
	w->old = *slot;
	w->cursor = w->old->n;
	if (!w->old->n || w->old->time < sp->maps_time)
		w->old = NULL;
	w->rec = &sp->u->rec;
	w->rec->nr_log = 0;
	w->rec->nr_bytes = 0;
}

/* Drop the scans' bytes no read of m's refers to any more */
static void memo_compact(struct memo *m)
{
	unsigned char *b = xmalloc(m->nr_bytes);
	size_t nb = 0;

	for (size_t i = 0; i < m->nr_log; i++) {
		struct memo_scan sc;

		if (!(m->log[i].addr & MR_SCAN))
			continue;
		memcpy(&sc, m->bytes + m->log[i].val, sizeof(sc));
		memcpy(b + nb, m->bytes + m->log[i].val, sizeof(sc) + sc.len);
		m->log[i].val = nb;
		nb += sizeof(sc) + sc.len;
	}
	free(m->bytes);
	m->bytes = b;
	m->nr_bytes = nb;
	m->alloc_bytes = nb;
}

static uint32_t frames_after(uint64_t seq_end, int happened, uint64_t seq)
{
	return happened ? (uint32_t)(seq_end - seq) : MEMO_NONE;
}

/*
 * Keep the walk just done as its thread's last (not one cut at the most frames): the
 * frames it joined stay where they are, root first, and its own are put after them.
 */
void unw_memo_end(struct walk *w, int done, int joined)
{
	struct memo *rec = w->rec;
	struct memo *m = u64map_get(&w->sp->memos, w->s->tid);
	size_t keep = joined ? w->cursor : 0, own = w->n - keep;
	size_t keep_reads = keep ? m->fr[keep - 1].reads : 0;
	size_t reads = keep_reads + rec->nr_log;

	if (!w->n || w->n >= w->max) {
		m->n = 0;
		return;
	}
	ALLOC_GROW(m->ips, w->n, m->alloc_ips);
	ALLOC_GROW(m->flags, w->n, m->alloc_flags);
	ALLOC_GROW(m->fr, w->n, m->alloc_fr);
	ALLOC_GROW(m->log, reads, m->alloc_log);
	for (size_t i = 0; i < own; i++) {
		size_t r = w->n - 1 - i;
		struct memo_frame *f = &m->fr[r];

		m->ips[r] = w->ips[i];
		m->flags[r] = w->flags ? w->flags[i] : 0;
		*f = rec->fr[i];
		f->reads = (uint32_t)(reads - f->reads);
		f->seq = (uint32_t)(w->seq - f->seq);
		f->scans = (uint16_t)(w->scans - f->scans);
	}
	/* the scans' bytes: only the kept reads' stay (when they would pile up) */
	m->nr_log = keep_reads;
	if (!keep_reads)
		m->nr_bytes = 0;
	else if (m->nr_bytes > (64u << 10))
		memo_compact(m);
	ALLOC_GROW(m->bytes, m->nr_bytes + rec->nr_bytes, m->alloc_bytes);
	if (rec->nr_bytes)
		memcpy(m->bytes + m->nr_bytes, rec->bytes, rec->nr_bytes);
	for (size_t i = 0; i < rec->nr_log; i++) {
		struct memo_read *e = &m->log[reads - 1 - i];

		*e = rec->log[i];
		if (e->addr & MR_SCAN)
			e->val += m->nr_bytes;
	}
	m->nr_bytes += rec->nr_bytes;
	m->nr_log = reads;
	m->n = w->n;
	m->time = w->s->time;
	m->done = (uint8_t)done;
	m->scans = (uint16_t)w->scans;
	m->unmapped = frames_after(w->seq, w->unmapped, w->unmapped_seq);
	m->other = frames_after(w->seq, w->other_seq != UINT64_MAX, w->other_seq);
}
void unw_memo_free(struct memo *m)
{
	free(m->ips);
	free(m->flags);
	free(m->fr);
	free(m->log);
	free(m->bytes);
}

/* Forget (or free) the threads' last walks in sp */
void unw_memos_clear(struct space *sp, int release)
{
	for (size_t i = 0; i < sp->memos.cap; i++) {
		struct memo *m = sp->memos.used[i] ? sp->memos.vals[i] : NULL;

		if (!m)
			continue;
		m->n = 0;
		if (release) {
			unw_memo_free(m);
			free(m);
		}
	}
	if (release)
		u64map_release(&sp->memos);
}
