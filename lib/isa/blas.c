/* isa/blas.c - which BLAS (or LAPACK) a library file is: an optimized one, or the
 * reference (netlib) code that Debian's alternatives give libblas.so.3 and liblapack.so.3
 * when no optimized one is installed (isa.h).
 *
 * Told from the functions the file defines: every implementation defines sgemm_/dgemm_
 * (BLAS) or dgesv_/dgetrf_ (LAPACK); the optimized ones also their own entry points
 * (OpenBLAS openblas_get_config, BLIS bli_init, MKL mkl_serv_*, ATLAS ATL_*), or, as
 * Debian's OpenBLAS libblas.so.3 (the Fortran interface over libopenblas.so.0), need
 * the library that has them.  A file with the routines and none of those is the
 * reference code: loops compiled for no CPU in
 * particular (on a 2-core AVX-512 guest, its 256x256 sgemm_ ran at 5.7 GFLOP/s, OpenBLAS's
 * at 91.6: bench/README.md).
 */
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "elffile.h"
#include "elfsyms.h"
#include "isa.h"

struct blas_scan {
	Elf *e;
	int blas, lapack;
	enum isa_blas impl;
};

static int scan_sym(void *ctx, const GElf_Sym *sym, size_t strndx)
{
	struct blas_scan *b = ctx;
	const char *n = elf_strptr(b->e, strndx, sym->st_name);

	if (!n)
		return 0;
	if (!strcmp(n, "sgemm_") || !strcmp(n, "dgemm_") || !strcmp(n, "cblas_sgemm"))
		b->blas = 1;
	else if (!strcmp(n, "dgesv_") || !strcmp(n, "dgetrf_"))
		b->lapack = 1;
	else if (!strncmp(n, "openblas_", 9))
		b->impl = ISA_BLAS_OPENBLAS;
	else if (!strcmp(n, "bli_init"))
		b->impl = ISA_BLAS_BLIS;
	else if (!strncmp(n, "mkl_serv_", 9) || !strcmp(n, "MKL_Get_Version"))
		b->impl = ISA_BLAS_MKL;
	else if (!strncmp(n, "ATL_", 4))
		b->impl = ISA_BLAS_ATLAS;
	return 0;
}

/* the implementation a library the file needs (DT_NEEDED) is */
static void scan_needed(struct blas_scan *b)
{
	static const struct { const char *prefix; enum isa_blas impl; } libs[] = {
		{ "libopenblas", ISA_BLAS_OPENBLAS }, { "libblis", ISA_BLAS_BLIS },
		{ "libmkl_", ISA_BLAS_MKL }, { "libatlas", ISA_BLAS_ATLAS },
		{ "libsatlas", ISA_BLAS_ATLAS }, { "libtatlas", ISA_BLAS_ATLAS },
	};
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(b->e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *n;

			if (!gelf_getdyn(data, (int)i, &dyn) || dyn.d_tag != DT_NEEDED ||
			    !(n = elf_strptr(b->e, sh.sh_link, dyn.d_un.d_val)))
				continue;
			for (size_t j = 0; j < sizeof(libs) / sizeof(libs[0]); j++)
				if (!strncmp(n, libs[j].prefix, strlen(libs[j].prefix)))
					b->impl = libs[j].impl;
		}
	}
}

enum isa_blas isa_blas_kind(const char *path, int *lapack_only)
{
	const struct elffile *f = elffile_open(path, NULL, 0, NULL);
	struct blas_scan b = { f ? elffile_elf(f) : NULL, 0, 0, ISA_BLAS_NONE };

	if (lapack_only)
		*lapack_only = 0;
	if (b.e) {
		elf_each_func(b.e, scan_sym, &b);
		scan_needed(&b);
		elf_end(b.e);
	}
	elffile_put(f);
	if (!b.blas && !b.lapack)
		return ISA_BLAS_NONE;
	if (lapack_only)
		*lapack_only = !b.blas;
	return b.impl == ISA_BLAS_NONE ? ISA_BLAS_REFERENCE : b.impl;
}

const char *isa_blas_name(enum isa_blas k)
{
	static const char *const names[] = {
		[ISA_BLAS_NONE] = "none", [ISA_BLAS_REFERENCE] = "reference (netlib)",
		[ISA_BLAS_OPENBLAS] = "OpenBLAS", [ISA_BLAS_BLIS] = "BLIS", [ISA_BLAS_MKL] = "MKL",
		[ISA_BLAS_ATLAS] = "ATLAS",
	};

	return k >= 0 && k <= ISA_BLAS_ATLAS ? names[k] : "?";
}

const char *isa_blas_advice(void)
{
	return "install an optimized BLAS: on Debian and Ubuntu, apt install libopenblas0-openmp "
	       "(or libblis4-openmp); update-alternatives then points libblas.so.3 and "
	       "liblapack.so.3 at it, and every caller of the system BLAS (Debian's torch for "
	       "mm/linear, numpy) gets its kernels";
}
