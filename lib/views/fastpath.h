/* fastpath.h - "is the fast path really running?": the facts a profile's samples show
 * about the code the DL libraries chose, and the findings when it is a slow one.
 *
 * Fed once per attributed sample (its frames, family and innermost oneDNN primitive, as
 * the DL view computed them) and with the recording's META (the recorded CPU's flags, the
 * workload's settings env.NAME), it keeps:
 *   - per oneDNN primitive (ITT task): the JIT kernels that ran inside it (name, ISA from
 *     the kernel's bytes or its name, samples) against libdnnl's compiled code, OpenMP
 *     waiting and kernel time;
 *   - aten samples by the vector class of the function they ran (AVX-512, AVX/AVX2, SSE);
 *   - OpenBLAS gemm samples by the vector class of their kernel;
 *   - samples in oneDNN's reference code where its symbols say so (unstripped builds).
 * fastpath_findings() turns them into findings, each only where the time is real:
 *   dnnl-no-jit        a primitive's work mostly outside JIT code, with the likely cause
 *                      (and the exact primitive that ran oneDNN's reference code, when
 *                      the recording describes its primitives)
 *   dnnl-reference     reference oneDNN code by symbol name (when no primitive said it)
 *   aten-avx2          aten in AVX2 code on an AVX-512 machine
 *   aten-default       aten in its DEFAULT (SSE) kernels on an AVX2/AVX-512 machine
 *   openblas-coretype  OpenBLAS pinned below the CPU by OPENBLAS_CORETYPE
 *   dnnl-fp-width      a primitive's FP operations (record --metrics fp) mostly
 *                      narrower than the CPU's vectors, or scalar
 */
#ifndef DLPROF_FASTPATH_H
#define DLPROF_FASTPATH_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "process.h"
#include "session.h"

struct finding {
	const char *id;
	double figure;		/* its share of the samples, percent */
	char brief[160];	/* the gist in a few words (fast-path findings), else "" */
	char text[1024];
};

/* Where a sample inside a oneDNN primitive ran. */
enum fp_part {
	FP_JIT,			/* JIT-generated code */
	FP_LIB,			/* libdnnl's own compiled code (reference/simple implementations,
				   the primitive's driver) */
	FP_OTHER,		/* other user code (libc, libm, ...) */
	FP_WAIT,		/* OpenMP runtime: spinning or sleeping at a barrier */
	FP_KERNEL,		/* the kernel (page faults, scheduling) */
	FP_NR
};

struct fp_kernel {
	const char *name;	/* interned */
	const char *isa;	/* "avx512_core", "avx2", ... from the name, else the code's tier
				   name ("avx512-zmm", "avx", "sse"); "?" unknown */
	const char *tier;	/* tier name of its code (isa_tier_name), NULL when no bytes */
	const char *desc;	/* for a table: the name's ISA word, else the code's tier
				   ("AVX-512 (zmm)"), else "?" */
	uint64_t samples;
};

/* FP operations by width (record --metrics fp) */
enum fp_width { FPW_SCALAR, FPW_128, FPW_256, FPW_512, FPW_NR };

struct fp_prim {
	const char *name;	/* the ITT task name: "convolution", "reorder" (interned) */
	uint64_t samples;
	uint64_t part[FP_NR];
	uint64_t fp_ops[FPW_NR];	/* FP operations its samples counted (record --metrics
					   fp, read or sampled), by width */
	struct fp_kernel *kernels;	/* sorted by samples, most first (after fastpath_finish) */
	size_t nr_kernels, alloc_kernels;
};

struct fastpath;

struct fastpath *fastpath_new(void);
void fastpath_free(struct fastpath *fp);
/* The recording's META: "cpu_flags" (space-separated /proc/cpuinfo flags of the recorded
 * machine) and "env.NAME" (the workload's settings).  Without cpu_flags the findings
 * judge the machine running the report, and say so. */
void fastpath_meta(struct fastpath *fp, const struct recmeta *m);
/* One sample: frames leaf first, the leaf's symbol and the sample's family (interned with
 * str_intern), its innermost oneDNN primitive (ITT task name, interned) or NULL.  m
 * may be NULL (no code is read then). */
void fastpath_sample(struct fastpath *fp, struct machine *m, const struct dlp_sample *s,
		     const struct frame *frames, size_t nr, const char *sym, const char *family,
		     const char *primitive);
/* The FP operations by width a sample's counts hold (META metrics fp-scalar ... fp-512),
 * to its primitive; fastpath_sample() takes them too: this is for a counter's own sample
 * (dlp_sample.counts_only), which is no CPU sample */
void fastpath_counts(struct fastpath *fp, const struct dlp_sample *s, const char *primitive);
/* A primitive's FP operations by width as one phrase ("96.0% 512-bit, 4.0% scalar"):
 * widths of at least 1%, widest first.  Returns how many it counted, 0: none (buf
 * untouched) */
uint64_t fastpath_fp_phrase(const struct fp_prim *p, char *buf, size_t len);
/* One sample's described primitive (attr.h prim_desc) inside the primitive of kind
 * PRIMITIVE (as given to fastpath_sample): the dnnl-no-jit finding then names the exact
 * primitive that ran a reference implementation (impl "ref:..."), with its shape, calls
 * and time per call, instead of inferring it. */
struct itt_prim;
void fastpath_prim_desc(struct fastpath *fp, const char *primitive, const struct itt_prim *desc);
/* Sort the per-primitive kernels; call once after the last sample (idempotent). */
void fastpath_finish(struct fastpath *fp);
/* The primitive's facts, NULL when no sample ran inside it. */
const struct fp_prim *fastpath_prim(struct fastpath *fp, const char *primitive);
/* Up to max findings for a run of total samples; returns how many were written. */
size_t fastpath_findings(struct fastpath *fp, uint64_t total, struct finding *f, size_t max);
/* The workload's setting NAME as recorded (env.NAME), or NULL. */
const char *fastpath_env(const struct fastpath *fp, const char *name);

/* Thresholds, percent of the run's samples. */
#define FASTPATH_NOJIT_PCT	5.0	/* a primitive's work outside JIT code */
#define FASTPATH_AVX2_PCT	1.0	/* aten samples in AVX2 code on AVX-512 */
#define FASTPATH_DEFAULT_PCT	5.0	/* aten samples in SSE code on AVX2 or better */
#define FASTPATH_GEMM_PCT	5.0	/* OpenBLAS samples in code narrower than the CPU */
#define FASTPATH_REF_PCT	1.0	/* reference oneDNN code by symbol name */
#define FASTPATH_REFBLAS_PCT	2.0	/* the reference (netlib) BLAS or LAPACK */
#define FASTPATH_FPW_PCT	5.0	/* a primitive whose FP operations are narrower than
					   the CPU's widest vectors */

#endif
