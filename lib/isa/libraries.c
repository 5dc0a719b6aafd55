/* isa/libraries.c - what the installed DL libraries will choose on this machine.
 *
 * oneDNN, OpenBLAS and MKL are asked through dlopen + their own query functions (they
 * read their environment overrides themselves, so the answer already honours them).
 * PyTorch is Python: a python3 child prints ATen's CPU capability, under a timeout.
 */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "isa.h"
#include "util.h"

static const char *const lib_names[LIBISA_NR] = {
	[LIBISA_ONEDNN] = "oneDNN",
	[LIBISA_OPENBLAS] = "OpenBLAS",
	[LIBISA_MKL] = "MKL",
	[LIBISA_BLAS] = "BLAS (libblas.so.3)",
	[LIBISA_ATEN] = "PyTorch ATen",
};

static int avx512_usable(const struct isa_platform *p)
{
	return isa_usable(p, ISA_F_AVX512F);
}

/* First of names that dlopen finds; *path gets its real path. */
static void *open_first(const char *const *names, char **path)
{
	size_t i;

	for (i = 0; names[i]; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		struct link_map *lm = NULL;

		if (!h)
			continue;
		if (!dlinfo(h, RTLD_DI_LINKMAP, &lm) && lm && lm->l_name && *lm->l_name) {
			char buf[PATH_MAX];

			*path = xstrdup(realpath(lm->l_name, buf) ? buf : lm->l_name);
		} else {
			*path = xstrdup(names[i]);
		}
		return h;
	}
	return NULL;
}

static char *env_setting(const char *const *vars)
{
	size_t i;

	for (i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);

		if (v)
			return xasprintf("%s=%s", vars[i], v);
	}
	return NULL;
}

/* ---- oneDNN ------------------------------------------------------------------------- */

struct dnnl_version_s {		/* dnnl_version_t (dnnl_types.h) */
	int major, minor, patch;
	const char *hash;
	unsigned cpu_runtime, gpu_runtime;
};

/* dnnl_cpu_isa_t values (oneDNN 2.x dnnl_types.h; 3.x keeps the AVX-512 ones) */
static const struct {
	unsigned value;
	const char *name;
} dnnl_isas[] = {
	{ 0x0, "all" },
	{ 0x1, "sse41" },
	{ 0x3, "avx" },
	{ 0x7, "avx2" },
	{ 0xf, "avx512_mic" },
	{ 0x1f, "avx512_mic_4ops" },
	{ 0x27, "avx512_core" },
	{ 0x67, "avx512_core_vnni" },
	{ 0xe7, "avx512_core_bf16" },
	{ 0x3e7, "avx512_core_amx" },
	{ 0x407, "avx2_vnni" },
};

static void probe_onednn(struct libisa *l, const struct isa_platform *p)
{
	static const char *const names[] = { "libdnnl.so.3", "libdnnl.so.2", "libdnnl.so", NULL };
	static const char *const vars[] = { "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA", NULL };
	const struct dnnl_version_s *(*version)(void);
	unsigned (*effective)(void);
	unsigned isa;
	size_t i;
	void *h;

	h = open_first(names, &l->path);
	if (!h)
		return;
	l->state = LIBISA_FAILED;
	version = (const struct dnnl_version_s *(*)(void))dlsym(h, "dnnl_version");
	effective = (unsigned (*)(void))dlsym(h, "dnnl_get_effective_cpu_isa");
	if (version) {
		const struct dnnl_version_s *v = version();

		if (v)
			l->version = xasprintf("%d.%d.%d", v->major, v->minor, v->patch);
	}
	l->env = env_setting(vars);
	if (!effective) {
		l->note = xstrdup("no dnnl_get_effective_cpu_isa in this library");
		return;
	}
	isa = effective();
	l->state = LIBISA_PRESENT;
	for (i = 0; i < ARRAY_SIZE(dnnl_isas); i++)
		if (dnnl_isas[i].value == isa)
			l->isa = xstrdup(dnnl_isas[i].name);
	if (!l->isa)
		l->isa = xasprintf("0x%x", isa);
	/* the enum is a bit set: 0x20 avx512_core, 0x8 avx512_mic, 0x4 avx2, 0x2 avx */
	l->vector_bits = (isa & 0x28) ? 512 : (isa & 0x6) ? 256 : (isa & 0x1) ? 128 : 0;
	if (l->vector_bits == 512)
		l->note = xasprintf("JIT kernels (convolution, matmul, reorder) use AVX-512 zmm%s%s",
				    (isa & 0x40) ? ", int8 with VNNI" : "",
				    (isa & 0x80) ? ", bf16 instructions" : "");
	else
		l->note = xasprintf("JIT kernels are limited to %s", l->isa);
	if (l->vector_bits && l->vector_bits < 512 && avx512_usable(p)) {
		if (l->env)
			l->advice = xasprintf("%s caps oneDNN below AVX-512: unset it (or set ONEDNN_MAX_CPU_ISA=ALL)",
					      l->env);
		else
			l->advice = xstrdup("oneDNN does not use the usable AVX-512: check that the library build includes AVX-512 kernels");
	} else if (l->vector_bits == 512 && !(isa & 0x40) && isa_usable(p, ISA_F_AVX512VNNI) && l->env) {
		l->advice = xasprintf("%s hides VNNI from oneDNN (slower int8): unset it", l->env);
	}
}

/* ---- OpenBLAS ----------------------------------------------------------------------- */

static int openblas_core_bits(const char *core)
{
	static const char *const w512[] = { "skylakex", "cooperlake", "sapphirerapids", NULL };
	static const char *const w256[] = { "haswell", "zen", "sandybridge", "excavator",
					    "steamroller", "piledriver", "bulldozer", NULL };
	size_t i;

	for (i = 0; w512[i]; i++)
		if (strcasestr(core, w512[i]))
			return 512;
	for (i = 0; w256[i]; i++)
		if (strcasestr(core, w256[i]))
			return 256;
	return 128;
}

static void probe_openblas(struct libisa *l, const struct isa_platform *p)
{
	static const char *const names[] = { "libopenblas.so.0", "libopenblas.so", NULL };
	static const char *const vars[] = { "OPENBLAS_CORETYPE", NULL };
	char *(*corename)(void);
	char *(*config)(void);
	const char *cfg = NULL;
	char blas[PATH_MAX];
	void *h;

	h = open_first(names, &l->path);
	if (!h)
		return;
	l->state = LIBISA_FAILED;
	corename = (char *(*)(void))dlsym(h, "openblas_get_corename");
	config = (char *(*)(void))dlsym(h, "openblas_get_config");
	l->env = env_setting(vars);
	if (config && (cfg = config())) {
		const char *v = cfg;

		if (!strncmp(v, "OpenBLAS ", 9)) {
			v += 9;
			l->version = xstrndup(v, strcspn(v, " "));
		}
	}
	if (!corename || !corename()) {
		l->note = xstrdup("no openblas_get_corename in this library");
		return;
	}
	l->state = LIBISA_PRESENT;
	l->isa = xstrdup(corename());
	l->vector_bits = openblas_core_bits(l->isa);
	{
		struct strbuf sb = STRBUF_INIT;

		strbuf_addf(&sb, "sgemm/dgemm kernels for %s (%d-bit vectors)", l->isa, l->vector_bits);
		if (cfg)
			strbuf_addf(&sb, "; build: %s", cfg);
		if (realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3", blas))
			strbuf_addf(&sb, "; libblas.so.3 -> %s", blas);
		l->note = sb.buf;
	}
	if (l->vector_bits < 512 && avx512_usable(p)) {
		if (l->env)
			l->advice = xasprintf("%s selects a core without AVX-512 kernels: unset it or set OPENBLAS_CORETYPE=SkylakeX",
					      l->env);
		else if (cfg && strstr(cfg, "DYNAMIC_ARCH"))
			l->advice = xstrdup("OpenBLAS picked a core without AVX-512 kernels although AVX-512 is usable: try OPENBLAS_CORETYPE=SkylakeX (and compare the speed)");
	}
}

/* ---- the system BLAS and LAPACK: what libblas.so.3 and liblapack.so.3 are ------------ */

static void probe_system_blas(struct libisa *l)
{
	static const char *const blas[] = { "libblas.so.3", NULL }, *const lapack[] = { "liblapack.so.3", NULL };
	char *lpath = NULL;
	enum isa_blas kb, kl = ISA_BLAS_NONE;
	void *h = open_first(blas, &l->path), *hl = open_first(lapack, &lpath);
	struct strbuf sb = STRBUF_INIT;

	if (!h) {
		free(lpath);
		if (hl)
			dlclose(hl);
		return;
	}
	kb = isa_blas_kind(l->path, NULL);
	if (lpath)
		kl = isa_blas_kind(lpath, NULL);
	l->state = LIBISA_PRESENT;
	l->isa = xstrdup(isa_blas_name(kb));
	strbuf_addf(&sb, "what Debian's alternatives give libblas.so.3");
	if (lpath)
		strbuf_addf(&sb, "; liblapack.so.3: %s, %s", isa_blas_name(kl), lpath);
	l->note = sb.buf;
	if (kb == ISA_BLAS_REFERENCE || kl == ISA_BLAS_REFERENCE)
		l->advice = xasprintf("the reference %s has no kernels for any CPU: %s",
				      kb == ISA_BLAS_REFERENCE && kl == ISA_BLAS_REFERENCE ?
				      "BLAS and LAPACK" : kb == ISA_BLAS_REFERENCE ? "BLAS" : "LAPACK",
				      isa_blas_advice());
	free(lpath);
	dlclose(h);
	if (hl)
		dlclose(hl);
}

/* ---- MKL ---------------------------------------------------------------------------- */

static void probe_mkl(struct libisa *l, const struct isa_platform *p)
{
	static const char *const names[] = { "libmkl_rt.so.2", "libmkl_rt.so.1", "libmkl_rt.so", NULL };
	static const char *const vars[] = { "MKL_ENABLE_INSTRUCTIONS", NULL };
	void (*version)(char *buf, int len);
	char buf[256] = "";
	void *h;

	h = open_first(names, &l->path);
	if (!h)
		return;
	l->state = LIBISA_PRESENT;
	l->env = env_setting(vars);
	version = (void (*)(char *, int))dlsym(h, "mkl_get_version_string");
	if (version) {
		version(buf, sizeof(buf) - 1);
		buf[sizeof(buf) - 1] = '\0';
		l->version = xstrdup(buf);
	}
	l->isa = xstrdup(l->env ? strchr(l->env, '=') + 1 : "auto");
	l->vector_bits = 0;
	if (l->env && avx512_usable(p) && !strcasestr(l->env, "AVX512")) {
		l->advice = xasprintf("%s keeps MKL below AVX-512: unset it", l->env);
		l->vector_bits = 256;
	}
	l->note = xstrdup("MKL dispatches at run time to the best code path of this CPU unless MKL_ENABLE_INSTRUCTIONS caps it");
}

/* ---- PyTorch ------------------------------------------------------------------------ */

static const char torch_script[] =
	"import sys\n"
	"try:\n"
	"    import torch\n"
	"except Exception as e:\n"
	"    print('noimport', e); sys.exit(3)\n"
	"print('version', torch.__version__)\n"
	"print('file', torch.__file__)\n"
	"cap = None\n"
	"f = getattr(getattr(torch.backends, 'cpu', None), 'get_cpu_capability', None)\n"
	"if f is not None:\n"
	"    cap = f()\n"
	"else:\n"
	"    for l in torch.__config__.show().splitlines():\n"
	"        if 'CPU capability usage:' in l:\n"
	"            cap = l.split(':', 1)[1].strip()\n"
	"print('capability', cap)\n";

/* Run python; collect stdout into sb.  Returns exit status, -2 timeout, -1 failure. */
static int run_python(const char *python, int timeout_ms, struct strbuf *sb)
{
	const char *argv[] = { python, "-c", torch_script, NULL };

	return run_capture(argv, timeout_ms, sb);
}

static char *field(const char *text, const char *key)
{
	size_t kl = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return xstrndup(p + kl + 1, strcspn(p + kl + 1, "\n"));
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static void probe_aten(struct libisa *l, const struct isa_platform *p, const struct libisa_opts *o)
{
	static const char *const vars[] = { "ATEN_CPU_CAPABILITY", NULL };
	const char *python = o && o->python ? o->python : "/usr/bin/python3";
	int timeout = o && o->python_timeout_ms > 0 ? o->python_timeout_ms : 20000;
	struct strbuf sb = STRBUF_INIT;
	char *file;
	int r;

	l->env = env_setting(vars);
	if (o && o->no_python) {
		l->state = LIBISA_SKIPPED;
		l->note = xstrdup("not asked (--no-python)");
		return;
	}
	if (access(python, X_OK)) {
		l->note = xasprintf("no '%s'", python);
		return;
	}
	r = run_python(python, timeout, &sb);
	if (r == 3 || (r == 0 && !sb.len)) {
		l->note = xstrdup("torch is not installed for this python3");
		strbuf_release(&sb);
		return;
	}
	l->state = LIBISA_FAILED;
	if (r == -2) {
		l->note = xasprintf("python3 did not answer within %d ms", timeout);
		strbuf_release(&sb);
		return;
	}
	if (r != 0) {
		l->note = xasprintf("python3 failed (status %d)", r);
		strbuf_release(&sb);
		return;
	}
	l->version = field(sb.buf, "version");
	file = field(sb.buf, "file");
	l->isa = field(sb.buf, "capability");
	if (file) {
		char *slash = strrchr(file, '/');

		if (slash)
			*slash = '\0';
		l->path = file;
	}
	if (!l->isa || !strcmp(l->isa, "None")) {
		free(l->isa);
		l->isa = NULL;
		l->note = xstrdup("torch did not say which CPU capability it uses");
		strbuf_release(&sb);
		return;
	}
	l->state = LIBISA_PRESENT;
	l->vector_bits = strcasestr(l->isa, "AVX512") ? 512 : strcasestr(l->isa, "AVX2") ? 256 : 128;
	l->note = xasprintf("ATen's vectorized kernels (elementwise, reductions, activations) run the %s build", l->isa);
	if (l->vector_bits < 512 && isa_usable(p, ISA_F_AVX512F) && isa_usable(p, ISA_F_AVX512BW) &&
	    isa_usable(p, ISA_F_AVX512DQ) && isa_usable(p, ISA_F_AVX512VL)) {
		/* torch 1.13's dispatcher honours ATEN_CPU_CAPABILITY=avx512 when built with it */
		if (l->env)
			l->advice = xasprintf("PyTorch ATen uses %s kernels although AVX-512 is usable (%s): set ATEN_CPU_CAPABILITY=avx512",
					      l->isa, l->env);
		else
			l->advice = xasprintf("PyTorch ATen uses %s kernels although AVX-512 is usable: set ATEN_CPU_CAPABILITY=avx512",
					      l->isa);
	}
	strbuf_release(&sb);
}

void libisa_probe_all(struct libisa lib[LIBISA_NR], const struct isa_platform *p,
		      const struct libisa_opts *o)
{
	int i;

	memset(lib, 0, LIBISA_NR * sizeof(*lib));
	for (i = 0; i < LIBISA_NR; i++)
		lib[i].name = lib_names[i];
	/* the child first: before oneDNN/OpenBLAS threads exist in this process */
	probe_aten(&lib[LIBISA_ATEN], p, o);
	probe_onednn(&lib[LIBISA_ONEDNN], p);
	probe_openblas(&lib[LIBISA_OPENBLAS], p);
	probe_mkl(&lib[LIBISA_MKL], p);
	probe_system_blas(&lib[LIBISA_BLAS]);
}

void libisa_release(struct libisa lib[LIBISA_NR])
{
	int i;

	for (i = 0; i < LIBISA_NR; i++) {
		free(lib[i].path);
		free(lib[i].version);
		free(lib[i].isa);
		free(lib[i].env);
		free(lib[i].note);
		free(lib[i].advice);
	}
}
