/* isa.h - which vector instruction sets the CPU, the OS, the DL libraries and code use.
 *
 * lib/isa/ holds check-isa, one file per question:
 *   cpu.c        the CPU and the OS: what this machine offers
 *   libraries.c  the installed DL libraries: what each will choose here
 *   code-scan.c  machine code: the vector class of every instruction of a file or buffer
 *   code-hits.c  the same for just the functions a profile's samples hit
 *   profile.c    check-isa -i: the ISA the recorded samples ran, and the fast-path verdict
 *   check.c      check-isa's platform and file views (text and JSON)
 *
 * Three independent parts, used by `dlprof check-isa`:
 *   - the platform (lib/isa/cpu.c): CPUID bits, the state the OS enables in XCR0, the AMX
 *     permission (arch_prctl), cross-checked with /proc/cpuinfo;
 *   - the libraries (lib/isa/libraries.c): what oneDNN, OpenBLAS, MKL and PyTorch's ATen will
 *     choose on this machine, asked through dlopen (and python3 for torch);
 *   - code (lib/isa/code-scan.c): every instruction of an ELF file's executable code (or of a
 *     buffer, e.g. a JIT kernel) put into a class by its encoding, per function, with a
 *     per-build-id cache on disk.
 */
#ifndef DLPROF_ISA_H
#define DLPROF_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

/* ---- platform ---------------------------------------------------------------------- */

enum isa_feature {
	ISA_F_SSE42,
	ISA_F_AVX,
	ISA_F_AVX2,
	ISA_F_FMA,
	ISA_F_AVX512F,
	ISA_F_AVX512CD,
	ISA_F_AVX512BW,
	ISA_F_AVX512DQ,
	ISA_F_AVX512VL,
	ISA_F_AVX512VNNI,
	ISA_F_AVX512BF16,
	ISA_F_AVX512FP16,
	ISA_F_AMXTILE,
	ISA_F_AMXINT8,
	ISA_F_AMXBF16,
	ISA_F_NR
};

struct isa_feature_info {
	const char *name;		/* "AVX-512F" */
	const char *cpuinfo_flag;	/* "avx512f" as /proc/cpuinfo spells it */
	const char *json_key;		/* "avx512f" */
};
extern const struct isa_feature_info isa_features[ISA_F_NR];

enum isa_amx_perm {
	ISA_AMX_NOT_REQUESTED,	/* no AMX on this CPU/OS: nothing asked */
	ISA_AMX_GRANTED,	/* ARCH_GET_XCOMP_PERM has XTILEDATA, or the request succeeded */
	ISA_AMX_DENIED,		/* ARCH_REQ_XCOMP_PERM failed */
};

struct isa_platform {
	char vendor[13];	/* "GenuineIntel", "AuthenticAMD" */
	char brand[49];		/* brand string, leading blanks removed */
	unsigned family, model, stepping;
	int hypervisor;		/* CPUID.1:ECX[31] */
	int osxsave;		/* CPUID.1:ECX[27]: XGETBV usable */
	uint64_t xcr0;		/* 0 when !osxsave */
	uint8_t cpu[ISA_F_NR];	/* CPUID says the CPU has it */
	uint8_t os[ISA_F_NR];	/* XCR0 enables the register state it needs */
	int have_cpuinfo;	/* /proc/cpuinfo (or the given file) was read */
	uint8_t cpuinfo[ISA_F_NR];	/* flag present in cpuinfo (when have_cpuinfo) */
	enum isa_amx_perm amx_perm;
	int amx_perm_errno;	/* errno of a failed request */
};

/*
 * Fill p from CPUID/XGETBV and cpuinfo_path (NULL: /proc/cpuinfo; a file that cannot be
 * read leaves have_cpuinfo 0 with a warning).  With request_amx, asks the kernel for the
 * AMX tile data permission when the CPU and OS support AMX.  Returns 0, or -1 when this
 * is not an x86-64 CPU with CPUID.
 */
int isa_platform_probe(struct isa_platform *p, const char *cpuinfo_path, int request_amx);

/* CPU supports it and the OS enables its state (AMX: also the permission is granted). */
int isa_usable(const struct isa_platform *p, enum isa_feature f);
/* The "flags" line of the first CPU in /proc/cpuinfo, malloc'd; NULL when unreadable. */
char *isa_cpuinfo_flags(void);

/* The cpuinfo cross-check: 1 when cpuinfo was read and disagrees with CPUID for f. */
int isa_cpuinfo_disagrees(const struct isa_platform *p, enum isa_feature f);

/* ---- libraries --------------------------------------------------------------------- */

enum libisa_id { LIBISA_ONEDNN, LIBISA_OPENBLAS, LIBISA_MKL, LIBISA_BLAS, LIBISA_ATEN, LIBISA_NR };

enum libisa_state {
	LIBISA_ABSENT,		/* not installed (not an error) */
	LIBISA_PRESENT,		/* asked; isa holds the answer */
	LIBISA_SKIPPED,		/* not asked (--no-python) */
	LIBISA_FAILED,		/* installed but the question failed (timeout, missing symbol) */
};

struct libisa {
	const char *name;	/* "oneDNN", "OpenBLAS", "MKL", "PyTorch ATen" */
	enum libisa_state state;
	char *path;		/* library file (realpath) or interpreter */
	char *version;
	char *isa;		/* the library's own word: "avx512_core_bf16", "SkylakeX", "AVX2" */
	int vector_bits;	/* widest vectors that choice uses: 128, 256, 512; 0 unknown */
	char *env;		/* environment setting that influenced it ("ONEDNN_MAX_CPU_ISA=AVX2") */
	char *note;		/* what the answer means */
	char *advice;		/* what to set when it limits speed, else NULL */
};

struct libisa_opts {
	int no_python;		/* do not run python3 for torch */
	int python_timeout_ms;	/* 0: default (20 s: importing torch takes seconds) */
	const char *python;	/* NULL: /usr/bin/python3 */
};

/* Ask every library (lib[] indexed by enum libisa_id).  Never fails: absent libraries
 * and failed questions are recorded in the entries. */
void libisa_probe_all(struct libisa lib[LIBISA_NR], const struct isa_platform *p,
		      const struct libisa_opts *o);
void libisa_release(struct libisa lib[LIBISA_NR]);

/* ---- BLAS and LAPACK (blas.c) ------------------------------------------------------ */

enum isa_blas {
	ISA_BLAS_NONE,		/* defines no BLAS or LAPACK routine */
	ISA_BLAS_REFERENCE,	/* the routines and no optimized library's own entry points */
	ISA_BLAS_OPENBLAS, ISA_BLAS_BLIS, ISA_BLAS_MKL, ISA_BLAS_ATLAS,
};
/* Which BLAS the ELF file at path is; *lapack_only (may be NULL) set when it defines
 * LAPACK routines and no BLAS ones */
enum isa_blas isa_blas_kind(const char *path, int *lapack_only);
/* "reference (netlib)", "OpenBLAS", ... */
const char *isa_blas_name(enum isa_blas k);
/* What to do about a reference BLAS: one sentence */
const char *isa_blas_advice(void);

/* ---- code classes ------------------------------------------------------------------ */

enum isa_class {
	ISA_C_SCALAR,		/* general-purpose, x87, branches, everything else */
	ISA_C_SSE_SCALAR,	/* legacy-encoded scalar float (addss, movsd, cvtsi2sd ...) */
	ISA_C_SSE,		/* legacy-encoded 0F SIMD on xmm/mm registers */
	ISA_C_VEX128,		/* VEX (AVX/AVX2/FMA) on xmm */
	ISA_C_VEX256,		/* VEX on ymm */
	ISA_C_EVEX128,		/* EVEX (AVX-512) on xmm */
	ISA_C_EVEX256,		/* EVEX on ymm */
	ISA_C_EVEX512,		/* EVEX on zmm */
	ISA_C_KMASK,		/* VEX-encoded AVX-512 opmask instructions (kmovw, kortestw ...) */
	ISA_C_AMX,		/* AMX tile instructions */
	ISA_C_NR
};

/* Coarse tier of a piece of code: the widest class it contains. */
enum isa_tier {
	ISA_T_SCALAR,
	ISA_T_SSE,
	ISA_T_AVX,		/* VEX: AVX/AVX2/FMA */
	ISA_T_AVX512,		/* EVEX on xmm/ymm (and opmask) only */
	ISA_T_AVX512_ZMM,
	ISA_T_AMX,
	ISA_T_NR
};

struct isa_counts {
	uint64_t n[ISA_C_NR];
	uint64_t undecoded;	/* bytes no instruction could be decoded from */
};

const char *isa_class_name(enum isa_class c);	/* "evex512" */
const char *isa_class_desc(enum isa_class c);	/* "AVX-512 zmm (EVEX)" */
const char *isa_tier_name(enum isa_tier t);	/* "avx512-zmm" */
const char *isa_tier_desc(enum isa_tier t);	/* "AVX-512 (zmm)" */
enum isa_tier isa_counts_tier(const uint64_t n[ISA_C_NR]);
uint64_t isa_counts_vector(const uint64_t n[ISA_C_NR]);	/* all but scalar/SSE-scalar */

/*
 * Class of one decoded instruction from its bytes (prefixes, VEX/EVEX) and, where the
 * encoding leaves it open, capstone's mnemonic and operand text (either may be NULL).
 */
enum isa_class isa_classify_insn(const uint8_t *b, size_t len, const char *mnemonic,
				 const char *op_str);

/* A decoder for one piece of code (wraps a capstone handle). */
struct isa_decoder;
struct isa_decoder *isa_decoder_new(void);
void isa_decoder_free(struct isa_decoder *d);
/* Add the classes of all instructions in code[0..len) to c (undecodable bytes skipped
 * one at a time). */
void isa_decode(struct isa_decoder *d, const uint8_t *code, size_t len, uint64_t addr,
		struct isa_counts *c);
/* Class of the single instruction at code (len bytes available); -1 if undecodable. */
int isa_decode_one(struct isa_decoder *d, const uint8_t *code, size_t len);

/* ---- ELF files --------------------------------------------------------------------- */

#define ISA_FUNC_SYM	(1u << 0)	/* bounds from .symtab/.dynsym */
#define ISA_FUNC_FDE	(1u << 1)	/* bounds from an .eh_frame FDE */

struct isa_func {
	uint64_t start;		/* ELF virtual address */
	uint32_t size;
	uint32_t flags;
	uint32_t n[ISA_C_NR];
};

struct isa_seg {		/* a PT_LOAD segment, to map file offsets to addresses */
	uint64_t vaddr, offset, filesz;
};

struct isa_image {
	char *path;
	char build_id[41];	/* hex, "" when the file has none */
	uint64_t file_size;
	struct isa_counts total;	/* every executable byte, functions or not */
	struct isa_func *funcs;		/* sorted by start, non-overlapping */
	size_t nr_funcs;
	struct isa_seg *segs;
	size_t nr_segs;
	int from_cache;
	double scan_seconds;	/* decode time (0 when from the cache) */
	char *cache_path;	/* where the cache lives (or would), NULL when none */
	void *names;		/* lazily loaded symbol names (isa/code-scan.c) */
};

#define ISA_SCAN_NO_CACHE	(1u << 0)	/* neither read nor write the cache */
#define ISA_SCAN_REFRESH	(1u << 1)	/* ignore an existing cache entry, rewrite it */

/* Scan (or load from the cache) an ELF file.  Returns 0, or -1 with a one-line error
 * printed (missing file, not ELF, corrupt ELF); img then holds nothing to release. */
int isa_image_load(struct isa_image *img, const char *path, unsigned flags);
void isa_image_release(struct isa_image *img);

/* The function containing ELF virtual address vaddr, or NULL. */
const struct isa_func *isa_image_find(const struct isa_image *img, uint64_t vaddr);
/* ELF virtual address of a file offset (through PT_LOAD), or (uint64_t)-1. */
uint64_t isa_image_offset_to_vaddr(const struct isa_image *img, uint64_t offset);
/* Name of a function: demangled symbol, or "func@0x<start>" for FDE-only bounds.
 * Valid until isa_image_release. */
const char *isa_image_func_name(struct isa_image *img, const struct isa_func *f);

/* Cache directory: $XDG_CACHE_HOME/dlprof/isa, else $HOME/.cache/dlprof/isa (malloc'd;
 * NULL when neither is set). */
char *isa_cache_dir(void);

/* ---- functions samples hit (lib/isa/code-hits.c) -------------------------------------------- */

/* Tiers of just the functions a profile's samples landed in (the report's DL view): the
 * bounds come from the .eh_frame FDE around the address, else from a sized symbol; each
 * function is read and decoded once, nothing else of the file. */
struct isa_hits;
struct isa_hits *isa_hits_new(void);
void isa_hits_free(struct isa_hits *h);
/*
 * Tier (enum isa_tier) of the function around file offset off of the ELF file at path;
 * key identifies the file (e.g. its struct dso) so it is opened once.  A recorded
 * build-id that differs from the file's makes every lookup fail.  Fills counts when not
 * NULL.  Returns -1 when unknown (unreadable file, no bounds, outside executable code).
 */
int isa_hits_tier(struct isa_hits *h, const void *key, const char *path, const uint8_t *build_id,
		  size_t build_id_size, uint64_t off, struct isa_counts *counts);
/* Tier of a piece of code in memory (a JIT kernel's bytes from a jitdump), decoded once
 * per code pointer; -1 when there are no bytes. */
int isa_hits_code_tier(struct isa_hits *h, const uint8_t *code, size_t len, uint64_t addr);
/* How many functions and bytes were decoded so far. */
void isa_hits_stats(const struct isa_hits *h, uint64_t *funcs, uint64_t *bytes);

/* ---- check-isa's platform and file views (lib/isa/check.c) ------------------------------- */

struct isa_check_opts {
	enum out_format format;	/* the text table or JSON */
	const char *cpuinfo;	/* platform: flags from this file, NULL: /proc/cpuinfo */
	int no_libs;		/* platform: do not ask the libraries */
	struct libisa_opts libs;
	int functions;		/* files: a row per function */
	int top;		/* files: at most this many functions, 0: all */
	unsigned scan_flags;	/* files: ISA_SCAN_* */
};

/* check-isa's answer, which is its exit status (man/dlprof-check-isa.1); the functions
 * below return one, or DLP_FAILED (util.h) on an error (message printed). */
enum isa_verdict {
	ISA_FAST = 0,		/* AVX-512 is usable here / in the code / in the hot code */
	ISA_NOT_FAST = 1,	/* it is not */
};

/* Print the platform (and the libraries' choices): ISA_FAST when AVX-512 is usable
 * here. */
int isa_check_platform(const struct isa_check_opts *o);
/* Print the instruction classes of each file: ISA_FAST when one contains AVX-512 code;
 * DLP_FAILED when a file could not be read (after printing the others). */
int isa_check_files(int argc, const char **argv, const struct isa_check_opts *o);

/* ---- profiles ----------------------------------------------------------------------- */

/*
 * check-isa -i: classify every sample of the recording at path by the ISA tier of the
 * function it landed in, print the shares (per tier, family and top symbols; json when
 * json): ISA_FAST when AVX-512 is usable and the hottest vector code uses it, with no
 * slow-path finding; ISA_NOT_FAST when not; DLP_FAILED on an error.
 */
int isaprof_run(const char *path, const char *symfs, enum out_format format, int top,
		unsigned scan_flags);

#endif
