/* fuzz-elf.c - libFuzzer harness for the ELF paths dlprof drives through libelf, libdw
 * and capstone: the input is an ELF file (a colleague's library, a hostile binary).
 *
 *   check-isa FILE      isa_image_load (sections, symbols, .eh_frame FDEs, every
 *                       executable byte decoded), function names, offset -> address
 *   the DL view         isa_hits_tier on offsets of the file (FDE or symbol bounds): in
 *                       the functions check-isa found, and spread over the file
 *   report              the file as a mapping of a process, carried in the recording
 *                       (a DLP_REC_FILE image, as the [vdso] is): symbols, DWARF lines
 *                       and inline chains (libdwfl), and the CFI unwinder walking a
 *                       stack whose words point back into the file
 *
 * Seeds in tests/fuzz/corpus/elf/ (small real objects: with and without debug info,
 * stripped, a shared library with AVX-512 code).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <asm/perf_regs.h>
#include <linux/perf_event.h>

#include "elfcheck.h"
#include "isa.h"
#include "process.h"
#include "symbolize.h"
#include "unwind.h"

#define BASE	0x400000ull
#define STACK	512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fd = -1;
static char path[64];

static uint64_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

/* The file as the code mapping of process 1 at BASE (from offset 0), symbolized and unwound
 * from offsets ips[] into it. */
static void as_mapping(const uint8_t *data, size_t size, const uint64_t *ips, size_t nr)
{
	struct symbolize_opts so = { 1, 1 };
	struct machine *m = machine_new();
	struct symbolizer *sy = symbolizer_new(&so);
	struct unwinder *u = unwinder_new(m);
	struct dlp_mmap ev;
	uint64_t stack[STACK / 8], regs[PERF_REG_X86_64_MAX], mask = 0;
	uint64_t len = (size + 4095) & ~4095ull;
	unsigned n = 0;

	machine_set_image(m, "/fuzz/lib.so", data, size);
	memset(&ev, 0, sizeof(ev));
	ev.pid = ev.tid = 1;
	ev.start = BASE;
	ev.len = len;
	ev.prot = PROT_READ | PROT_EXEC;
	ev.flags = MAP_PRIVATE;
	ev.misc = PERF_RECORD_MISC_USER;
	ev.filename = "/fuzz/lib.so";
	machine_mmap(m, &ev);
	/* stack words: return addresses into the file, taken from the input's own bytes */
	for (size_t i = 0; i < STACK / 8; i++)
		stack[i] = size >= 4 * (i + 1) ? BASE + load32(data + size - 4 * (i + 1)) % len : 0;
	for (int r = 0; r < PERF_REG_X86_64_MAX; r++) {
		if (r >= PERF_REG_X86_DS && r <= PERF_REG_X86_GS)
			continue;
		mask |= 1ull << r;
		regs[n++] = r == PERF_REG_X86_SP ? 0x7ff000000000ull :
			    r == PERF_REG_X86_BP ? 0x7ff000000000ull + 64 : BASE;
	}
	for (size_t k = 0; k < nr; k++) {
		const struct map *mp = machine_find_map(m, 1, BASE + ips[k], 1);
		struct frame f[8];
		struct dlp_sample s;
		uint64_t out[64];
		int complete;

		if (!mp)
			continue;
		symbolize(sy, mp, BASE + ips[k], f, 8);
		memset(&s, 0, sizeof(s));
		s.pid = s.tid = 1;
		s.time = 1;
		s.ip = BASE + ips[k];
		s.cpumode = PERF_RECORD_MISC_USER;
		s.user_abi = PERF_SAMPLE_REGS_ABI_64;
		s.user_regs_mask = mask;
		/* registers 0..IP all sampled: their packed index is their number */
		regs[PERF_REG_X86_IP] = s.ip;
		s.user_regs = regs;
		s.stack = (const uint8_t *)stack;
		s.stack_size = sizeof(stack);
		unwind_sample(u, &s, out, NULL, 64, &complete);
	}
	unwinder_free(u);
	symbolizer_free(sy);
	machine_free(m);
}

/* The file offset of vaddr in img's PT_LOADs, or -1. */
static uint64_t vaddr_to_off(const struct isa_image *img, uint64_t vaddr)
{
	for (size_t i = 0; i < img->nr_segs; i++) {
		const struct isa_seg *g = &img->segs[i];

		if (vaddr >= g->vaddr && vaddr - g->vaddr < g->filesz)
			return vaddr - g->vaddr + g->offset;
	}
	return (uint64_t)-1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct isa_image img;
	struct isa_hits *h;
	uint64_t ips[24];	/* offsets: the middles of functions check-isa found, then spread */
	size_t nr = 0;

	if (fd < 0) {
		elf_check_cache(0);	/* one file, rewritten each input */
		fd = memfd_create("dlprof-fuzz-elf", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (size > (4u << 20) || ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;

	if (!isa_image_load(&img, path, ISA_SCAN_NO_CACHE)) {
		for (size_t i = 0; i < img.nr_funcs && nr < 12; i++) {
			const struct isa_func *f = &img.funcs[i];

			isa_image_func_name(&img, f);
			isa_image_find(&img, f->start + f->size / 2);
			ips[nr] = vaddr_to_off(&img, f->start + f->size / 2);
			nr += ips[nr] < size;
		}
		isa_image_offset_to_vaddr(&img, size / 2);
		isa_image_release(&img);
	}
	h = isa_hits_new();
	for (size_t i = 0; i < nr; i++)
		isa_hits_tier(h, h, path, NULL, 0, ips[i], NULL);
	for (uint64_t off = 0; off < size; off += size / 8 + 1)
		isa_hits_tier(h, h, path, NULL, 0, off, NULL);
	isa_hits_free(h);

	for (uint64_t off = 0; off < size && nr < 24; off += size / 12 + 1)
		ips[nr++] = off;
	as_mapping(data, size, ips, nr);
	return 0;
}
