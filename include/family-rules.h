/* family-rules.h - the rule set behind family.h: parsing, listing, ISA attribute.
 *
 * Rule file format (share/families.rules), one rule per line, '#' starts a comment:
 *
 *	FAMILY  KEY=PATTERN [KEY=PATTERN ...]
 *
 * All conditions of a rule must hold; rules are tried in file order and the first match
 * wins.  PATTERN is a shell glob (fnmatch, '*' crosses '/' and '::'); several globs may be
 * joined with '|'.  Keys:
 *	dso=GLOB	leaf frame's short DSO name ("libgomp.so.1", "[jit]", "[kernel.kallsyms]")
 *	path=GLOB	leaf frame's DSO path as mapped (".../dist-packages/numpy/core/...")
 *	sym=GLOB	leaf frame's demangled symbol (JIT kernel name for JIT frames)
 *	flag=NAME	leaf frame flag: kernel, jit, anon, fde, unknown, recovered (|-list: any)
 *	trait=NAME	leaf function trait: pause-loop
 *	stack=GLOB	some frame of the stack (leaf included) has a matching symbol
 *	notsym=GLOB	leaf symbol does NOT match
 *	sample=KIND	cpu (a CPU sample) or wait (a switch-out)
 *	prim=GLOB	the oneDNN primitive kind the sample ran inside (its ITT task name)
 * A FAMILY is [a-z0-9_-]+.
 */
#ifndef DLPROF_FAMILY_RULES_H
#define DLPROF_FAMILY_RULES_H

#include <stddef.h>

#include "family.h"

struct strbuf;

/* An empty rule set (classifies everything as "other"). */
struct family_rules *family_rules_new(void);
/* Parse rules from text (named NAME in messages) and append them (or put them in front of
 * the existing ones when front is set).  On error prints "NAME:LINE: <problem>", adds
 * nothing and returns -1. */
int family_rules_add_text(struct family_rules *r, const char *name, const char *text,
			  int front);
/* The same from a file. */
int family_rules_add_file(struct family_rules *r, const char *path, int front);

size_t family_rules_count(const struct family_rules *r);
/* Rule i: its family, and "FILE:LINE: rule text" in *where. */
const char *family_rule_family(const struct family_rules *r, size_t i, const char **where);

/* Distinct family names in rule order ("other" last); returns the count. */
size_t family_rules_families(const struct family_rules *r, const char ***out);

/* The ISA a JIT kernel or library function name says it uses ("avx512_core", "avx512",
 * "avx2", "avx", "sse41", "uni", "amx"), or NULL. */
const char *family_isa_from_name(const char *name);

#endif
