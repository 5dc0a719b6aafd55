/* kstack.h - the native walk in the kernel, beside the stack copy (kstack.c) */
#ifndef DLPROF_KSTACK_H
#define DLPROF_KSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "process.h"

struct pybpf;
struct kstack;

/* NULL where pb does not walk native frames */
/* no_keep: its tables not kept in the build-id cache (--no-buildid-cache) */
struct kstack *kstack_new(struct pybpf *pb, struct machine *m, int no_keep);
void kstack_free(struct kstack *ks);
/* the process model's side-band, after it took it */
void kstack_mmap(struct kstack *ks, const struct map *mp, uint32_t pid);
void kstack_fork(struct kstack *ks, uint32_t pid, uint32_t ppid);
void kstack_exec(struct kstack *ks, uint32_t pid);
void kstack_exit(struct kstack *ks, uint32_t pid);
/* A sample's stack as the copy gave it (ips[0] the sample's user ip; past_copy: its
 * outer frames the thread's last walk's, unwind_past_copy), set beside the kernel's walk
 * of it; where that walk reached the thread's root and kips is given, its frames (and
 * FRAME_RECOVERED flags) into kips, max at most: their count, else 0 */
size_t kstack_compare(struct kstack *ks, uint32_t tid, uint64_t time, const uint64_t *ips,
		      size_t n, int complete, int past_copy, uint64_t *kips, unsigned *kflags,
		      size_t max);
/* The walks replace the copies (PYBPF_NATIVE_INSTEAD): the draining thread takes them
 * before each drain of the rings, fn called with each sample the kernel walked whole
 * (its own record dropped) */
struct kunw_chain;
int kstack_instead(const struct kstack *ks);
/* Walks stop at mappings the kernel was not told of yet, as mappings come: the rings are
 * best read soon (called where walks are drained) */
int kstack_behind(const struct kstack *ks);
typedef void kstack_sample_fn(void *ctx, const struct kunw_chain *c);
void kstack_drain(struct kstack *ks, kstack_sample_fn *fn, void *ctx);

struct kstack_stats {
	uint64_t tables, rows, table_bytes, table_ns;	/* the files' tables */
	uint64_t table_failed;	/* files that have none */
	uint64_t tables_kept;	/* of the tables, read from the build-id cache */
	uint64_t rules_cut;	/* rows whose rule a table had no room for (KR_OTHER) */
	uint64_t table_cpu_ns;	/* the CPU time the tables took, made or read */
	uint64_t proc_failed, maps_over;	/* processes the kernel was not told all of */
	uint64_t walks;		/* walks read from the kernel */
	uint64_t kring_bytes;	/* their bytes through the ring */
	uint64_t instead;	/* samples the walk gave in place of their copy */
	uint64_t kept;		/* walked whole, but of an event whose samples keep their
				   copy (the switch-outs) */
	uint64_t dropped;	/* walks its ring had no room for */
	uint64_t samples;	/* samples unwound from their copy */
	uint64_t matched;	/* of them, with the kernel's walk */
	uint64_t unmatched;	/* without */
	uint64_t unmatched_walks;	/* walks no sample took */
	uint64_t frames;	/* the kernel's walks' frames, of those */
	uint64_t same;		/* the same frames, both whole or both not */
	uint64_t stopped[16];	/* the kernel's walk stopped early (KW_*), its frames the
				   copy's first ones */
	uint64_t further;	/* the kernel's whole, the copy's its first frames: the copy
				   ended (32 KiB of a deep stack) */
	uint64_t differ;	/* other frames */
	/* of the stacks deeper than their copy, rooted through the thread's last walk
	 * (unwind_past_copy): the kernel's whole walk the same, other frames */
	uint64_t past_same, past_differ;
};
void kstack_get_stats(struct kstack *ks, struct kstack_stats *st);
/* Mark each file a walk went through, at the end: keep_files keeps it (dso->walked),
 * its executables keep it on their wants (kstack_free) */
void kstack_mark_walked(struct kstack *ks);

#endif
