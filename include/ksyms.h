/* ksyms.h - kernel symbols: from the recording (DLP_REC_KSYMS) or /proc/kallsyms.
 *
 * /proc/kallsyms is used only when the recording carries no kernel symbols, the file
 * shows real (non-zero) addresses, and the recording's kernel release matches uname.
 */
#ifndef DLPROF_KSYMS_H
#define DLPROF_KSYMS_H

#include <stddef.h>
#include <stdint.h>

struct ksym {
	uint64_t start, end;
	const char *name;
	const char *module;	/* NULL for the core kernel */
};

struct ksyms;

struct ksyms *ksyms_new(void);
void ksyms_free(struct ksyms *k);

/* Add "ADDR SIZE NAME [MODULE]\n" lines (hex ADDR and SIZE; a DLP_REC_KSYMS payload).
 * Malformed lines are skipped; returns the number of symbols added. */
int ksyms_add_text(struct ksyms *k, const char *text, size_t len);
/* Load /proc/kallsyms (path for tests; NULL = /proc/kallsyms) when release is NULL or
 * equals uname's release.  Returns symbols added, 0 when unusable (hidden addresses,
 * other kernel), -1 when unreadable. */
int ksyms_load_kallsyms(struct ksyms *k, const char *path, const char *release);
/* Sort and bound the symbols (ksyms_find does it when needed; a loader thread can do it
 * ahead of the lookups). */
void ksyms_sort(struct ksyms *k);
/* Number of symbols known. */
size_t ksyms_count(const struct ksyms *k);
/* The symbol covering addr, or NULL. */
const struct ksym *ksyms_find(struct ksyms *k, uint64_t addr);

/*
 * The running kernel's symbols into an empty k: this boot's core kernel text from
 * dlprof's cache (ksyms.c says why and how: $DLPROF_KSYMS_DIR, else the cache folder's
 * kallsyms/, a file by the boot's id), else all of /proc/kallsyms, then, where keep, its
 * core text kept there for the next.  The symbols loaded; 0 or -1 where none.
 * ksyms_need: k made able to name addr (a table loaded from the cache names only the
 * core kernel's text; for any other address, all of /proc/kallsyms is added to it, once,
 * where release is NULL or uname's).
 */
int ksyms_load_running(struct ksyms *k, int keep);
void ksyms_need(struct ksyms *k, uint64_t addr, const char *release);

#endif
