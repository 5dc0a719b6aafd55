/* opcounts.h - each PyTorch operator's calls as record --op-calls counted them (META
 * op_calls: "aten::add.Tensor=120,aten::relu=64"), for the views' Calls columns. */
#ifndef DLPROF_OPCOUNTS_H
#define DLPROF_OPCOUNTS_H

#include <stdint.h>

#include "recmeta.h"
#include "rephash.h"

struct opcounts {
	struct u64map exact;	/* interned "aten::add.Tensor" -> calls */
	struct u64map base;	/* interned "aten::add" -> the calls of all its overloads */
	int present;		/* the recording counted them (META op_calls, even empty) */
	uint64_t calls;		/* ... this many in all */
};

void opcounts_init(struct opcounts *c);
void opcounts_meta(struct opcounts *c, const struct recmeta *m);
/* The calls of op, an attribution's operator (interned): its own, or where it names no
 * overload, the sum of its overloads'; 0 where none were counted */
uint64_t opcounts_get(const struct opcounts *c, const char *op);
void opcounts_release(struct opcounts *c);

#endif
