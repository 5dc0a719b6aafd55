/* test-isa.c - instruction classes from raw bytes (capstone and the VEX/EVEX fallback),
 * JIT-style code written at run time, and the platform probe against raw CPUID.
 * TAP output. */
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "isa.h"
#include "util.h"

#include "unit/tap.h"

/* Bytes assembled with GNU as (intel syntax), checked with objdump -d. */
static const struct {
	const char *text;
	uint8_t len;
	uint8_t b[8];
	enum isa_class want;
} insns[] = {
	{ "vaddps zmm0,zmm1,zmm2", 6, { 0x62, 0xf1, 0x74, 0x48, 0x58, 0xc2 }, ISA_C_EVEX512 },
	{ "vfmadd231ps zmm0,zmm1,zmm2", 6, { 0x62, 0xf2, 0x75, 0x48, 0xb8, 0xc2 }, ISA_C_EVEX512 },
	{ "vaddps zmm0,zmm1,zmm2{rn-sae}", 6, { 0x62, 0xf1, 0x74, 0x18, 0x58, 0xc2 }, ISA_C_EVEX512 },
	{ "vaddps xmm0{k1},xmm1,xmm2", 6, { 0x62, 0xf1, 0x74, 0x09, 0x58, 0xc2 }, ISA_C_EVEX128 },
	{ "vaddps ymm16,ymm1,ymm2", 6, { 0x62, 0xe1, 0x74, 0x28, 0x58, 0xc2 }, ISA_C_EVEX256 },
	{ "vaddps ymm0,ymm1,ymm2", 4, { 0xc5, 0xf4, 0x58, 0xc2 }, ISA_C_VEX256 },
	{ "vaddps xmm0,xmm1,xmm2", 4, { 0xc5, 0xf0, 0x58, 0xc2 }, ISA_C_VEX128 },
	{ "addps xmm0,xmm1", 3, { 0x0f, 0x58, 0xc1 }, ISA_C_SSE },
	{ "addss xmm0,xmm1", 4, { 0xf3, 0x0f, 0x58, 0xc1 }, ISA_C_SSE_SCALAR },
	{ "kmovw k0,k1", 4, { 0xc5, 0xf8, 0x90, 0xc1 }, ISA_C_KMASK },
	{ "shlx rax,rbx,rcx", 5, { 0xc4, 0xe2, 0xf1, 0xf7, 0xc3 }, ISA_C_SCALAR },
	{ "tilerelease", 5, { 0xc4, 0xe2, 0x78, 0x49, 0xc0 }, ISA_C_AMX },
	{ "tdpbssd tmm0,tmm1,tmm2", 5, { 0xc4, 0xe2, 0x6b, 0x5e, 0xc1 }, ISA_C_AMX },
	{ "vpdpbusd zmm0,zmm1,zmm2", 6, { 0x62, 0xf2, 0x75, 0x48, 0x50, 0xc2 }, ISA_C_EVEX512 },
	{ "vcvtne2ps2bf16 zmm0,zmm1,zmm2", 6, { 0x62, 0xf2, 0x77, 0x48, 0x72, 0xc2 }, ISA_C_EVEX512 },
	{ "vaddph zmm0,zmm1,zmm2", 6, { 0x62, 0xf5, 0x74, 0x48, 0x58, 0xc2 }, ISA_C_EVEX512 },
	{ "add rax,rbx", 3, { 0x48, 0x01, 0xd8 }, ISA_C_SCALAR },
	{ "ret", 1, { 0xc3 }, ISA_C_SCALAR },
};

static void test_single(struct isa_decoder *d)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(insns); i++) {
		char what[128];
		int c = isa_decode_one(d, insns[i].b, insns[i].len);

		snprintf(what, sizeof(what), "%s is %s", insns[i].text, isa_class_name(insns[i].want));
		ok(c == (int)insns[i].want, what, c < 0 ? "undecodable" : isa_class_name(c));
	}
}

static void test_stream(struct isa_decoder *d)
{
	uint8_t buf[256];
	size_t len = 0, i;
	uint64_t want[ISA_C_NR] = { 0 };
	struct isa_counts c = { { 0 }, 0 };
	int k, same = 1;
	char got[256] = "";

	for (i = 0; i < ARRAY_SIZE(insns); i++) {
		memcpy(buf + len, insns[i].b, insns[i].len);
		len += insns[i].len;
		want[insns[i].want]++;
	}
	isa_decode(d, buf, len, 0x1000, &c);
	for (k = 0; k < ISA_C_NR; k++) {
		if (c.n[k] != want[k])
			same = 0;
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s=%llu ",
			 isa_class_name(k), (unsigned long long)c.n[k]);
	}
	ok(same && !c.undecoded, "a stream of all of them counts every class right", got);
	ok(isa_counts_tier(c.n) == ISA_T_AMX, "the stream's widest tier is AMX", isa_tier_name(isa_counts_tier(c.n)));
}

typedef void jit_fn(void);

/* JIT: write an AVX-512 kernel into fresh executable memory, classify it, run it. */
static void test_jit(struct isa_decoder *d, const struct isa_platform *p)
{
	static const uint8_t code[] = {
		0x62, 0xf1, 0x74, 0x48, 0x58, 0xc2,	/* vaddps zmm0,zmm1,zmm2 */
		0x62, 0xf2, 0x75, 0x48, 0xb8, 0xc2,	/* vfmadd231ps zmm0,zmm1,zmm2 */
		0xc5, 0xf8, 0x77,			/* vzeroupper */
		0xc3,					/* ret */
	};
	struct isa_counts c = { { 0 }, 0 };
	uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (mem == MAP_FAILED) {
		ok(0, "mmap for JIT code", "failed");
		return;
	}
	memcpy(mem, code, sizeof(code));
	mprotect(mem, 4096, PROT_READ | PROT_EXEC);
	isa_decode(d, mem, sizeof(code), (uintptr_t)mem, &c);
	ok(c.n[ISA_C_EVEX512] == 2 && c.n[ISA_C_VEX128] == 1 && c.n[ISA_C_SCALAR] == 1,
	   "JIT kernel in anonymous memory: 2 zmm, 1 vex, 1 scalar", NULL);
	ok(isa_counts_tier(c.n) == ISA_T_AVX512_ZMM, "JIT kernel tier is AVX-512 (zmm)",
	   isa_tier_name(isa_counts_tier(c.n)));
	if (isa_usable(p, ISA_F_AVX512F)) {
		((jit_fn *)(uintptr_t)mem)();
		ok(1, "the JIT kernel runs on this CPU (the bytes are real code)", NULL);
	} else {
		printf("ok %d # SKIP no usable AVX-512 to run the JIT kernel\n", ++nr_tests);
	}
	munmap(mem, 4096);
}

/* Raw CPUID bits read here independently of lib/isa/cpu.c. */
static void test_cpuid(const struct isa_platform *p)
{
	unsigned a = 0, b = 0, c = 0, d = 0, b7 = 0, c7 = 0, d7 = 0, a71 = 0, max = 0;
	char what[128];

	__get_cpuid(0, &max, &b, &c, &d);
	__get_cpuid(1, &a, &b, &c, &d);
	ok(p->cpu[ISA_F_SSE42] == !!(c & bit_SSE4_2), "SSE4.2 from CPUID.1:ECX", NULL);
	ok(p->cpu[ISA_F_AVX] == !!(c & bit_AVX), "AVX from CPUID.1:ECX", NULL);
	ok(p->cpu[ISA_F_FMA] == !!(c & bit_FMA), "FMA from CPUID.1:ECX", NULL);
	if (max >= 7) {
		__get_cpuid_count(7, 0, &a, &b7, &c7, &d7);
		if (a >= 1)
			__get_cpuid_count(7, 1, &a71, &b, &c, &d);
	}
	ok(p->cpu[ISA_F_AVX2] == !!(b7 & bit_AVX2), "AVX2 from CPUID.7.0:EBX", NULL);
	ok(p->cpu[ISA_F_AVX512F] == !!(b7 & bit_AVX512F), "AVX-512F from CPUID.7.0:EBX", NULL);
	ok(p->cpu[ISA_F_AVX512CD] == !!(b7 & bit_AVX512CD), "AVX-512CD", NULL);
	ok(p->cpu[ISA_F_AVX512BW] == !!(b7 & bit_AVX512BW), "AVX-512BW", NULL);
	ok(p->cpu[ISA_F_AVX512DQ] == !!(b7 & bit_AVX512DQ), "AVX-512DQ", NULL);
	ok(p->cpu[ISA_F_AVX512VL] == !!(b7 & bit_AVX512VL), "AVX-512VL", NULL);
	ok(p->cpu[ISA_F_AVX512VNNI] == !!(c7 & bit_AVX512VNNI), "AVX-512VNNI from CPUID.7.0:ECX", NULL);
	ok(p->cpu[ISA_F_AVX512BF16] == !!(a71 & bit_AVX512BF16), "AVX-512BF16 from CPUID.7.1:EAX", NULL);
	ok(p->cpu[ISA_F_AVX512FP16] == !!(d7 & bit_AVX512FP16), "AVX-512FP16 from CPUID.7.0:EDX", NULL);
	ok(p->cpu[ISA_F_AMXTILE] == !!(d7 & bit_AMX_TILE), "AMX-TILE from CPUID.7.0:EDX", NULL);
	ok(p->cpu[ISA_F_AMXINT8] == !!(d7 & bit_AMX_INT8), "AMX-INT8", NULL);
	ok(p->cpu[ISA_F_AMXBF16] == !!(d7 & bit_AMX_BF16), "AMX-BF16", NULL);
	snprintf(what, sizeof(what), "XCR0 0x%llx enables AVX-512 state iff reported", (unsigned long long)p->xcr0);
	ok(p->os[ISA_F_AVX512F] == ((p->xcr0 & 0xe6) == 0xe6), what, NULL);
}

int main(void)
{
	struct isa_decoder *d = isa_decoder_new();
	struct isa_platform p;

	if (!d || isa_platform_probe(&p, NULL, 0)) {
		printf("Bail out! no decoder or no cpuid\n");
		return 1;
	}
	test_single(d);
	test_stream(d);
	test_jit(d, &p);
	test_cpuid(&p);
	isa_decoder_free(d);
	return tap_done();
}
