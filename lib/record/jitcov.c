/* jitcov.c - JIT coverage: the executable mappings record saw and the samples that ran
 * in anonymous executable memory (code a JIT wrote), kept to say how much of it a perf
 * map or jitdump named (recorder.h: r->jit). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rephash.h"
#include "util.h"
#include "recorder.h"

void jitcov_note_map(struct recorder *r, uint32_t pid, uint64_t start, uint64_t len,
			  int anon)
{
	memset(r->jit.xr_hits, 0, sizeof(r->jit.xr_hits));
	for (size_t i = 0; i < r->jit.nr_xr; i++)
		if (r->jit.xr[i].pid == pid && r->jit.xr[i].start == start) {
			r->jit.xr[i].end = start + len;
			r->jit.xr[i].anon = (uint32_t)anon;
			return;
		}
	ALLOC_GROW(r->jit.xr, r->jit.nr_xr + 1, r->jit.alloc_xr);
	r->jit.xr[r->jit.nr_xr++] = (struct exec_range){ pid, (uint32_t)anon, start, start + len };
}

static const struct exec_range *find_exec(struct recorder *r, uint32_t pid, uint64_t ip)
{
	uint64_t page = ip >> 12;
	struct xr_hit *h = &r->jit.xr_hits[hash_u64(page ^ (uint64_t)pid << 40) & (XR_HITS - 1)];

	/* (0 is no code page: an empty entry never matches) */
	if (h->page == page && h->pid == pid && page)
		return &r->jit.xr[h->idx];
	for (size_t i = r->jit.nr_xr; i-- > 0;)	/* the latest mapping of an address wins */
		if (r->jit.xr[i].pid == pid && ip >= r->jit.xr[i].start && ip < r->jit.xr[i].end) {
			/* (a page the range covers whole: every ip in it has this answer) */
			if (page << 12 >= r->jit.xr[i].start && (page + 1) << 12 <= r->jit.xr[i].end)
				*h = (struct xr_hit){ pid, (uint32_t)i, page };
			return &r->jit.xr[i];
		}
	return NULL;
}

static void push_ip(struct anon_ip **v, size_t *nr, size_t *alloc, uint32_t pid, uint64_t ip)
{
	if (*nr >= ANON_IPS_MAX)
		return;
	ALLOC_GROW(*v, *nr + 1, *alloc);
	(*v)[(*nr)++] = (struct anon_ip){ pid, ip };
}

/* A user sample's ip: kept when it ran in anonymous executable memory (or in memory
 * whose mapping was not seen yet). */
void jitcov_note_anon(struct recorder *r, uint32_t pid, uint64_t ip)
{
	const struct exec_range *x = find_exec(r, pid, ip);

	if (!x) {
		push_ip(&r->jit.pending, &r->jit.nr_pending, &r->jit.alloc_pending, pid, ip);
		return;
	}
	if (!x->anon)
		return;
	r->jit.anon_samples++;
	push_ip(&r->jit.anon_ips, &r->jit.nr_anon_ips, &r->jit.alloc_anon_ips, pid, ip);
}

/* The end: samples drained before their mapping, placed now. */
void jitcov_place_pending(struct recorder *r)
{
	for (size_t i = 0; i < r->jit.nr_pending; i++) {
		const struct exec_range *x = find_exec(r, r->jit.pending[i].pid, r->jit.pending[i].ip);

		if (x && x->anon) {
			r->jit.anon_samples++;
			push_ip(&r->jit.anon_ips, &r->jit.nr_anon_ips, &r->jit.alloc_anon_ips,
				r->jit.pending[i].pid, r->jit.pending[i].ip);
		}
	}
	r->jit.nr_pending = 0;
}
