/* isa/code-scan.c - classify machine code by vector ISA: instructions, buffers, ELF files.
 *
 * Capstone (detail off, cs_disasm_iter) finds instruction boundaries and gives the
 * mnemonic/operand text; the class comes from the encoding: legacy 0F SIMD (SSE), VEX
 * (c4/c5: AVX/AVX2/FMA, opmask instructions, AMX in map 0F38), EVEX (62 in 64-bit mode:
 * AVX-512, vector length from the operands or EVEX.L'L).  Instructions capstone 4 does
 * not know (AMX, AVX-512 FP16, AVX-VNNI ...) are VEX/EVEX encoded: their length is
 * computed here from the prefix, opcode map and ModRM.
 *
 * An ELF file is scanned per function (bounds from .symtab/.dynsym, else the FDEs that
 * elfcheck.c walks), and the per-function counts are cached on disk under the file's
 * build-id.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>

#include <capstone/capstone.h>
#include <gelf.h>
#include <elfutils/libdwelf.h>

#include "dynlib.h"
#include "elfsyms.h"
#include "elfcheck.h"
#include "elffile.h"
#include "isa.h"
#include "paths.h"
#include "util.h"

/* bump when the classification changes: old cache entries are then ignored */
#define ISA_CLASSIFIER_VERSION 3


static const char *const class_names[ISA_C_NR] = {
	"scalar", "sse-scalar", "sse", "vex128", "vex256",
	"evex128", "evex256", "evex512", "kmask", "amx",
};
static const char *const class_descs[ISA_C_NR] = {
	"scalar (general purpose, x87)",
	"SSE scalar float (legacy)",
	"SSE vector (legacy, xmm)",
	"AVX/AVX2/FMA xmm (VEX)",
	"AVX/AVX2/FMA ymm (VEX)",
	"AVX-512 xmm (EVEX)",
	"AVX-512 ymm (EVEX)",
	"AVX-512 zmm (EVEX)",
	"AVX-512 opmask (VEX k-reg)",
	"AMX tiles",
};
static const char *const tier_names[ISA_T_NR] = {
	"scalar", "sse", "avx", "avx512", "avx512-zmm", "amx",
};
static const char *const tier_descs[ISA_T_NR] = {
	"scalar", "SSE", "AVX/AVX2", "AVX-512 (xmm/ymm)", "AVX-512 (zmm)", "AMX",
};

const char *isa_class_name(enum isa_class c)
{
	return (unsigned)c < ISA_C_NR ? class_names[c] : "?";
}

const char *isa_class_desc(enum isa_class c)
{
	return (unsigned)c < ISA_C_NR ? class_descs[c] : "?";
}

const char *isa_tier_name(enum isa_tier t)
{
	return (unsigned)t < ISA_T_NR ? tier_names[t] : "?";
}

const char *isa_tier_desc(enum isa_tier t)
{
	return (unsigned)t < ISA_T_NR ? tier_descs[t] : "?";
}

enum isa_tier isa_counts_tier(const uint64_t n[ISA_C_NR])
{
	if (n[ISA_C_AMX])
		return ISA_T_AMX;
	if (n[ISA_C_EVEX512])
		return ISA_T_AVX512_ZMM;
	if (n[ISA_C_EVEX128] || n[ISA_C_EVEX256] || n[ISA_C_KMASK])
		return ISA_T_AVX512;
	if (n[ISA_C_VEX128] || n[ISA_C_VEX256])
		return ISA_T_AVX;
	if (n[ISA_C_SSE])
		return ISA_T_SSE;
	return ISA_T_SCALAR;
}

uint64_t isa_counts_vector(const uint64_t n[ISA_C_NR])
{
	uint64_t s = 0;
	int c;

	for (c = ISA_C_SSE; c < ISA_C_NR; c++)
		s += n[c];
	return s;
}

/* ---- one instruction --------------------------------------------------------------- */

static int is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0xf0: case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e:
	case 0x26: case 0x64: case 0x65: case 0x66: case 0x67:
		return 1;
	}
	return 0;
}

static size_t opcode_index(const uint8_t *b, size_t len)
{
	size_t i = 0;

	while (i < len && i < 14 && is_legacy_prefix(b[i]))
		i++;
	if (i < len && (b[i] & 0xf0) == 0x40)
		i++;	/* REX */
	return i;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !memcmp(s + a - b, suffix, b);
}

static enum isa_class classify_vex(unsigned map, uint8_t opcode, int l, const char *op_str)
{
	if (map == 2 && (opcode == 0x49 || opcode == 0x4b || opcode == 0x5c || opcode == 0x5e))
		return ISA_C_AMX;
	if (map == 1 && ((opcode >= 0x41 && opcode <= 0x4b && opcode != 0x43 &&
			  opcode != 0x48 && opcode != 0x49) ||
			 (opcode >= 0x90 && opcode <= 0x93) || opcode == 0x98 || opcode == 0x99))
		return ISA_C_KMASK;
	if (map == 3 && opcode >= 0x30 && opcode <= 0x33)
		return ISA_C_KMASK;
	/* BMI1/BMI2 (andn, bextr, shlx, pdep, mulx, rorx ...): scalar integer */
	if ((map == 2 && opcode >= 0xf0 && opcode <= 0xf7) || (map == 3 && opcode == 0xf0))
		return ISA_C_SCALAR;
	if (op_str)
		return strstr(op_str, "ymm") ? ISA_C_VEX256 : ISA_C_VEX128;
	return l ? ISA_C_VEX256 : ISA_C_VEX128;
}

enum isa_class isa_classify_insn(const uint8_t *b, size_t len, const char *mnemonic,
				 const char *op_str)
{
	size_t i = opcode_index(b, len);

	if (i >= len)
		return ISA_C_SCALAR;
	switch (b[i]) {
	case 0x62:	/* EVEX (BOUND does not exist in 64-bit mode) */
		if (i + 5 >= len)
			return ISA_C_EVEX128;
		if (op_str) {
			if (strstr(op_str, "zmm"))
				return ISA_C_EVEX512;
			if (strstr(op_str, "ymm"))
				return ISA_C_EVEX256;
			return ISA_C_EVEX128;
		} else {
			uint8_t p2 = b[i + 3], modrm = b[i + 5];
			unsigned ll = (p2 >> 5) & 3;

			/* EVEX.b on a register form: L'L holds the rounding mode, 512-bit */
			if ((p2 & 0x10) && (modrm >> 6) == 3)
				return ISA_C_EVEX512;
			return ll == 2 ? ISA_C_EVEX512 : ll == 1 ? ISA_C_EVEX256 : ISA_C_EVEX128;
		}
	case 0xc5:
		if (i + 2 >= len)
			return ISA_C_VEX128;
		return classify_vex(1, b[i + 2], (b[i + 1] >> 2) & 1, op_str);
	case 0xc4:
		if (i + 3 >= len)
			return ISA_C_VEX128;
		return classify_vex(b[i + 1] & 0x1f, b[i + 3], (b[i + 2] >> 2) & 1, op_str);
	case 0x0f:
		if (op_str && strstr(op_str, "mm")) {
			if (mnemonic && (ends_with(mnemonic, "ss") || ends_with(mnemonic, "sd") ||
					 !strncmp(mnemonic, "cvts", 4) || !strncmp(mnemonic, "cvtts", 5) ||
					 !strcmp(mnemonic, "movd") || !strcmp(mnemonic, "movq")))
				return ISA_C_SSE_SCALAR;
			return ISA_C_SSE;
		}
		if (!op_str && i + 1 < len) {
			uint8_t o = b[i + 1];

			if ((o >= 0x10 && o <= 0x17) || (o >= 0x28 && o <= 0x2f) || o == 0x38 ||
			    o == 0x3a || (o >= 0x50 && o <= 0x7f) || o == 0xc2 ||
			    (o >= 0xc4 && o <= 0xc6) || o >= 0xd0)
				return ISA_C_SSE;
		}
		return ISA_C_SCALAR;
	}
	return ISA_C_SCALAR;
}

/* ---- decoder ----------------------------------------------------------------------- */

struct isa_decoder {
	const struct dynlib_cs *cs;
	csh h;
	cs_insn *insn;
};

struct isa_decoder *isa_decoder_new(void)
{
	const struct dynlib_cs *cs = dynlib_cs();
	struct isa_decoder *d;

	if (!cs)
		return NULL;
	d = xcalloc(1, sizeof(*d));
	d->cs = cs;
	if (cs->open(CS_ARCH_X86, CS_MODE_64, &d->h) != CS_ERR_OK) {
		free(d);
		error("unable to open the capstone x86-64 disassembler");
		return NULL;
	}
	cs->option(d->h, CS_OPT_DETAIL, CS_OPT_OFF);
	d->insn = cs->malloc(d->h);
	return d;
}

void isa_decoder_free(struct isa_decoder *d)
{
	if (!d)
		return;
	if (d->insn)
		d->cs->free(d->insn, 1);
	d->cs->close(&d->h);
	free(d);
}

/* Bytes taken by ModRM (+SIB, displacement) at b, or 0 when it does not fit. */
static size_t modrm_len(const uint8_t *b, size_t len)
{
	size_t n = 1;
	unsigned mod, rm;

	if (!len)
		return 0;
	mod = b[0] >> 6;
	rm = b[0] & 7;
	if (mod != 3 && rm == 4) {
		if (len < 2)
			return 0;
		n++;
		if (mod == 0 && (b[1] & 7) == 5)
			n += 4;
	}
	if (mod == 1)
		n += 1;
	else if (mod == 2 || (mod == 0 && rm == 5))
		n += 4;
	return n <= len ? n : 0;
}

/* Length of a VEX/EVEX instruction capstone did not know (0: not one). */
static size_t vex_evex_len(const uint8_t *b, size_t len)
{
	size_t hdr, m, n;
	unsigned map;

	if (len < 4)
		return 0;
	switch (b[0]) {
	case 0xc5:
		hdr = 2;
		map = 1;
		break;
	case 0xc4:
		hdr = 3;
		map = b[1] & 0x1f;
		break;
	case 0x62:
		if (len < 6 || (b[2] & 0x04) == 0)	/* EVEX.P1 bit 2 is always 1 */
			return 0;
		hdr = 4;
		map = b[1] & 0x07;
		break;
	default:
		return 0;
	}
	if (map == 0 || map > 7)
		return 0;
	m = modrm_len(b + hdr + 1, len - hdr - 1);
	if (!m)
		return 0;
	n = hdr + 1 + m + (map == 3 ? 1 : 0);
	return n <= len ? n : 0;
}

void isa_decode(struct isa_decoder *d, const uint8_t *code, size_t len, uint64_t addr,
		struct isa_counts *c)
{
	while (len) {
		size_t n;

		if (d->cs->disasm_iter(d->h, &code, &len, &addr, d->insn)) {
			c->n[isa_classify_insn(d->insn->bytes, d->insn->size, d->insn->mnemonic,
					       d->insn->op_str)]++;
			continue;
		}
		n = vex_evex_len(code, len);
		if (n) {
			c->n[isa_classify_insn(code, n, NULL, NULL)]++;
		} else {
			n = 1;
			c->undecoded++;
		}
		code += n;
		len -= n;
		addr += n;
	}
}

int isa_decode_one(struct isa_decoder *d, const uint8_t *code, size_t len)
{
	uint64_t addr = 0;
	size_t n;

	if (len > 15)
		len = 15;
	if (d->cs->disasm_iter(d->h, &code, &len, &addr, d->insn))
		return isa_classify_insn(d->insn->bytes, d->insn->size, d->insn->mnemonic,
					 d->insn->op_str);
	n = vex_evex_len(code, len);
	return n ? (int)isa_classify_insn(code, n, NULL, NULL) : -1;
}

/* ---- ELF files ---------------------------------------------------------------------- */

struct xrange {
	uint64_t addr, offset, size;
};

struct scan {
	const char *path;
	const struct elffile *file;
	const uint8_t *map;
	size_t size;
	Elf *elf;
	struct xrange *x;	/* executable code */
	size_t nr_x, alloc_x;
	struct isa_func *cand;
	size_t nr_cand, alloc_cand;
};

static int in_exec(const struct scan *s, uint64_t addr)
{
	size_t i;

	for (i = 0; i < s->nr_x; i++)
		if (addr >= s->x[i].addr && addr - s->x[i].addr < s->x[i].size)
			return 1;
	return 0;
}

static void add_cand(struct scan *s, uint64_t start, uint64_t size, unsigned flags)
{
	struct isa_func *f;

	if (!size || !in_exec(s, start))
		return;
	ALLOC_GROW(s->cand, s->nr_cand + 1, s->alloc_cand);
	f = &s->cand[s->nr_cand++];
	memset(f, 0, sizeof(*f));
	f->start = start;
	f->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	f->flags = flags;
}

static void collect_symbols(struct scan *s, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;

	if (!data || !sh->sh_entsize)
		return;
	n = data->d_size / sizeof(Elf64_Sym);
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		int type;

		if (!gelf_getsym(data, i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
			continue;
		add_cand(s, sym.st_value, sym.st_size, ISA_FUNC_SYM);
	}
}

/* A function the CFI bounds (elf_each_fde) */
static void fde_cand(void *ctx, uint64_t start, uint64_t len, int signal)
{
	add_cand(ctx, start, len, ISA_FUNC_FDE);
}

static int cmp_func(const void *a, const void *b)
{
	const struct isa_func *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* symbols first */
	return (int)(y->flags & ISA_FUNC_SYM) - (int)(x->flags & ISA_FUNC_SYM);
}

/* Sort, merge equal starts, cut overlaps: funcs become sorted and disjoint. */
static void finish_funcs(struct scan *s, struct isa_image *img)
{
	size_t i, n = 0;

	if (s->nr_cand)
		qsort(s->cand, s->nr_cand, sizeof(*s->cand), cmp_func);
	for (i = 0; i < s->nr_cand; i++) {
		if (n && s->cand[n - 1].start == s->cand[i].start) {
			s->cand[n - 1].flags |= s->cand[i].flags;
			if (!(s->cand[n - 1].flags & ISA_FUNC_SYM) && s->cand[i].size > s->cand[n - 1].size)
				s->cand[n - 1].size = s->cand[i].size;
			continue;
		}
		s->cand[n++] = s->cand[i];
	}
	for (i = 0; i + 1 < n; i++)
		if (s->cand[i + 1].start - s->cand[i].start < s->cand[i].size)
			s->cand[i].size = s->cand[i + 1].start - s->cand[i].start;
	img->funcs = s->cand;
	img->nr_funcs = n;
	s->cand = NULL;
	s->nr_cand = s->alloc_cand = 0;
}

const struct isa_func *isa_image_find(const struct isa_image *img, uint64_t vaddr)
{
	size_t lo = 0, hi = img->nr_funcs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct isa_func *f = &img->funcs[mid];

		if (vaddr < f->start)
			hi = mid;
		else if (vaddr - f->start >= f->size)
			lo = mid + 1;
		else
			return f;
	}
	return NULL;
}

/* Index of the first function with start >= addr. */
static size_t first_func_from(const struct isa_image *img, uint64_t addr)
{
	size_t lo = 0, hi = img->nr_funcs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (img->funcs[mid].start < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void add_counts(uint32_t *dst, const struct isa_counts *c)
{
	int k;

	for (k = 0; k < ISA_C_NR; k++)
		dst[k] += c->n[k] > UINT32_MAX - dst[k] ? UINT32_MAX - dst[k] : (uint32_t)c->n[k];
}

/* A piece of code to decode: one function, or a gap between functions. */
struct piece {
	const uint8_t *code;
	uint64_t addr, len;
	size_t func;		/* index in img->funcs, or (size_t)-1 for a gap */
};

struct worker {
	struct isa_image *img;
	const struct piece *pieces;
	size_t from, to;
	struct isa_counts total;
	int failed;
};

static void *decode_worker(void *arg)
{
	struct worker *w = arg;
	struct isa_decoder *d = isa_decoder_new();
	size_t i;

	if (!d) {
		w->failed = 1;
		return NULL;
	}
	for (i = w->from; i < w->to; i++) {
		const struct piece *p = &w->pieces[i];
		struct isa_counts c = { { 0 }, 0 };

		isa_decode(d, p->code, p->len, p->addr, &c);
		if (p->func != (size_t)-1)
			add_counts(w->img->funcs[p->func].n, &c);
		for (int k = 0; k < ISA_C_NR; k++)
			w->total.n[k] += c.n[k];
		w->total.undecoded += c.undecoded;
	}
	isa_decoder_free(d);
	return NULL;
}

#define MAX_WORKERS 4
#define MIN_BYTES_PER_WORKER (4u << 20)

static int nr_workers(uint64_t bytes)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int n = cpus > 0 ? (int)cpus : 1;

	if (n > MAX_WORKERS)
		n = MAX_WORKERS;
	while (n > 1 && bytes / (uint64_t)n < MIN_BYTES_PER_WORKER)
		n--;
	return n;
}

static int decode_image(struct scan *s, struct isa_image *img)
{
	struct piece *pieces = NULL;
	size_t nr = 0, alloc = 0, r, i;
	uint64_t bytes = 0, done = 0;
	struct worker w[MAX_WORKERS];
	pthread_t tid[MAX_WORKERS];
	int n, t, ret = 0;

	for (r = 0; r < s->nr_x; r++) {
		const struct xrange *x = &s->x[r];
		uint64_t pos = x->addr, end = x->addr + x->size;

		while (pos < end) {
			const struct isa_func *f = isa_image_find(img, pos);
			uint64_t seg_end;

			if (f) {
				seg_end = f->start + f->size;
			} else {
				size_t k = first_func_from(img, pos);

				seg_end = k < img->nr_funcs ? img->funcs[k].start : end;
			}
			if (seg_end > end || seg_end <= pos)
				seg_end = end;
			ALLOC_GROW(pieces, nr + 1, alloc);
			pieces[nr].code = s->map + x->offset + (pos - x->addr);
			pieces[nr].addr = pos;
			pieces[nr].len = seg_end - pos;
			pieces[nr].func = f ? (size_t)(f - img->funcs) : (size_t)-1;
			bytes += seg_end - pos;
			nr++;
			pos = seg_end;
		}
	}

	/* split into runs of about equal bytes; a function never spans two workers */
	n = nr_workers(bytes);
	memset(w, 0, sizeof(w));
	for (t = 0, i = 0; t < n; t++) {
		uint64_t goal = bytes * (uint64_t)(t + 1) / (uint64_t)n;

		w[t].img = img;
		w[t].pieces = pieces;
		w[t].from = i;
		while (i < nr && (done < goal || t == n - 1)) {
			done += pieces[i].len;
			i++;
		}
		while (i < nr && i > 0 && pieces[i].func != (size_t)-1 &&
		       pieces[i].func == pieces[i - 1].func) {
			done += pieces[i].len;
			i++;
		}
		w[t].to = i;
	}
	for (t = 1; t < n; t++)
		if (pthread_create(&tid[t], NULL, decode_worker, &w[t])) {
			decode_worker(&w[t]);	/* no thread: do it here */
			tid[t] = 0;
		}
	decode_worker(&w[0]);
	for (t = 1; t < n; t++)
		if (tid[t])
			pthread_join(tid[t], NULL);
	for (t = 0; t < n; t++) {
		for (int k = 0; k < ISA_C_NR; k++)
			img->total.n[k] += w[t].total.n[k];
		img->total.undecoded += w[t].total.undecoded;
		if (w[t].failed)
			ret = -1;
	}
	free(pieces);
	return ret;
}

/* ---- cache -------------------------------------------------------------------------- */

struct cache_hdr {
	char magic[8];
	uint32_t version;
	uint32_t nr_class;
	uint64_t file_size;
	uint64_t nr_funcs;
	uint64_t total[ISA_C_NR];
	uint64_t undecoded;
};

static const char cache_magic[8] = "DLPISA\0\1";

char *isa_cache_dir(void)
{
	return dlprof_cache_dir("isa");
}

static int cache_read(struct isa_image *img)
{
	struct strbuf sb = STRBUF_INIT;
	struct cache_hdr h;
	size_t want;
	int k;

	if (strbuf_read_file(&sb, img->cache_path, 0) < 0)
		goto miss;
	if (sb.len < sizeof(h))
		goto miss;
	memcpy(&h, sb.buf, sizeof(h));
	if (memcmp(h.magic, cache_magic, 8) || h.version != ISA_CLASSIFIER_VERSION ||
	    h.nr_class != ISA_C_NR || h.file_size != img->file_size ||
	    h.nr_funcs > (sb.len - sizeof(h)) / sizeof(struct isa_func))
		goto miss;
	want = sizeof(h) + h.nr_funcs * sizeof(struct isa_func);
	if (want != sb.len)
		goto miss;
	img->nr_funcs = h.nr_funcs;
	img->funcs = xmalloc(h.nr_funcs ? h.nr_funcs * sizeof(struct isa_func) : 1);
	memcpy(img->funcs, sb.buf + sizeof(h), h.nr_funcs * sizeof(struct isa_func));
	for (k = 0; k < ISA_C_NR; k++)
		img->total.n[k] = h.total[k];
	img->total.undecoded = h.undecoded;
	img->from_cache = 1;
	strbuf_release(&sb);
	return 0;
miss:
	strbuf_release(&sb);
	return -1;
}

static void cache_write(const struct isa_image *img)
{
	struct cache_hdr h;
	char *dir, *tmp, *slash;
	FILE *fp;
	int k, ok;

	dir = xstrdup(img->cache_path);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	if (mkdir_p(dir)) {
		warning("unable to create cache directory '%s': %s", dir, strerror(errno));
		free(dir);
		return;
	}
	free(dir);
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, cache_magic, 8);
	h.version = ISA_CLASSIFIER_VERSION;
	h.nr_class = ISA_C_NR;
	h.file_size = img->file_size;
	h.nr_funcs = img->nr_funcs;
	for (k = 0; k < ISA_C_NR; k++)
		h.total[k] = img->total.n[k];
	h.undecoded = img->total.undecoded;

	tmp = xasprintf("%s.tmp.%d", img->cache_path, (int)getpid());
	fp = fopen(tmp, "wb");
	if (!fp) {
		warning("unable to write cache '%s': %s", tmp, strerror(errno));
		free(tmp);
		return;
	}
	ok = fwrite(&h, sizeof(h), 1, fp) == 1 &&
	     (!img->nr_funcs || fwrite(img->funcs, sizeof(struct isa_func), img->nr_funcs, fp) == img->nr_funcs);
	ok = !fclose(fp) && ok;
	if (!ok || rename(tmp, img->cache_path)) {
		warning("unable to write cache '%s'", img->cache_path);
		unlink(tmp);
	}
	free(tmp);
}

/* ---- loading ------------------------------------------------------------------------ */

static void scan_release(struct scan *s)
{
	if (s->elf)
		elf_end(s->elf);
	elffile_put(s->file);
	free(s->x);
	free(s->cand);
}

static double seconds_since(uint64_t t0)
{
	return (double)(now_ns() - t0) / 1e9;
}

static int open_elf(struct scan *s, struct isa_image *img)
{
	enum elffile_status status;
	GElf_Ehdr eh;
	size_t shnum, phnum, i;
	const void *bid;
	ssize_t bid_len;
	char why[256];

	s->file = elffile_open(s->path, NULL, 0, &status);
	if (status == ELFFILE_UNREADABLE)
		return error("unable to open '%s': %s", s->path, strerror(errno));
	if (!s->file)
		return error("'%s' is %s", s->path, elffile_strstatus(status));
	s->map = s->file->data;
	s->size = s->file->size;
	img->file_size = s->size;
	if (s->map[EI_CLASS] != ELFCLASS64 || s->map[EI_DATA] != ELFDATA2LSB)
		return error("'%s' is not a 64-bit little-endian ELF file", s->path);
	if (s->size < sizeof(Elf64_Ehdr))
		return error("corrupt ELF file '%s': truncated header", s->path);

	s->elf = elffile_elf(s->file);
	if (!s->elf || !gelf_getehdr(s->elf, &eh))
		return error("corrupt ELF file '%s': %s", s->path, elf_errmsg(-1));
	if (eh.e_machine != EM_X86_64)
		return error("'%s' is not x86-64 code (ELF machine %u)", s->path, eh.e_machine);
	/* what the report's readers check before libdw: one refusal for all of them */
	if (elf_check(s->elf, ELF_CHECK_FILE | ELF_CHECK_EH_FRAME, why, sizeof(why)))
		return error("corrupt ELF file '%s': %s", s->path, why);
	if (elf_getshdrnum(s->elf, &shnum) || elf_getphdrnum(s->elf, &phnum))
		return error("corrupt ELF file '%s': %s", s->path, elf_errmsg(-1));

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(s->elf, i, &ph))
			return error("corrupt ELF file '%s': %s", s->path, elf_errmsg(-1));
		if (ph.p_type != PT_LOAD)
			continue;
		img->segs = xrealloc(img->segs, (img->nr_segs + 1) * sizeof(*img->segs));
		img->segs[img->nr_segs].vaddr = ph.p_vaddr;
		img->segs[img->nr_segs].offset = ph.p_offset;
		img->segs[img->nr_segs].filesz = ph.p_filesz;
		img->nr_segs++;
		if (!shnum && (ph.p_flags & PF_X)) {
			ALLOC_GROW(s->x, s->nr_x + 1, s->alloc_x);
			s->x[s->nr_x++] = (struct xrange){ ph.p_vaddr, ph.p_offset, ph.p_filesz };
		}
	}
	for (i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(s->elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			return error("corrupt ELF file '%s': %s", s->path, elf_errmsg(-1));
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS && sh.sh_size) {
			ALLOC_GROW(s->x, s->nr_x + 1, s->alloc_x);
			s->x[s->nr_x++] = (struct xrange){ sh.sh_addr, sh.sh_offset, sh.sh_size };
		}
	}

	bid_len = dwelf_elf_gnu_build_id(s->elf, &bid);
	if (bid_len > 0 && bid_len <= 20)
		build_id_hex(bid, (size_t)bid_len, img->build_id);
	return 0;
}

static void collect_funcs(struct scan *s)
{
	size_t shnum = 0, i;
	char why[256];

	elf_getshdrnum(s->elf, &shnum);
	for (i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(s->elf, i);
		GElf_Shdr sh;

		if (!scn || !gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			collect_symbols(s, scn, &sh);
	}
	/* the CFI was checked when the file was opened; a refusal leaves the symbols */
	elf_each_fde(s->elf, fde_cand, s, why, sizeof(why));
}

int isa_image_load(struct isa_image *img, const char *path, unsigned flags)
{
	struct scan s = { .path = path };
	uint64_t t0;
	int ret = -1;

	memset(img, 0, sizeof(*img));
	img->path = xstrdup(path);
	if (open_elf(&s, img))
		goto out;
	if (!s.nr_x) {
		error("'%s' has no executable code", path);
		goto out;
	}
	if (!(flags & ISA_SCAN_NO_CACHE) && img->build_id[0]) {
		char *dir = isa_cache_dir();

		if (dir) {
			img->cache_path = xasprintf("%s/%s", dir, img->build_id);
			free(dir);
		}
	}
	if (img->cache_path && !(flags & ISA_SCAN_REFRESH) && !cache_read(img)) {
		ret = 0;
		goto out;
	}
	t0 = now_ns();
	collect_funcs(&s);
	finish_funcs(&s, img);
	if (decode_image(&s, img))
		goto out;
	img->scan_seconds = seconds_since(t0);
	if (img->cache_path)
		cache_write(img);
	ret = 0;
out:
	scan_release(&s);
	if (ret)
		isa_image_release(img);	/* nothing for the caller to free */
	return ret;
}

uint64_t isa_image_offset_to_vaddr(const struct isa_image *img, uint64_t offset)
{
	size_t i;

	for (i = 0; i < img->nr_segs; i++) {
		const struct isa_seg *g = &img->segs[i];

		if (offset >= g->offset && offset - g->offset < g->filesz)
			return g->vaddr + (offset - g->offset);
	}
	return (uint64_t)-1;
}

/* ---- names -------------------------------------------------------------------------- */

struct name_ent {
	uint64_t addr;
	char *name;
};

struct names {
	struct name_ent *e;
	size_t nr, alloc;
	char **fallback;	/* "func@0x..." per function, made on demand */
};

static int cmp_name(const void *a, const void *b)
{
	const struct name_ent *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

static struct names *load_names(struct isa_image *img)
{
	struct names *nm = xcalloc(1, sizeof(*nm));
	const struct elffile *f;
	Elf *elf;
	size_t shnum = 0, i;

	nm->fallback = xcalloc(img->nr_funcs ? img->nr_funcs : 1, sizeof(char *));
	img->names = nm;
	f = elffile_open(img->path, NULL, 0, NULL);
	if (!f)
		return nm;
	elf = elffile_elf(f);
	if (elf && !elf_getshdrnum(elf, &shnum)) {
		for (i = 1; i < shnum; i++) {
			Elf_Scn *scn = elf_getscn(elf, i);
			GElf_Shdr sh;
			Elf_Data *data;
			size_t k, n;

			if (!scn || !gelf_getshdr(scn, &sh) ||
			    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
				continue;
			data = elf_getdata(scn, NULL);
			if (!data)
				continue;
			n = data->d_size / sizeof(Elf64_Sym);
			for (k = 0; k < n; k++) {
				GElf_Sym sym;
				const char *name;
				int type;

				if (!gelf_getsym(data, k, &sym))
					break;
				type = GELF_ST_TYPE(sym.st_info);
				if ((type != STT_FUNC && type != STT_GNU_IFUNC) ||
				    sym.st_shndx == SHN_UNDEF || !isa_image_find(img, sym.st_value))
					continue;
				name = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (!name || !*name)
					continue;
				ALLOC_GROW(nm->e, nm->nr + 1, nm->alloc);
				nm->e[nm->nr].addr = sym.st_value;
				nm->e[nm->nr].name = xstrdup(name);
				nm->nr++;
			}
		}
	}
	if (elf)
		elf_end(elf);
	elffile_put(f);
	if (nm->nr)
		qsort(nm->e, nm->nr, sizeof(*nm->e), cmp_name);
	return nm;
}

const char *isa_image_func_name(struct isa_image *img, const struct isa_func *f)
{
	struct names *nm = img->names ? img->names : load_names(img);
	size_t idx = f - img->funcs, lo = 0, hi = nm->nr;

	if (idx >= img->nr_funcs)
		return "[unknown]";
	if (nm->fallback[idx])
		return nm->fallback[idx];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (nm->e[mid].addr < f->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < nm->nr && nm->e[lo].addr == f->start) {
		int status = -1;
		char *dm = dynlib_demangle(nm->e[lo].name, &status);

		nm->fallback[idx] = (dm && !status) ? dm : xstrdup(nm->e[lo].name);
		if (status)
			free(dm);
	} else {
		nm->fallback[idx] = xasprintf("func@0x%" PRIx64, f->start);
	}
	return nm->fallback[idx];
}

void isa_image_release(struct isa_image *img)
{
	struct names *nm = img->names;

	if (nm) {
		size_t i;

		for (i = 0; i < nm->nr; i++)
			free(nm->e[i].name);
		for (i = 0; i < img->nr_funcs; i++)
			free(nm->fallback[i]);
		free(nm->e);
		free(nm->fallback);
		free(nm);
	}
	free(img->path);
	free(img->funcs);
	free(img->segs);
	free(img->cache_path);
	memset(img, 0, sizeof(*img));
}
