/* elfcheck.c - what libelf and libdw would trust in an ELF file (elfcheck.h).
 *
 * The CFI walk follows libdw (elfutils 0.188: dwarf_getcfi_elf.c, dwarf_next_cfi.c,
 * cie.c, fde.c, cfi.c, encoded-value.h, memory-access.h): the bytes it reads as the
 * section, where each entry and each program starts, how it reads a pointer or a LEB128
 * number, and where it stops running a program, so that every register number it would
 * size a row by is one looked at here.  Offsets are kept as size_t and wrap as libdw's
 * pointers do.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <dwarf.h>

#include "elfcheck.h"
#include "paths.h"
#include "rephash.h"
#include "util.h"

#define CIE_ID_64 UINT64_MAX

/* One CFI section as libdw reads it: its bytes and read_encoded_value's bases. */
struct cfi {
	const char *name;	/* ".eh_frame", ".debug_frame" */
	const uint8_t *buf;
	size_t size;
	uint64_t frame_vaddr, datarel;
	int eh;			/* .eh_frame: CIE id 0, CIE pointers relative */
	int strict;		/* buf is the whole section: an entry past its end is corrupt */
	int addr8;		/* ELFCLASS64 */
	int msb;		/* big-endian file */
	struct u64map cies;	/* CIE offset -> struct cie (CIE_UNUSABLE: libdw would not use it) */
	void (*fde_fn)(void *ctx, uint64_t start, uint64_t len, int signal);	/* elf_each_fde() */
	void *fde_ctx;
	int no_programs;	/* elf_each_fde(): the entries only, not their programs */
	char *why;
	size_t whysz;
};

#define CIE_UNUSABLE ((struct cie *)1)

struct cie {
	uint8_t fde_enc;
	int sized;		/* 'z': FDEs carry their augmentation's length */
	int signal;		/* 'S': its FDEs are signal frames' */
	size_t fde_aug_size;
};

/* One entry as dwarf_next_cfi() returns it. */
struct entry {
	int is_cie;
	size_t next;		/* the next entry, or the entry's own offset when unknown */
	size_t start, end;	/* FDE: after its CIE pointer; CIE: its initial instructions */
	uint64_t cie_off;	/* FDE: its CIE */
	size_t aug, aug_data;	/* CIE: augmentation string, augmentation data */
};

static int fail(char *why, size_t whysz, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t whysz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (whysz)
		vsnprintf(why, whysz, fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t rd(const struct cfi *c, size_t at, int n)
{
	uint64_t v = 0;

	for (int k = 0; k < n; k++)
		v |= (uint64_t)c->buf[at + k] << 8 * (c->msb ? n - 1 - k : k);
	return v;
}

/* libdw's get_uleb128: its first byte even at end, then at most 10 before end;
 * UINT64_MAX when they all continue.  -1 when a byte to read lies past the data. */
static int uleb(const struct cfi *c, size_t *i, size_t end, uint64_t *v)
{
	size_t at = *i, max;
	uint64_t acc;

	if (at >= c->size)
		return -1;
	acc = c->buf[at] & 0x7f;
	*i = at + 1;
	if (!(c->buf[at] & 0x80)) {
		*v = acc;
		return 0;
	}
	max = at < end ? (end - at < 10 ? end - at : 10) : 0;
	if (end > c->size && max > c->size - at)
		return -1;
	for (size_t k = 1; k < max; k++) {
		uint8_t b = c->buf[at + k];

		acc |= (uint64_t)(b & 0x7f) << 7 * k;
		*i = at + k + 1;
		if (!(b & 0x80)) {
			*v = acc;
			return 0;
		}
	}
	*v = UINT64_MAX;
	return 0;
}

/* libdw's get_sleb128: at most 9 bytes before end, then one more unless at end;
 * INT64_MAX when they all continue.  -1 when a byte to read lies past the data. */
static int sleb(const struct cfi *c, size_t *i, size_t end, int64_t *v)
{
	size_t at = *i, max;
	uint64_t acc = 0;
	uint8_t b;

	if (at >= c->size)
		return -1;
	max = at < end ? (end - at < 9 ? end - at : 9) : 0;
	if (end > c->size && max > c->size - at)
		return -1;
	for (size_t k = 0; k < (max > 1 ? max : 1); k++) {
		b = c->buf[at + k];
		acc |= (uint64_t)(b & 0x7f) << 7 * k;
		*i = at + k + 1;
		if (!(b & 0x80)) {
			if (b & 0x40)
				acc |= -((uint64_t)1 << 7 * (k + 1));
			*v = (int64_t)acc;
			return 0;
		}
	}
	*v = INT64_MAX;
	if (*i == end)
		return 0;
	if (*i >= c->size)
		return -1;
	b = c->buf[(*i)++];	/* "there might be one extra byte" */
	if (!(b & 0x80))
		*v = (int64_t)(acc | (uint64_t)b << 7 * max);
	return 0;
}

/* libdw's encoded_value_size (its uleb128 case returns at the first byte that continues) */
static size_t enc_size(const struct cfi *c, uint8_t enc, const size_t *at)
{
	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x07) {
	case DW_EH_PE_udata2:
		return 2;
	case DW_EH_PE_udata4:
		return 4;
	case DW_EH_PE_udata8:
		return 8;
	case DW_EH_PE_absptr:
		return c->addr8 ? 8 : 4;
	case DW_EH_PE_uleb128:
		for (size_t e = at ? *at : c->size; e < c->size;)
			if (c->buf[e++] & 0x80)
				return e - *at;
		return 0;
	default:
		return 0;
	}
}

/* libdw's read_encoded_value: 0, or -1 where it fails (or would read past the data). */
static int read_enc(const struct cfi *c, uint8_t enc, size_t *i, uint64_t *v)
{
	uint64_t r = 0, x;
	int64_t sv;
	size_t n;

	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_textrel:		/* libdw's textrel base is 0 */
	case DW_EH_PE_funcrel:
		break;
	case DW_EH_PE_pcrel:
		r = c->frame_vaddr + *i;
		break;
	case DW_EH_PE_datarel:
		r = c->datarel;
		break;
	case DW_EH_PE_aligned:
		n = enc_size(c, enc, i);
		if (!n)
			return -1;
		if ((c->frame_vaddr + *i) & (n - 1))
			*i += n - ((c->frame_vaddr + *i) & (n - 1));
		break;
	default:
		return -1;
	}
	switch (enc & 0x0f) {
	case DW_EH_PE_uleb128:
		if (uleb(c, i, c->size, &x))
			return -1;
		goto add;
	case DW_EH_PE_sleb128:
		if (sleb(c, i, c->size, &sv))
			return -1;
		x = (uint64_t)sv;
		goto add;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2:
		n = 2;
		break;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4:
		n = 4;
		break;
	case DW_EH_PE_udata8: case DW_EH_PE_sdata8:
		n = 8;
		break;
	case DW_EH_PE_absptr:
		n = c->addr8 ? 8 : 4;
		break;
	default:
		return -1;
	}
	if (*i > c->size || c->size - *i < n)
		return -1;
	x = rd(c, *i, (int)n);
	if ((enc & 0x0f) == DW_EH_PE_sdata2)
		x = (uint64_t)(int64_t)(int16_t)x;
	else if ((enc & 0x0f) == DW_EH_PE_sdata4)
		x = (uint64_t)(int64_t)(int32_t)x;
	*i += n;
add:
	r += x;
	if (enc & DW_EH_PE_indirect) {
		n = c->addr8 ? 8 : 4;
		if (r < c->frame_vaddr || c->size < n || r - c->frame_vaddr > c->size - n)
			return -1;
		r = rd(c, r - c->frame_vaddr, (int)n);
	}
	*v = r;
	return 0;
}

/*
 * dwarf_next_cfi() at off: 0 an entry, 1 the end (nothing at off, or the terminator),
 * -1 one libdw refuses (en->next tells whether it can go on past it), -2 one whose length
 * runs past the end of the data.
 */
static int next_entry(const struct cfi *c, size_t off, struct entry *en)
{
	size_t i, limit, osz = 4, asz = c->addr8 ? 8 : 4, ap, id_at;
	uint64_t len, id, skip;
	int64_t sv;
	int sized;

	en->next = off;
	if (off >= c->size || c->size - off <= 4)
		return 1;
	len = rd(c, off, 4);
	i = off + 4;
	if (len == 0xffffffff) {
		osz = 8;
		if (c->size - i < 8)
			return -1;
		len = rd(c, i, 8);
		i += 8;
	}
	if (!len)
		return 1;
	if (c->size - i < len)
		return -2;
	if (len < osz + 1)
		return -1;
	limit = i + len;
	en->next = limit;
	id_at = i;
	id = rd(c, i, (int)osz);
	i += osz;
	if (osz == 4 && !c->eh && id == 0xffffffff)
		id = CIE_ID_64;
	if (c->eh) {
		if (!id)
			id = CIE_ID_64;
		else if (id > id_at || id_at <= osz)
			return -1;
		else
			id = id_at - id;
	}
	en->is_cie = id == CIE_ID_64;
	en->end = limit;
	if (!en->is_cie) {
		en->cie_off = id;
		en->start = i;
		return 0;
	}
	/* a CIE: version, augmentation, alignment factors, return address register */
	if (c->buf[i] != 1 && (c->buf[i] < 3 || c->buf[i] > 4))
		return -1;
	int version = c->buf[i++];
	const uint8_t *nul = memchr(c->buf + i, 0, limit - i);

	if (!nul)
		return -1;
	en->aug = i;
	i = (size_t)(nul - c->buf) + 1;
	if (version >= 4) {
		if (i > limit || limit - i < 5 || c->buf[i] != asz || c->buf[i + 1])
			return -1;
		i += 2;
	}
	ap = en->aug;
	if (c->buf[ap] == 'e' && c->buf[ap + 1] == 'h') {
		ap += 2;
		i += asz;
	}
	if (i >= limit || uleb(c, &i, limit, &skip) || i >= limit || sleb(c, &i, limit, &sv) ||
	    i >= limit)
		return -1;
	if (version >= 3) {
		if (uleb(c, &i, limit, &skip))
			return -1;
	} else {
		i++;
	}
	en->aug_data = i;
	sized = c->buf[ap] == 'z';
	if (sized) {
		uint64_t aug_size;

		ap++;
		if (i >= limit || uleb(c, &i, limit, &aug_size) ||
		    (i <= limit && limit - i < aug_size))
			return -1;
		en->aug_data = i;
		for (; c->buf[ap]; ap++) {
			uint8_t enc;

			if (c->buf[ap] == 'S')
				continue;
			if (c->buf[ap] != 'L' && c->buf[ap] != 'R' && c->buf[ap] != 'P')
				break;
			if (i >= c->size)
				return -1;
			enc = c->buf[i++];
			if (c->buf[ap] == 'P')
				i += enc_size(c, enc, &i);
		}
		if (i > en->aug_data + aug_size)
			return -1;
		i = en->aug_data + aug_size;
	}
	en->start = i;
	return 0;
}

/* intern_new_cie(): how the FDEs of the CIE en are read.  -1 when its augmentation runs
 * past the data (libdw reads on regardless). */
static int cie_info(const struct cfi *c, const struct entry *en, struct cie *ci)
{
	size_t d = en->aug_data;

	memset(ci, 0, sizeof(*ci));
	for (size_t ap = en->aug; c->buf[ap]; ap++) {
		uint8_t enc;

		switch (c->buf[ap]) {
		case 'z':
			ci->sized = 1;
			continue;
		case 'S':
			ci->signal = 1;
			continue;
		case 'L': case 'R': case 'P':
			if (d >= c->size)
				return -1;
			enc = c->buf[d++];
			if (c->buf[ap] == 'L' && !ci->sized)
				ci->fde_aug_size += enc_size(c, enc, NULL);
			else if (c->buf[ap] == 'R')
				ci->fde_enc = enc;
			else if (c->buf[ap] == 'P')
				d += enc_size(c, enc, &d);
			continue;
		default:
			if (ci->sized)
				continue;
		}
		break;
	}
	if ((ci->fde_enc & 0x0f) == DW_EH_PE_absptr)
		ci->fde_enc |= c->addr8 ? DW_EH_PE_udata8 : DW_EH_PE_udata4;
	return 0;
}

/* The operands after the register of a register rule, as execute_cfi() reads them: 1
 * when libdw goes on to the next instruction at *i, 0 where it stops. */
static int operands(const struct cfi *c, uint8_t op, size_t *i, size_t end)
{
	uint64_t v, len;
	int64_t sv;

	switch (op) {
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_restore_extended:
		return 1;
	case DW_CFA_offset_extended_sf:
		return !sleb(c, i, end, &sv);
	case DW_CFA_val_offset_sf:
		return *i < end && !sleb(c, i, end, &sv);
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if ((op == DW_CFA_expression && *i >= end) || uleb(c, i, end, &len) ||
		    (*i <= end && len > end - *i))
			return 0;
		*i += len;
		return 1;
	default:	/* offset_extended, GNU_negative_offset_extended, val_offset, register */
		return *i < end && !uleb(c, i, end, &v);
	}
}

/* The program [i, end) of the entry at off, run as execute_cfi() runs it, up to where it
 * would stop: no register from ELF_CHECK_MAX_REG on, no state nested too deep. */
static int check_program(struct cfi *c, const struct cie *ci, size_t i, size_t end,
			 int in_cie, size_t off)
{
	const char *what = in_cie ? "CIE" : "FDE";
	unsigned depth = 0;

	while (i < end) {
		uint8_t op = c->buf[i++];
		uint64_t reg, len, v;
		int64_t sv;

		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			if (in_cie)
				return 0;	/* no row may move in a CIE: libdw stops */
			continue;
		case DW_CFA_offset:
			if (uleb(c, &i, end, &v))
				return 0;
			continue;		/* registers 0-63 */
		case DW_CFA_restore:
			if (in_cie)
				return 0;
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
		case DW_CFA_GNU_window_save:	/* registers up to 31 */
			continue;
		case DW_CFA_set_loc:
			if (read_enc(c, ci->fde_enc, &i, &v) || in_cie)
				return 0;
			continue;
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_MIPS_advance_loc8:
			len = op == DW_CFA_advance_loc1 ? 1 : op == DW_CFA_advance_loc2 ? 2 :
			      op == DW_CFA_advance_loc4 ? 4 : 8;
			if (in_cie || (op != DW_CFA_advance_loc1 && end - i < len))
				return 0;
			i += len;
			continue;
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
			if (uleb(c, &i, end, &v) || i >= end)
				return 0;
			if (op == DW_CFA_def_cfa ? uleb(c, &i, end, &v) : sleb(c, &i, end, &sv))
				return 0;
			continue;
		case DW_CFA_def_cfa_register:
		case DW_CFA_def_cfa_offset:
		case DW_CFA_GNU_args_size:
			if (uleb(c, &i, end, &v))
				return 0;
			continue;
		case DW_CFA_def_cfa_offset_sf:
			if (sleb(c, &i, end, &sv))
				return 0;
			continue;
		case DW_CFA_def_cfa_expression:
			if (uleb(c, &i, end, &len) || (i <= end && len > end - i))
				return 0;
			i += len;
			continue;
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_restore_extended:
		case DW_CFA_offset_extended:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_GNU_negative_offset_extended:
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
		case DW_CFA_register:
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			/* the register first: what follows can only stop libdw before it
			 * sizes the row by it */
			if (uleb(c, &i, end, &reg))
				return 0;
			if (reg >= ELF_CHECK_MAX_REG)
				return fail(c->why, c->whysz, "%s at %s+0x%zx names DWARF register %llu",
					    what, c->name, off, (unsigned long long)reg);
			if (!operands(c, op, &i, end) || (in_cie && op == DW_CFA_restore_extended))
				return 0;
			continue;
		case DW_CFA_remember_state:
			if (++depth > ELF_CHECK_MAX_DEPTH)
				return fail(c->why, c->whysz,
					    "%s at %s+0x%zx nests DW_CFA_remember_state deeper than %d",
					    what, c->name, off, ELF_CHECK_MAX_DEPTH);
			continue;
		case DW_CFA_restore_state:
			if (!depth)
				return 0;
			depth--;
			continue;
		default:
			return 0;	/* an opcode libdw does not know: it stops */
		}
	}
	return 0;
}

/* The CIE at off, its initial instructions checked once: NULL when refused (why set),
 * CIE_UNUSABLE when libdw would not use it. */
static struct cie *cie_get(struct cfi *c, uint64_t off)
{
	void **slot = u64map_slot(&c->cies, off);
	struct entry en;
	struct cie *ci;
	int r;

	if (*slot)
		return *slot;
	*slot = CIE_UNUSABLE;
	r = off < c->size ? next_entry(c, off, &en) : 1;
	if (r == -2 && c->strict) {
		fail(c->why, c->whysz, "CIE at %s+0x%llx runs past its end", c->name,
		     (unsigned long long)off);
		return NULL;
	}
	if (r || !en.is_cie)
		return CIE_UNUSABLE;
	ci = xmalloc(sizeof(*ci));
	if (cie_info(c, &en, ci)) {
		free(ci);
		fail(c->why, c->whysz, "CIE at %s+0x%llx has its augmentation past the end",
		     c->name, (unsigned long long)off);
		return NULL;
	}
	*slot = ci;
	if (!c->no_programs && check_program(c, ci, en.start, en.end, 1, off))
		return NULL;
	return ci;
}

/* The FDE en at off as intern_fde() and __libdw_frame_at_address() read it. */
static int check_fde(struct cfi *c, size_t off, const struct entry *en)
{
	struct cie *ci = cie_get(c, en->cie_off);
	size_t i = en->start;
	uint64_t start, range, len;

	if (!ci)
		return -1;
	if (ci == CIE_UNUSABLE || read_enc(c, ci->fde_enc, &i, &start) ||
	    read_enc(c, ci->fde_enc & 0x0f, &i, &range) || start >= start + range)
		return 0;
	if (ci->sized) {
		if (uleb(c, &i, en->end, &len) || (i <= en->end && en->end - i < len))
			return 0;
		i += len;
	} else {
		i += ci->fde_aug_size;
	}
	if (i < en->end && !c->no_programs && check_program(c, ci, i, en->end, 0, off))
		return -1;
	if (c->fde_fn)
		c->fde_fn(c->fde_ctx, start, range, ci->signal);
	return 0;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* The entries libdw can reach: in order from the start up to the terminator (or one it
 * cannot get past), then each FDE the search table (nr entries of enc at table) names. */
static int check_cfi(struct cfi *c, const struct cfi *table, size_t nr, uint8_t enc)
{
	size_t off = 0, *seen = NULL, nr_seen = 0, alloc_seen = 0;
	struct u64map more;
	int ret = -1;

	u64map_init(&c->cies);
	u64map_init(&more);
	for (;;) {
		struct entry en;
		int r = next_entry(c, off, &en);

		if (r == -2 && c->strict) {
			fail(c->why, c->whysz, "entry at %s+0x%zx runs past its end", c->name, off);
			goto out;
		}
		if (r > 0 || r == -2 || (r < 0 && en.next == off))
			break;
		if (!r && !en.is_cie) {
			if (check_fde(c, off, &en))
				goto out;
			ALLOC_GROW(seen, nr_seen + 1, alloc_seen);
			seen[nr_seen++] = off;
		}
		off = en.next;
	}
	for (size_t k = 0; k < nr; k++) {
		size_t at = k * 2 * enc_size(table, enc, NULL);	/* binary_search_fde() */
		uint64_t start, fde;
		struct entry en;
		int r;

		if (read_enc(table, enc, &at, &start) || read_enc(table, enc, &at, &fde))
			continue;
		off = (size_t)(fde - c->frame_vaddr);
		if ((nr_seen && bsearch(&off, seen, nr_seen, sizeof(*seen), cmp_size)) ||
		    u64map_get(&more, off))
			continue;
		u64map_put(&more, off, (void *)1);
		r = next_entry(c, off, &en);
		if (r == -2 && c->strict) {
			fail(c->why, c->whysz, "FDE at %s+0x%zx (in the search table) runs past its end",
			     c->name, off);
			goto out;
		}
		if (!r && !en.is_cie && check_fde(c, off, &en))
			goto out;
	}
	ret = 0;
out:
	for (size_t k = 0; k < c->cies.cap; k++)
		if (c->cies.used[k] && c->cies.vals[k] != CIE_UNUSABLE)
			free(c->cies.vals[k]);
	u64map_release(&c->cies);
	u64map_release(&more);
	free(seen);
	return ret;
}

/*
 * parse_eh_frame_hdr(): the search table's entries and encoding, with *tab set up to
 * read them as libdw does.  0 (nr 0: no table), or -1 when libdw refuses the header and
 * with it the file's whole CFI.
 */
static int parse_hdr(const struct cfi *c, const uint8_t *hdr, size_t hsize, size_t avail,
		     uint64_t hvaddr, uint64_t *eh_vaddr, struct cfi *tab, size_t *nr, uint8_t *enc)
{
	struct cfi h = *c;
	size_t i = 4, vsize;
	uint64_t count;

	h.buf = hdr;
	h.size = hsize;
	h.frame_vaddr = h.datarel = hvaddr;
	*nr = 0;
	*enc = 0;
	if (hsize < 4 || hdr[0] != 1 || hdr[1] == DW_EH_PE_omit || read_enc(&h, hdr[1], &i, eh_vaddr))
		return -1;
	if (hdr[2] != DW_EH_PE_omit) {
		if (read_enc(&h, hdr[2], &i, &count))
			return -1;
		if (count && hdr[3] != DW_EH_PE_omit && (hdr[3] & ~DW_EH_PE_signed) != DW_EH_PE_uleb128) {
			*nr = count;
			*enc = hdr[3];
		}
	}
	vsize = enc_size(c, *enc, NULL);
	if (!vsize || *nr > (hsize - i) / vsize / 2)
		return *nr ? -1 : 0;
	/* binary_search_fde() reads the table from its start as long as the whole header,
	 * here no further than the file goes */
	*tab = h;
	tab->buf = hdr + i;
	tab->size = hsize < avail - i ? hsize : avail - i;
	return 0;
}

static int check_eh_frame(Elf *e, const uint8_t *file, size_t size, struct cfi *c)
{
	GElf_Shdr sh, hsh = { 0 };
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t shstrndx, phnum, nr = 0;
	struct cfi tab = { 0 };
	uint64_t eh_vaddr;
	uint8_t enc = 0;
	int have_hdr = 0;

	if (!gelf_getehdr(e, &eh) || elf_getshdrstrndx(e, &shstrndx))
		return 0;	/* libdw finds no CFI */
	c->name = ".eh_frame";
	c->eh = 1;
	while (shstrndx && (scn = elf_nextscn(e, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".eh_frame_hdr")) {
			hsh = sh;
			have_hdr = 1;
			continue;
		}
		if (strcmp(name, ".eh_frame"))
			continue;
		if (sh.sh_type == SHT_NOBITS || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			return 0;	/* no CFI for libdw (elf_rawdata fails) */
		c->buf = file + sh.sh_offset;
		c->size = sh.sh_size;
		c->frame_vaddr = sh.sh_addr;
		c->strict = 1;
		if (have_hdr && hsh.sh_type != SHT_NOBITS && hsh.sh_offset <= size &&
		    hsh.sh_size <= size - hsh.sh_offset) {
			if (parse_hdr(c, file + hsh.sh_offset, hsh.sh_size, size - hsh.sh_offset,
				      hsh.sh_addr, &eh_vaddr, &tab, &nr, &enc))
				return 0;	/* libdw drops the CFI */
			if (eh_vaddr != sh.sh_addr)
				nr = 0;
		}
		return check_cfi(c, &tab, nr, enc);
	}
	if (elf_getphdrnum(e, &phnum))
		return 0;
	for (size_t k = 0; k < phnum; k++) {
		GElf_Phdr ph;
		uint64_t off;

		if (!gelf_getphdr(e, (int)k, &ph))
			return 0;
		if (ph.p_type != PT_GNU_EH_FRAME)
			continue;
		if (ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			return 0;	/* elf_getdata_rawchunk fails */
		if (parse_hdr(c, file + ph.p_offset, ph.p_filesz, size - ph.p_offset, ph.p_vaddr,
			      &eh_vaddr, &tab, &nr, &enc))
			return 0;
		/* no section size: libdw reads to the end of the file */
		off = eh_vaddr - ph.p_vaddr + ph.p_offset;
		if (off > size)
			return 0;
		c->buf = file + off;
		c->size = size - off;
		c->frame_vaddr = eh_vaddr;
		return check_cfi(c, &tab, nr, enc);
	}
	return 0;
}

static int check_debug_frame(Elf *e, struct cfi *c)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	c->name = ".debug_frame";
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".zdebug_frame"))
			elf_compress_gnu(scn, 0, 0);	/* as dwarf_begin_elf() does */
		else if (strcmp(name, ".debug_frame"))
			continue;
		else if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
			continue;	/* libdw leaves it out */
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf)
			continue;
		c->buf = data->d_buf;
		c->size = data->d_size;
		c->frame_vaddr = c->datarel = 0;
		c->eh = 0;
		c->strict = 1;
		if (check_cfi(c, NULL, 0, 0))
			return -1;
	}
	return 0;
}

static int check_file(Elf *e, size_t size, char *why, size_t whysz)
{
	GElf_Ehdr eh;
	size_t shnum, phnum;

	if (!gelf_getehdr(e, &eh))
		return fail(why, whysz, "%s", elf_errmsg(-1));
	if (size < (gelf_getclass(e) == ELFCLASS64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return fail(why, whysz, "truncated header");
	if (eh.e_shoff > size || (uint64_t)eh.e_shnum * eh.e_shentsize > size - eh.e_shoff)
		return fail(why, whysz, "section headers beyond the end of the file");
	if (eh.e_phnum && (eh.e_phoff > size ||
			   (uint64_t)eh.e_phnum * eh.e_phentsize > size - eh.e_phoff))
		return fail(why, whysz, "program headers beyond the end of the file");
	if (elf_getshdrnum(e, &shnum) || elf_getphdrnum(e, &phnum))
		return fail(why, whysz, "%s", elf_errmsg(-1));
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph))
			return fail(why, whysz, "%s", elf_errmsg(-1));
		if (ph.p_type == PT_LOAD && (ph.p_offset > size || ph.p_filesz > size - ph.p_offset))
			return fail(why, whysz, "segment beyond the end of the file");
	}
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(e, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return fail(why, whysz, "%s", elf_errmsg(-1));
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset))
			return fail(why, whysz, "section %zu beyond the end of the file", i);
	}
	return 0;
}

/* The file's bytes and its CFI reader's setup (byte order, address size, where to say
 * why); NULL when e is no ELF file (said in why) */
static const uint8_t *cfi_setup(Elf *e, struct cfi *c, size_t *size, char *why, size_t whysz)
{
	const uint8_t *file;
	const unsigned char *ident;

	if (whysz)
		why[0] = '\0';
	file = (const uint8_t *)elf_rawfile(e, size);
	ident = (const unsigned char *)elf_getident(e, NULL);
	if (!file || !ident || elf_kind(e) != ELF_K_ELF) {
		fail(why, whysz, "not an ELF file");
		return NULL;
	}
	c->addr8 = ident[EI_CLASS] == ELFCLASS64;
	c->msb = ident[EI_DATA] == ELFDATA2MSB;
	c->why = why;
	c->whysz = whysz;
	return file;
}

unsigned elf_check(Elf *e, unsigned what, char *why, size_t whysz)
{
	struct cfi c = { 0 };
	const uint8_t *file;
	size_t size;

	file = cfi_setup(e, &c, &size, why, whysz);
	if (!file)
		return what | ELF_CHECK_FILE;
	if ((what & ELF_CHECK_FILE) && check_file(e, size, why, whysz))
		return what;
	if ((what & ELF_CHECK_EH_FRAME) && check_eh_frame(e, file, size, &c))
		return ELF_CHECK_EH_FRAME;
	if ((what & ELF_CHECK_DEBUG_FRAME) && check_debug_frame(e, &c))
		return ELF_CHECK_DEBUG_FRAME;
	return 0;
}

int elf_each_fde(Elf *e, void (*fn)(void *ctx, uint64_t start, uint64_t len, int signal),
		 void *ctx, char *why, size_t whysz)
{
	struct cfi c = { 0 };
	const uint8_t *file;
	size_t size;

	file = cfi_setup(e, &c, &size, why, whysz);
	if (!file || check_file(e, size, why, whysz))
		return -1;
	c.fde_fn = fn;
	c.fde_ctx = ctx;
	c.no_programs = 1;
	return check_eh_frame(e, file, size, &c) ? -1 : 0;
}

struct fde_built {
	struct fde_range *v;
	size_t nr, alloc;
	uint64_t *sig;		/* the signal frames' starts */
	size_t nr_sig, alloc_sig;
};

static void fde_add(void *ctx, uint64_t start, uint64_t len, int signal)
{
	struct fde_built *x = ctx;

	ALLOC_GROW(x->v, x->nr + 1, x->alloc);
	x->v[x->nr++] = (struct fde_range){ start, len };
	if (signal) {
		ALLOC_GROW(x->sig, x->nr_sig + 1, x->alloc_sig);
		x->sig[x->nr_sig++] = start;
	}
}

static uint64_t ends_hash(Elf *e, size_t *size);

/* The indexes built, by file identity (fde_index_build) */
static struct fde_kept {
	size_t size;
	uint64_t ends;
	struct fde_range *v;
	size_t nr;
	uint64_t *sig;
	size_t nr_sig;
	int ret;
} *fde_kept;
static size_t nr_fde_kept, alloc_fde_kept;
static pthread_mutex_t fde_lock = PTHREAD_MUTEX_INITIALIZER;

static int cmp_fde_range(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int fde_index_build(Elf *e, struct fde_index *x)
{
	char why[256];
	struct fde_built b = { NULL, 0, 0, NULL, 0, 0 };
	size_t size = 0;
	uint64_t ends = ends_hash(e, &size);
	int ret;

	memset(x, 0, sizeof(*x));
	pthread_mutex_lock(&fde_lock);
	for (size_t i = 0; i < nr_fde_kept; i++)
		if (fde_kept[i].size == size && fde_kept[i].ends == ends && size) {
			x->v = fde_kept[i].v;
			x->nr = fde_kept[i].nr;
			x->sig = fde_kept[i].sig;
			x->nr_sig = fde_kept[i].nr_sig;
			ret = fde_kept[i].ret;
			pthread_mutex_unlock(&fde_lock);
			return ret;
		}
	pthread_mutex_unlock(&fde_lock);
	ret = elf_each_fde(e, fde_add, &b, why, sizeof(why));
	if (b.nr)
		qsort(b.v, b.nr, sizeof(*b.v), cmp_fde_range);
	x->v = b.v;
	x->nr = b.nr;
	x->sig = b.sig;
	x->nr_sig = b.nr_sig;
	/* kept (until exit) even without the file's bytes to know it by (size 0): then
	 * never found again */
	pthread_mutex_lock(&fde_lock);
	ALLOC_GROW(fde_kept, nr_fde_kept + 1, alloc_fde_kept);
	fde_kept[nr_fde_kept++] = (struct fde_kept){ size, ends, b.v, b.nr, b.sig, b.nr_sig, ret };
	pthread_mutex_unlock(&fde_lock);
	return ret;
}

const struct fde_range *fde_index_find(const struct fde_index *x, uint64_t vaddr)
{
	size_t lo = 0, hi = x->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (x->v[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && vaddr - x->v[lo - 1].start < x->v[lo - 1].len)
		return &x->v[lo - 1];
	return NULL;
}

int fde_index_signal(const struct fde_index *x, const struct fde_range *f)
{
	for (size_t i = 0; i < x->nr_sig; i++)	/* (a few: libc's __restore_rt) */
		if (x->sig[i] == f->start)
			return 1;
	return 0;
}

void fde_index_release(struct fde_index *x)
{
	memset(x, 0, sizeof(*x));	/* (the index stays for the next asking: one walk a file) */
}

/* What was found of each file, by name, size and the bytes at both ends: the symbolizer,
 * the unwinder and the DL view each ask of the same files (libtorch_cpu.so's .eh_frame
 * takes ~40 ms to walk), and a warning is said once a file. */
struct verdict {
	char *name;
	size_t size;
	uint64_t ends;		/* hash of the first and last 4 KiB */
	unsigned checked, bad;	/* ELF_CHECK_* parts */
};

static pthread_mutex_t verdict_lock = PTHREAD_MUTEX_INITIALIZER;
static struct verdict *verdicts;
static size_t nr_verdicts, alloc_verdicts;
static int cache_off;

void elf_check_cache(int on)
{
	cache_off = !on;
}

static uint64_t ends_hash(Elf *e, size_t *size)
{
	const char *file = elf_rawfile(e, size);
	size_t n;

	if (!file)
		return 0;
	n = *size < 4096 ? *size : 4096;
	return hash_bytes(file, n) ^ hash_u64(hash_bytes(file + *size - n, n));
}

/* ---- verdicts kept on disk ----
 * A file found safe stays so while it is the same file: the parts found safe are kept in
 * dlprof's cache, under the file's identity (device, inode, size, modification and
 * change times, the bytes at both ends), so that each recording and report of the same
 * libraries does not walk their CFI again (libtorch_cpu.so's: ~40 ms).  Only safe
 * verdicts are kept: a refused file is checked each time. */
#define VERDICT_VERSION 1	/* bump when the checks change */

static char *disk_key(const char *name, size_t size, uint64_t ends)
{
	struct stat st;

	if (!name || name[0] != '/' || stat(name, &st) || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size != size)
		return NULL;
	return xasprintf("%d %llx %llx %zx %llx %lld.%09ld %lld.%09ld", VERDICT_VERSION,
			 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, size,
			 (unsigned long long)ends, (long long)st.st_mtim.tv_sec,
			 st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
}

static char *disk_path(const char *key)
{
	char *dir = dlprof_cache_dir("elfcheck"), *path;

	if (!dir)
		return NULL;
	path = xasprintf("%s/%016llx", dir, (unsigned long long)hash_bytes(key, strlen(key)));
	free(dir);
	return path;
}

/* The parts the cache says are safe */
static unsigned disk_safe(const char *key)
{
	char *path = disk_path(key);
	struct strbuf sb = STRBUF_INIT;
	unsigned safe = 0;
	size_t n = strlen(key);

	if (path && !strbuf_read_file(&sb, path, 4096) && sb.len > n + 1 &&
	    !memcmp(sb.buf, key, n) && sb.buf[n] == '\n')
		safe = (unsigned)strtoul(sb.buf + n + 1, NULL, 10);
	strbuf_release(&sb);
	free(path);
	return safe;
}

static void disk_keep(const char *key, unsigned safe)
{
	char *path = disk_path(key), *tmp, *slash;
	FILE *f;

	if (!path)
		return;
	slash = strrchr(path, '/');
	*slash = '\0';
	if (mkdir_p(path)) {
		free(path);
		return;
	}
	*slash = '/';
	tmp = xasprintf("%s.%d", path, (int)getpid());
	f = fopen(tmp, "w");
	if (f) {
		int ok = fprintf(f, "%s\n%u\n", key, safe) > 0;

		if (fclose(f) || !ok || rename(tmp, path))
			unlink(tmp);
	}
	free(tmp);
	free(path);
}

unsigned elf_check_warn(Elf *e, unsigned what, const char *name)
{
	char why[256];
	size_t size = 0, i;
	uint64_t ends = ends_hash(e, &size);
	struct verdict *v = NULL;
	unsigned todo = what, bad = 0, safe;
	char *key;
	int first;

	pthread_mutex_lock(&verdict_lock);
	for (i = 0; i < nr_verdicts; i++)
		if (verdicts[i].size == size && verdicts[i].ends == ends &&
		    !strcmp(verdicts[i].name, name))
			break;
	if (i < nr_verdicts && !cache_off) {
		v = &verdicts[i];
		todo = what & ~v->checked;
		bad = v->bad & what;
	}
	pthread_mutex_unlock(&verdict_lock);
	if (!todo || (bad & ELF_CHECK_FILE))
		return bad & ELF_CHECK_FILE ? what : bad;
	key = cache_off ? NULL : disk_key(name, size, ends);
	safe = key ? disk_safe(key) : 0;
	if (todo & ~safe) {
		unsigned found = elf_check(e, todo, why, sizeof(why));

		bad |= found;
		if (key && !found)
			disk_keep(key, safe | todo);
	}
	free(key);
	pthread_mutex_lock(&verdict_lock);
	for (i = 0; i < nr_verdicts; i++)
		if (!strcmp(verdicts[i].name, name))
			break;
	if (i == nr_verdicts) {
		ALLOC_GROW(verdicts, nr_verdicts + 1, alloc_verdicts);
		verdicts[nr_verdicts++] = (struct verdict){ xstrdup(name), size, ends, 0, 0 };
	}
	v = &verdicts[i];
	if (v->size != size || v->ends != ends) {	/* the file changed: a new verdict */
		v->size = size;
		v->ends = ends;
		v->checked = v->bad = 0;
	}
	first = bad && !(v->bad & bad);
	v->checked |= todo;
	v->bad |= bad;
	pthread_mutex_unlock(&verdict_lock);
	if (first)
		warning("corrupt ELF file '%s': %s: %s", name, why,
			bad & ELF_CHECK_FILE ? "not reading it" :
			bad & ELF_CHECK_EH_FRAME ? "not using its CFI" : "not using its .debug_frame");
	return bad;
}
