/* isa/profile.c - check-isa -i: which ISA class the profiled samples ran in.
 *
 * Every sample's leaf frame is put in the tier of the function it landed in: for
 * file-backed code, the per-function counts of code-scan.c (cached per build-id); for JIT
 * code, the kernel's bytes from the jitdump captured at record time; for JIT code known
 * only by a perf-map name, the ISA the name states (oneDNN's "jit_avx512_core_..."),
 * marked as such.  The instruction at the sample IP is decoded too where its bytes are
 * at hand.  The oneDNN implementations the run's primitives used come from the DL view
 * (dlview_impls(), the rows of report --sort prim by implementation).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "elfsyms.h"
#include "attr-stream.h"
#include "dlview.h"
#include "family.h"
#include "fastpath.h"
#include "isa.h"
#include "jitsym.h"
#include "json.h"
#include "output.h"
#include "profile.h"
#include "recfile.h"
#include "rephash.h"
#include "util.h"

#define B_KERNEL	ISA_T_NR
#define B_UNKNOWN	(ISA_T_NR + 1)
#define B_NR		(ISA_T_NR + 2)

enum how { HOW_NONE, HOW_FILE, HOW_JITDUMP, HOW_NAME };
static const char *const how_names[] = { "none", "file", "jitdump", "name" };

struct dso_img {
	struct isa_image img;
	int ok;
	int fd;
};

struct famrow {
	int bucket;
	const char *family;
	uint64_t n;
};

struct symrow {
	const char *sym, *dso, *family;
	int bucket;
	enum how how;
	uint64_t n;
};

struct isaprof {
	struct isa_decoder *dec;
	unsigned scan_flags;
	struct u64map imgs;		/* struct dso * -> struct dso_img * */
	struct u64map jittier;		/* code pointer -> tier + 1 */
	struct family_rules *rules;
	struct dlview *view;		/* the DL view: each sample's family and primitive */
	struct strpool pool;
	uint64_t samples, bucket[B_NR], how[4];
	int wide_used;			/* AVX-512/AMX code holds most vector samples */
	uint64_t ip_decoded, ip_class[ISA_C_NR];
	struct famrow *fam;
	size_t nr_fam, alloc_fam;
	struct u64map symmap;		/* interned symbol -> struct symrow * */
	struct symrow **syms;
	size_t nr_syms, alloc_syms;
};

static const char *bucket_desc(int b)
{
	if (b < ISA_T_NR)
		return isa_tier_desc(b);
	return b == B_KERNEL ? "kernel" : "unknown";
}

static const char *bucket_name(int b)
{
	if (b < ISA_T_NR)
		return isa_tier_name(b);
	return b == B_KERNEL ? "kernel" : "unknown";
}

static int tier_from_name(const char *name)
{
	if (!name)
		return -1;
	if (strcasestr(name, "amx"))
		return ISA_T_AMX;
	if (strcasestr(name, "avx512"))
		return ISA_T_AVX512_ZMM;
	if (strcasestr(name, "avx"))
		return ISA_T_AVX;
	if (strcasestr(name, "sse"))
		return ISA_T_SSE;
	return -1;
}

static struct dso_img *dso_image(struct isaprof *ip, const struct dso *dso)
{
	void **slot = u64map_slot(&ip->imgs, (uintptr_t)dso);
	struct dso_img *di = *slot;

	if (di)
		return di->ok ? di : NULL;
	di = xcalloc(1, sizeof(*di));
	di->fd = -1;
	*slot = di;
	if (!dso->path || dso->path[0] != '/')
		return NULL;
	if (access(dso_file(dso), R_OK)) {
		warning("cannot read '%s' (%s): its samples are counted as unknown", dso->path,
			strerror(errno));
		return NULL;
	}
	if (isa_image_load(&di->img, dso_file(dso), ip->scan_flags)) {
		warning("samples in '%s' are counted as unknown", dso->path);
		return NULL;
	}
	if (dso->build_id_size && di->img.build_id[0]) {
		char hex[41];

		build_id_hex(dso->build_id, dso->build_id_size, hex);
		if (strcmp(hex, di->img.build_id)) {
			warning("'%s' changed since the recording (build-id %s, recorded %s): its samples are counted as unknown",
				dso->path, di->img.build_id, hex);
			return NULL;
		}
	}
	di->fd = open(dso_file(dso), O_RDONLY | O_CLOEXEC);
	di->ok = 1;
	return di;
}

static void count_ip_class(struct isaprof *ip, int c)
{
	if (c < 0)
		return;
	ip->ip_decoded++;
	ip->ip_class[c]++;
}

/* The bucket of the sample's leaf frame. */
static int classify(struct isaprof *ip, struct machine *m, const struct dlp_sample *s,
		    const struct frame *f, enum how *how)
{
	const struct map *mp;
	uint64_t start;
	const uint8_t *code;
	size_t len;
	int t;

	*how = HOW_NONE;
	if (f->flags & FRAME_KERNEL)
		return B_KERNEL;
	if (!jitsym_code(machine_jit(m), (int32_t)s->pid, f->ip, &start, &code, &len) &&
	    f->ip - start < len) {
		void **slot = u64map_slot(&ip->jittier, (uintptr_t)code);

		if (!*slot) {
			struct isa_counts c = { { 0 }, 0 };

			isa_decode(ip->dec, code, len, start, &c);
			*slot = (void *)(uintptr_t)(isa_counts_tier(c.n) + 1);
		}
		count_ip_class(ip, isa_decode_one(ip->dec, code + (f->ip - start), len - (f->ip - start)));
		*how = HOW_JITDUMP;
		return (int)(uintptr_t)*slot - 1;
	}
	mp = machine_find_map(m, s->pid, f->ip, s->time);
	if (mp && mp->dso && !mp->dso->anon && !mp->dso->special && !mp->dso->kernel &&
	    !(f->flags & FRAME_JIT)) {
		struct dso_img *di = dso_image(ip, mp->dso);
		uint64_t off = map_file_offset(mp, f->ip), va;
		const struct isa_func *fn;
		uint64_t n[ISA_C_NR];

		if (!di)
			return B_UNKNOWN;
		va = isa_image_offset_to_vaddr(&di->img, off);
		fn = va == (uint64_t)-1 ? NULL : isa_image_find(&di->img, va);
		if (!fn)
			return B_UNKNOWN;
		if (di->fd >= 0) {
			uint8_t buf[15];
			ssize_t r = pread(di->fd, buf, sizeof(buf), (off_t)off);

			if (r > 0)
				count_ip_class(ip, isa_decode_one(ip->dec, buf, (size_t)r));
		}
		for (int k = 0; k < ISA_C_NR; k++)
			n[k] = fn->n[k];
		*how = HOW_FILE;
		return isa_counts_tier(n);
	}
	/* JIT code known by name only (perf map) */
	if ((f->flags & (FRAME_JIT | FRAME_ANON)) || (mp && mp->dso && mp->dso->anon)) {
		t = tier_from_name(f->sym);
		if (t >= 0) {
			*how = HOW_NAME;
			return t;
		}
	}
	return B_UNKNOWN;
}

static void add_family(struct isaprof *ip, int bucket, const char *family)
{
	size_t i;

	for (i = 0; i < ip->nr_fam; i++)
		if (ip->fam[i].bucket == bucket && ip->fam[i].family == family) {
			ip->fam[i].n++;
			return;
		}
	ALLOC_GROW(ip->fam, ip->nr_fam + 1, ip->alloc_fam);
	ip->fam[ip->nr_fam++] = (struct famrow){ bucket, family, 1 };
}

static int on_sample(void *ctx, const struct attributed *as)
{
	struct isaprof *ip = ctx;
	const struct frame *frames = as->frames;
	const char *family, *sym;
	struct symrow **slot;
	enum how how;
	int b;

	if (!as->nr)
		return 0;
	b = classify(ip, as->m, as->s, &frames[0], &how);
	/* the DL view's attribution (and its fast-path facts); "?" without rules */
	family = strpool_intern(&ip->pool, as->a ? as->a->family : "?");
	ip->samples++;
	ip->bucket[b]++;
	ip->how[how]++;
	add_family(ip, b, family);

	sym = strpool_intern(&ip->pool, frames[0].sym ? frames[0].sym : "[unknown]");
	slot = (struct symrow **)u64map_slot(&ip->symmap, (uintptr_t)sym);
	if (!*slot) {
		struct symrow *r = xcalloc(1, sizeof(*r));

		r->sym = sym;
		r->dso = strpool_intern(&ip->pool, frames[0].dso ? frames[0].dso : "[unknown]");
		r->family = family;
		r->bucket = b;
		r->how = how;
		*slot = r;
		ALLOC_GROW(ip->syms, ip->nr_syms + 1, ip->alloc_syms);
		ip->syms[ip->nr_syms++] = r;
	}
	(*slot)->n++;
	return 0;
}

static int cmp_fam(const void *a, const void *b)
{
	const struct famrow *x = a, *y = b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->family, y->family);
}

static int cmp_sym(const void *a, const void *b)
{
	const struct symrow *x = *(struct symrow *const *)a, *y = *(struct symrow *const *)b;

	if (x->n != y->n)
		return x->n > y->n ? -1 : 1;
	return strcmp(x->sym, y->sym);
}

/* bucket order for output: widest first, then kernel, unknown */
static const int order[B_NR] = {
	ISA_T_AMX, ISA_T_AVX512_ZMM, ISA_T_AVX512, ISA_T_AVX, ISA_T_SSE, ISA_T_SCALAR,
	B_KERNEL, B_UNKNOWN,
};

/* The oneDNN implementations the run used, by their share of the primitives' execution
 * time, as ONEDNN_VERBOSE's lines name them; or why none are known */
static void print_impls(struct isaprof *ip)
{
	struct dlview_impl *im;
	const char *why;
	size_t n, i;
	uint64_t all = 0, calls = 0;
	char t[32];

	if (!ip->view)
		return;
	n = dlview_impls(ip->view, &im, &why);
	if (!n) {
		if (why) {
			putchar('\n');
			fput_wrapped(stdout, "oneDNN:", why, 4, 79);
		}
		free(im);
		return;
	}
	for (i = 0; i < n; i++) {
		all += im[i].ns;
		calls += im[i].calls;
	}
	output_duration(t, sizeof(t), all);
	printf("\noneDNN implementations (%" PRIu64 " calls, %s; by share of that time):\n",
	       calls, t);
	for (i = 0; i < n; i++) {
		output_duration(t, sizeof(t), im[i].ns);
		printf("%6.1f%%  %-18s %9s %7" PRIu64 " calls  %s\n", pct(im[i].ns, all), im[i].impl,
		       t, im[i].calls, im[i].kinds);
	}
	free(im);
}

static void json_impls(struct isaprof *ip, struct json *j)
{
	struct dlview_impl *im = NULL;
	const char *why = NULL;
	size_t n = ip->view ? dlview_impls(ip->view, &im, &why) : 0, i;
	uint64_t all = 0;

	for (i = 0; i < n; i++)
		all += im[i].ns;
	json_karr(j, "dnnl_impls");
	for (i = 0; i < n; i++) {
		json_obj(j);
		json_kstr(j, "impl", im[i].impl ? im[i].impl : "");
		json_kstr(j, "kinds", im[i].kinds);
		json_ku64(j, "primitives", im[i].prims);
		json_ku64(j, "calls", im[i].calls);
		json_ku64(j, "total_ns", im[i].ns);
		json_knum(j, "share", "%.4f", all ? (double)im[i].ns / (double)all : 0.0);
		json_ku64(j, "samples", im[i].samples);
		json_end(j);
	}
	json_end(j);
	json_kstr(j, "dnnl_note", why);
	free(im);
}

static void print_text(struct isaprof *ip, const char *path, int usable, int top, int verdict,
		       const struct finding *f, size_t nf)
{
	uint64_t vec = 0;
	struct strbuf line = STRBUF_INIT, fams = STRBUF_INIT;
	size_t i, shown;
	int o, c, first = 1;

	printf("%s: %" PRIu64 " samples; AVX-512 on this machine: %s\n\n", path, ip->samples,
	       usable ? "usable" : "not usable");
	for (o = 0; o < B_NR; o++) {
		int b = order[o];

		if (!ip->bucket[b])
			continue;
		/* its families, as many as fit in 79 columns */
		strbuf_reset(&fams);
		strbuf_addf(&fams, "%6.1f%%  %-18s", pct(ip->bucket[b], ip->samples),
			    bucket_desc(b));
		shown = 0;
		for (i = 0; i < ip->nr_fam; i++) {
			char one[80];
			int len;

			if (ip->fam[i].bucket != b)
				continue;
			len = snprintf(one, sizeof(one), "%s %s %.1f%%", shown ? "," : "",
				       ip->fam[i].family, pct(ip->fam[i].n, ip->samples));
			if (shown && fams.len + (size_t)len + 5 > 79) {
				strbuf_addstr(&fams, ", ...");
				break;
			}
			strbuf_addstr(&fams, one);
			shown++;
		}
		printf("%s\n", fams.buf);
		if (b < ISA_T_NR) {
			strbuf_addf(&line, "%s%.0f%% %s%s code", first ? "" : "; ",
				    pct(ip->bucket[b], ip->samples), first ? "of samples in " : "in ",
				    bucket_desc(b));
			first = 0;
		}
	}
	strbuf_release(&fams);
	if (line.len) {
		printf("\n");
		fput_wrapped(stdout, "summary:", line.buf, 4, 79);
	}
	if (ip->how[HOW_NAME]) {
		strbuf_reset(&line);
		strbuf_addf(&line, "%.1f%% of samples are JIT code known only by name (perf map): "
			    "class taken from the kernel name; record with ONEDNN_JIT_PROFILE=6 "
			    "to capture the code", pct(ip->how[HOW_NAME], ip->samples));
		fput_wrapped(stdout, "note:", line.buf, 4, 79);
	}
	if (ip->ip_decoded) {
		for (c = ISA_C_SSE; c < ISA_C_NR; c++)
			vec += ip->ip_class[c];
		strbuf_reset(&line);
		strbuf_addf(&line, "(%" PRIu64 " samples with code): %.1f%% vector, %.1f%% zmm, "
			    "%.1f%% ymm", ip->ip_decoded, pct(vec, ip->ip_decoded),
			    pct(ip->ip_class[ISA_C_EVEX512], ip->ip_decoded),
			    pct(ip->ip_class[ISA_C_EVEX256] + ip->ip_class[ISA_C_VEX256],
				ip->ip_decoded));
		fput_wrapped(stdout, "at the sampled instruction", line.buf, 4, 79);
	}

	print_impls(ip);
	printf("\n%6s  %-18s %-14s %s\n", "Self%", "class", "family", "symbol [dso]");
	for (i = 0; i < ip->nr_syms && (top <= 0 || i < (size_t)top); i++) {
		const struct symrow *r = ip->syms[i];

		/* pseudo DSOs ("[jit]", "[kernel.kallsyms]") carry their own brackets */
		int bracketed = r->dso[0] == '[';

		/* "lib.so!func@0x..." already names its DSO */
		size_t dl = strlen(r->dso);
		int named = !strncmp(r->sym, r->dso, dl) && r->sym[dl] == '!';

		printf("%5.1f%%  %-18s %-14s %s%s%s%s%s%s\n", pct(r->n, ip->samples),
		       bucket_desc(r->bucket), r->family, r->sym, named ? "" : " ",
		       named || bracketed ? "" : "[", named ? "" : r->dso,
		       named || bracketed ? "" : "]", r->how == HOW_NAME ? " (class by name)" : "");
	}
	printf("\n");
	strbuf_reset(&line);
	if (nf) {
		/* a library's fast path is not running: that is the answer */
		for (i = 0; i < nf; i++) {
			char lead[64];

			snprintf(lead, sizeof(lead), "slow path [%s]:", f[i].id);
			fput_wrapped(stdout, lead, f[i].text, 4, 79);
		}
		strbuf_addstr(&line, "the fast path is not running: ");
		for (i = 0; i < nf; i++)
			strbuf_addf(&line, "%s%s", i ? "; " : "", f[i].brief[0] ? f[i].brief : f[i].id);
		strbuf_addstr(&line, "; the slow-path lines above say why");
		fput_wrapped(stdout, "verdict:", line.buf, 4, 79);
		strbuf_release(&line);
		return;
	}
	switch (verdict) {
	case ISA_FAST:
		strbuf_addstr(&line, "the hot vector code uses AVX-512");
		break;
	default:
		if (!usable)
			strbuf_addstr(&line, "AVX-512 is not usable on this machine");
		else {
			const struct famrow *top_narrow = NULL;

			for (i = 0; i < ip->nr_fam && !top_narrow; i++)
				if (ip->fam[i].bucket == ISA_T_AVX || ip->fam[i].bucket == ISA_T_SSE)
					top_narrow = &ip->fam[i];
			strbuf_addstr(&line, "most samples in vector code run narrower code than AVX-512");
			if (top_narrow)
				strbuf_addf(&line, " (largest: %s %.1f%% in %s code)", top_narrow->family,
					    pct(top_narrow->n, ip->samples), bucket_desc(top_narrow->bucket));
			strbuf_addstr(&line, "; `dlprof check-isa` shows the library settings that choose it");
		}
		break;
	}
	fput_wrapped(stdout, "verdict:", line.buf, 4, 79);
	strbuf_release(&line);
}

static void print_json(struct isaprof *ip, const char *path, int usable, int top, int verdict,
		       const struct finding *f, size_t nf)
{
	struct json j;
	size_t i;

	json_init(&j, stdout, JSON_COMPACT);
	json_obj(&j);
	json_kstr(&j, "file", path ? path : "");
	json_ku64(&j, "samples", ip->samples);
	json_kbool(&j, "avx512_usable", usable);
	json_kbool(&j, "avx512_used", ip->wide_used);
	json_kbool(&j, "fast_path", !nf);
	json_karr(&j, "findings");
	for (size_t k = 0; k < nf; k++) {
		json_obj(&j);
		json_kstr(&j, "id", f[k].id ? f[k].id : "");
		json_knum(&j, "figure_pct", "%.2f", f[k].figure);
		json_kstr(&j, "brief", f[k].brief);
		json_kstr(&j, "text", f[k].text);
		json_end(&j);
	}
	json_end(&j);
	json_karr(&j, "classes");
	for (int o = 0; o < B_NR; o++) {
		int b = order[o];

		if (!ip->bucket[b])
			continue;
		json_obj(&j);
		json_kstr(&j, "class", bucket_name(b));
		json_ku64(&j, "samples", ip->bucket[b]);
		json_knum(&j, "share", "%.4f", (double)ip->bucket[b] / (double)ip->samples);
		json_karr(&j, "families");
		for (i = 0; i < ip->nr_fam; i++) {
			if (ip->fam[i].bucket != b)
				continue;
			json_obj(&j);
			json_kstr(&j, "family", ip->fam[i].family ? ip->fam[i].family : "");
			json_ku64(&j, "samples", ip->fam[i].n);
			json_end(&j);
		}
		json_end(&j);
		json_end(&j);
	}
	json_end(&j);
	json_ku64(&j, "by_name_samples", ip->how[HOW_NAME]);
	json_kobj(&j, "ip");
	json_ku64(&j, "decoded", ip->ip_decoded);
	for (int c = 0; c < ISA_C_NR; c++)
		json_ku64(&j, isa_class_name(c), ip->ip_class[c]);
	json_end(&j);
	json_impls(ip, &j);
	json_karr(&j, "symbols");
	for (i = 0; i < ip->nr_syms && (top <= 0 || i < (size_t)top); i++) {
		const struct symrow *r = ip->syms[i];

		json_obj(&j);
		json_kstr(&j, "symbol", r->sym ? r->sym : "");
		json_kstr(&j, "dso", r->dso ? r->dso : "");
		json_kstr(&j, "family", r->family ? r->family : "");
		json_kstr(&j, "class", bucket_name(r->bucket));
		json_kstr(&j, "source", how_names[r->how]);
		json_ku64(&j, "samples", r->n);
		json_end(&j);
	}
	json_end(&j);
	json_end(&j);
	json_raw(&j, "\n");
}

int isaprof_run(const char *path, const char *symfs, enum out_format format, int top,
		unsigned scan_flags)
{
	struct isaprof ip;
	struct isa_platform plat;
	struct profile_opts po = { .symfs = symfs };
	struct attr_view v = { .sample = on_sample };
	struct finding f[8];
	size_t nf = 0;
	struct profile_stats st;
	struct session_info info;
	uint64_t wide, narrow;
	int r, usable, verdict;
	size_t i;

	memset(&ip, 0, sizeof(ip));
	if (isa_platform_probe(&plat, NULL, 0))
		return DLP_FAILED;
	usable = isa_usable(&plat, ISA_F_AVX512F);
	ip.dec = isa_decoder_new();
	if (!ip.dec)
		return DLP_FAILED;
	ip.scan_flags = scan_flags;
	u64map_init(&ip.imgs);
	u64map_init(&ip.jittier);
	u64map_init(&ip.symmap);
	strpool_init(&ip.pool);
	ip.rules = family_rules_load(NULL);
	v.ctx = &ip;
	memset(&st, 0, sizeof(st));
	memset(&info, 0, sizeof(info));
	if (!ip.rules) {
		warning("no family rules: families shown as '?'");
		v.plain = 1;
		r = attr_stream_run(path, &po, NULL, NULL, &v, &st, &info);
	} else {
		ip.view = dlview_new(ip.rules, &v);
		r = dlview_run(ip.view, path, &po, NULL, &st, &info);
	}
	if (r < 0) {
		verdict = DLP_FAILED;
		goto out;
	}
	if (!ip.samples) {
		/* a cut file has said so already, in one line */
		if (!info.file.truncated)
			error("no samples in '%s'", path);
		verdict = DLP_FAILED;
		goto out;
	}
	if (ip.nr_fam)
		qsort(ip.fam, ip.nr_fam, sizeof(*ip.fam), cmp_fam);
	if (ip.nr_syms)
		qsort(ip.syms, ip.nr_syms, sizeof(*ip.syms), cmp_sym);
	/* "used": AVX-512/AMX code holds most of the samples that ran vector code */
	wide = ip.bucket[ISA_T_AVX512] + ip.bucket[ISA_T_AVX512_ZMM] + ip.bucket[ISA_T_AMX];
	narrow = ip.bucket[ISA_T_SSE] + ip.bucket[ISA_T_AVX];
	ip.wide_used = usable && wide > 0 && wide >= narrow;
	/* the fast paths of the libraries: a slow one is the answer, exit 1 */
	if (ip.view) {
		dlview_set_stats(ip.view, &st);
		nf = fastpath_findings(dlview_fastpath(ip.view), ip.samples, f, ARRAY_SIZE(f));
	}
	verdict = ip.wide_used && !nf ? ISA_FAST : ISA_NOT_FAST;
	if (format == OUT_JSON)
		print_json(&ip, path, usable, top, verdict, f, nf);
	else
		print_text(&ip, path, usable, top, verdict, f, nf);
out:
	for (i = 0; i < ip.imgs.cap; i++) {
		struct dso_img *di;

		if (!ip.imgs.used[i])
			continue;
		di = ip.imgs.vals[i];
		if (di->fd >= 0)
			close(di->fd);
		isa_image_release(&di->img);
		free(di);
	}
	for (i = 0; i < ip.nr_syms; i++)
		free(ip.syms[i]);
	free(ip.syms);
	free(ip.fam);
	u64map_release(&ip.imgs);
	u64map_release(&ip.jittier);
	u64map_release(&ip.symmap);
	strpool_release(&ip.pool);
	dlview_free(ip.view);
	if (ip.rules)
		family_rules_free(ip.rules);
	isa_decoder_free(ip.dec);
	return verdict;
}
