/* unw-jit.c - a JIT test program: vector code written into anonymous executable memory,
 * published through /tmp/perf-PID.map and a jitdump (jit-PID.dump in $JITDUMPDIR, else
 * /tmp, mmap'ed PROT_EXEC so that the recording names it), then run from a known C
 * stack, main -> jit_driver -> KERNEL, for about one second (argv[1]: seconds).
 *
 * The kernel is the widest this CPU runs, as a JIT would pick it: unw_avx512_kernel
 * (EVEX, zmm), unw_avx2_kernel (VEX, ymm) or unw_sse_kernel (SSE, every x86-64);
 * UNW_JIT_ISA=avx512|avx2|sse asks for one (exit 3 when the CPU lacks it).
 * It has no CFI, so a CFI unwinder stops in it; the stack above it is plain C.
 * Prints "pid PID" and "kernel NAME" first, so tests know the name and can remove the
 * published files.
 *
 * UNW_JIT_FP=1: the kernel uses rbp as a register of its own (saved, set to 0x400, put
 * back), as oneDNN's JIT kernels do, and runs under two functions with frame pointers
 * (main -> fp_outer -> fp_inner -> KERNEL): fp_inner's CFA is rbp + 16, so a walk that
 * scanned past the kernel reads fp_inner's return address slot at 0x408, fails, and
 * must find fp_outer's return address by a scan of the stack it read before.
 * UNW_JIT_STALE=1 with it: a stale return address on the way (fp_inner).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "jit-sse.h"

/* void kernel(float buf[32], uint64_t n): two vectors from buf, n rounds of
 * vaddps/vmulps, results back to buf. */
static const uint8_t avx512_code[] = {
	0x62, 0xf1, 0x7c, 0x48, 0x10, 0x07,		/* vmovups (%rdi),%zmm0 */
	0x62, 0xf1, 0x7c, 0x48, 0x10, 0x4f, 0x01,	/* vmovups 0x40(%rdi),%zmm1 */
	0x62, 0xf1, 0x7c, 0x48, 0x58, 0xc1,		/* 1: vaddps %zmm1,%zmm0,%zmm0 */
	0x62, 0xf1, 0x74, 0x48, 0x58, 0xd0,		/* vaddps %zmm0,%zmm1,%zmm2 */
	0x62, 0xf1, 0x74, 0x48, 0x59, 0xca,		/* vmulps %zmm2,%zmm1,%zmm1 */
	0x48, 0xff, 0xce,				/* dec %rsi */
	0x75, 0xe9,					/* jne 1b */
	0x62, 0xf1, 0x7c, 0x48, 0x11, 0x07,		/* vmovups %zmm0,(%rdi) */
	0x62, 0xf1, 0x7c, 0x48, 0x11, 0x4f, 0x01,	/* vmovups %zmm1,0x40(%rdi) */
	0xc5, 0xf8, 0x77,				/* vzeroupper */
	0xc3,						/* ret */
};

static const uint8_t avx2_code[] = {
	0xc5, 0xfc, 0x10, 0x07,				/* vmovups (%rdi),%ymm0 */
	0xc5, 0xfc, 0x10, 0x4f, 0x20,			/* vmovups 0x20(%rdi),%ymm1 */
	0xc5, 0xfc, 0x58, 0xc1,				/* 1: vaddps %ymm1,%ymm0,%ymm0 */
	0xc5, 0xf4, 0x58, 0xd0,				/* vaddps %ymm0,%ymm1,%ymm2 */
	0xc5, 0xf4, 0x59, 0xca,				/* vmulps %ymm2,%ymm1,%ymm1 */
	0x48, 0xff, 0xce,				/* dec %rsi */
	0x75, 0xef,					/* jne 1b */
	0xc5, 0xfc, 0x11, 0x07,				/* vmovups %ymm0,(%rdi) */
	0xc5, 0xfc, 0x11, 0x4f, 0x20,			/* vmovups %ymm1,0x20(%rdi) */
	0xc5, 0xf8, 0x77,				/* vzeroupper */
	0xc3,						/* ret */
};

static const struct kernel {
	const char *isa, *name, *cpu_feature;
	const uint8_t *code;
	size_t size;
} kernels[] = {	/* widest first */
	{ "avx512", "unw_avx512_kernel", "avx512f", avx512_code, sizeof(avx512_code) },
	{ "avx2", "unw_avx2_kernel", "avx2", avx2_code, sizeof(avx2_code) },
	{ "sse", "unw_sse_kernel", NULL, sse_code, sizeof(sse_code) },
};

typedef void (*kernel_fn)(float *, uint64_t);

/* jitdump format (as perf's jitdump.h documents it) */
struct jd_header {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};
struct jd_prefix {
	uint32_t id, total_size;
	uint64_t timestamp;
};
struct jd_code_load {
	struct jd_prefix p;
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
};
#define JD_MAGIC 0x4A695444
#define JD_CODE_LOAD 0
#define JD_CODE_CLOSE 3

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static int write_all(int fd, const void *p, size_t n)
{
	return write(fd, p, n) == (ssize_t)n ? 0 : -1;
}

static int publish(void *code, size_t size, const char *name)
{
	char path[4096];
	const char *dir = getenv("JITDUMPDIR");
	struct jd_header h;
	struct jd_code_load r;
	struct jd_prefix close_rec;
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)code, size, name);
	fclose(f);

	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir && *dir ? dir : "/tmp", (int)getpid());
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd < 0)
		return -1;
	memset(&h, 0, sizeof(h));
	h.magic = JD_MAGIC;
	h.version = 1;
	h.total_size = sizeof(h);
	h.elf_mach = 62;	/* EM_X86_64 */
	h.pid = getpid();
	h.timestamp = mono_ns();
	/* the marker mapping: consumers find the dump through this mmap record */
	if (write_all(fd, &h, sizeof(h)) ||
	    mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) == MAP_FAILED)
		goto fail;
	memset(&r, 0, sizeof(r));
	r.p.id = JD_CODE_LOAD;
	r.p.total_size = sizeof(r) + strlen(name) + 1 + size;
	r.p.timestamp = mono_ns();
	r.pid = getpid();
	r.tid = syscall(SYS_gettid);
	r.vma = r.code_addr = (uintptr_t)code;
	r.code_size = size;
	r.code_index = 0;
	if (write_all(fd, &r, sizeof(r)) || write_all(fd, name, strlen(name) + 1) ||
	    write_all(fd, code, size))
		goto fail;
	memset(&close_rec, 0, sizeof(close_rec));
	close_rec.id = JD_CODE_CLOSE;
	close_rec.total_size = sizeof(close_rec);
	close_rec.timestamp = mono_ns();
	if (write_all(fd, &close_rec, sizeof(close_rec)))
		goto fail;
	close(fd);
	return 0;
fail:
	close(fd);
	return -1;
}

static volatile float unw_jit_sink;

__attribute__((noinline)) static void jit_driver(kernel_fn k, double seconds)
{
	float buf[32] __attribute__((aligned(64)));
	uint64_t t0 = mono_ns();

	for (int i = 0; i < 32; i++)
		buf[i] = 1.0f / (i + 1);
	do {
		k(buf, 20000);
		buf[0] = buf[1] = 0.5f;	/* keep the values finite */
	} while (mono_ns() - t0 < (uint64_t)(seconds * 1e9));
	unw_jit_sink = buf[5];
}

/* An address right after a call (in stale_ra), as a return address left on a stack */
__attribute__((noinline)) static uint64_t here(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) static uint64_t stale_ra(void)
{
	uint64_t r = here();

	unw_jit_sink += (float)(r & 1);
	return r;
}

static int want_stale;

/* What the calls before left below main's frame, zeroed: a scan meets no stale word
 * but those fp_inner leaves */
__attribute__((noinline)) static void scrub(void)
{
	volatile char z[16384];

	memset((char *)z, 0, sizeof(z));
}

/* UNW_JIT_FP: two frames with frame pointers above the kernel (see the top).
 * UNW_JIT_STALE=1 too: fp_inner's frame holds a stale return address (into stale_ra,
 * whose CFA is a few words above its stack pointer) below words of an address no
 * mapping holds: a scan past the kernel and jit_driver's frame meets it before
 * fp_outer's return address, and its step leads nowhere (a dead end) */
__attribute__((noinline, optimize("no-omit-frame-pointer")))
static void fp_inner(kernel_fn k, double seconds)
{
	volatile uint64_t stale[6] = { 0 };

	if (want_stale) {
		stale[0] = stale_ra();
		for (int i = 1; i < 6; i++)
			stale[i] = 0x7000;	/* (the first page above the null page's) */
	}
	jit_driver(k, seconds);
	unw_jit_sink += 1 + (float)(stale[0] & 1);
}

__attribute__((noinline, optimize("no-omit-frame-pointer")))
static void fp_outer(kernel_fn k, double seconds)
{
	fp_inner(k, seconds);
	unw_jit_sink += 2;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	const char *want = getenv("UNW_JIT_ISA"), *fp = getenv("UNW_JIT_FP");
	/* push %rbp; mov $0x400,%ebp ... pop %rbp; ret */
	static const uint8_t fp_head[] = { 0x55, 0xbd, 0x00, 0x04, 0x00, 0x00 };
	static const uint8_t fp_tail[] = { 0x5d, 0xc3 };
	const struct kernel *k = NULL;
	size_t size;
	void *code;

	printf("pid %d\n", (int)getpid());
	__builtin_cpu_init();
	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]) && !k; i++) {
		if (want && *want && strcmp(want, kernels[i].isa))
			continue;
		/* __builtin_cpu_supports takes a string literal only */
		if (!kernels[i].cpu_feature ||
		    (!strcmp(kernels[i].cpu_feature, "avx512f") && __builtin_cpu_supports("avx512f")) ||
		    (!strcmp(kernels[i].cpu_feature, "avx2") && __builtin_cpu_supports("avx2")))
			k = &kernels[i];
		else if (want && *want) {
			fprintf(stderr, "unw-jit: this CPU has no %s\n", want);
			return 3;
		}
	}
	if (!k) {
		fprintf(stderr, "unw-jit: unknown UNW_JIT_ISA '%s' (avx512, avx2, sse)\n", want);
		return 2;
	}
	printf("kernel %s\n", k->name);
	fflush(stdout);
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return perror("mmap"), 1;
	if (fp && *fp == '1') {
		/* the kernel less its ret, between the two */
		memcpy(code, fp_head, sizeof(fp_head));
		memcpy((char *)code + sizeof(fp_head), k->code, k->size - 1);
		memcpy((char *)code + sizeof(fp_head) + k->size - 1, fp_tail, sizeof(fp_tail));
		size = sizeof(fp_head) + k->size - 1 + sizeof(fp_tail);
	} else {
		memcpy(code, k->code, k->size);
		size = k->size;
	}
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return perror("mprotect"), 1;
	if (publish(code, size, k->name))
		return perror("unw-jit: publish"), 1;
	if (fp && *fp == '1') {
		want_stale = getenv("UNW_JIT_STALE") && *getenv("UNW_JIT_STALE") == '1';
		scrub();
		fp_outer((kernel_fn)code, seconds);
	} else {
		jit_driver((kernel_fn)code, seconds);
	}
	return 0;
}
