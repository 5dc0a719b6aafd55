/* collector.h - what the ITT collector (itt-collector.c) lends the oneDNN interposer
 * (dnnl-hook.c) inside libdlprof-itt.so: its clock, its per-thread buffers and its file. */
#ifndef DLPROF_COLLECTOR_H
#define DLPROF_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in ns, the samples' clock */
uint64_t collector_now(void);
/* One primitive execution of the calling thread (struct itt_exec), buffered without a
 * lock; dropped when the thread has no buffer or it is being written out at exit. */
void collector_add_exec(uint64_t start, uint64_t end, uint32_t prim);
/* One block "u32 id, then len bytes" of the given kind, written whole to the file
 * (opened on first use).  Takes the collector's lock.  Returns 0 or -1. */
int collector_write_block(uint32_t kind, uint32_t id, const void *data, size_t len);

#endif
