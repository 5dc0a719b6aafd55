/* isa/fastpath.c - is the fast path running: facts from the samples, findings when not.
 *
 * The facts are the code each sample ran, put beside the library's own choice:
 *   - oneDNN: inside a primitive (an ITT task), a sample in JIT code ran one of its
 *     generated kernels; one in libdnnl's compiled code ran the reference or "simple"
 *     implementation (or the primitive's driver, which is thin).  A convolution whose
 *     samples are mostly the latter ran oneDNN's reference code: ~100-1000x slower than
 *     its JIT kernel (ONEDNN_VERBOSE would say "ref:any").  OpenMP waiting and kernel
 *     time are set aside: they say nothing of the implementation.
 *   - ATen and OpenBLAS: the vector class of the function a sample landed in, decoded
 *     from its bytes (code-hits.c), against what the recorded CPU offers.
 * The causes named come from the recording: the workload's settings (env.NAME META),
 * the recorded CPU's flags.  What the recording cannot tell is said to be unknown, with
 * the check that tells.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "family-rules.h"
#include "fastpath.h"
#include "isa.h"
#include "itt.h"
#include "jitsym.h"
#include "output.h"
#include "rephash.h"
#include "util.h"

struct env_kv {
	char *name, *value;
};

/* A described primitive's samples, under its kind's task name */
struct fp_desc {
	const char *kind;
	const struct itt_prim *d;
	uint64_t samples;
};

/* counts keyed by an interned string */
struct symcount {
	struct u64map map;	/* pointer -> count */
};

struct fastpath {
	struct isa_hits *hits;
	char *cpu_flags;	/* " flag flag ... " (blank on both ends), NULL until known */
	int flags_local;	/* taken from the machine running the report */
	struct env_kv *env;
	size_t nr_env, alloc_env;
	struct fp_prim *prims;
	size_t nr_prims, alloc_prims;
	struct fp_desc *descs;	/* described primitives by samples (fastpath_prim_desc) */
	size_t nr_descs, alloc_descs;
	int finished;
	/* aten: samples by the class of the function they ran */
	uint64_t aten_sse, aten_vex, aten_vex_ymm, aten_evex;
	uint64_t avx2_samples;	/* aten in VEX code (or named AVX2 where unreadable) */
	struct symcount avx2_sym, sse_sym;
	/* leaves in libdnnl's compiled code and in JIT code, inside a primitive or not */
	uint64_t dnnl_lib, jit;
	/* oneDNN reference code by symbol name */
	uint64_t ref_samples;
	struct symcount ref_sym;
	/* OpenBLAS: samples in its code by tier */
	uint64_t blas_tier[ISA_T_NR];
	struct symcount blas_sym;
	/* the reference BLAS/LAPACK: which mapped files are (dso -> isa_blas + 1), the
	 * samples in them */
	struct u64map blas_kind;
	uint64_t refblas, reflapack;
	struct symcount refblas_sym;
	char *refblas_path;		/* the first such file (copied: the machine may go first) */
	const char *f_spin, *f_omp, *f_aten;
	int fpw_at[FPW_NR];	/* fp-scalar .. fp-512's places in a sample's counts, 0: none */
};

static const char *const fpw_names[FPW_NR] = { "fp-scalar", "fp-128", "fp-256", "fp-512" };
static const char *const fpw_words[FPW_NR] = { "scalar", "128-bit", "256-bit", "512-bit" };

static void symcount_add(struct symcount *c, const char *sym)
{
	void **slot = u64map_slot(&c->map, (uintptr_t)sym);

	*slot = (void *)((uintptr_t)*slot + 1);
}

/* The symbol with the most counts (ties: the smaller name), NULL when none. */
static const char *symcount_top(const struct symcount *c)
{
	const char *best = NULL;
	uintptr_t bn = 0;

	for (size_t i = 0; i < c->map.cap; i++) {
		const char *s;
		uintptr_t n;

		if (!c->map.used[i])
			continue;
		s = (const char *)(uintptr_t)c->map.keys[i];
		n = (uintptr_t)c->map.vals[i];
		if (n > bn || (n == bn && best && strcmp(s, best) < 0)) {
			best = s;
			bn = n;
		}
	}
	return best;
}

struct fastpath *fastpath_new(void)
{
	struct fastpath *fp = xcalloc(1, sizeof(*fp));

	u64map_init(&fp->avx2_sym.map);
	u64map_init(&fp->sse_sym.map);
	u64map_init(&fp->ref_sym.map);
	u64map_init(&fp->blas_sym.map);
	u64map_init(&fp->blas_kind);
	u64map_init(&fp->refblas_sym.map);
	fp->f_spin = str_intern("omp-spin", 8);
	fp->f_omp = str_intern("omp-runtime", 11);
	fp->f_aten = str_intern("aten", 4);
	return fp;
}

void fastpath_free(struct fastpath *fp)
{
	if (!fp)
		return;
	isa_hits_free(fp->hits);
	free(fp->cpu_flags);
	for (size_t i = 0; i < fp->nr_env; i++) {
		free(fp->env[i].name);
		free(fp->env[i].value);
	}
	free(fp->env);
	for (size_t i = 0; i < fp->nr_prims; i++)
		free(fp->prims[i].kernels);
	free(fp->prims);
	free(fp->descs);
	u64map_release(&fp->avx2_sym.map);
	u64map_release(&fp->sse_sym.map);
	u64map_release(&fp->ref_sym.map);
	u64map_release(&fp->blas_sym.map);
	u64map_release(&fp->blas_kind);
	free(fp->refblas_path);
	u64map_release(&fp->refblas_sym.map);
	free(fp);
}

static void fastpath_env_set(struct fastpath *fp, const char *name, const char *value)
{
	for (size_t i = 0; i < fp->nr_env; i++)
		if (!strcmp(fp->env[i].name, name)) {
			free(fp->env[i].value);
			fp->env[i].value = xstrdup(value);
			return;
		}
	ALLOC_GROW(fp->env, fp->nr_env + 1, fp->alloc_env);
	fp->env[fp->nr_env].name = xstrdup(name);
	fp->env[fp->nr_env++].value = xstrdup(value);
}

void fastpath_meta(struct fastpath *fp, const struct recmeta *m)
{
	for (size_t i = 0; i < m->nr; i++) {
		const char *key = m->pairs[i].key, *value = m->pairs[i].value;

		if (!strcmp(key, "cpu_flags") || !strcmp(key, "cpu-flags")) {
			free(fp->cpu_flags);
			fp->cpu_flags = xasprintf(" %s ", value);
			fp->flags_local = 0;
		} else if (!strncmp(key, "env.", 4) && key[4]) {
			fastpath_env_set(fp, key + 4, value);
		}
	}
	for (int k = 0; m->metrics && k < FPW_NR; k++)
		fp->fpw_at[k] = list_index(m->metrics, fpw_names[k]);
}

const char *fastpath_env(const struct fastpath *fp, const char *name)
{
	for (size_t i = 0; i < fp->nr_env; i++)
		if (!strcmp(fp->env[i].name, name))
			return *fp->env[i].value ? fp->env[i].value : NULL;
	return NULL;
}

/* Does the recorded CPU have this /proc/cpuinfo flag?  Without recorded flags, this
 * machine's (and the findings say so). */
static int cpu_has(struct fastpath *fp, const char *flag)
{
	char word[64];

	if (!fp->cpu_flags) {
		char *flags = isa_cpuinfo_flags();

		fp->cpu_flags = xasprintf(" %s ", flags ? flags : "");
		fp->flags_local = 1;
		free(flags);
	}
	snprintf(word, sizeof(word), " %s ", flag);
	return strstr(fp->cpu_flags, word) != NULL;
}

static const char *flags_note(const struct fastpath *fp)
{
	return fp->flags_local ? " (by this machine's CPU: the recording does not name its CPU)" : "";
}

/* The ISA a oneDNN kernel's name states ("jit_avx2_conv_fwd_kernel_f32" -> "avx2"), or
 * NULL.  Longest words first: "avx512_core_bf16" before "avx512_core" before "avx". */
static const char *isa_word_of_name(const char *name)
{
	static const char *const words[] = {
		"avx512_core_amx", "avx512_core_bf16", "avx512_core_vnni", "avx512_core",
		"avx512_common", "avx512_mic", "avx2_vnni", "avx512", "amx", "avx2", "avx",
		"sse41", "sse42", "sse4", NULL,
	};

	for (const char *const *w = words; *w; w++)
		if (strstr(name, *w))
			return *w;
	return NULL;
}

static struct fp_prim *prim_get(struct fastpath *fp, const char *name)
{
	for (size_t i = 0; i < fp->nr_prims; i++)
		if (fp->prims[i].name == name)
			return &fp->prims[i];
	ALLOC_GROW(fp->prims, fp->nr_prims + 1, fp->alloc_prims);
	memset(&fp->prims[fp->nr_prims], 0, sizeof(fp->prims[0]));
	fp->prims[fp->nr_prims].name = name;
	return &fp->prims[fp->nr_prims++];
}

/* Tier of the file-backed function around the frame's address, -1 when unknown. */
static int file_tier(struct fastpath *fp, struct machine *m, const struct dlp_sample *s,
		     const struct frame *f, struct isa_counts *c)
{
	const struct map *mp;

	if (!m || (f->flags & (FRAME_KERNEL | FRAME_JIT | FRAME_ANON)))
		return -1;
	mp = machine_find_map(m, s->pid, f->ip, s->time);
	if (!mp || !mp->dso || mp->dso->anon || mp->dso->special || mp->dso->kernel)
		return -1;
	if (!fp->hits)
		fp->hits = isa_hits_new();
	return isa_hits_tier(fp->hits, mp->dso, dso_file(mp->dso), mp->dso->build_id,
			     mp->dso->build_id_size, map_file_offset(mp, f->ip), c);
}

/* Tier of a JIT kernel from its captured bytes, -1 when there are none. */
static int jit_tier(struct fastpath *fp, struct machine *m, const struct dlp_sample *s,
		    const struct frame *f)
{
	struct jitsyms *j = m ? machine_jit(m) : NULL;
	const uint8_t *code;
	uint64_t start;
	size_t len;

	if (!j || jitsym_code(j, (int32_t)s->pid, f->ip, &start, &code, &len))
		return -1;
	if (!fp->hits)
		fp->hits = isa_hits_new();
	return isa_hits_code_tier(fp->hits, code, len, start);
}

static void prim_sample(struct fastpath *fp, struct machine *m, const struct dlp_sample *s,
			const struct frame *f, const char *name, const char *family,
			const char *primitive)
{
	struct fp_prim *p = prim_get(fp, primitive);
	struct fp_kernel *k = NULL;
	size_t i;
	int tier;

	p->samples++;
	if (f->flags & FRAME_KERNEL) {
		p->part[FP_KERNEL]++;
		return;
	}
	if (family == fp->f_spin || family == fp->f_omp || family_omp_runtime_dso(f->dso)) {
		p->part[FP_WAIT]++;
		return;
	}
	if (!(f->flags & (FRAME_JIT | FRAME_ANON))) {
		p->part[f->dso && !strncmp(f->dso, "libdnnl", 7) ? FP_LIB : FP_OTHER]++;
		return;
	}
	p->part[FP_JIT]++;
	for (i = 0; i < p->nr_kernels; i++)
		if (p->kernels[i].name == name) {
			k = &p->kernels[i];
			break;
		}
	if (!k) {
		const char *w = isa_word_of_name(name);

		tier = jit_tier(fp, m, s, f);
		ALLOC_GROW(p->kernels, p->nr_kernels + 1, p->alloc_kernels);
		k = &p->kernels[p->nr_kernels++];
		k->name = name;
		k->samples = 0;
		k->tier = tier >= 0 ? isa_tier_name(tier) : NULL;
		k->isa = w ? w : k->tier ? k->tier : "?";
		k->desc = w ? w : tier >= 0 ? isa_tier_desc(tier) : "?";
	}
	k->samples++;
}

/* A sample in a file named as a BLAS or LAPACK: counted when that file is the reference
 * code (isa_blas_kind, asked once a file) */
static void refblas_sample(struct fastpath *fp, struct machine *m, const struct dlp_sample *s,
			   const struct frame *f, const char *sym)
{
	const struct map *mp = m ? machine_find_map(m, s->pid, f->ip, s->time) : NULL;
	void **slot;
	int lapack_only = 0;

	if (!mp || !mp->dso)
		return;
	slot = u64map_slot(&fp->blas_kind, (uintptr_t)mp->dso);
	if (!*slot) {
		enum isa_blas k = isa_blas_kind(dso_file(mp->dso), &lapack_only);

		*slot = (void *)(uintptr_t)((unsigned)k + 1 + (lapack_only ? 0x100 : 0));
	}
	if (((uintptr_t)*slot & 0xff) != ISA_BLAS_REFERENCE + 1)
		return;
	if ((uintptr_t)*slot & 0x100)
		fp->reflapack++;
	else
		fp->refblas++;
	symcount_add(&fp->refblas_sym, sym);
	if (!fp->refblas_path)
		fp->refblas_path = xstrdup(mp->dso->path);
}

void fastpath_counts(struct fastpath *fp, const struct dlp_sample *s, const char *primitive)
{
	struct fp_prim *p = NULL;

	if (!primitive || !s->read)
		return;
	for (int k = 0; k < FPW_NR; k++)
		if (fp->fpw_at[k] && (uint32_t)fp->fpw_at[k] < s->nr_read &&
		    s->read[fp->fpw_at[k]]) {
			if (!p)
				p = prim_get(fp, primitive);
			p->fp_ops[k] += s->read[fp->fpw_at[k]];
			fp->finished = 0;
		}
}

uint64_t fastpath_fp_phrase(const struct fp_prim *p, char *buf, size_t len)
{
	uint64_t all = 0;
	size_t n = 0;

	for (int k = 0; k < FPW_NR; k++)
		all += p->fp_ops[k];
	if (!all || !len)
		return 0;
	buf[0] = 0;
	for (int k = FPW_NR - 1; k >= 0 && n < len; k--)
		if (p->fp_ops[k] * 100 >= all)
			n += (size_t)snprintf(buf + n, len - n, "%s%.1f%% %s", n ? ", " : "",
					      pct(p->fp_ops[k], all), fpw_words[k]);
	return all;
}

void fastpath_sample(struct fastpath *fp, struct machine *m, const struct dlp_sample *s,
		     const struct frame *frames, size_t nr, const char *sym, const char *family,
		     const char *primitive)
{
	const struct frame *f = &frames[0];

	if (!nr)
		return;
	fp->finished = 0;
	fastpath_counts(fp, s, primitive);
	if (f->flags & (FRAME_JIT | FRAME_ANON))
		fp->jit++;
	else if (!(f->flags & FRAME_KERNEL) && f->dso && !strncmp(f->dso, "libdnnl", 7))
		fp->dnnl_lib++;
	if (primitive)
		prim_sample(fp, m, s, f, sym, family, primitive);
	if (family == fp->f_aten) {
		struct isa_counts c;
		int tier = file_tier(fp, m, s, f, &c);

		if (tier >= 0) {
			if (tier == ISA_T_AVX) {
				fp->aten_vex++;
				if (c.n[ISA_C_VEX256])
					fp->aten_vex_ymm++;
				fp->avx2_samples++;
				symcount_add(&fp->avx2_sym, sym);
			} else if (tier == ISA_T_AVX512 || tier == ISA_T_AVX512_ZMM) {
				fp->aten_evex++;
			} else if (tier == ISA_T_SSE) {
				fp->aten_sse++;
				symcount_add(&fp->sse_sym, sym);
			}
		} else if (strstr(f->sym, "::AVX2::") || strstr(f->sym, "_AVX2")) {
			/* code unreadable: the kernel's name may still say it (unstripped) */
			fp->avx2_samples++;
			fp->aten_vex_ymm++;
			symcount_add(&fp->avx2_sym, sym);
		}
	}
	if (f->dso && !strncmp(f->dso, "libdnnl", 7) &&
	    (strstr(f->sym, "::ref_") || strstr(f->sym, "::simple_") || strstr(f->sym, "_ref_"))) {
		fp->ref_samples++;
		symcount_add(&fp->ref_sym, sym);
	}
	if (f->dso && !(f->flags & (FRAME_KERNEL | FRAME_JIT | FRAME_ANON)) &&
	    (!strncmp(f->dso, "libblas", 7) || !strncmp(f->dso, "liblapack", 9) ||
	     !strncmp(f->dso, "libcblas", 8)))
		refblas_sample(fp, m, s, f, sym);
	if (f->dso && (!strncmp(f->dso, "libopenblas", 11) || !strncmp(f->dso, "libblas", 7))) {
		int tier = file_tier(fp, m, s, f, NULL);

		if (tier >= 0) {
			fp->blas_tier[tier]++;
			if (tier < ISA_T_AVX512)
				symcount_add(&fp->blas_sym, sym);
		}
	}
}

void fastpath_prim_desc(struct fastpath *fp, const char *primitive, const struct itt_prim *desc)
{
	size_t i;

	for (i = 0; i < fp->nr_descs; i++)
		if (fp->descs[i].d == desc && fp->descs[i].kind == primitive)
			break;
	if (i == fp->nr_descs) {
		ALLOC_GROW(fp->descs, fp->nr_descs + 1, fp->alloc_descs);
		fp->descs[fp->nr_descs++] = (struct fp_desc){ primitive, desc, 0 };
	}
	fp->descs[i].samples++;
}

/* The described primitive of kind PRIMITIVE with the most samples that ran oneDNN's
 * reference code by its own word (its implementation string "ref:..."), NULL when none */
static const struct fp_desc *ref_desc(const struct fastpath *fp, const char *primitive)
{
	const struct fp_desc *best = NULL;

	for (size_t i = 0; i < fp->nr_descs; i++) {
		const struct fp_desc *d = &fp->descs[i];

		if (d->kind != primitive || !d->d->impl || strncmp(d->d->impl, "ref", 3))
			continue;
		if (!best || d->samples > best->samples ||
		    (d->samples == best->samples && strcmp(d->d->key, best->d->key) < 0))
			best = d;
	}
	return best;
}

/* "ref:any forward_inference mb1_ic16oc16_ih14... (src f32:aBcd16b:1x16x14x14), 159
 * calls, 11.9 ms per call, 90.1% of samples" */
static void add_desc(struct strbuf *sb, const struct fp_desc *d, uint64_t total)
{
	const struct itt_prim *p = d->d;
	const char *src = p->md[ITT_MD_SRC] ? p->md[ITT_MD_SRC] : p->md[ITT_MD_DIFF_SRC];

	strbuf_addf(sb, "%s %s %s", p->impl, p->prop ? p->prop : "", p->shape ? p->shape : "");
	if (src)
		strbuf_addf(sb, " (src %s)", src);
	if (p->calls) {
		double per = (double)p->ns / p->calls;

		strbuf_addf(sb, ", %llu calls, %.1f %s per call", (unsigned long long)p->calls,
			    per >= 1e6 ? per / 1e6 : per / 1e3, per >= 1e6 ? "ms" : "us");
	}
	strbuf_addf(sb, ", %.1f%% of samples", total ? 100.0 * d->samples / total : 0.0);
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct fp_kernel *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_prim(const void *a, const void *b)
{
	const struct fp_prim *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->name, y->name);
}

void fastpath_finish(struct fastpath *fp)
{
	if (fp->finished)
		return;
	fp->finished = 1;
	if (fp->nr_prims)
		qsort(fp->prims, fp->nr_prims, sizeof(*fp->prims), cmp_prim);
	for (size_t i = 0; i < fp->nr_prims; i++)
		if (fp->prims[i].nr_kernels)
			qsort(fp->prims[i].kernels, fp->prims[i].nr_kernels,
			      sizeof(*fp->prims[i].kernels), cmp_kernel);
}

const struct fp_prim *fastpath_prim(struct fastpath *fp, const char *primitive)
{
	fastpath_finish(fp);
	for (size_t i = 0; i < fp->nr_prims; i++)
		if (fp->prims[i].name == primitive || !strcmp(fp->prims[i].name, primitive))
			return &fp->prims[i];
	return NULL;
}

/* The likely causes of a primitive without JIT kernels, from what the recording holds. */
static void nojit_causes(struct fastpath *fp, const struct fp_prim *p, struct strbuf *sb)
{
	const char *cap = fastpath_env(fp, "ONEDNN_MAX_CPU_ISA");
	const char *capvar = "ONEDNN_MAX_CPU_ISA";
	int avx512 = cpu_has(fp, "avx512f") && cpu_has(fp, "avx512bw");
	int n = 0;

	if (!cap) {
		cap = fastpath_env(fp, "DNNL_MAX_CPU_ISA");
		capvar = "DNNL_MAX_CPU_ISA";
	}
	if (cap) {
		strbuf_addf(sb, "%s=%s in the workload's environment caps oneDNN's JIT kernels, "
			    "so a layout or data type that needs a wider ISA falls back to "
			    "reference code: unset it", capvar, cap);
		n++;
	}
	if (!avx512 || cap) {
		strbuf_addf(sb, "%s%s a layout blocked for AVX-512 (nChw16c, 16-channel "
			    "blocked weights) has no JIT %s%s: create the memory descriptors with "
			    "format_tag::any, or the 8-channel blocking (nChw8c)", n ? "; " : "",
			    cap ? "with the cap," : "this CPU has no AVX-512, and", p->name,
			    cap ? "" : flags_note(fp));
		n++;
	}
	if (!avx512) {
		strbuf_addf(sb, "%sa data type this CPU has no kernel for (bf16 needs AVX-512)",
			    n ? "; " : "");
		n++;
	}
	if (!n)
		strbuf_addstr(sb, "the recording cannot tell the cause (an unsupported shape, "
			      "layout or data type)");
	strbuf_addstr(sb, ". ONEDNN_VERBOSE=1 prints the implementation oneDNN chose");
}

static struct finding *next(struct finding *f, size_t *n, size_t max)
{
	if (*n >= max)
		return NULL;
	memset(&f[*n], 0, sizeof(f[*n]));
	return &f[(*n)++];
}

/* oneDNN primitives whose work ran mostly outside JIT code; without ITT data
 * (attached with -p, --no-itt, a perf.data), libdnnl's compiled code against JIT code.
 * Returns how many it found */
static size_t find_dnnl_no_jit(struct fastpath *fp, uint64_t total, struct finding *f,
				size_t *n, size_t max)
{
	struct finding *x;
	size_t nojit = 0;

	for (size_t i = 0; i < fp->nr_prims; i++) {
		const struct fp_prim *p = &fp->prims[i];
		uint64_t work = p->part[FP_JIT] + p->part[FP_LIB] + p->part[FP_OTHER];
		uint64_t outside = p->part[FP_LIB] + p->part[FP_OTHER];
		struct strbuf sb = STRBUF_INIT;
		const struct fp_desc *rd;
		char phrase[256];
		uint64_t fp_all;

		if (pct(work, total) < FASTPATH_NOJIT_PCT || p->part[FP_JIT] * 2 >= work ||
		    !(x = next(f, n, max)))
			continue;
		nojit++;
		x->id = "dnnl-no-jit";
		x->figure = pct(p->samples, total);
		if (p->part[FP_JIT])
			strbuf_addf(&sb, "oneDNN %s ran mostly outside its JIT kernels: %.1f%% of "
				    "samples, only %.1f%% of its work in JIT code (%s), %.1f%% in "
				    "compiled code (likely a reference implementation, typically "
				    "100-1000x slower). ", p->name,
				    pct(p->samples, total), pct(p->part[FP_JIT], work),
				    p->kernels[0].name, pct(outside, work));
		else
			strbuf_addf(&sb, "oneDNN %s ran without a JIT kernel: %.1f%% of samples, "
				    "%.1f%% of its work in compiled code (its reference "
				    "implementation, typically 100-1000x slower). ",
				    p->name, pct(p->samples, total), pct(outside, work));
		if ((rd = ref_desc(fp, p->name))) {
			/* what oneDNN itself said it ran: no inference needed */
			strbuf_addstr(&sb, p->part[FP_JIT] ? "The reference primitive: " :
				      "The primitive: ");
			add_desc(&sb, rd, total);
			strbuf_addstr(&sb, ". ");
		}
		if ((fp_all = fastpath_fp_phrase(p, phrase, sizeof(phrase))))
			strbuf_addf(&sb, "Its %.3g FP operations (record --metrics fp): %s. ",
				    (double)fp_all, phrase);
		strbuf_addstr(&sb, "Likely causes: ");
		if (rd)
			snprintf(x->brief, sizeof(x->brief), "oneDNN %s ran %s (%.1f%% of samples): %s",
				 p->name, p->part[FP_JIT] ? "mostly outside its JIT kernels" :
				 "without a JIT kernel", pct(p->samples, total),
				 rd->d->shape ? rd->d->shape : rd->d->impl);
		else
			snprintf(x->brief, sizeof(x->brief), "oneDNN %s ran %s (%.1f%% of samples)",
				 p->name, p->part[FP_JIT] ? "mostly outside its JIT kernels" :
				 "without a JIT kernel", pct(p->samples, total));
		nojit_causes(fp, p, &sb);
		snprintf(x->text, sizeof(x->text), "%s", sb.buf);
		strbuf_release(&sb);
	}
	if (!fp->nr_prims && pct(fp->dnnl_lib, total) >= FASTPATH_NOJIT_PCT &&
	    fp->jit * 2 < fp->dnnl_lib && (x = next(f, n, max))) {
		struct strbuf sb = STRBUF_INIT;
		struct fp_prim any = { .name = "primitives" };

		nojit++;
		x->id = "dnnl-no-jit";
		x->figure = pct(fp->dnnl_lib, total);
		snprintf(x->brief, sizeof(x->brief), "oneDNN ran in its compiled code, not JIT "
			 "kernels (%.1f%% of samples)", x->figure);
		strbuf_addf(&sb, "oneDNN: %.1f%% of samples in libdnnl's compiled code and %.1f%% "
			    "in JIT code: its primitives ran reference implementations (typically "
			    "100-1000x slower than JIT kernels); the recording has no ITT data to "
			    "say which primitive (record without -p/--no-itt). Likely causes: ",
			    x->figure, pct(fp->jit, total));
		nojit_causes(fp, &any, &sb);
		snprintf(x->text, sizeof(x->text), "%s", sb.buf);
		strbuf_release(&sb);
	}
	return nojit;
}

/* aten in AVX2 code on an AVX-512 machine: ATen's dispatcher chose AVX2 */
static void find_aten_avx2(struct fastpath *fp, uint64_t total, struct finding *f,
			    size_t *n, size_t max)
{
	struct finding *x;

	if (pct(fp->avx2_samples, total) >= FASTPATH_AVX2_PCT && fp->aten_evex * 4 < fp->avx2_samples &&
	    cpu_has(fp, "avx512f") && (x = next(f, n, max))) {
		const char *top = symcount_top(&fp->avx2_sym), *cap = fastpath_env(fp, "ATEN_CPU_CAPABILITY");

		if (cap && strcasecmp(cap, "avx2"))
			cap = NULL;	/* it did not choose AVX2 */

		x->id = "aten-avx2";
		x->figure = pct(fp->avx2_samples, total);
		snprintf(x->brief, sizeof(x->brief), "aten runs AVX2 kernels on an AVX-512 CPU "
			 "(%.1f%% of samples)", x->figure);
		snprintf(x->text, sizeof(x->text),
			 "aten: %.1f%% of samples in %s code while AVX-512 is usable%s (%.1f%% in "
			 "AVX-512 code; e.g. %s)%s%s%s: set ATEN_CPU_CAPABILITY=avx512 (torch \u2265 1.10 "
			 "honours it)", x->figure,
			 fp->aten_vex_ymm * 2 >= fp->avx2_samples ? "AVX2 (ymm)" : "AVX (VEX)",
			 flags_note(fp), pct(fp->aten_evex, total), top ? top : "?",
			 cap ? "; ATEN_CPU_CAPABILITY=" : "", cap ? cap : "",
			 cap ? " in the workload's environment chose it" : "");
	}
}

/* aten in its DEFAULT (SSE) kernels on a CPU with AVX2 */
static void find_aten_default(struct fastpath *fp, uint64_t total, struct finding *f,
			       size_t *n, size_t max)
{
	struct finding *x;

	const char *cap = fastpath_env(fp, "ATEN_CPU_CAPABILITY");
	int capped = cap && !strcasecmp(cap, "default");

	if (pct(fp->aten_sse, total) >= FASTPATH_DEFAULT_PCT && cpu_has(fp, "avx2") &&
	    (capped || fp->aten_vex + fp->aten_evex == 0) && (x = next(f, n, max))) {
		const char *top = symcount_top(&fp->sse_sym);

		x->id = "aten-default";
		x->figure = pct(fp->aten_sse, total);
		snprintf(x->brief, sizeof(x->brief), "aten runs its DEFAULT (SSE) kernels "
			 "(%.1f%% of samples)", x->figure);
		snprintf(x->text, sizeof(x->text),
			 "aten: %.1f%% of samples in SSE code and %s in AVX2 or AVX-512 code "
			 "(e.g. %s): ATen runs its DEFAULT kernels on a CPU with %s%s. %s",
			 x->figure, fp->aten_vex + fp->aten_evex ? "little" : "none",
			 top ? top : "?", cpu_has(fp, "avx512f") ? "AVX-512" : "AVX2",
			 flags_note(fp),
			 capped ? "ATEN_CPU_CAPABILITY=default in the workload's environment "
				  "chose them: unset it" :
				  "The recording does not say why (ATEN_CPU_CAPABILITY was not "
				  "set): `dlprof check-isa` asks torch which capability it uses");
	}
}

/* OpenBLAS in kernels narrower than the CPU, pinned by OPENBLAS_CORETYPE */
static void find_openblas_coretype(struct fastpath *fp, uint64_t total, struct finding *f,
				    size_t *n, size_t max)
{
	struct finding *x;

	const char *core = fastpath_env(fp, "OPENBLAS_CORETYPE");
	int want = cpu_has(fp, "avx512f") ? ISA_T_AVX512 : cpu_has(fp, "avx2") ? ISA_T_AVX : ISA_T_SSE;
	uint64_t narrow = 0, wide = 0;

	for (int t = 0; t < ISA_T_NR; t++) {
		if (t == ISA_T_SCALAR)
			continue;	/* copies and bookkeeping: no kernel choice */
		if (t < want)
			narrow += fp->blas_tier[t];
		else
			wide += fp->blas_tier[t];
	}
	if (core && pct(narrow, total) >= FASTPATH_GEMM_PCT && narrow > wide &&
	    (x = next(f, n, max))) {
		const char *top = symcount_top(&fp->blas_sym);

		x->id = "openblas-coretype";
		x->figure = pct(narrow, total);
		snprintf(x->brief, sizeof(x->brief), "OpenBLAS is pinned below the CPU by "
			 "OPENBLAS_CORETYPE=%s (%.1f%% of samples)", core, x->figure);
		snprintf(x->text, sizeof(x->text),
			 "OpenBLAS: %.1f%% of samples in kernels narrower than this CPU offers "
			 "(e.g. %s, while the CPU has %s%s): OPENBLAS_CORETYPE=%s in the "
			 "workload's environment pins OpenBLAS below the CPU; unset it and "
			 "OpenBLAS picks its kernels from CPUID (`dlprof check-isa` names them)",
			 x->figure, top ? top : "?", want == ISA_T_AVX512 ? "AVX-512" :
			 want == ISA_T_AVX ? "AVX2" : "SSE", flags_note(fp), core);
	}
}

/* the reference (netlib) BLAS or LAPACK: Debian's libblas.so.3 without OpenBLAS */
static void find_reference_blas(struct fastpath *fp, uint64_t total, struct finding *f,
				size_t *n, size_t max)
{
	struct finding *x;
	uint64_t all = fp->refblas + fp->reflapack;

	if (pct(all, total) >= FASTPATH_REFBLAS_PCT && (x = next(f, n, max))) {
		const char *top = symcount_top(&fp->refblas_sym);
		const char *what = !fp->reflapack ? "BLAS" : !fp->refblas ? "LAPACK" : "BLAS and LAPACK";

		x->id = "blas-reference";
		x->figure = pct(all, total);
		snprintf(x->brief, sizeof(x->brief), "the reference (netlib) %s runs (%.1f%% of "
			 "samples)", what, x->figure);
		snprintf(x->text, sizeof(x->text),
			 "%.1f%% of samples in the reference (netlib) %s (%s; e.g. %s): loops "
			 "compiled for no CPU in particular, no vector kernels; %s", x->figure, what,
			 fp->refblas_path ? fp->refblas_path : "?", top ? top : "?",
			 isa_blas_advice());
	}
}

/* reference oneDNN code named by its symbols (builds with symbols) */
static void find_dnnl_reference(struct fastpath *fp, uint64_t total, struct finding *f,
				 size_t *n, size_t max)
{
	struct finding *x;

	if (pct(fp->ref_samples, total) > FASTPATH_REF_PCT && (x = next(f, n, max))) {
		const char *top = symcount_top(&fp->ref_sym);

		x->id = "dnnl-reference";
		x->figure = pct(fp->ref_samples, total);
		snprintf(x->brief, sizeof(x->brief), "oneDNN runs reference code (%.1f%% of "
			 "samples)", x->figure);
		snprintf(x->text, sizeof(x->text),
			 "%.1f%% of samples in reference (non-JIT) oneDNN code (e.g. %s): an "
			 "unsupported shape, data type or ISA made oneDNN fall back (ONEDNN_VERBOSE=1 "
			 "names the implementation)", x->figure, top ? top : "?");
	}
}

/* Whether the dnnl-no-jit finding names this primitive (its FP operations are said there) */
static int said_no_jit(const struct fp_prim *p, uint64_t total)
{
	uint64_t work = p->part[FP_JIT] + p->part[FP_LIB] + p->part[FP_OTHER];

	return pct(work, total) >= FASTPATH_NOJIT_PCT && p->part[FP_JIT] * 2 < work;
}

/* oneDNN primitives whose FP operations (record --metrics fp: counted, not inferred from
 * code) were mostly narrower than the recorded CPU's widest vectors: kernels for a
 * narrower ISA (a cap, a layout), or scalar code */
static void find_dnnl_fp_width(struct fastpath *fp, uint64_t total, struct finding *f,
			       size_t *n, size_t max)
{
	int widest = cpu_has(fp, "avx512f") ? FPW_512 : cpu_has(fp, "avx") ? FPW_256 : FPW_128;
	static const char *const vectors[FPW_NR] = { "", "128-bit (SSE)", "256-bit (AVX)",
						     "512-bit (AVX-512)" };

	for (size_t i = 0; i < fp->nr_prims; i++) {
		const struct fp_prim *p = &fp->prims[i];
		const char *cap = fastpath_env(fp, "ONEDNN_MAX_CPU_ISA");
		uint64_t all = 0;
		int most = 0;
		char phrase[256];
		struct finding *x;

		for (int k = 0; k < FPW_NR; k++) {
			all += p->fp_ops[k];
			if (p->fp_ops[k] > p->fp_ops[most])
				most = k;
		}
		if (!all || pct(p->samples, total) < FASTPATH_FPW_PCT ||
		    p->fp_ops[widest] * 2 >= all || said_no_jit(p, total) ||
		    !fastpath_fp_phrase(p, phrase, sizeof(phrase)) || !(x = next(f, n, max)))
			continue;
		if (!cap)
			cap = fastpath_env(fp, "DNNL_MAX_CPU_ISA");
		x->id = "dnnl-fp-width";
		x->figure = pct(p->samples, total);
		snprintf(x->brief, sizeof(x->brief), "oneDNN %s: FP operations mostly %s on a "
			 "CPU with %s vectors (%.1f%% of samples)", p->name, fpw_words[most],
			 vectors[widest], x->figure);
		if (most == FPW_SCALAR)
			snprintf(x->text, sizeof(x->text), "oneDNN %s (%.1f%% of samples): its %.3g "
				 "FP operations (record --metrics fp) %s, on a CPU with %s "
				 "vectors%s: scalar FP is reference code or the tails of a JIT "
				 "kernel's loops (small or odd channel counts). ONEDNN_VERBOSE=1 "
				 "names the implementation", p->name, x->figure, (double)all, phrase,
				 vectors[widest], flags_note(fp));
		else
			snprintf(x->text, sizeof(x->text), "oneDNN %s (%.1f%% of samples): its %.3g "
				 "FP operations (record --metrics fp) %s, on a CPU with %s "
				 "vectors%s: %s%s%s", p->name, x->figure, (double)all, phrase,
				 vectors[widest], flags_note(fp),
				 cap ? "ONEDNN_MAX_CPU_ISA=" : "its JIT kernels were built for a "
				 "narrower ISA (", cap ? cap : p->nr_kernels ? p->kernels[0].name : "?",
				 cap ? " in the workload's environment caps its kernels: unset it" :
				 "); a data type or layout without kernels at the CPU's width does "
				 "that: ONEDNN_VERBOSE=1 names the implementation");
	}
}

size_t fastpath_findings(struct fastpath *fp, uint64_t total, struct finding *f, size_t max)
{
	size_t n = 0, nojit;

	if (!total)
		return 0;
	fastpath_finish(fp);
	nojit = find_dnnl_no_jit(fp, total, f, &n, max);
	find_aten_avx2(fp, total, f, &n, max);
	find_aten_default(fp, total, f, &n, max);
	find_openblas_coretype(fp, total, f, &n, max);
	find_reference_blas(fp, total, f, &n, max);
	find_dnnl_fp_width(fp, total, f, &n, max);
	if (!nojit)	/* a primitive said it already */
		find_dnnl_reference(fp, total, f, &n, max);
	return n;
}
