/* isa/check.c - check-isa's platform and file views: what this CPU and OS offer, what
 * the DL libraries will choose here, and which vector instructions ELF files contain,
 * as text or JSON.  (The profile view is isa/profile.c.) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"
#include "json.h"
#include "util.h"

/* ---- platform ------------------------------------------------------------------------ */

static const char *yes_no(int v)
{
	return v ? "yes" : "no";
}

static const char *amx_perm_word(enum isa_amx_perm p)
{
	switch (p) {
	case ISA_AMX_GRANTED:
		return "granted";
	case ISA_AMX_DENIED:
		return "denied";
	default:
		return "not requested";
	}
}

static void warn_disagreements(const struct isa_platform *p)
{
	int f;

	for (f = 0; f < ISA_F_NR; f++)
		if (isa_cpuinfo_disagrees(p, f))
			warning("/proc/cpuinfo disagrees with CPUID on %s: CPUID %s, cpuinfo flag '%s' %s",
				isa_features[f].name, p->cpu[f] ? "has it" : "lacks it",
				isa_features[f].cpuinfo_flag, p->cpuinfo[f] ? "present" : "absent");
}

static void print_platform(const struct isa_platform *p)
{
	int f;

	printf("CPU:      %s (%s, family %u model %u stepping %u%s)\n",
	       p->brand[0] ? p->brand : "?", p->vendor, p->family, p->model, p->stepping,
	       p->hypervisor ? ", virtual machine" : "");
	if (p->osxsave)
		printf("OS:       XCR0 0x%" PRIx64 ": AVX state %s, AVX-512 state %s, AMX state %s\n",
		       p->xcr0, (p->xcr0 & 0x6) == 0x6 ? "on" : "off",
		       (p->xcr0 & 0xe6) == 0xe6 ? "on" : "off",
		       (p->xcr0 & 0x60000) == 0x60000 ? "on" : "off");
	else
		printf("OS:       XSAVE not enabled (no AVX state)\n");
	printf("\n%-12s %-4s %-4s %-7s %s\n", "feature", "cpu", "os", "usable",
	       p->have_cpuinfo ? "cpuinfo" : "cpuinfo (not read)");
	for (f = 0; f < ISA_F_NR; f++) {
		printf("%-12s %-4s %-4s %-7s %s%s\n", isa_features[f].name, yes_no(p->cpu[f]),
		       yes_no(p->os[f]), yes_no(isa_usable(p, f)),
		       p->have_cpuinfo ? yes_no(p->cpuinfo[f]) : "-",
		       isa_cpuinfo_disagrees(p, f) ? "  (disagrees with CPUID)" : "");
	}
	printf("AMX permission (arch_prctl XTILEDATA): %s", amx_perm_word(p->amx_perm));
	if (p->amx_perm == ISA_AMX_DENIED)
		printf(" (%s)", strerror(p->amx_perm_errno));
	else if (p->amx_perm == ISA_AMX_NOT_REQUESTED)
		printf(" (%s)", p->cpu[ISA_F_AMXTILE] ? "the OS does not enable the tile state" : "no AMX on this CPU");
	printf("\n\n");
	if (isa_usable(p, ISA_F_AVX512F))
		printf("AVX-512: usable (the CPU has it and the OS saves the zmm/opmask state)\n");
	else if (p->cpu[ISA_F_AVX512F])
		printf("AVX-512: NOT usable: the CPU has it but the OS does not enable the zmm/opmask state\n");
	else
		printf("AVX-512: NOT usable: this CPU has no AVX-512F\n");
}

static void print_libs(const struct libisa *lib)
{
	int i;

	printf("\nlibraries (what they will choose here):\n");
	for (i = 0; i < LIBISA_NR; i++) {
		const struct libisa *l = &lib[i];
		char head[96];

		snprintf(head, sizeof(head), "%s%s%s", l->name, l->version ? " " : "",
			 l->version ? l->version : "");
		switch (l->state) {
		case LIBISA_ABSENT:
			printf("  %-28s absent%s%s\n", head, l->note ? ": " : "", l->note ? l->note : "");
			continue;
		case LIBISA_SKIPPED:
			printf("  %-28s skipped: %s\n", head, l->note);
			continue;
		case LIBISA_FAILED:
			printf("  %-28s unknown: %s\n", head, l->note ? l->note : "query failed");
			continue;
		case LIBISA_PRESENT:
			break;
		}
		printf("  %-28s %s", head, l->isa);
		if (l->vector_bits)
			printf(" (%d-bit vectors)", l->vector_bits);
		printf("\n");
		if (l->path)
			printf("  %-28s %s\n", "", l->path);
		if (l->env)
			printf("  %-28s environment: %s\n", "", l->env);
		if (l->note)
			printf("  %-28s %s\n", "", l->note);
		if (l->advice)
			printf("  %-28s -> %s\n", "", l->advice);
	}
}

static void json_platform(struct json *j, const struct isa_platform *p,
			  const struct libisa *lib)
{
	char xcr0[24];

	json_obj(j);
	json_kobj(j, "cpu");
	json_kstr(j, "brand", p->brand);
	json_kstr(j, "vendor", p->vendor);
	json_ku64(j, "family", p->family);
	json_ku64(j, "model", p->model);
	json_ku64(j, "stepping", p->stepping);
	json_kbool(j, "hypervisor", p->hypervisor);
	json_end(j);
	snprintf(xcr0, sizeof(xcr0), "0x%" PRIx64, p->xcr0);
	json_kstr(j, "xcr0", xcr0);
	json_kbool(j, "osxsave", p->osxsave);
	json_kbool(j, "cpuinfo_read", p->have_cpuinfo);
	json_kobj(j, "features");
	for (int f = 0; f < ISA_F_NR; f++) {
		json_kobj(j, isa_features[f].json_key);
		json_kstr(j, "name", isa_features[f].name);
		json_kbool(j, "cpu", p->cpu[f]);
		json_kbool(j, "os", p->os[f]);
		json_kbool(j, "usable", isa_usable(p, f));
		if (p->have_cpuinfo)
			json_kbool(j, "cpuinfo", p->cpuinfo[f]);
		else
			json_knull(j, "cpuinfo");
		json_end(j);
	}
	json_end(j);
	json_kstr(j, "amx_permission", amx_perm_word(p->amx_perm));
	json_kbool(j, "avx512_usable", isa_usable(p, ISA_F_AVX512F));
	if (lib) {
		static const char *const states[] = { "absent", "present", "skipped", "unknown" };

		json_karr(j, "libraries");
		for (int i = 0; i < LIBISA_NR; i++) {
			const struct libisa *l = &lib[i];

			json_obj(j);
			json_kstr(j, "name", l->name ? l->name : "");
			json_kstr(j, "state", states[l->state]);
			json_kstr(j, "version", l->version);
			json_kstr(j, "path", l->path);
			json_kstr(j, "isa", l->isa);
			json_ki64(j, "vector_bits", l->vector_bits);
			json_kstr(j, "env", l->env);
			json_kstr(j, "note", l->note);
			json_kstr(j, "advice", l->advice);
			json_end(j);
		}
		json_end(j);
	}
	json_end(j);
	json_raw(j, "\n");
}

int isa_check_platform(const struct isa_check_opts *o)
{
	struct isa_platform p;
	struct libisa lib[LIBISA_NR];

	if (isa_platform_probe(&p, o->cpuinfo, 1))
		return DLP_FAILED;
	warn_disagreements(&p);
	if (!o->no_libs)
		libisa_probe_all(lib, &p, &o->libs);
	if (o->format == OUT_JSON) {
		struct json j;

		json_init(&j, stdout, JSON_COMPACT);
		json_platform(&j, &p, o->no_libs ? NULL : lib);
	} else {
		print_platform(&p);
		if (!o->no_libs)
			print_libs(lib);
	}
	if (!o->no_libs)
		libisa_release(lib);
	return isa_usable(&p, ISA_F_AVX512F) ? ISA_FAST : ISA_NOT_FAST;
}

/* ---- files --------------------------------------------------------------------------- */

struct fsort {
	const struct isa_func *f;
	uint64_t vec;
};

static int cmp_fsort(const void *a, const void *b)
{
	const struct fsort *x = a, *y = b;

	if (x->vec != y->vec)
		return x->vec > y->vec ? -1 : 1;
	return x->f->start < y->f->start ? -1 : x->f->start > y->f->start;
}

static void func_counts(const struct isa_func *f, uint64_t n[ISA_C_NR])
{
	int k;

	for (k = 0; k < ISA_C_NR; k++)
		n[k] = f->n[k];
}

static struct fsort *sorted_funcs(const struct isa_image *img, size_t *nr)
{
	struct fsort *v = xmalloc((img->nr_funcs ? img->nr_funcs : 1) * sizeof(*v));
	size_t i;

	for (i = 0; i < img->nr_funcs; i++) {
		uint64_t n[ISA_C_NR];

		func_counts(&img->funcs[i], n);
		v[i].f = &img->funcs[i];
		v[i].vec = isa_counts_vector(n);
	}
	if (img->nr_funcs)
		qsort(v, img->nr_funcs, sizeof(*v), cmp_fsort);
	*nr = img->nr_funcs;
	return v;
}

static void print_image(struct isa_image *img, const struct isa_check_opts *o)
{
	uint64_t all = 0, tiers[ISA_T_NR] = { 0 };
	size_t i;
	int k;

	for (k = 0; k < ISA_C_NR; k++)
		all += img->total.n[k];
	for (i = 0; i < img->nr_funcs; i++) {
		uint64_t n[ISA_C_NR];

		func_counts(&img->funcs[i], n);
		tiers[isa_counts_tier(n)]++;
	}
	printf("%s\n", img->path);
	printf("  build-id %s, %s", img->build_id[0] ? img->build_id : "none",
	       img->from_cache ? "counts from the cache" : "scanned");
	if (!img->from_cache)
		printf(" in %.2f s", img->scan_seconds);
	printf("\n  %" PRIu64 " instructions, widest: %s\n", all,
	       isa_tier_desc(isa_counts_tier(img->total.n)));
	for (k = 0; k < ISA_C_NR; k++) {
		if (!img->total.n[k])
			continue;
		printf("  %12" PRIu64 " %6.2f%%  %s\n", img->total.n[k],
		       all ? 100.0 * img->total.n[k] / all : 0.0, isa_class_desc(k));
	}
	if (img->total.undecoded)
		printf("  %12" PRIu64 " bytes not decodable (data in code, padding)\n",
		       img->total.undecoded);
	printf("  %zu functions by widest class:", img->nr_funcs);
	for (k = ISA_T_NR - 1; k >= 0; k--)
		if (tiers[k])
			printf(" %s %" PRIu64 ",", isa_tier_desc(k), tiers[k]);
	printf("\n");

	if (o->functions) {
		size_t nr, lim;
		struct fsort *v = sorted_funcs(img, &nr);

		lim = o->top > 0 && (size_t)o->top < nr ? (size_t)o->top : nr;
		printf("\n  %8s %8s %8s %8s %8s %8s  %-18s %s\n", "vector", "zmm", "avx512",
		       "avx", "sse", "scalar", "class", "function");
		for (i = 0; i < lim; i++) {
			const struct isa_func *f = v[i].f;
			uint64_t n[ISA_C_NR];

			func_counts(f, n);
			printf("  %8" PRIu64 " %8u %8u %8u %8u %8u  %-18s %s\n", v[i].vec,
			       f->n[ISA_C_EVEX512],
			       f->n[ISA_C_EVEX128] + f->n[ISA_C_EVEX256] + f->n[ISA_C_KMASK],
			       f->n[ISA_C_VEX128] + f->n[ISA_C_VEX256], f->n[ISA_C_SSE],
			       f->n[ISA_C_SCALAR] + f->n[ISA_C_SSE_SCALAR],
			       isa_tier_desc(isa_counts_tier(n)), isa_image_func_name(img, f));
		}
		if (lim < nr)
			printf("  ... %zu more functions (--top 0 shows all)\n", nr - lim);
		free(v);
	}
}

static void json_counts(struct json *j, const uint64_t n[ISA_C_NR])
{
	json_obj(j);
	for (int k = 0; k < ISA_C_NR; k++)
		json_ku64(j, isa_class_name(k), n[k]);
	json_end(j);
}

static void json_image(struct json *j, struct isa_image *img, const struct isa_check_opts *o)
{
	json_obj(j);
	json_kstr(j, "path", img->path ? img->path : "");
	json_kstr(j, "build_id", img->build_id);
	json_kbool(j, "cached", img->from_cache);
	json_knum(j, "scan_seconds", "%.3f", img->scan_seconds);
	json_kstr(j, "tier", isa_tier_name(isa_counts_tier(img->total.n)));
	json_ku64(j, "undecoded_bytes", img->total.undecoded);
	json_key(j, "counts");
	json_counts(j, img->total.n);
	json_ku64(j, "nr_functions", img->nr_funcs);
	if (o->functions) {
		size_t nr, lim, i;
		struct fsort *v = sorted_funcs(img, &nr);

		lim = o->top > 0 && (size_t)o->top < nr ? (size_t)o->top : nr;
		json_karr(j, "functions");
		for (i = 0; i < lim; i++) {
			uint64_t n[ISA_C_NR];
			char start[24];

			func_counts(v[i].f, n);
			json_obj(j);
			json_kstr(j, "name", isa_image_func_name(img, v[i].f));
			snprintf(start, sizeof(start), "0x%" PRIx64, v[i].f->start);
			json_kstr(j, "start", start);
			json_ku64(j, "size", v[i].f->size);
			json_kstr(j, "bounds", (v[i].f->flags & ISA_FUNC_SYM) ? "symbol" : "fde");
			json_kstr(j, "tier", isa_tier_name(isa_counts_tier(n)));
			json_key(j, "counts");
			json_counts(j, n);
			json_end(j);
		}
		json_end(j);
		free(v);
	}
	json_end(j);
}

int isa_check_files(int argc, const char **argv, const struct isa_check_opts *o)
{
	struct json j;
	int i, failed = 0, any512 = 0;
	char *doc = NULL;
	size_t len = 0;
	/* the document written whole at the end: after the lines of the files it could not
	 * read, not among them (2>&1) */
	FILE *mem = o->format == OUT_JSON ? open_memstream(&doc, &len) : NULL;

	if (o->format == OUT_JSON && !mem)
		die("out of memory");
	json_init(&j, mem, JSON_COMPACT);
	if (o->format == OUT_JSON) {
		json_obj(&j);
		json_karr(&j, "files");
	}
	for (i = 0; i < argc; i++) {
		struct isa_image img;
		enum isa_tier t;

		if (isa_image_load(&img, argv[i], o->scan_flags)) {
			failed = 1;
			isa_image_release(&img);
			continue;
		}
		t = isa_counts_tier(img.total.n);
		if (t >= ISA_T_AVX512)
			any512 = 1;
		if (o->format == OUT_JSON) {
			json_image(&j, &img, o);
		} else {
			if (i)
				printf("\n");
			print_image(&img, o);
		}
		isa_image_release(&img);
	}
	if (o->format == OUT_JSON) {
		json_end(&j);
		json_end(&j);
		json_raw(&j, "\n");
		fclose(mem);
		fwrite(doc, 1, len, stdout);
		free(doc);
	}
	if (failed)
		return DLP_FAILED;
	return any512 ? ISA_FAST : ISA_NOT_FAST;
}

