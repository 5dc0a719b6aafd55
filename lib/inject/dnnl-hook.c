/* dnnl-hook.c - what each oneDNN primitive is and when it ran, from inside the workload.
 *
 * dlprof record preloads libdlprof-itt.so, so the workload's calls of libdnnl's
 * dnnl_primitive_execute() and dnnl_primitive_destroy() (a framework calling oneDNN
 * through its C API, as Debian's libtorch does: the C++ API is a header over it) come
 * here first; the real ones are found with dlsym(RTLD_NEXT), or, when libdnnl was loaded
 * RTLD_LOCAL (a Python extension's dependency), in the loaded libdnnl itself.
 *
 * The first time a primitive object executes it is described through oneDNN's own
 * queries (dnnl_primitive_get_primitive_desc, dnnl_primitive_desc_query[_md]; 2.x's
 * memory and op descriptors read in place, 3.x's asked for with dnnl_memory_desc_query
 * and the op's own queries, dnnl-abi.h): kind,
 * implementation, propagation kind, each tensor's data type, format and dimensions, and
 * the problem's shape as ONEDNN_VERBOSE spells it.  Equal descriptions share one id (a
 * framework that creates a primitive object per call, as ideep does, gets one id per
 * shape), written once as an ITT_BLOCK_PRIM block (include/itt-format.h).  Each execution is
 * then (id, start, end) in the calling thread's buffer of the collector: the clock is
 * read around the real call, the description is looked up before it.
 *
 * Hot path for a primitive object seen before: a lock-free hash table keyed by the
 * object's address (slots are claimed with a CAS and never freed; destroy clears the
 * slot's id, since the allocator hands the address to the next object), two clock reads
 * and a store into the thread's buffer.  Describing takes a mutex.
 *
 * Off (calls pass straight through): DLPROF_NO_DNNL_HOOK set (not "0"), not under
 * dlprof record (no DLPROF_ITT_DIR), or a libdnnl other than 2.x or 3.x.  A oneDNN linked statically into its caller never comes here:
 * nothing is written, and the report says it has no primitive records.
 * The workload's output is never touched: nothing here prints.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "dnnl-abi.h"
#include "itt-format.h"

#define EXPORT __attribute__((visibility("default")))
#define CACHE_SLOTS 16384	/* power of two */
#define CACHE_PROBES 32

struct dnnl_api {
	int (*execute)(const void *prim, void *stream, int nargs, const void *args);
	int (*destroy)(void *prim);
	int (*get_pd)(const void *prim, const void **pd);
	int (*query)(const void *pd, int what, int index, void *result);
	const void *(*query_md)(const void *pd, int what, int index);	/* 2.x: a dabi_md */
	int (*md_query)(const void *md, int what, void *result);	/* 3.x */
	int major;
	const struct dabi_version *(*version)(void);
	const char *(*prim_kind2str)(int kind);
	const char *(*prop_kind2str)(int kind);
};

struct slot {
	const void *key;	/* the primitive object; set once (CAS), never cleared */
	uint32_t id;		/* its description's id, 0: describe (again) */
};

struct desc {
	uint64_t hash;
	char *text;
	size_t len;
};

static struct dnnl_api api;
static pthread_once_t api_once = PTHREAD_ONCE_INIT;
static int hook_on;
static struct slot cache[CACHE_SLOTS];
static pthread_mutex_t desc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct desc *descs;	/* id = index + 1 */
static size_t nr_descs, alloc_descs;

/* ---- finding libdnnl ---- */

struct find_ctx {
	char name[4096];	/* PATH_MAX */
};

/* A loaded libdnnl's file name (opened once dl_iterate_phdr's lock is released) */
static int find_dnnl(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_ctx *fc = data;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (!base || strncmp(base, "libdnnl.so", 10) || strlen(info->dlpi_name) >= sizeof(fc->name))
		return 0;
	strcpy(fc->name, info->dlpi_name);
	return 1;
}

static void *api_sym(void *handle, const char *name)
{
	return handle ? dlsym(handle, name) : dlsym(RTLD_NEXT, name);
}

static void at_fork_child(void)
{
	/* the child writes a file of its own: every description is new to it */
	memset(cache, 0, sizeof(cache));
	nr_descs = 0;		/* the parent's texts leak: the child has one thread now */
	pthread_mutex_init(&desc_lock, NULL);
}

static void resolve_api(void)
{
	struct find_ctx fc = { "" };
	void *h = NULL;
	const char *off = getenv("DLPROF_NO_DNNL_HOOK");
	const char *dir = getenv("DLPROF_ITT_DIR");

	/* the next definition in the global scope: libdnnl linked by the program or loaded
	 * RTLD_GLOBAL; else the libdnnl a library loaded RTLD_LOCAL brought in */
	if (!dlsym(RTLD_NEXT, "dnnl_primitive_execute")) {
		/* dlsym on its handle searches it before its dependencies: never us; the
		 * handle stays open (the library is loaded anyway) */
		if (!dl_iterate_phdr(find_dnnl, &fc) ||
		    !(h = dlopen(fc.name, RTLD_LAZY | RTLD_NOLOAD)))
			return;
	}
	*(void **)&api.execute = api_sym(h, "dnnl_primitive_execute");
	*(void **)&api.destroy = api_sym(h, "dnnl_primitive_destroy");
	*(void **)&api.get_pd = api_sym(h, "dnnl_primitive_get_primitive_desc");
	*(void **)&api.query = api_sym(h, "dnnl_primitive_desc_query");
	*(void **)&api.query_md = api_sym(h, "dnnl_primitive_desc_query_md");
	*(void **)&api.version = api_sym(h, "dnnl_version");
	*(void **)&api.prim_kind2str = api_sym(h, "dnnl_prim_kind2str");
	*(void **)&api.prop_kind2str = api_sym(h, "dnnl_prop_kind2str");
	if (off && *off && strcmp(off, "0"))
		return;
	*(void **)&api.md_query = api_sym(h, "dnnl_memory_desc_query");
	if (!dir || !*dir || !api.get_pd || !api.query || !api.query_md || !api.version ||
	    !api.version())
		return;
	api.major = api.version()->major;
	if (api.major != 2 && (api.major != 3 || !api.md_query))
		return;
	pthread_atfork(NULL, NULL, at_fork_child);
	hook_on = 1;
}

/* ---- describing a primitive ---- */

struct sbuf {
	char b[ITT_MAX_PRIM];
	size_t len;
};

__attribute__((format(printf, 2, 3)))
static void sb_add(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->len >= sizeof(sb->b) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(sb->b + sb->len, sizeof(sb->b) - sb->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		sb->len += (size_t)n < sizeof(sb->b) - sb->len ? (size_t)n : sizeof(sb->b) - 1 - sb->len;
}

/* A memory descriptor, whatever the version: 2.x's struct read in place, 3.x's asked for
 * field by field */
struct mdv {
	int ndims, dt;
	enum { F_UNDEF, F_ANY, F_BLOCKED, F_WINO, F_PACKED, F_OPAQUE, F_SPARSE } fmt;
	int64_t dims[DABI_MAX_NDIMS], strides[DABI_MAX_NDIMS];
	int nblks;
	int64_t blks[DABI_MAX_NDIMS], idxs[DABI_MAX_NDIMS];
};

static int from_v2(struct mdv *v, const struct dabi_md *m)
{
	static const int fmts[] = { F_UNDEF, F_ANY, F_BLOCKED, F_WINO, F_PACKED };
	const struct dabi_blocking *b = &m->format_desc.blocking;

	if (!m || m->ndims <= 0 || m->ndims > DABI_MAX_NDIMS)
		return -1;
	v->ndims = m->ndims;
	v->dt = m->data_type;
	v->fmt = m->format_kind >= 0 && m->format_kind < 5 ? fmts[m->format_kind] : F_UNDEF;
	memcpy(v->dims, m->dims, sizeof(v->dims));
	memcpy(v->strides, b->strides, sizeof(v->strides));
	v->nblks = b->inner_nblks;
	memcpy(v->blks, b->inner_blks, sizeof(v->blks));
	memcpy(v->idxs, b->inner_idxs, sizeof(v->idxs));
	return 0;
}

/* a dnnl_dims_t the query points to, copied */
static int query_dims(const void *md, int what, int64_t out[DABI_MAX_NDIMS])
{
	const int64_t *p = NULL;

	if (api.md_query(md, what, &p) || !p)
		return -1;
	memcpy(out, p, sizeof(int64_t) * DABI_MAX_NDIMS);
	return 0;
}

static int from_v3(struct mdv *v, const void *md)
{
	static const int fmts[] = { F_UNDEF, F_ANY, F_BLOCKED, F_OPAQUE, F_SPARSE };
	int fk = 0;

	if (!md || api.md_query(md, DABI3_Q_NDIMS, &v->ndims) || v->ndims <= 0 ||
	    v->ndims > DABI_MAX_NDIMS || query_dims(md, DABI3_Q_DIMS, v->dims) ||
	    api.md_query(md, DABI3_Q_DATA_TYPE, &v->dt))
		return -1;
	if (api.md_query(md, DABI3_Q_FORMAT_KIND, &fk))
		fk = DABI3_FMT_UNDEF;
	v->fmt = fk >= 0 && fk < 5 ? fmts[fk] : F_UNDEF;
	v->nblks = 0;
	if (v->fmt == F_BLOCKED &&
	    (query_dims(md, DABI3_Q_STRIDES, v->strides) ||
	     api.md_query(md, DABI3_Q_INNER_NBLKS, &v->nblks) ||
	     (v->nblks > 0 && (query_dims(md, DABI3_Q_INNER_BLKS, v->blks) ||
			       query_dims(md, DABI3_Q_INNER_IDXS, v->idxs)))))
		v->fmt = F_UNDEF;
	return 0;
}

/* the descriptor of query q of pd (src, weights, ...): 0, or -1 where it has none */
static int get_md(const void *pd, int q, struct mdv *v)
{
	const void *md = api.query_md(pd, q, 0);

	return api.major == 2 ? from_v2(v, md) : from_v3(v, md);
}

static void add_dims(struct sbuf *sb, const struct mdv *m)
{
	for (int i = 0; i < m->ndims; i++) {
		if (m->dims[i] == INT64_MIN)	/* DNNL_RUNTIME_DIM_VAL */
			sb_add(sb, "%s*", i ? "x" : "");
		else
			sb_add(sb, "%s%lld", i ? "x" : "", (long long)m->dims[i]);
	}
}

/* The format in verbose's spelling: the dimensions a, b, c ... outermost first (by
 * stride, largest first; equal strides keep their order), a blocked one upper-case,
 * then the inner blocks ("aBcd16b" for nChw16c, "acdb" for nhwc, "abcd" for nchw). */
static void add_format(struct sbuf *sb, const struct mdv *m)
{
	static const char *const other[] = {
		[F_UNDEF] = "undef", [F_ANY] = "any", [F_WINO] = "wino", [F_PACKED] = "packed",
		[F_OPAQUE] = "opaque", [F_SPARSE] = "sparse",
	};
	int order[DABI_MAX_NDIMS], blocked[DABI_MAX_NDIMS] = { 0 }, n = m->ndims, i, j;

	if (m->fmt != F_BLOCKED) {
		sb_add(sb, "%s", other[m->fmt]);
		return;
	}
	if (m->nblks < 0 || m->nblks > DABI_MAX_NDIMS) {
		sb_add(sb, "blocked");
		return;
	}
	for (i = 0; i < m->nblks; i++) {
		if (m->idxs[i] < 0 || m->idxs[i] >= n) {
			sb_add(sb, "blocked");
			return;
		}
		blocked[m->idxs[i]] = 1;
	}
	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && m->strides[order[j - 1]] < m->strides[i]; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (i = 0; i < n; i++)
		sb_add(sb, "%c", (blocked[order[i]] ? 'A' : 'a') + order[i]);
	for (i = 0; i < m->nblks; i++)
		sb_add(sb, "%lld%c", (long long)m->blks[i], 'a' + (int)m->idxs[i]);
}

static const char *dt_name(int dt)
{
	static const char *const names[DABI_NR_DT] = {
		"undef", "f16", "bf16", "f32", "s32", "s8", "u8", "f64", "boolean", "f8_e5m2",
		"f8_e4m3", "s4", "u4", "e8m0", "f4_e2m1", "f4_e3m0",
	};

	return dt >= 0 && dt < DABI_NR_DT ? names[dt] : "?";
}

/* "NAME=DT:FORMAT:DIMS" */
static void add_md(struct sbuf *sb, const char *name, const struct mdv *m)
{
	sb_add(sb, "\n%s=%s:", name, dt_name(m->dt));
	add_format(sb, m);
	sb_add(sb, ":");
	add_dims(sb, m);
}

/* v filled from the first of two queries that gives a descriptor (src, else diff_src) */
static int either(const void *pd, int q1, int q2, struct mdv *v)
{
	return get_md(pd, q1, v) && get_md(pd, q2, v) ? -1 : 0;
}

/* The spatial part of a convolution's or pooling's shape, per dimension (d, h, w):
 * "ih64oh64kh3sh1dh0ph1", dimensions joined by '_' */
static void add_spatial(struct sbuf *sb, const struct mdv *src, const struct mdv *dst,
			const int64_t *kernel, const int64_t *strides, const int64_t *dil,
			const int64_t *pad)
{
	static const char names[] = "dhw";
	int ns = src->ndims - 2;

	for (int i = 0; i < ns; i++) {
		char c = names[3 - ns + i];

		sb_add(sb, "%si%c%lldo%c%lldk%c%llds%c%lldd%c%lldp%c%lld", i ? "_" : "",
		       c, (long long)src->dims[2 + i], c, (long long)dst->dims[2 + i],
		       c, (long long)kernel[i], c, (long long)strides[i],
		       c, dil ? (long long)dil[i] : 0LL, c, (long long)pad[i]);
	}
}

/* A convolution's, pooling's or inner product's own numbers: strides, dilations, left
 * padding, and the pooling's kernel (the convolution's comes from its weights).  2.x
 * from the op descriptor read in place, 3.x asked for.  0, or -1 */
struct opnums {
	int64_t strides[DABI_MAX_NDIMS], dil[DABI_MAX_NDIMS], pad[DABI_MAX_NDIMS],
		kernel[DABI_MAX_NDIMS];
	int have_dil;
};

static int op_numbers(const void *pd, int kind, struct opnums *o)
{
	const void *op = NULL;
	const int64_t *p = NULL;

	memset(o, 0, sizeof(*o));
	if (api.major == 3) {
		if (api.query(pd, DABI3_Q_STRIDES, 0, &p) || !p)
			return -1;
		memcpy(o->strides, p, sizeof(o->strides));
		if (!api.query(pd, DABI3_Q_DILATIONS, 0, &p) && p) {
			memcpy(o->dil, p, sizeof(o->dil));
			o->have_dil = 1;
		}
		if (api.query(pd, DABI3_Q_PADDING_L, 0, &p) || !p)
			return -1;
		memcpy(o->pad, p, sizeof(o->pad));
		if (kind == DABI3_POOLING) {
			if (api.query(pd, DABI3_Q_KERNEL, 0, &p) || !p)
				return -1;
			memcpy(o->kernel, p, sizeof(o->kernel));
		}
		return 0;
	}
	if (kind == DABI_CONVOLUTION || kind == DABI_DECONVOLUTION) {
		const struct dabi_conv *c;

		if (api.query(pd, kind == DABI_CONVOLUTION ? DABI_Q_CONVOLUTION_D :
			      DABI_Q_DECONVOLUTION_D, 0, &op) || !op)
			return -1;
		c = op;
		memcpy(o->strides, c->strides, sizeof(o->strides));
		memcpy(o->dil, c->dilates, sizeof(o->dil));
		memcpy(o->pad, c->padding[0], sizeof(o->pad));
		o->have_dil = 1;
		return 0;
	}
	if (kind == DABI_POOLING || kind == DABI_POOLING_V2) {
		const struct dabi_pool *pl;

		if (api.query(pd, kind == DABI_POOLING ? DABI_Q_POOLING_D : DABI_Q_POOLING_V2_D,
			      0, &op) || !op)
			return -1;
		pl = op;
		memcpy(o->strides, pl->strides, sizeof(o->strides));
		memcpy(o->pad, pl->padding[0], sizeof(o->pad));
		memcpy(o->kernel, pl->kernel, sizeof(o->kernel));
		if (kind == DABI_POOLING_V2) {
			memcpy(o->dil, pl->dilation, sizeof(o->dil));
			o->have_dil = 1;
		}
		return 0;
	}
	return -1;
}

/* The problem's shape as ONEDNN_VERBOSE spells it, for
 *   convolution, deconvolution  mb32_ic3oc32_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1
 *                               (g4 before ic when grouped)
 *   pooling (2.x: and pooling_v2) mb32ic32_ih64oh32kh2sh2dh0ph0_iw64ow32kw2sw2dw0pw0
 *   inner_product               mb32ic128oc256 (ih/iw between ic and oc when spatial)
 * from the op's own numbers; every other kind (reorder, eltwise, binary, matmul, sum,
 * ...) gets its tensors' dimensions, src then weights then dst, joined by ':', a tensor
 * with the dimensions of the one before it left out ("32x3x64x64" for a reorder,
 * "64x128:128x256:64x256" for a matmul), as verbose prints those. */
static void add_shape(struct sbuf *sb, int kind, const void *pd)
{
	struct mdv src, wei, dst;
	struct opnums o;
	int v3 = api.major == 3;
	int conv = kind == (v3 ? DABI3_CONVOLUTION : DABI_CONVOLUTION) ||
		   kind == (v3 ? DABI3_DECONVOLUTION : DABI_DECONVOLUTION);
	int pool = v3 ? kind == DABI3_POOLING : kind == DABI_POOLING || kind == DABI_POOLING_V2;
	int ip = kind == (v3 ? DABI3_INNER_PRODUCT : DABI_INNER_PRODUCT);

	sb_add(sb, "\nshape=");
	if (conv || pool) {
		int have_src = !either(pd, DABI_Q_SRC_MD, DABI_Q_DIFF_SRC_MD, &src);
		int have_dst = !either(pd, DABI_Q_DST_MD, DABI_Q_DIFF_DST_MD, &dst);

		if (!have_src || !have_dst || src.ndims < 3 || src.ndims > 5 ||
		    op_numbers(pd, kind, &o))
			goto dims;
		if (conv) {
			int groups;

			if (either(pd, DABI_Q_WEIGHTS_MD, DABI_Q_DIFF_WEIGHTS_MD, &wei))
				goto dims;
			groups = wei.ndims == src.ndims + 1;
			for (int i = 0; i < src.ndims - 2; i++)
				o.kernel[i] = wei.dims[groups + 2 + i];
			sb_add(sb, "mb%lld_", (long long)src.dims[0]);
			if (groups)
				sb_add(sb, "g%lld", (long long)wei.dims[0]);
			sb_add(sb, "ic%lldoc%lld_", (long long)src.dims[1], (long long)dst.dims[1]);
		} else
			sb_add(sb, "mb%lldic%lld_", (long long)src.dims[0], (long long)src.dims[1]);
		add_spatial(sb, &src, &dst, o.kernel, o.strides, o.have_dil ? o.dil : NULL, o.pad);
		return;
	}
	if (ip) {
		static const char names[] = "dhw";

		if (either(pd, DABI_Q_SRC_MD, DABI_Q_DIFF_SRC_MD, &src) ||
		    either(pd, DABI_Q_DST_MD, DABI_Q_DIFF_DST_MD, &dst) ||
		    src.ndims < 2 || src.ndims > 5)
			goto dims;
		sb_add(sb, "mb%lldic%lld", (long long)src.dims[0], (long long)src.dims[1]);
		for (int i = 0; i < src.ndims - 2; i++)
			sb_add(sb, "i%c%lld", names[3 - (src.ndims - 2) + i], (long long)src.dims[2 + i]);
		sb_add(sb, "oc%lld", (long long)dst.dims[1]);
		return;
	}
dims:
	{
		static const int qs[3][2] = {
			{ DABI_Q_SRC_MD, DABI_Q_DIFF_SRC_MD },
			{ DABI_Q_WEIGHTS_MD, DABI_Q_DIFF_WEIGHTS_MD },
			{ DABI_Q_DST_MD, DABI_Q_DIFF_DST_MD },
		};
		struct mdv t, prev;
		int first = 1;

		for (int i = 0; i < 3; i++) {
			if (either(pd, qs[i][0], qs[i][1], &t))
				continue;
			if (!first && prev.ndims == t.ndims &&
			    !memcmp(prev.dims, t.dims, (size_t)t.ndims * sizeof(t.dims[0])))
				continue;
			if (!first)
				sb_add(sb, ":");
			add_dims(sb, &t);
			prev = t;
			first = 0;
		}
	}
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;	/* FNV-1a */

	while (n--)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* The id of this description: an earlier equal one's, or a new one written out */
static uint32_t intern_desc(const char *text, size_t len)
{
	uint64_t h = hash_bytes(text, len);
	uint32_t id = 0;
	size_t i;

	pthread_mutex_lock(&desc_lock);
	for (i = 0; i < nr_descs; i++)
		if (descs[i].hash == h && descs[i].len == len && !memcmp(descs[i].text, text, len)) {
			id = i + 1;
			goto out;
		}
	if (nr_descs == alloc_descs) {
		size_t na = alloc_descs ? alloc_descs * 2 : 64;
		struct desc *nd = realloc(descs, na * sizeof(*nd));

		if (!nd)
			goto out;
		descs = nd;
		alloc_descs = na;
	}
	descs[nr_descs].text = malloc(len);
	if (!descs[nr_descs].text)
		goto out;
	memcpy(descs[nr_descs].text, text, len);
	descs[nr_descs].len = len;
	descs[nr_descs].hash = h;
	id = ++nr_descs;
	/* the block goes out before any execution naming it can be flushed */
	collector_write_block(ITT_BLOCK_PRIM, id, text, len);
out:
	pthread_mutex_unlock(&desc_lock);
	return id;
}

static uint32_t describe(const void *prim)
{
	static const struct { int q; const char *name; } mds[] = {
		{ DABI_Q_SRC_MD, "src" }, { DABI_Q_DIFF_SRC_MD, "diff_src" },
		{ DABI_Q_WEIGHTS_MD, "wei" }, { DABI_Q_DIFF_WEIGHTS_MD, "diff_wei" },
		{ DABI_Q_DST_MD, "dst" }, { DABI_Q_DIFF_DST_MD, "diff_dst" },
	};
	struct sbuf *sb;
	const void *pd = NULL;
	const char *impl = NULL, *s;
	int kind = 0, prop = 0;
	uint32_t id;

	if (api.get_pd(prim, &pd) || !pd || api.query(pd, DABI_Q_PRIMITIVE_KIND, 0, &kind))
		return 0;
	sb = malloc(sizeof(*sb));
	if (!sb)
		return 0;
	sb->len = 0;
	s = api.prim_kind2str ? api.prim_kind2str(kind) : NULL;
	if (s && *s && strcmp(s, "unknown prim_kind"))
		sb_add(sb, "kind=%s", s);
	else
		sb_add(sb, "kind=kind%d", kind);
	if (api.query(pd, DABI_Q_IMPL_INFO_STR, 0, &impl) || !impl)
		impl = "?";
	sb_add(sb, "\nimpl=%s", impl);
	if (api.query(pd, DABI_Q_PROP_KIND, 0, &prop))
		prop = 0;
	s = prop && api.prop_kind2str ? api.prop_kind2str(prop) : NULL;
	sb_add(sb, "\nprop=%s", s && *s ? s : "undef");
	add_shape(sb, kind, pd);
	for (size_t i = 0; i < sizeof(mds) / sizeof(mds[0]); i++) {
		struct mdv m;

		if (!get_md(pd, mds[i].q, &m))
			add_md(sb, mds[i].name, &m);
	}
	id = intern_desc(sb->b, sb->len);
	free(sb);
	return id;
}

/* ---- the primitive objects seen ---- */

static struct slot *slot_of(const void *prim, int claim)
{
	size_t h = (size_t)(((uintptr_t)prim >> 4) * 0x9E3779B97F4A7C15ull >> 20);

	for (int i = 0; i < CACHE_PROBES; i++) {
		struct slot *sl = &cache[(h + i) & (CACHE_SLOTS - 1)];
		const void *k = __atomic_load_n(&sl->key, __ATOMIC_ACQUIRE);

		if (k == prim)
			return sl;
		if (!k) {
			const void *none = NULL;

			if (!claim)
				return NULL;
			if (__atomic_compare_exchange_n(&sl->key, &none, prim, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_ACQUIRE) || none == prim)
				return sl;
		}
	}
	return NULL;	/* full here: described every time, never wrong */
}

static uint32_t prim_id(const void *prim)
{
	struct slot *sl = slot_of(prim, 0);
	uint32_t id = sl ? __atomic_load_n(&sl->id, __ATOMIC_ACQUIRE) : 0;

	if (id)
		return id;
	id = describe(prim);
	if (id && (sl || (sl = slot_of(prim, 1))))
		__atomic_store_n(&sl->id, id, __ATOMIC_RELEASE);
	return id;
}

EXPORT int dnnl_primitive_execute(const void *prim, void *stream, int nargs, const void *args);
EXPORT int dnnl_primitive_execute(const void *prim, void *stream, int nargs, const void *args)
{
	uint64_t t0;
	uint32_t id;
	int st;

	pthread_once(&api_once, resolve_api);
	if (!api.execute)
		return DABI_RUNTIME_ERROR;
	if (!hook_on || !prim || !(id = prim_id(prim)))
		return api.execute(prim, stream, nargs, args);
	t0 = collector_now();
	st = api.execute(prim, stream, nargs, args);
	collector_add_exec(t0, collector_now(), id);
	return st;
}

EXPORT int dnnl_primitive_destroy(void *prim);
EXPORT int dnnl_primitive_destroy(void *prim)
{
	pthread_once(&api_once, resolve_api);
	if (!api.destroy)
		return DABI_RUNTIME_ERROR;
	if (hook_on && prim) {
		/* the next object at this address is another primitive */
		struct slot *sl = slot_of(prim, 0);

		if (sl)
			__atomic_store_n(&sl->id, 0, __ATOMIC_RELEASE);
	}
	return api.destroy(prim);
}
