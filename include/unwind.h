/* unwind.h - turn a sample's copied user stack + registers into return addresses.
 *
 * For --call-graph dwarf samples: each file's CFI (read through libdw) is turned into
 * cached rules, one step of a walk is a look-up and a few reads from the copied stack
 * (else from the mapped file); frames without CFI (JIT code, broken CFI) are stepped over
 * by scanning the copied stack for a return address into known code.
 */
#ifndef DLPROF_UNWIND_H
#define DLPROF_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include "process.h"
#include "session.h"

struct unwinder;

/* One unwinder per report (or record) run; it caches CFI rules per file and code-page
 * kinds per address space. */
struct unwinder *unwinder_new(struct machine *m);
void unwinder_free(struct unwinder *u);
/* A function every thread starts in (_start, __libc_start_main, start_thread, clone3,
 * ...): a stack that reaches one is complete, and it says nothing about who called. */
int unwind_thread_root_name(const char *name);

/*
 * Unwind sample s.  Writes up to max entries to ips[] (leaf first; ips[0] is the sample
 * IP, later entries are return addresses exactly as found, NOT yet adjusted by -1) and a
 * FRAME_RECOVERED flag per entry into flags[] (may be NULL).  Returns the number written
 * (>= 1), or 0 when the sample has no user stack.  ips[0] is the sampled USER ip (from
 * the registers), also for samples taken in the kernel.  *complete is set when the walk
 * reached the thread root (_start, start_thread/clone, clone3).
 */
size_t unwind_sample(struct unwinder *u, const struct dlp_sample *s, uint64_t *ips,
		     unsigned *flags, size_t max, int *complete);

/* For record: the process model only grows and unwind_maps_changed() is called on every
 * new mapping, so return addresses met before are looked up from a cache. */
void unwinder_set_live(struct unwinder *u);
/* Process pid's mappings changed at time (record: an mmap came after samples were
 * unwound): forget what its code pages were and its threads' last walks. */
void unwind_maps_changed(struct unwinder *u, uint32_t pid, uint64_t time);
/* Thread tid of process pid exited (record): its last walk is not kept any more. */
void unwind_thread_exit(struct unwinder *u, uint32_t pid, uint32_t tid);

/* Did the last unwind_sample() meet a frame whose address no known mapping covers (a
 * mapping the process model has not seen yet, while recording)? */
int unwind_met_unmapped(const struct unwinder *u);
/* Did the last unwind_sample() take its outer frames, past the end of its stack copy,
 * from the thread's last walk (joined at a frame both walks met in the same state, every
 * read the copy holds the same)?  Those frames were not read from this sample's copy. */
int unwind_past_copy(const struct unwinder *u);
/* Did the last unwind_sample() end where its stack copy did (a frame's return address
 * past the copy's end, not read from the thread's last walk)? */
int unwind_copy_ended(const struct unwinder *u);
/* With fast set, a walk does nothing long: where it would read a file's .debug_frame
 * for the first time (libdw reads all of it, and the file's DWARF headers, then) it
 * gives up, unwind_sample() returns 0 and unwind_bailed() says so (nothing counted,
 * nothing kept of it); a walk without fast then does it.  Opening a file, its .eh_frame
 * (read lazily) and its thread-root functions are done, as a row of its CFI is. */
void unwinder_set_fast(struct unwinder *u, int fast);
int unwind_bailed(const struct unwinder *u);

/*
 * A file's CFI as rows for the kernel walk (kunwind.h): base the first page of its
 * code, pages[] the rows that can cover each page, rules[] the distinct rules, rows[]
 * sorted (KUNW_ROW: 4 bytes each).  0, or -1 where the file cannot be read, is not the
 * one of that build-id (id_size 0: not checked), has no usable .eh_frame, or code more
 * than 4 GiB past its first.  Safe in any thread.
 */
struct kunw_page;
struct kunw_rule;
struct unw_ktable {
	uint64_t base;
	uint32_t *rows;
	struct kunw_rule *rules;
	struct kunw_page *pages;
	size_t nr_rows, nr_rules, nr_pages;
	size_t rules_cut;	/* rows made KR_OTHER: past KUNW_MAX_RULES rules */
	void *map;		/* read from the cache: its file mapped, the arrays in it */
	size_t map_len;
};
/* bytes in the kernel (and on disk, less a header) */
#define UNW_KTABLE_BYTES(kt) (8 * (kt)->nr_pages + 4 * ((kt)->nr_rules + (kt)->nr_rows))
int unwind_ktable(const char *file, const uint8_t *build_id, size_t id_size,
		  struct unw_ktable *kt);
/* the same of a file's bytes (name: for a warning) */
int unwind_ktable_image(const void *data, size_t size, const char *name,
			struct unw_ktable *kt);
void unwind_ktable_release(struct unw_ktable *kt);
/* Tables kept by build-id (beside the build-id cache's files, paths.h): one there;
 * read one (0, or -1); keep one (quietly not, where the cache cannot be written) */
int unwind_ktable_cached(const uint8_t *id, size_t id_size);
int unwind_ktable_load(const uint8_t *id, size_t id_size, struct unw_ktable *kt);
void unwind_ktable_keep(const uint8_t *id, size_t id_size, const struct unw_ktable *kt);
/* The files whose tables walks wanted in the processes of an executable (by build-id):
 * each as its build-id's size, then its bytes; their number (*ids: free() it).  At the
 * end of a run of it, those its walks used (ids): they are kept, the others listed grow
 * a run older, and go after KTAB_WANTS_RUNS runs unused (quietly not, where the cache
 * cannot be written).  At most KTAB_WANTS_MAX. */
#define KTAB_WANTS_MAX 1024
#define KTAB_WANTS_RUNS 8
size_t unwind_ktable_wants(const uint8_t *exe, size_t exe_size, uint8_t (**ids)[21]);
void unwind_ktable_wants_keep(const uint8_t *exe, size_t exe_size, const uint8_t (*ids)[21],
			      size_t nr);
/* A process address less the bias is its file's ELF address.  0, or -1 (no file). */
int unwind_map_bias(const struct map *mp, uint64_t *bias);

struct unwind_stats {
	uint64_t walks;		/* samples unwound */
	uint64_t complete;	/* of them, reaching the thread root */
	uint64_t frames;	/* frames written */
	uint64_t scans;		/* stack scans that found a return address */
	uint64_t joined;	/* walks that joined their thread's last walk (record) */
	uint64_t reused;	/* frames they took from it */
	uint64_t past_copy;	/* of the joined, those whose outer frames lie past the
				   end of their copy (unwind_past_copy) */
};
void unwind_get_stats(const struct unwinder *u, struct unwind_stats *st);

#endif
