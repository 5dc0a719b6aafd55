/* symbolize.h - process addresses in file-backed mappings -> function names.
 *
 * Per DSO (cached on dso->sym_priv): the file is opened when it exists and its build-id
 * matches the recorded one (a mismatch is warned about once and the DSO is then treated
 * as unknown rather than named wrongly).  Names come from .symtab/.dynsym of the file and
 * of its separate debug file (/usr/lib/debug/.build-id/xx/yyyy.debug, .gnu_debuglink);
 * code that no symbol covers takes the .eh_frame FDE around it as its bounds and is named
 * "dso!func@0xSTART" (FRAME_FDE).  With srcline/inline_frames, DWARF (through libdwfl,
 * which also asks debuginfod when DEBUGINFOD_URLS is set) adds file:line and the chain
 * of inlined calls.  Results are cached per (DSO, file offset): a repeated address costs
 * one hash lookup.
 */
#ifndef DLPROF_SYMBOLIZE_H
#define DLPROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "process.h"

struct symbolize_opts {
	int srcline;		/* fill frame.srcline */
	int inline_frames;	/* expand inline chains into extra frames */
};

struct symbolizer;

struct symbolizer *symbolizer_new(const struct symbolize_opts *opts);
/* Frees the per-DSO caches it hung on dso->sym_priv of every DSO it touched, and every
 * string it handed out. */
void symbolizer_free(struct symbolizer *s);

/*
 * Resolve addr (a process address inside mp; return addresses already moved back into
 * the call instruction) into out[0..max-1].  Returns the number of frames written, >= 1
 * when max >= 1: more than one only with inline_frames, innermost first, the inlined
 * frames flagged FRAME_INLINE.  Strings stay valid until symbolizer_free().
 */
size_t symbolize(struct symbolizer *s, const struct map *mp, uint64_t addr,
		 struct frame *out, size_t max);

/* Intern a string in the symbolizer's pool (valid until symbolizer_free). */
const char *symbolizer_intern(struct symbolizer *s, const char *str);

/* Demangle a C++ name into a malloc'd string, or NULL when it is not a mangled name. */
char *symbolize_demangle(const char *name);

/* TRAIT_* of the code bytes [code, code+len) (e.g. TRAIT_PAUSE_LOOP). */
unsigned symbolize_code_traits(const uint8_t *code, size_t len);

#endif
