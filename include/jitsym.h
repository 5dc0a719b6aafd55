/* jitsym.h - names of JIT-compiled code: perf map text and jitdump files.
 *
 * Fed from DLP_REC_JITMAP / DLP_REC_JITDUMP records (pid + the file's content, captured
 * by record), it keeps a per-pid range table.  Lookups prefer the latest entry that
 * covers an address (code is often regenerated at a reused address).  jitdump code
 * bytes are kept, for tools that look at the instructions (check-isa).
 */
#ifndef DLPROF_JITSYM_H
#define DLPROF_JITSYM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct jitsym {
	uint64_t start, end;	/* [start, end) in the process */
	const char *name;
	uint64_t time;		/* jitdump load timestamp, 0 for perf map entries */
	const uint8_t *code;	/* jitdump code bytes (end - start of them), else NULL */
};

struct jitsyms;

struct jitsyms *jitsyms_new(void);
void jitsyms_free(struct jitsyms *j);
/* quiet=1: the parsers below print nothing (for a second reader of the same records,
 * whose first reader already warned). */
void jitsyms_set_quiet(struct jitsyms *j, int quiet);

/* Parse perf map text ("START SIZE name" per line, hex, START with or without 0x).
 * what names the source in messages.  Returns entries added, or -1 (one-line warning
 * printed, nothing added) for input that is not a perf map. */
int jitsyms_add_perfmap(struct jitsyms *j, int32_t pid, const char *text, size_t len,
			const char *what);
/* Parse a jitdump image (either endianness).  Returns entries added, or -1 (one-line
 * warning printed, nothing added) for a corrupt file. */
int jitsyms_add_jitdump(struct jitsyms *j, int32_t pid, const void *data, size_t len,
			const char *what);

/* The entry covering addr in pid, or NULL. */
const struct jitsym *jitsyms_find(struct jitsyms *j, int32_t pid, uint64_t addr);
/* Code bytes of the jitdump entry covering addr: 0 with start, code and len set, or -1. */
int jitsym_code(struct jitsyms *j, int32_t pid, uint64_t addr, uint64_t *start,
		const uint8_t **code, size_t *len);
/*
 * Open /tmp/perf-PID.map for reading.  /tmp is everyone's: the file is taken only when
 * the file opened (never through a symlink) is a regular file owned by us or root, and
 * was last written at or after SINCE (wall clock seconds; 0: any time; a pid's map left
 * by an earlier process of the same pid is another's).  The checks are made on the
 * open descriptor, so the file cannot be swapped between check and read.  Returns the
 * descriptor (*st filled), or -1 with *why NULL when there is no such file, else why
 * it was not taken (JITSYM_PERFMAP_OLD when it is older than SINCE).
 */
extern const char JITSYM_PERFMAP_OLD[];
int jitsym_perfmap_open(int32_t pid, long since, struct stat *st, const char **why);
/* The same checks on a map already opened (a process's own /tmp under its root, where
 * ANY_OWNER takes a file of any owner: that root is the process's alone); fd is closed
 * when refused. */
int jitsym_perfmap_check(int fd, long since, int any_owner, struct stat *st, const char **why);

#endif
