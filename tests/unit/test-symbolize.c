/* test-symbolize.c - names of a test binary built with -g and of its stripped copy (same
 * addresses, symbol vs FDE bounds), demangling, the PAUSE-loop trait, srcline, JIT maps
 * and jitdump parsing (valid and corrupt).  TAP output. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jitsym.h"
#include "ksyms.h"
#include "symbolize.h"
#include "util.h"

#include "unit/tap.h"

static const char src[] =
	"#include <stdlib.h>\n"
	"volatile int flag; volatile double sink;\n"
	"static __attribute__((noinline)) void spin_wait(void)\n"
	"{ while (!flag) __builtin_ia32_pause(); }\n"
	"static __attribute__((noinline)) double work(int n)\n"
	"{ double x = 1; for (int i = 0; i < n; i++) x = x * 1.5 + 1; return x; }\n"
	"int main(int argc, char **argv)\n"
	"{ if (argc > 5) spin_wait(); sink = work(argc * 100); return 0; }\n";

struct fn {
	uint64_t vaddr, size, off;
};

/* vaddr, size and file offset of a symbol, through the program headers */
static int lookup(const char *path, const char *name, struct fn *f)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t nph;
	int found = 0;

	elf_version(EV_CURRENT);
	if (fd < 0 || !(e = elf_begin(fd, ELF_C_READ, NULL)))
		return -1;
	while ((scn = elf_nextscn(e, scn)) && !found) {
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;

			gelf_getsym(d, i, &s);
			if (!strcmp(elf_strptr(e, sh.sh_link, s.st_name), name)) {
				f->vaddr = s.st_value;
				f->size = s.st_size;
				found = 1;
				break;
			}
		}
	}
	elf_getphdrnum(e, &nph);
	for (size_t i = 0; i < nph && found; i++) {
		GElf_Phdr ph;

		gelf_getphdr(e, i, &ph);
		if (ph.p_type == PT_LOAD && f->vaddr >= ph.p_vaddr && f->vaddr < ph.p_vaddr + ph.p_filesz)
			f->off = f->vaddr - ph.p_vaddr + ph.p_offset;
	}
	elf_end(e);
	close(fd);
	return found ? 0 : -1;
}

static struct frame resolve(struct symbolizer *s, struct dso *d, struct map *m, uint64_t off)
{
	struct frame f[4];

	m->dso = d;
	symbolize(s, m, m->start + off - m->pgoff, f, 1);
	return f[0];
}

static void test_binary(const char *dir)
{
	char cmd[2200], bin[512], strip[512], csrc[512], want[256];
	struct fn spin, work;
	struct dso dg = { 0 }, ds = { 0 };
	struct map m = { 0 };
	struct symbolize_opts so = { 1, 0 };
	struct symbolizer *s;
	struct frame a, b, c, d2;
	FILE *f;

	snprintf(csrc, sizeof(csrc), "%s/symt.c", dir);
	snprintf(bin, sizeof(bin), "%s/symt", dir);
	snprintf(strip, sizeof(strip), "%s/symt-stripped", dir);
	f = fopen(csrc, "w");
	fputs(src, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "gcc -O1 -g -o %s %s && strip -o %s %s", bin, csrc, strip, bin);
	if (system(cmd)) {
		ok(0, "build the test binary", cmd);
		return;
	}
	ok(!lookup(bin, "work", &work) && !lookup(bin, "spin_wait", &spin), "test binary has symbols", NULL);

	dg.path = bin;
	dg.short_name = "symt";
	ds.path = strip;
	ds.short_name = "symt-stripped";
	m.start = 0x555555554000ULL;
	m.end = m.start + (1 << 20);
	m.pgoff = 0;

	s = symbolizer_new(&so);
	a = resolve(s, &dg, &m, work.off + 4);
	ok(!strcmp(a.sym, "work") && !(a.flags & (FRAME_FDE | FRAME_UNKNOWN)), "symbol name in -g binary", a.sym);
	ok(a.sym_start == m.start + work.off, "sym_start is the function's process address", NULL);
	/* the first DWARF lookup of a file (it sets libdwfl up): work+4 once got no line */
	ok(a.srcline && !strcmp(a.srcline, "symt.c:6"), "srcline of the first address looked up (work+4)", a.srcline);

	b = resolve(s, &ds, &m, work.off + 4);
	c = resolve(s, &ds, &m, work.off + work.size - 2);
	snprintf(want, sizeof(want), "symt-stripped!func@0x%llx", (unsigned long long)work.vaddr);
	ok((b.flags & FRAME_FDE) && !strcmp(b.sym, want), "stripped: FDE-bounded name", b.sym);
	ok(b.sym == c.sym, "stripped: two addresses of one function share one name", c.sym);
	ok(b.sym_start == a.sym_start, "stripped: FDE start equals the symbol start", NULL);

	/* a different mapping base and file offset: same answer */
	m.start = 0x7f0000000000ULL;
	d2 = resolve(s, &ds, &m, work.off + 4);
	ok(d2.sym == b.sym && d2.sym_start == m.start + work.off, "cache keyed by file offset, not address", d2.sym);

	a = resolve(s, &dg, &m, spin.off + 2);
	b = resolve(s, &ds, &m, spin.off + 2);
	c = resolve(s, &dg, &m, work.off + 2);
	ok(a.traits & TRAIT_PAUSE_LOOP, "PAUSE loop trait on the spin function (symbol)", a.sym);
	ok(a.srcline && !strcmp(a.srcline, "symt.c:4"), "srcline from DWARF", a.srcline);
	ok(b.traits & TRAIT_PAUSE_LOOP, "PAUSE loop trait on the spin function (FDE bounds)", b.sym);
	ok(!(c.traits & TRAIT_PAUSE_LOOP), "no PAUSE trait on plain arithmetic", c.sym);
	symbolizer_free(s);
	ok(!dg.sym_priv && !ds.sym_priv, "symbolizer_free clears dso->sym_priv", NULL);

	/* build-id mismatch: treated as unknown, not named wrongly */
	memset(ds.build_id, 0xab, 20);
	ds.build_id_size = 20;
	s = symbolizer_new(NULL);
	b = resolve(s, &ds, &m, work.off + 4);
	ok((b.flags & FRAME_UNKNOWN) != 0, "build-id mismatch gives [unknown]", b.sym);
	symbolizer_free(s);
}

static void test_demangle(void)
{
	char *d = symbolize_demangle("_ZN5repns6KernelIdE3runEld");
	char *n = symbolize_demangle("plain_c_name");

	ok(d && !strcmp(d, "repns::Kernel<double>::run(long, double)"), "symbolize_demangle template member", d);
	ok(!n, "C names are not demangled", n);
	free(d);
}

static void test_traits(void)
{
	/* 0: pause; 2: mov eax,[rdi]; 4: test eax,eax; 6: je -8 (to 0) */
	static const uint8_t spin[] = { 0xf3, 0x90, 0x8b, 0x07, 0x85, 0xc0, 0x74, 0xf8, 0xc3 };
	/* pause, then a forward jump only */
	static const uint8_t fwd[] = { 0xf3, 0x90, 0x74, 0x02, 0x90, 0x90, 0xc3 };

	ok(symbolize_code_traits(spin, sizeof(spin)) == TRAIT_PAUSE_LOOP, "pause + backward jcc", NULL);
	ok(symbolize_code_traits(fwd, sizeof(fwd)) == 0, "pause + forward jump is not a spin loop", NULL);
}

static void test_jit(void)
{
	struct jitsyms *j = jitsyms_new();
	const char map[] = "7f0000001000 100 _jit_avx512_common_conv_fwd_kernel\n"
			   "0x7f0000002000 0x40 jit_single_blk_kernel\n";
	const struct jitsym *e;
	uint8_t dump[256];
	size_t n = 0;
	uint32_t u32;
	uint64_t u64, start;
	const uint8_t *code;
	size_t len;

	ok(jitsyms_add_perfmap(j, 42, map, strlen(map), "t") == 2, "perf map: two entries", NULL);
	e = jitsyms_find(j, 42, 0x7f00000010ff);
	ok(e && !strcmp(e->name, "_jit_avx512_common_conv_fwd_kernel"), "perf map lookup", e ? e->name : NULL);
	ok(!jitsyms_find(j, 42, 0x7f0000001100), "perf map: end is exclusive", NULL);
	e = jitsyms_find(j, 42, 0x7f0000002010);
	ok(e && !strcmp(e->name, "jit_single_blk_kernel"), "perf map with 0x prefixes", e ? e->name : NULL);
	ok(jitsyms_add_perfmap(j, 42, "zz 10 x\n", 8, "bad") == -1, "corrupt perf map rejected", NULL);

	/* a jitdump: header + one code load of 4 bytes */
#define P32(v) (u32 = (v), memcpy(dump + n, &u32, 4), n += 4)
#define P64(v) (u64 = (v), memcpy(dump + n, &u64, 8), n += 8)
	P32(0x4A695444); P32(1); P32(40); P32(62); P32(0); P32(42); P64(1); P64(0);
	P32(0); P32(16 + 40 + 8 + 4 + 4); P64(5);
	P32(42); P32(43); P64(0x7f0000003000); P64(0x7f0000003000); P64(4); P64(1);
	memcpy(dump + n, "jitk_a\0\0", 8); n += 8;	/* name "jitk_a" + NUL, padded into the name field */
	memcpy(dump + n, "\x62\xf1\x7c\x48", 4); n += 4;
	/* name is "jitk_a\0" then code starts right after the NUL: fix up by rebuilding */
	n = 0;
	P32(0x4A695444); P32(1); P32(40); P32(62); P32(0); P32(42); P64(1); P64(0);
	P32(0); P32(16 + 40 + 7 + 4); P64(5);
	P32(42); P32(43); P64(0x7f0000003000); P64(0x7f0000003000); P64(4); P64(1);
	memcpy(dump + n, "jitk_a", 7); n += 7;
	memcpy(dump + n, "\x62\xf1\x7c\x48", 4); n += 4;
	ok(jitsyms_add_jitdump(j, 42, dump, n, "t") == 1, "jitdump: one code load", NULL);
	e = jitsyms_find(j, 42, 0x7f0000003002);
	ok(e && !strcmp(e->name, "jitk_a"), "jitdump lookup", e ? e->name : NULL);
	ok(!jitsym_code(j, 42, 0x7f0000003001, &start, &code, &len) && len == 4 && code[0] == 0x62 &&
	   start == 0x7f0000003000, "jitdump code bytes kept", NULL);
	/* corrupt: record size beyond the file */
	u32 = 1000;
	memcpy(dump + 44, &u32, 4);
	ok(jitsyms_add_jitdump(j, 42, dump, n, "corrupt") == -1, "jitdump with bad record size rejected", NULL);
	ok(jitsyms_add_jitdump(j, 42, dump, 20, "short") == -1, "short jitdump rejected", NULL);
	memcpy(dump, "XXXX", 4);
	ok(jitsyms_add_jitdump(j, 42, dump, n, "magic") == -1, "bad magic rejected", NULL);
	jitsyms_free(j);
}

static void test_ksyms(void)
{
	struct ksyms *k = ksyms_new();
	const char txt[] = "ffffffff81000000 100 _stext\nffffffff81000100 80 do_syscall_64\n"
			   "ffffffffc0000000 40 e1000_intr [e1000]\nnonsense\n";
	const struct ksym *y;

	ok(ksyms_add_text(k, txt, strlen(txt)) == 3, "ksyms text: three symbols", NULL);
	y = ksyms_find(k, 0xffffffff81000150);
	ok(y && !strcmp(y->name, "do_syscall_64"), "ksyms lookup", y ? y->name : NULL);
	y = ksyms_find(k, 0xffffffffc0000010);
	ok(y && y->module && !strcmp(y->module, "e1000"), "ksyms module", y ? y->module : NULL);
	ok(!ksyms_find(k, 0xffffffff81000180), "ksyms: outside every symbol", NULL);
	ksyms_free(k);
}

/*
 * Separate debug info, found through DLPROF_DEBUGINFO_PATH: a stripped binary whose
 * debug file sits at DBG/.build-id/xx/yyyy.debug (by build-id), and one without a
 * build-id whose debug file is found through .gnu_debuglink under DBG + its directory.
 * Both must give the symbol name (not FDE bounds) and the source line.
 */
static void test_debugfile(const char *dir)
{
	char cmd[4096], bin[512], csrc[512];
	struct fn work, work2;
	struct dso db = { 0 }, dl = { 0 };
	struct map m = { 0 };
	struct symbolize_opts so = { 1, 0 };
	struct symbolizer *s;
	struct frame a;

	snprintf(csrc, sizeof(csrc), "%s/symt.c", dir);
	snprintf(bin, sizeof(bin), "%s/symt", dir);
	if (lookup(bin, "work", &work)) {
		ok(0, "debug file: the test binary", bin);
		return;
	}
	/* by build-id: DBG/.build-id/xx/rest.debug, no debuglink in the stripped file */
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; mkdir -p dbg bin; "
		 "id=$(readelf -n symt | sed -n 's/.*Build ID: *//p'); "
		 "mkdir -p dbg/.build-id/$(echo $id | cut -c1-2); "
		 "objcopy --only-keep-debug symt dbg/.build-id/$(echo $id | cut -c1-2)/$(echo $id | cut -c3-).debug; "
		 "strip --strip-all -o bin/symt-bid symt; "
		 /* no build-id: .gnu_debuglink, debug file under DBG/<dir of the binary>/ */
		 "gcc -O1 -g -Wl,--build-id=none -o bin/symt-nobid symt.c; "
		 "mkdir -p dbg%s/bin; objcopy --only-keep-debug bin/symt-nobid dbg%s/bin/symt-nobid.debug; "
		 "strip --strip-all bin/symt-nobid; "
		 "objcopy --add-gnu-debuglink=dbg%s/bin/symt-nobid.debug bin/symt-nobid",
		 dir, dir, dir, dir);
	if (system(cmd)) {
		ok(0, "debug file: build the stripped copies and their debug files", cmd);
		return;
	}
	snprintf(cmd, sizeof(cmd), "%s/dbg", dir);
	setenv("DLPROF_DEBUGINFO_PATH", cmd, 1);
	s = symbolizer_new(&so);
	snprintf(bin, sizeof(bin), "%s/bin/symt-bid", dir);
	db.path = bin;
	db.short_name = "symt-bid";
	m.start = 0x555555554000ULL;
	m.end = m.start + (1 << 20);
	a = resolve(s, &db, &m, work.off + 4);
	ok(!strcmp(a.sym, "work") && !(a.flags & FRAME_FDE), "debug file by build-id: symbol name", a.sym);
	ok(a.srcline && !strcmp(a.srcline, "symt.c:6"), "debug file by build-id: srcline", a.srcline);

	snprintf(csrc, sizeof(csrc), "%s/bin/symt-nobid", dir);
	dl.path = csrc;
	dl.short_name = "symt-nobid";
	if (lookup(csrc, "work", &work2) == 0)
		ok(0, "debug file by debuglink: the binary is stripped", NULL);
	snprintf(cmd, sizeof(cmd), "%s/dbg%s/bin/symt-nobid.debug", dir, dir);
	if (lookup(cmd, "work", &work2)) {
		ok(0, "debug file by debuglink: its debug file has the symbol", cmd);
	} else {
		/* the debug file's symbol says where work is in the stripped binary too */
		a = resolve(s, &dl, &m, work2.vaddr + 4);
		ok(!strcmp(a.sym, "work") && !(a.flags & FRAME_FDE), "debug file by .gnu_debuglink: symbol name", a.sym);
		ok(a.srcline && !strcmp(a.srcline, "symt.c:6"), "debug file by .gnu_debuglink: srcline", a.srcline);
	}
	symbolizer_free(s);

	/* the default path does not know the test directory: FDE bounds, no line */
	unsetenv("DLPROF_DEBUGINFO_PATH");
	s = symbolizer_new(&so);
	a = resolve(s, &db, &m, work.off + 4);
	ok((a.flags & FRAME_FDE) && !a.srcline, "without the path: FDE bounds only", a.sym);
	symbolizer_free(s);
}

int main(void)
{
	char dir[] = "/tmp/dlprof-symt.XXXXXX";
	char cmd[600];

	if (!mkdtemp(dir))
		return 1;
	test_binary(dir);
	test_debugfile(dir);
	test_demangle();
	test_traits();
	test_jit();
	test_ksyms();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		printf("# could not remove %s\n", dir);
	return tap_done();
}
