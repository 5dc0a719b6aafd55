/* mem-ring.c - record --memory: the frees the allocation sampler puts in the shared
 * ring (memevent.h), gathered into DLP_REC_MEMFREES records (recorder.h: r->mem). */
#include <stdint.h>
#include <unistd.h>

#include "memevent.h"
#include "memrec.h"
#include "recfile.h"
#include "util.h"
#include "recorder.h"

/* The frees gathered, as one DLP_REC_MEMFREES record */
void mem_frees_put(struct recorder *r)
{
	size_t len;
	const void *p = memrec_take(&r->mem.frees_enc, &len);

	if (p)
		rec_put(r, DLP_REC_MEMFREES, p, len, NULL, 0);
}

/*
 * --memory: take the frees the library put in the ring (memevent.h) and gather them for
 * DLP_REC_MEMFREES records (MEM_FREES_BATCH a record, or what a second gathered).  A
 * slot taken but not filled yet is waited for; one left so for a second (its writer died
 * between the two) is passed over and counted.  FINAL: the end of the recording (the ring
 * is closed to writers first; what is half-written then is counted).
 */
void mem_ring_drain(struct recorder *r, int final)
{
	struct mem_shared *sh = r->mem.shared;

	if (!sh)
		return;
	if (final) {
		/* closed; a writer that saw it open a moment ago finishes its slot first */
		__atomic_store_n(&sh->free_ring_on, 0, __ATOMIC_RELEASE);
		usleep(2000);
	}
	for (;;) {
		uint64_t pos = r->mem.free_tail;
		struct mem_free_slot *e = &sh->free_ring[pos & (MEM_FREE_RING - 1)];

		if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) != pos + 1) {
			if (__atomic_load_n(&sh->free_head, __ATOMIC_ACQUIRE) == pos)
				break;	/* empty */
			if (!final) {
				uint64_t t = now_ns();

				if (!r->mem.free_wait)
					r->mem.free_wait = t;
				if (t - r->mem.free_wait < 1000000000ull)
					break;
			}
			r->mem.ring_lost++;
		} else {
			struct memrec_free f = { e->time, e->key, e->pid, e->tid };

			memrec_free_add(&r->mem.frees_enc, &f);
			r->mem.frees++;
		}
		__atomic_store_n(&e->seq, pos + MEM_FREE_RING, __ATOMIC_RELEASE);
		r->mem.free_tail = pos + 1;
		r->mem.free_wait = 0;
		if (r->mem.frees_enc.nr >= MEM_FREES_BATCH)
			mem_frees_put(r);
	}
	if (final)
		mem_frees_put(r);
}
