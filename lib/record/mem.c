/* mem.c - record --memory: the processes that allocated through the sampler and what
 * each said at its exit, the frees it puts in the shared ring (memevent.h), gathered
 * into DLP_REC_MEMFREES records, and what the recording lacks at the end (recorder.h:
 * r->mem; the probes are mem-probes.c). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
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

/* Process pid's entry, made the first time it is asked for */
struct mem_proc *mem_proc_of(struct recorder *r, uint32_t pid)
{
	for (size_t i = r->mem.nr_procs; i-- > 0;)
		if (r->mem.procs[i].pid == pid)
			return &r->mem.procs[i];
	ALLOC_GROW(r->mem.procs, r->mem.nr_procs + 1, r->mem.alloc_procs);
	memset(&r->mem.procs[r->mem.nr_procs], 0, sizeof(struct mem_proc));
	r->mem.procs[r->mem.nr_procs].pid = pid;
	return &r->mem.procs[r->mem.nr_procs++];
}

/*
 * --memory: name the processes whose allocations the recording lacks: a program that
 * never loaded the library (static, or LD_PRELOAD dropped), one whose malloc is not ours
 * (an allocator linked in or preloaded before ours), and one with far more anonymous
 * memory resident at its exit than it ever allocated through us (its own arena over brk
 * or raw system calls).
 */
void mem_check(struct recorder *r)
{
	int said = 0, more = 0;

	if (!r->opts->memory)
		return;
	for (size_t i = 0; i < r->mem.nr_procs; i++) {
		const struct mem_proc *mp = &r->mem.procs[i];
		const char *comm = mp->comm[0] ? mp->comm : "?";
		char line[400];

		line[0] = 0;
		if (mp->comm[0] && !u64map_has(&r->mem.pids, mp->pid) && !mp->stats)
			snprintf(line, sizeof(line), "--memory: process %u (%s) did not load %s "
				 "(a static binary, or one that drops LD_PRELOAD): its allocations are "
				 "not recorded", mp->pid, comm, MEM_LIBRARY);
		else if (mp->stats && mp->rss_anon > 2 * mp->bytes + (64ull << 20))
			snprintf(line, sizeof(line), "--memory: process %u (%s) had %.0f MiB of "
				 "anonymous memory resident at exit but allocated only %.0f MiB through "
				 "dlprof's malloc and mmap: it allocates in a way dlprof cannot see (an "
				 "allocator linked in or preloaded before dlprof's, its own arena over "
				 "brk or raw system calls)", mp->pid, comm,
				 mp->rss_anon / 1048576.0, mp->bytes / 1048576.0);
		if (!line[0])
			continue;
		if (said++ < 4)
			rec_warn(r, "%s", line);
		else
			more++;
	}
	if (more)
		rec_warn(r, "--memory: %d more processes like these", more);
}
