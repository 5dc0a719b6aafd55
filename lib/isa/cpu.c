/* isa/cpu.c - the platform part of check-isa: CPUID, XCR0, AMX permission, /proc/cpuinfo.
 *
 * Feature bits (Intel SDM vol. 2A, CPUID): leaf 1 ECX, leaf 7 subleaf 0 EBX/ECX/EDX,
 * leaf 7 subleaf 1 EAX.  The OS must also enable the register state in XCR0 (read with
 * XGETBV when CPUID.1:ECX.OSXSAVE says it may be): SSE (bit 1) and AVX (bit 2) for VEX
 * code, opmask/ZMM_Hi256/Hi16_ZMM (bits 5-7) for AVX-512, XTILECFG/XTILEDATA (bits 17-18)
 * for AMX, which Linux additionally hands out per process through arch_prctl.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "isa.h"
#include "util.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define HAVE_CPUID 1
#endif

#ifndef ARCH_GET_XCOMP_PERM
#define ARCH_GET_XCOMP_PERM	0x1022
#endif
#ifndef ARCH_REQ_XCOMP_PERM
#define ARCH_REQ_XCOMP_PERM	0x1023
#endif
#define XFEATURE_XTILEDATA	18

#define XCR0_SSE	(1ull << 1)
#define XCR0_AVX	(1ull << 2)
#define XCR0_OPMASK	(1ull << 5)
#define XCR0_ZMM_HI256	(1ull << 6)
#define XCR0_HI16_ZMM	(1ull << 7)
#define XCR0_TILECFG	(1ull << 17)
#define XCR0_TILEDATA	(1ull << 18)

#define XCR0_AVX_STATE	  (XCR0_SSE | XCR0_AVX)
#define XCR0_AVX512_STATE (XCR0_AVX_STATE | XCR0_OPMASK | XCR0_ZMM_HI256 | XCR0_HI16_ZMM)
#define XCR0_AMX_STATE	  (XCR0_TILECFG | XCR0_TILEDATA)

const struct isa_feature_info isa_features[ISA_F_NR] = {
	[ISA_F_SSE42]      = { "SSE4.2",      "sse4_2",      "sse4_2" },
	[ISA_F_AVX]        = { "AVX",         "avx",         "avx" },
	[ISA_F_AVX2]       = { "AVX2",        "avx2",        "avx2" },
	[ISA_F_FMA]        = { "FMA",         "fma",         "fma" },
	[ISA_F_AVX512F]    = { "AVX-512F",    "avx512f",     "avx512f" },
	[ISA_F_AVX512CD]   = { "AVX-512CD",   "avx512cd",    "avx512cd" },
	[ISA_F_AVX512BW]   = { "AVX-512BW",   "avx512bw",    "avx512bw" },
	[ISA_F_AVX512DQ]   = { "AVX-512DQ",   "avx512dq",    "avx512dq" },
	[ISA_F_AVX512VL]   = { "AVX-512VL",   "avx512vl",    "avx512vl" },
	[ISA_F_AVX512VNNI] = { "AVX-512VNNI", "avx512_vnni", "avx512_vnni" },
	[ISA_F_AVX512BF16] = { "AVX-512BF16", "avx512_bf16", "avx512_bf16" },
	[ISA_F_AVX512FP16] = { "AVX-512FP16", "avx512_fp16", "avx512_fp16" },
	[ISA_F_AMXTILE]    = { "AMX-TILE",    "amx_tile",    "amx_tile" },
	[ISA_F_AMXINT8]    = { "AMX-INT8",    "amx_int8",    "amx_int8" },
	[ISA_F_AMXBF16]    = { "AMX-BF16",    "amx_bf16",    "amx_bf16" },
};

/* Where each feature's bit lives: leaf, subleaf, register (0 eax .. 3 edx), bit. */
static const struct {
	unsigned leaf, subleaf, reg, bit;
	uint64_t xcr0;
} feature_bits[ISA_F_NR] = {
	[ISA_F_SSE42]      = { 1, 0, 2, 20, 0 },
	[ISA_F_AVX]        = { 1, 0, 2, 28, XCR0_AVX_STATE },
	[ISA_F_AVX2]       = { 7, 0, 1,  5, XCR0_AVX_STATE },
	[ISA_F_FMA]        = { 1, 0, 2, 12, XCR0_AVX_STATE },
	[ISA_F_AVX512F]    = { 7, 0, 1, 16, XCR0_AVX512_STATE },
	[ISA_F_AVX512CD]   = { 7, 0, 1, 28, XCR0_AVX512_STATE },
	[ISA_F_AVX512BW]   = { 7, 0, 1, 30, XCR0_AVX512_STATE },
	[ISA_F_AVX512DQ]   = { 7, 0, 1, 17, XCR0_AVX512_STATE },
	[ISA_F_AVX512VL]   = { 7, 0, 1, 31, XCR0_AVX512_STATE },
	[ISA_F_AVX512VNNI] = { 7, 0, 2, 11, XCR0_AVX512_STATE },
	[ISA_F_AVX512BF16] = { 7, 1, 0,  5, XCR0_AVX512_STATE },
	[ISA_F_AVX512FP16] = { 7, 0, 3, 23, XCR0_AVX512_STATE },
	[ISA_F_AMXTILE]    = { 7, 0, 3, 24, XCR0_AMX_STATE },
	[ISA_F_AMXINT8]    = { 7, 0, 3, 25, XCR0_AMX_STATE },
	[ISA_F_AMXBF16]    = { 7, 0, 3, 22, XCR0_AMX_STATE },
};

#ifdef HAVE_CPUID
static uint64_t read_xcr0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return ((uint64_t)hi << 32) | lo;
}
#endif

char *isa_cpuinfo_flags(void)
{
	struct strbuf ci = STRBUF_INIT;
	char *flags = NULL, *p, *nl;

	if (strbuf_read_file(&ci, "/proc/cpuinfo", 16u << 20) < 0)
		return NULL;
	for (p = ci.buf; p && *p && !flags; p = nl ? nl + 1 : NULL) {
		char *colon;

		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(p, "flags", 5) || !(colon = strchr(p, ':')))
			continue;
		colon++;
		while (*colon == ' ' || *colon == '\t')
			colon++;
		flags = xstrdup(colon);
	}
	strbuf_release(&ci);
	return flags;
}

static void read_cpuinfo(struct isa_platform *p, const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	char *line, *save = NULL;
	int r;

	if (!path)
		path = "/proc/cpuinfo";
	r = strbuf_read_file(&sb, path, 64 << 20);
	if (r < 0) {
		warning("unable to read '%s': %s", path, strerror(-r));
		strbuf_release(&sb);
		return;
	}
	for (line = strtok_r(sb.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon, *tok, *save2 = NULL;

		if (strncmp(line, "flags", 5) || !(colon = strchr(line, ':')))
			continue;
		/* first CPU's flags line only */
		p->have_cpuinfo = 1;
		for (tok = strtok_r(colon + 1, " \t", &save2); tok; tok = strtok_r(NULL, " \t", &save2)) {
			size_t f;

			for (f = 0; f < ISA_F_NR; f++)
				if (!strcmp(tok, isa_features[f].cpuinfo_flag))
					p->cpuinfo[f] = 1;
		}
		break;
	}
	if (!p->have_cpuinfo)
		warning("no flags line in '%s'", path);
	strbuf_release(&sb);
}

static void probe_amx_perm(struct isa_platform *p, int request)
{
	unsigned long mask = 0;

	p->amx_perm = ISA_AMX_NOT_REQUESTED;
	if (!p->cpu[ISA_F_AMXTILE] || !p->os[ISA_F_AMXTILE])
		return;
	if (!syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &mask) &&
	    (mask & (1ul << XFEATURE_XTILEDATA))) {
		p->amx_perm = ISA_AMX_GRANTED;
		return;
	}
	if (!request)
		return;
	if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) {
		p->amx_perm = ISA_AMX_DENIED;
		p->amx_perm_errno = errno;
	} else {
		p->amx_perm = ISA_AMX_GRANTED;
	}
}

int isa_platform_probe(struct isa_platform *p, const char *cpuinfo_path, int request_amx)
{
#ifdef HAVE_CPUID
	unsigned a, b, c, d, max_leaf, max7 = 0, max_ext;
	unsigned regs[2][4] = { { 0 } };	/* leaf 7 subleaf 0 and 1 */
	unsigned leaf1[4];
	size_t f;
	char *s;

	memset(p, 0, sizeof(*p));
	if (!__get_cpuid(0, &max_leaf, &b, &c, &d))
		return error("cpuid is not available");
	memcpy(p->vendor, &b, 4);
	memcpy(p->vendor + 4, &d, 4);
	memcpy(p->vendor + 8, &c, 4);
	p->vendor[12] = '\0';

	__cpuid(1, leaf1[0], leaf1[1], leaf1[2], leaf1[3]);
	p->stepping = leaf1[0] & 0xf;
	p->family = (leaf1[0] >> 8) & 0xf;
	p->model = (leaf1[0] >> 4) & 0xf;
	if (p->family == 0xf)
		p->family += (leaf1[0] >> 20) & 0xff;
	if (p->family == 0x6 || p->family >= 0xf)
		p->model |= ((leaf1[0] >> 16) & 0xf) << 4;
	p->hypervisor = !!(leaf1[2] & (1u << 31));
	p->osxsave = !!(leaf1[2] & (1u << 27));

	if (max_leaf >= 7) {
		__cpuid_count(7, 0, regs[0][0], regs[0][1], regs[0][2], regs[0][3]);
		max7 = regs[0][0];
		if (max7 >= 1)
			__cpuid_count(7, 1, regs[1][0], regs[1][1], regs[1][2], regs[1][3]);
	}

	max_ext = __get_cpuid_max(0x80000000, NULL);
	if (max_ext >= 0x80000004) {
		unsigned *w = (unsigned *)p->brand;
		unsigned i;

		for (i = 0; i < 3; i++)
			__cpuid(0x80000002 + i, w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]);
		p->brand[48] = '\0';
		for (s = p->brand; *s == ' '; s++)
			;
		memmove(p->brand, s, strlen(s) + 1);
	}

	if (p->osxsave)
		p->xcr0 = read_xcr0();

	for (f = 0; f < ISA_F_NR; f++) {
		unsigned v;

		switch (feature_bits[f].leaf) {
		case 1:
			v = leaf1[feature_bits[f].reg];
			break;
		default:
			if (max_leaf < 7 || feature_bits[f].subleaf > max7)
				continue;
			v = regs[feature_bits[f].subleaf][feature_bits[f].reg];
			break;
		}
		p->cpu[f] = !!(v & (1u << feature_bits[f].bit));
		if (!feature_bits[f].xcr0)
			p->os[f] = 1;	/* SSE state: enabled by every x86-64 OS */
		else
			p->os[f] = p->osxsave &&
				   (p->xcr0 & feature_bits[f].xcr0) == feature_bits[f].xcr0;
	}
	(void)a;

	read_cpuinfo(p, cpuinfo_path);
	probe_amx_perm(p, request_amx);
	return 0;
#else
	memset(p, 0, sizeof(*p));
	(void)cpuinfo_path;
	(void)request_amx;
	return error("check-isa knows only x86-64 CPUs");
#endif
}

int isa_usable(const struct isa_platform *p, enum isa_feature f)
{
	if (!p->cpu[f] || !p->os[f])
		return 0;
	if (f == ISA_F_AMXTILE || f == ISA_F_AMXINT8 || f == ISA_F_AMXBF16)
		return p->amx_perm == ISA_AMX_GRANTED;
	return 1;
}

int isa_cpuinfo_disagrees(const struct isa_platform *p, enum isa_feature f)
{
	return p->have_cpuinfo && p->cpu[f] != p->cpuinfo[f];
}
