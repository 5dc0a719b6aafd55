/* unw-jit.c - a JIT test program: AVX-512 code written into anonymous executable memory,
 * published through /tmp/perf-PID.map and a jitdump (jit-PID.dump in $JITDUMPDIR, else
 * /tmp, mmap'ed PROT_EXEC so that the recording names it), then run from a known C
 * stack, main -> jit_driver -> unw_avx512_kernel, for about one second (argv[1]: seconds).
 *
 * The kernel has no CFI, so a CFI unwinder stops in it; the stack above it is plain C.
 * Prints "pid PID" first, so tests can remove the published files.
 * Exit status 3: the CPU has no AVX-512.
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

#define JIT_NAME "unw_avx512_kernel"

/* void kernel(float buf[32], uint64_t n): zmm0/zmm1 from buf, n rounds of vaddps/vmulps,
 * results back to buf. */
static const uint8_t kernel_code[] = {
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

static int publish(void *code, size_t size)
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
	fprintf(f, "%lx %zx %s\n", (unsigned long)(uintptr_t)code, size, JIT_NAME);
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
	r.p.total_size = sizeof(r) + sizeof(JIT_NAME) + size;
	r.p.timestamp = mono_ns();
	r.pid = getpid();
	r.tid = syscall(SYS_gettid);
	r.vma = r.code_addr = (uintptr_t)code;
	r.code_size = size;
	r.code_index = 0;
	if (write_all(fd, &r, sizeof(r)) || write_all(fd, JIT_NAME, sizeof(JIT_NAME)) ||
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

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	void *code;

	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f")) {
		fprintf(stderr, "unw-jit: no AVX-512 on this CPU\n");
		return 3;
	}
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return perror("mmap"), 1;
	memcpy(code, kernel_code, sizeof(kernel_code));
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return perror("mprotect"), 1;
	if (publish(code, sizeof(kernel_code)))
		return perror("unw-jit: publish"), 1;
	jit_driver((kernel_fn)code, seconds);
	return 0;
}
