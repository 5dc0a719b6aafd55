/* recunwind.c - unwinding the copied user stacks while recording (see recunwind.h).
 *
 * One queue (a list of copied records under a mutex) from the draining thread to the
 * unwinding thread; that thread is the only writer of the recording while it runs.
 * While it has nothing to do (nothing queued, nothing deferred), the draining thread
 * unwinds and writes the records itself, straight from the ring ("inline"), with walks
 * that do nothing long (unwinder_set_fast: opening a file, its .eh_frame and its
 * thread-root functions are short; reading its .debug_frame is not): the first record
 * that would need more (a .debug_frame read, a mapping not seen yet, a walk that found no
 * frame) is queued as before, and so is every record after it until the thread is idle
 * again.  Inline, a sample is not copied out of the ring nor handed across cores: what
 * the walk does not read of its stack copy is never touched.
 * Distinct stacks are kept in an open-addressing table (address chain, scan flags,
 * completeness) up to a cap; past it a new chain is still written, under a fresh id.
 */
#include <string.h>
#include <sys/resource.h>
#include <x86intrin.h>

#include "recunwind-priv.h"
#include "recunwind.h"
#include "util.h"

/* ---- the thread ---- */

/* Handle one record.  Returns 1 when the item was kept for later (ru->deferred). */
static int handle(struct recunw *ru, struct item *it)
{
	switch (it->kind) {
	case IT_WRITE:
		recunw_put(ru, it->type, it->data, it->len, NULL, 0);
		break;
	case IT_PERF:
		/* side-band feeds the model; samples are unwound and written by recunw_cb_sample */
		ru->cur = it->data;
		ru->cur_len = it->len;
		ru->cur_py = &it->py;
		if (((struct perf_event_header *)it->data)->type != PERF_RECORD_SAMPLE) {
			session_live_perf(ru->live, it->data, it->len);
			recunw_put(ru, DLP_REC_PERF, it->data, it->len, NULL, 0);
		} else {
			/* a record the parser refuses is still kept, as it came */
			ru->delivered = 0;
			ru->defer = 0;
			session_live_perf(ru->live, it->data, it->len);
			if (!ru->delivered)
				recunw_put_raw(ru, it->data, it->len, &it->py);
			if (ru->defer) {
				struct item **head = ru->retrying ? &ru->d2head : &ru->dhead;
				struct item **tail = ru->retrying ? &ru->d2tail : &ru->dtail;

				if (ru->retrying && !ru->d2head)
					ru->d2_mark = ru->handled;
				it->next = NULL;
				if (*tail)
					(*tail)->next = it;
				else
					*head = it;
				*tail = it;
				return 1;
			}
		}
		break;
	case IT_SAMPLE_BEHIND:
		ru->st.samples++;
		ru->st.behind++;
		recunw_put_raw(ru, it->data, it->len, &it->py);
		break;
	case IT_FLUSH:
		recunw_flush_all(ru);
		break;
	}
	return 0;
}

/* The samples deferred for a mapping not seen yet: once more, now that the batch they
 * came in (all rings of one drain) is in. */
static void retry_deferred(struct recunw *ru, int round)
{
	struct item *it = round == 1 ? ru->dhead : ru->d2head, *next;

	if (round == 1)
		ru->dhead = ru->dtail = NULL;
	else
		ru->d2head = ru->d2tail = NULL;
	ru->retrying = round;
	for (; it; it = next) {
		next = it->next;
		if (!handle(ru, it))
			free(it);
	}
	ru->retrying = 0;
}

static size_t class_size(unsigned cls)
{
	return (size_t)1 << (cls + POOL_MIN_SHIFT);
}

static void free_items(struct item *it)
{
	while (it) {
		struct item *next = it->next;

		free(it);
		it = next;
	}
}

/* An item done with (under mu): kept for reuse while the pool is small, else freed */
static void item_give_back(struct recunw *ru, struct item *it)
{
	if (it->cls == NO_CLASS || ru->ret_bytes + class_size(it->cls) > POOL_MAX) {
		free(it);
		return;
	}
	it->next = ru->ret[it->cls];
	if (!it->next)
		ru->ret_last[it->cls] = it;
	ru->ret[it->cls] = it;
	ru->nr_ret[it->cls]++;
	ru->ret_bytes += class_size(it->cls);
}

static void *thread_main(void *arg)
{
	struct recunw *ru = arg;
	struct item *it;
	int kept;

	/* as the rings' reader (record.c): a workload on every core must not hold it off,
	 * or the samples it falls behind on are written with their whole stack copies
	 * (1024 busy threads on 16 cores: 61% of them, and 7% lost while the reader
	 * compressed those); where not allowed, the default weight */
	(void)setpriority(PRIO_PROCESS, 0, RECORD_NICE);
	for (;;) {
		if (!ru->head && ru->dhead) {
			pthread_mutex_unlock(&ru->mu);
			retry_deferred(ru, 1);
			pthread_mutex_lock(&ru->mu);
			continue;
		}
		if (!ru->head && ru->d2head && (ru->handled > ru->d2_mark || ru->closing)) {
			pthread_mutex_unlock(&ru->mu);
			retry_deferred(ru, 2);
			pthread_mutex_lock(&ru->mu);
			continue;
		}
		if (!ru->head && ru->smp.nr) {
			/* its queue ran empty: what it unwound goes out (the draining thread
			 * takes over only once this one waits, below) */
			pthread_mutex_unlock(&ru->mu);
			recunw_put_smp(ru);
			pthread_mutex_lock(&ru->mu);
			continue;
		}
		while (!ru->head && !ru->closing) {
			struct timespec ts;

			/* woken by hand_over(); the time-out is only a safety net */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec++;
			ru->idle = 1;
			ru->idle_since = now_ns();
			pthread_cond_timedwait(&ru->work, &ru->mu, &ts);
			ru->idle = 0;
		}
		it = ru->head;
		if (!it)
			break;	/* closing, and nothing left */
		ru->head = it->next;
		if (!ru->head)
			ru->tail = NULL;
		pthread_mutex_unlock(&ru->mu);
		kept = handle(ru, it);
		ru->handled++;
		pthread_mutex_lock(&ru->mu);
		ru->queued -= it->len;
		if (!kept)
			item_give_back(ru, it);
		if (ru->queued <= HARD_CAP)
			pthread_cond_signal(&ru->space);
	}
	pthread_mutex_unlock(&ru->mu);
	recunw_put_mem(ru);
	recunw_put_smp(ru);
	ru->st.cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	{
		struct unwind_stats us;

		unwind_get_stats(ru->uw, &us);
		ru->st.joined = us.joined;
		ru->st.reused = us.reused;
		ru->st.past_copy = us.past_copy;
		ru->st.frames = us.frames;
	}
	return NULL;
}

static void hand_over(struct recunw *ru, int force);

/* Records are gathered in a private list and handed over a batch at a time
 * (recunw_kick): one lock and at most one wake-up per drain, not per record. */
static struct item *item_new(struct recunw *ru, uint32_t kind, uint32_t type, const void *a,
			     size_t alen, const void *b, size_t blen)
{
	size_t need = alen + blen;
	unsigned cls = 0;
	struct item *it;

	if (need > class_size(0))
		cls = (unsigned)(64 - __builtin_clzll((unsigned long long)need - 1)) - POOL_MIN_SHIFT;
	if (cls < POOL_CLASSES && ru->pool[cls]) {
		it = ru->pool[cls];
		ru->pool[cls] = it->next;
		ru->pool_bytes -= class_size(cls);
	} else {
		it = xmalloc(sizeof(*it) + (cls < POOL_CLASSES ? class_size(cls) : need));
	}
	it->cls = cls < POOL_CLASSES ? (uint8_t)cls : NO_CLASS;
	it->next = NULL;
	it->kind = (uint16_t)kind;
	it->type = type;
	it->len = alen + blen;
	memset(&it->py, 0, sizeof(it->py));
	if (alen && a)	/* (NULL: written by the caller) */
		memcpy(it->data, a, alen);
	if (blen)
		memcpy(it->data + alen, b, blen);
	return it;
}

static void queue_item(struct recunw *ru, struct item *it)
{
	if (ru->ptail)
		ru->ptail->next = it;
	else
		ru->phead = it;
	ru->ptail = it;
	ru->pbytes += it->len;
	if (ru->pbytes > BATCH_MAX)
		hand_over(ru, 1);
}

static void enqueue(struct recunw *ru, uint32_t kind, uint32_t type, const void *a, size_t alen,
		    const void *b, size_t blen)
{
	queue_item(ru, item_new(ru, kind, type, a, alen, b, blen));
}

/* With force, wake the thread now; else when much waits or it has been idle WAKE_MS
 * (a wake-up per drain, often per sample, would cost more than the unwinding; a thread
 * that wakes on a timer to look, as it did, wakes for nothing most times: 15% of its
 * CPU went to switching on the CNN).  Work handed over without a wake-up is looked at
 * again at the next drain. */
static void hand_over(struct recunw *ru, int force)
{
	struct item *drop = NULL;

	if (!ru->phead && !force && !ru->unwoken)
		return;
	pthread_mutex_lock(&ru->mu);
	while (ru->queued > HARD_CAP)
		pthread_cond_wait(&ru->space, &ru->mu);
	if (!ru->phead)
		;
	else if (ru->tail)
		ru->tail->next = ru->phead;
	else
		ru->head = ru->phead;
	if (ru->ptail)
		ru->tail = ru->ptail;
	ru->queued += ru->pbytes;
	ru->seen_queued = ru->queued;
	for (unsigned c = 0; c < POOL_CLASSES; c++)
		if (ru->ret[c]) {
			/* what the thread handed back, ours to reuse (all of it: taken only
			 * into an empty pool, a pool short by a few items malloc'd new ones
			 * until the next hand-over while the returned ones piled up to
			 * POOL_MAX and were freed, and the heap gave their pages back: a
			 * page fault per 4 KiB copied, 12% of the reader's CPU on the CNN) */
			size_t bytes = ru->nr_ret[c] * class_size(c);

			if (ru->pool_bytes + bytes <= POOL_MAX) {
				ru->ret_last[c]->next = ru->pool[c];
				ru->pool[c] = ru->ret[c];
				ru->pool_bytes += bytes;
			} else {
				/* past POOL_MAX (after a burst): freed, or the pool would keep
				 * the burst's memory for the rest of the run */
				ru->ret_last[c]->next = drop;
				drop = ru->ret[c];
			}
			ru->ret[c] = ru->ret_last[c] = NULL;
			ru->ret_bytes -= bytes;
			ru->nr_ret[c] = 0;
		}
	ru->unwoken = 0;
	if (ru->idle && (force || (ru->head && (ru->queued > WAKE_BYTES ||
						  now_ns() - ru->idle_since >=
						  WAKE_MS * 1000000ull))))
		pthread_cond_signal(&ru->work);
	else if (ru->idle && ru->head)
		ru->unwoken = 1;
	pthread_mutex_unlock(&ru->mu);
	free_items(drop);
	ru->phead = ru->ptail = NULL;
	ru->pbytes = 0;
}

/*
 * The draining thread unwinds from now on, when the thread has nothing: nothing queued
 * or deferred, and it waits for work (it touches nothing of the unwinder's or the
 * writer's until it is handed some: the lock orders what either did before).
 */
static void inline_begin(struct recunw *ru)
{
	if (ru->inl || ru->no_inline || ru->phead || ru->inl_asked)
		return;
	ru->inl_asked = 1;	/* once a drain */
	pthread_mutex_lock(&ru->mu);
	ru->inl = ru->idle && !ru->head && !ru->dhead && !ru->d2head && !ru->closing;
	pthread_mutex_unlock(&ru->mu);
}

void recunw_kick(struct recunw *ru)
{
	if (ru->inl)
		recunw_put_smp(ru);	/* the drain's samples, unwound inline */
	hand_over(ru, 0);
	ru->inl_asked = 0;
}

/*
 * A perf record, inline: a sample unwound by a fast walk and written (1), or 0 when
 * it goes to the thread after all (nothing written; inline ends).  head_len: a sample to
 * be cut (recunw_add_cut), else 0.
 */
static int inline_perf(struct recunw *ru, const struct perf_event_header *rec,
		       const struct recunw_py *py, size_t head_len, uint64_t keep, uint64_t dyn)
{
	static const struct recunw_py none;

	ru->cur = (const unsigned char *)rec;
	ru->cur_len = rec->size;
	ru->cur_py = py ? py : &none;
	if (rec->type != PERF_RECORD_SAMPLE) {
		session_live_perf(ru->live, rec, rec->size);
		recunw_put(ru, DLP_REC_PERF, rec, rec->size, NULL, 0);
		return 1;
	}
	ru->cur_dyn = UINT64_MAX;
	ru->cut_head = head_len;
	if (head_len) {
		uint64_t size;

		/* (sample_fixup() checked the sizes) what recunw_strip_sample() keeps ends at the
		 * dyn_size word, as in the cut record */
		memcpy(&size, ru->cur + head_len, 8);
		ru->cur_len = head_len + 16 + (size_t)size;
		ru->cut_keep = keep;
		ru->cur_dyn = dyn;
	}
	ru->delivered = 0;
	ru->defer = 0;
	ru->bail = 0;
	ru->inl_try = 1;
	unwinder_set_fast(ru->uw, 1);
	session_live_perf(ru->live, rec, rec->size);
	unwinder_set_fast(ru->uw, 0);
	ru->inl_try = 0;
	if (!ru->delivered || ru->bail) {
		ru->inl = 0;
		recunw_put_smp(ru);	/* before the thread takes over */
		ru->st.bails++;
		return 0;
	}
	ru->st.inline_samples++;
	return 1;
}

/* A sample is queued to be unwound, or as it is when the thread is behind: what waited
 * at the last hand-over, and what waits here, past the soft cap */
static uint32_t sample_kind(const struct recunw *ru, unsigned flags)
{
	if (flags & RECUNW_WAIT)
		return IT_PERF;
	return ru->seen_queued + ru->pbytes >= ru->soft_cap ? IT_SAMPLE_BEHIND : IT_PERF;
}

int recunw_add(struct recunw *ru, uint32_t type, const void *a, size_t alen, const void *b,
	       size_t blen)
{
	uint32_t kind = IT_WRITE;

	if (type == DLP_REC_PERF && alen >= sizeof(struct perf_event_header) && !blen)
		kind = ((const struct perf_event_header *)a)->type == PERF_RECORD_SAMPLE ?
		       sample_kind(ru, 0) : IT_PERF;
	inline_begin(ru);
	if (ru->inl && kind == IT_WRITE) {
		recunw_put(ru, type, a, alen, b, blen);
		return 0;
	}
	if (ru->inl && inline_perf(ru, a, NULL, 0, 0, 0))
		return 0;
	enqueue(ru, kind, type, a, alen, b, blen);
	return 0;
}

int recunw_add_sample(struct recunw *ru, const struct perf_event_header *rec,
		      const struct recunw_py *py, unsigned flags)
{
	struct item *it;

	inline_begin(ru);
	if (ru->inl && inline_perf(ru, rec, py, 0, 0, 0))
		return 0;
	it = item_new(ru, sample_kind(ru, flags), DLP_REC_PERF, rec, rec->size, NULL, 0);
	if (py)
		it->py = *py;
	queue_item(ru, it);
	return 0;
}

int recunw_add_cut(struct recunw *ru, const struct perf_event_header *rec, size_t head_len,
		   uint64_t keep, uint64_t dyn, const struct recunw_py *py, unsigned flags)
{
	struct item *it;

	inline_begin(ru);
	if (ru->inl && inline_perf(ru, rec, py, head_len, keep, dyn))
		return 0;
	it = item_new(ru, sample_kind(ru, flags), DLP_REC_PERF, NULL, head_len + 16 + (size_t)keep,
		      NULL, 0);
	recunw_cut(it->data, rec, head_len, keep, dyn);
	if (py)
		it->py = *py;
	queue_item(ru, it);
	return 0;
}

int recunw_attr(struct recunw *ru, const void *data, size_t len)
{
	/* the thread has not seen a record yet when attrs come: safe to touch */
	pthread_mutex_lock(&ru->mu);
	session_live_attr(ru->live, data, len);
	pthread_mutex_unlock(&ru->mu);
	if (ru->inl)
		recunw_put(ru, DLP_REC_ATTR, data, len, NULL, 0);
	else
		enqueue(ru, IT_WRITE, DLP_REC_ATTR, data, len, NULL, 0);
	return 0;
}

void recunw_flush(struct recunw *ru)
{
	if (ru->inl) {
		recunw_flush_all(ru);
		return;
	}
	enqueue(ru, IT_FLUSH, 0, NULL, 0, NULL, 0);
	hand_over(ru, 1);
}

/* A process's files, read under its own root where that is not record's (a container,
 * a chroot: proc-root.h), as the mappings are seen */
static const char *root_of(void *ctx, uint32_t pid, uint64_t time)
{
	return proc_roots_at(((struct recunw *)ctx)->roots, pid, time);
}

struct recunw *recunw_new(struct recwriter *w, int keep_raw, struct proc_roots *roots)
{
	struct recunw *ru = xcalloc(1, sizeof(*ru));
	struct strbuf sb = STRBUF_INIT;
	int started;

	ru->w = w;
	ru->keep_raw = keep_raw;
	ru->soft_cap = SOFT_CAP;
	if (getenv("DLPROF_TEST_UNWIND_BEHIND")) {	/* tests: every sample "behind" */
		ru->soft_cap = 0;
		ru->no_inline = 1;
	}
	/* (the thread unwinds every sample: to compare, and for tests of its path) */
	if (getenv("DLPROF_NO_INLINE_UNWIND"))
		ru->no_inline = 1;
	ru->m = machine_new();
	ru->roots = roots;
	machine_set_root_fn(ru->m, root_of, ru);
	ru->uw = unwinder_new(ru->m);
	if (ru->uw)
		unwinder_set_live(ru->uw);
	ru->live = session_live_new(&recunw_live_ops, ru);
	strbuf_init(&ru->out, 0);
	memrec_enc_init(&ru->mem);
	memrec_enc_init(&ru->smp);
	ru->tsc = recunw_tsc_invariant();
	ru->mono0 = now_ns();
	ru->tsc0 = __rdtsc();
	if (!recfile_vdso_rec(&sb) && sb.len > sizeof(struct dlp_file_rec)) {
		struct dlp_file_rec fr;

		memcpy(&fr, sb.buf, sizeof(fr));
		if (fr.path_len && sizeof(fr) + fr.path_len <= sb.len)
			machine_set_image(ru->m, sb.buf + sizeof(fr), sb.buf + sizeof(fr) + fr.path_len,
					  sb.len - sizeof(fr) - fr.path_len);
	}
	strbuf_release(&sb);
	pthread_mutex_init(&ru->mu, NULL);
	pthread_cond_init(&ru->work, NULL);
	pthread_cond_init(&ru->space, NULL);
	started = ru->uw && !thread_start_quiet(&ru->thread, thread_main, ru);
	if (!started) {
		error("unable to start the unwinding thread: stacks are kept as copies");
		unwinder_free(ru->uw);
		session_live_free(ru->live);
		machine_free(ru->m);
		strbuf_release(&ru->out);
		free(ru);
		return NULL;
	}
	return ru;
}

void recunw_set_native(struct recunw *ru, struct pybpf *pb, int no_keep)
{
	kstack_free(ru->ks);	/* (NULL: the program went; the thread has no work yet) */
	ru->ks = pb ? kstack_new(pb, ru->m, no_keep) : NULL;
}

struct kstack *recunw_kstack(struct recunw *ru)
{
	return ru ? ru->ks : NULL;
}

int recunw_finish(struct recunw *ru, struct recunw_stats *st, struct keep_stats *keep)
{
	int failed;

	if (ru->inl)
		recunw_put_smp(ru);
	ru->inl = 0;	/* the thread writes the rest */
	hand_over(ru, 0);
	pthread_mutex_lock(&ru->mu);
	ru->closing = 1;
	pthread_cond_signal(&ru->work);
	pthread_mutex_unlock(&ru->mu);
	pthread_join(ru->thread, NULL);
	if (ru->tsc) {
		uint64_t ticks = __rdtsc() - ru->tsc0, ns = now_ns() - ru->mono0;

		ru->st.unwind_ns = ticks ? (uint64_t)((double)ru->st.unwind_ns * ns / ticks) : 0;
	}
	if (ru->ks) {
		ru->st.kstack = 1;
		kstack_get_stats(ru->ks, &ru->st.ks);
		kstack_mark_walked(ru->ks);
		kstack_free(ru->ks);
		ru->ks = NULL;
	}
	if (st)
		*st = ru->st;
	failed = ru->write_failed;
	for (unsigned c = 0; c < POOL_CLASSES; c++) {
		free_items(ru->ret[c]);
		free_items(ru->pool[c]);
	}
	for (size_t i = 0; i < ru->table_cap; i++)
		free(ru->table[i].ips);
	free(ru->table);
	if (keep) {
		keep_files(ru->m, keep);
		/* the names found as the files were mapped */
		keep->names = ru->names;
		keep->nr_names = ru->nr_names;
		keep->alloc_names = ru->alloc_names;
		ru->names = NULL;
		ru->nr_names = 0;
	}
	for (size_t i = 0; i < ru->nr_names; i++)
		free(ru->names[i].name);
	free(ru->names);
	inductor_index_free(ru->inductor);
	unwinder_free(ru->uw);
	session_live_free(ru->live);
	machine_free(ru->m);
	strbuf_release(&ru->out);
	free(ru->cut);
	memrec_enc_release(&ru->mem);
	memrec_enc_release(&ru->smp);
	pthread_mutex_destroy(&ru->mu);
	pthread_cond_destroy(&ru->work);
	pthread_cond_destroy(&ru->space);
	free(ru);
	return failed ? -1 : 0;
}
