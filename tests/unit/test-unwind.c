/* test-unwind.c - the CFI unwinder on real stacks of this very process, without the kernel.
 *
 * A chain of noinline functions (built -O2 without frame pointers, with CFI) ends in
 * unw_leaf, which captures its registers and copies its stack into a dlp_sample as
 * perf would.  The process model is fed this process's /proc/self/maps, then the
 * unwinder must return the chain, by name, to _start (complete).  Variants: a JIT frame
 * (anonymous code without CFI that calls back into C through a register) that must be
 * stepped over by stack scanning, and a stripped shared library without frame pointers
 * (path given as argv[1], optional).
 *
 * Usage: test-unwind [-d] [path/to/libunw-lib.so] [-v]   (TAP; -v prints the stacks)
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <asm/perf_regs.h>
#include <linux/perf_event.h>
#include <elfutils/libdwfl.h>

#include "frame.h"
#include "kunwind.h"
#include "process.h"
#include "tap.h"
#include "unwind.h"
#include "util.h"

#define STACK_COPY 16384
#define MAXF 64

struct capture {
	uint64_t regs[PERF_REG_X86_64_MAX];	/* by perf_regs index */
	uint8_t stack[STACK_COPY];
	uint64_t stack_size;
};

static struct capture cap_plain, cap_jit, cap_lib;
static struct capture *cap_target;
static uint64_t stack_top;
static volatile int sink;
static int verbose;
static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
		fprintf(stderr, __VA_ARGS__); \
		fputc('\n', stderr); \
		failures++; \
	} \
} while (0)

/* Capture this frame's registers and copy its stack, as PERF_SAMPLE_REGS_USER and
 * PERF_SAMPLE_STACK_USER would at an interrupt here. */
__attribute__((noinline)) void unw_leaf(void);
__attribute__((noinline)) void unw_leaf(void)
{
	uint64_t *r = cap_target->regs;
	uint64_t sp, n;

	__asm__ volatile(
		"movq %%rax, 0*8(%0)\n\t"
		"movq %%rbx, 1*8(%0)\n\t"
		"movq %%rcx, 2*8(%0)\n\t"
		"movq %%rdx, 3*8(%0)\n\t"
		"movq %%rsi, 4*8(%0)\n\t"
		"movq %%rdi, 5*8(%0)\n\t"
		"movq %%rbp, 6*8(%0)\n\t"
		"movq %%rsp, 7*8(%0)\n\t"
		"movq %%r8, 16*8(%0)\n\t"
		"movq %%r9, 17*8(%0)\n\t"
		"movq %%r10, 18*8(%0)\n\t"
		"movq %%r11, 19*8(%0)\n\t"
		"movq %%r12, 20*8(%0)\n\t"
		"movq %%r13, 21*8(%0)\n\t"
		"movq %%r14, 22*8(%0)\n\t"
		"movq %%r15, 23*8(%0)\n\t"
		"leaq 0(%%rip), %%rax\n\t"
		"movq %%rax, 8*8(%0)\n\t"
		: : "r"(r) : "rax", "memory");
	sp = r[PERF_REG_X86_SP];
	n = stack_top - sp < STACK_COPY ? stack_top - sp : STACK_COPY;
	memcpy(cap_target->stack, (void *)sp, n);
	cap_target->stack_size = n;
	sink++;
}

__attribute__((noinline)) void unw_b(void);
__attribute__((noinline)) void unw_b(void)
{
	unw_leaf();
	sink++;
}

__attribute__((noinline)) void unw_a(void);
__attribute__((noinline)) void unw_a(void)
{
	unw_b();
	sink++;
}

/* called back from the JIT code */
__attribute__((noinline)) void unw_jit_cb(void);
__attribute__((noinline)) void unw_jit_cb(void)
{
	unw_leaf();
	sink++;
}

/* x86_64 code without CFI: push %rbx; sub $16,%rsp; zero both slots; call *%rdi;
 * add $16,%rsp; pop %rbx; ret */
static const uint8_t jit_code[] = {
	0x53,
	0x48, 0x83, 0xec, 0x10,
	0x48, 0xc7, 0x04, 0x24, 0, 0, 0, 0,
	0x48, 0xc7, 0x44, 0x24, 0x08, 0, 0, 0, 0,
	0xff, 0xd7,
	0x48, 0x83, 0xc4, 0x10,
	0x5b,
	0xc3,
};
static void (*jit_fn)(void (*)(void));

__attribute__((noinline)) void unw_jit_a(void);
__attribute__((noinline)) void unw_jit_a(void)
{
	jit_fn(unw_jit_cb);
	sink++;
}

__attribute__((noinline)) void unw_lib_cb(void);
__attribute__((noinline)) void unw_lib_cb(void)
{
	unw_leaf();
	sink++;
}

static void (*lib_outer)(void (*)(void));

__attribute__((noinline)) void unw_lib_a(void);
__attribute__((noinline)) void unw_lib_a(void)
{
	lib_outer(unw_lib_cb);
	sink++;
}

/* Feed /proc/self/maps to the process model as mmap events of pid. */
static int load_maps(struct machine *m, uint32_t pid)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, off, ino;
		char perms[8], dev[16], path[4096] = "";
		struct dlp_mmap ev;

		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %4095[^\n]", &start, &end, perms,
			   &off, dev, &ino, path) < 6)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.pid = ev.tid = pid;
		ev.start = start;
		ev.len = end - start;
		ev.pgoff = off;
		ev.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
			  (perms[2] == 'x' ? PROT_EXEC : 0);
		ev.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		ev.misc = PERF_RECORD_MISC_USER;
		ev.filename = path[0] ? path : "//anon";
		if (!strcmp(path, "[stack]"))
			stack_top = end;
		if (machine_mmap(m, &ev))
			return -1;
	}
	fclose(f);
	return 0;
}

static void sample_from(struct dlp_sample *s, const struct capture *c, uint64_t regs_buf[])
{
	uint64_t mask = 0;
	unsigned n = 0;

	memset(s, 0, sizeof(*s));
	for (int r = 0; r < PERF_REG_X86_64_MAX; r++) {
		if (r >= PERF_REG_X86_DS && r <= PERF_REG_X86_GS)
			continue;	/* not sampled on x86_64 */
		mask |= 1ULL << r;
		regs_buf[n++] = c->regs[r];
	}
	s->pid = s->tid = getpid();
	s->ip = c->regs[PERF_REG_X86_IP];
	s->cpumode = PERF_RECORD_MISC_USER;
	s->user_abi = PERF_SAMPLE_REGS_ABI_64;
	s->user_regs_mask = mask;
	s->user_regs = regs_buf;
	s->stack = c->stack;
	s->stack_size = c->stack_size;
	s->time = 1;
}

static Dwfl *self_dwfl;

static const char *name_of(uint64_t ip, int is_ra, const char **modname)
{
	Dwfl_Module *mod;
	const char *n;

	*modname = NULL;
	if (is_ra)
		ip--;
	mod = dwfl_addrmodule(self_dwfl, ip);
	if (!mod)
		return NULL;
	*modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	n = dwfl_module_addrname(mod, ip);
	return n;
}

struct result {
	size_t n;
	uint64_t ips[MAXF];
	unsigned flags[MAXF];
	const char *names[MAXF];
	const char *mods[MAXF];
	int complete;
};

static void unwind_one(struct unwinder *u, const struct capture *c, struct result *res,
		       const char *title)
{
	struct dlp_sample s;
	uint64_t regs[PERF_REG_X86_64_MAX];

	sample_from(&s, c, regs);
	res->n = unwind_sample(u, &s, res->ips, res->flags, MAXF, &res->complete);
	if (verbose)
		fprintf(stderr, "%s: %zu frames, complete=%d\n", title, res->n, res->complete);
	for (size_t i = 0; i < res->n; i++) {
		res->names[i] = name_of(res->ips[i], i > 0, &res->mods[i]);
		if (verbose)
			fprintf(stderr, "  #%zu %#llx %s %s%s\n", i, (unsigned long long)res->ips[i],
				res->names[i] ? res->names[i] : "?",
				res->mods[i] ? res->mods[i] : "[no module]",
				res->flags[i] & FRAME_RECOVERED ? " RECOVERED" : "");
	}
}

/* Index of the first frame named name at or after from, or -1. */
static int find_frame(const struct result *r, const char *name, size_t from)
{
	for (size_t i = from; i < r->n; i++)
		if (r->names[i] && !strcmp(r->names[i], name))
			return i;
	return -1;
}

static void check_tail(const struct result *r, size_t main_idx, const char *title)
{
	CHECK(r->complete == 1, "%s: stack not complete", title);
	CHECK(r->n > main_idx + 1, "%s: nothing above main", title);
	if (r->n)
		CHECK(r->names[r->n - 1] && !strcmp(r->names[r->n - 1], "_start"),
		      "%s: last frame is %s, not _start", title,
		      r->names[r->n - 1] ? r->names[r->n - 1] : "?");
	for (size_t i = 0; i < r->n; i++)
		CHECK(r->names[i] || (r->flags[i] & FRAME_RECOVERED) || i == 2,
		      "%s: frame %zu (%#llx) unresolved", title, i, (unsigned long long)r->ips[i]);
}

static void test_plain(struct unwinder *u)
{
	struct result r;
	static const char *const want[] = { "unw_leaf", "unw_b", "unw_a", "main" };

	unwind_one(u, &cap_plain, &r, "plain");
	CHECK(r.n >= 5, "plain: only %zu frames", r.n);
	for (size_t i = 0; i < ARRAY_SIZE(want) && i < r.n; i++)
		CHECK(r.names[i] && !strcmp(r.names[i], want[i]), "plain: frame %zu is %s, want %s",
		      i, r.names[i] ? r.names[i] : "?", want[i]);
	for (size_t i = 0; i < r.n; i++)
		CHECK(!(r.flags[i] & FRAME_RECOVERED), "plain: frame %zu recovered", i);
	check_tail(&r, 3, "plain");
}

static void test_jit(struct unwinder *u, uint64_t jit_start)
{
	struct result r;
	int a;

	unwind_one(u, &cap_jit, &r, "jit");
	CHECK(r.n >= 6, "jit: only %zu frames", r.n);
	if (r.n < 6)
		return;
	CHECK(r.names[0] && !strcmp(r.names[0], "unw_leaf"), "jit: frame 0 not unw_leaf");
	CHECK(r.names[1] && !strcmp(r.names[1], "unw_jit_cb"), "jit: frame 1 not unw_jit_cb");
	CHECK(r.ips[2] > jit_start && r.ips[2] < jit_start + sizeof(jit_code),
	      "jit: frame 2 (%#llx) not in the JIT page", (unsigned long long)r.ips[2]);
	a = find_frame(&r, "unw_jit_a", 3);
	CHECK(a == 3, "jit: unw_jit_a at %d, want 3", a);
	CHECK(r.flags[3] & FRAME_RECOVERED, "jit: frame after the JIT one not marked recovered");
	CHECK(find_frame(&r, "main", 4) == 4, "jit: main not right above unw_jit_a");
	check_tail(&r, 4, "jit");
}

static void test_lib(struct unwinder *u, const char *libpath)
{
	struct result r;
	const char *base = strrchr(libpath, '/') ? strrchr(libpath, '/') + 1 : libpath;
	int a;

	unwind_one(u, &cap_lib, &r, "lib");
	CHECK(r.n >= 7, "lib: only %zu frames", r.n);
	if (r.n < 7)
		return;
	CHECK(r.names[1] && !strcmp(r.names[1], "unw_lib_cb"), "lib: frame 1 not unw_lib_cb");
	/* two frames in the stripped library: its static inner function and the exported
	 * outer one */
	for (int i = 2; i <= 3; i++)
		CHECK(r.mods[i] && strstr(r.mods[i], base), "lib: frame %d in %s, not the library",
		      i, r.mods[i] ? r.mods[i] : "?");
	CHECK(r.names[3] && !strcmp(r.names[3], "unw_lib_outer"), "lib: frame 3 not unw_lib_outer");
	a = find_frame(&r, "unw_lib_a", 4);
	CHECK(a == 4, "lib: unw_lib_a at %d, want 4", a);
	CHECK(find_frame(&r, "main", 5) == 5, "lib: main not above unw_lib_a");
	for (size_t i = 0; i < r.n; i++)
		CHECK(!(r.flags[i] & FRAME_RECOVERED), "lib: frame %zu needed recovery", i);
	check_tail(&r, 5, "lib");
}

/*
 * The kernel's walk (lib/record/python/pybpf.bpf.c) over the tables unwind_ktable() makes,
 * here in C over a captured stack: where the CFI goes, it must give the frames the
 * unwinder gives from the rules the tables came from.  It stops (as the kernel's does,
 * to scan or to fall back) at code without a table (JIT code) and at a row it cannot
 * follow; it has no scan of its own here.
 */
struct ktab_ent {
	const struct dso *dso;
	struct unw_ktable kt;
	int ok;
};

static struct ktab_ent ktabs[64];
static size_t nr_ktabs;

/* A table's 4-byte rows keep their order within each segment, and every page's rows
 * lie in its segment (a row at each segment's start): what the kernel's search needs */
static void check_packed(const struct unw_ktable *kt, const char *file)
{
	size_t bad = 0, segs = 0;

	for (size_t i = 1; i < kt->nr_rows; i++) {
		segs += KUNW_ROW_AT(kt->rows[i]) == 0;
		bad += KUNW_ROW_AT(kt->rows[i]) <= KUNW_ROW_AT(kt->rows[i - 1]) &&
		       KUNW_ROW_AT(kt->rows[i]) != 0;
		bad += KUNW_ROW_RULE(kt->rows[i]) >= kt->nr_rules;
	}
	for (size_t pg = 0; pg < kt->nr_pages; pg++) {
		const struct kunw_page *p = &kt->pages[pg];
		uint32_t start = KUNW_SEG_OFF(pg << KUNW_PAGE_SHIFT);

		/* (the first page may begin before the first row) */
		bad += p->first >= p->end || p->end > kt->nr_rows ||
		       (p->first && KUNW_ROW_AT(kt->rows[p->first]) > start);
		for (size_t r = p->first + 1; r < p->end; r++)
			bad += KUNW_ROW_AT(kt->rows[r]) <= start;
	}
	if (verbose)
		fprintf(stderr, "%s: %zu rows, %zu rules, %zu pages, %zu segments after the first\n",
			file, kt->nr_rows, kt->nr_rules, kt->nr_pages, segs);
	CHECK(!bad, "%s: %zu rows or pages out of order or out of their segment", file, bad);
}

static const struct unw_ktable *ktab_of(const struct dso *d)
{
	for (size_t i = 0; i < nr_ktabs; i++)
		if (ktabs[i].dso == d)
			return ktabs[i].ok ? &ktabs[i].kt : NULL;
	if (nr_ktabs == ARRAY_SIZE(ktabs))
		return NULL;
	ktabs[nr_ktabs].dso = d;
	ktabs[nr_ktabs].ok = !unwind_ktable(dso_file(d), d->build_id, d->build_id_size,
					     &ktabs[nr_ktabs].kt);
	if (ktabs[nr_ktabs].ok)
		check_packed(&ktabs[nr_ktabs].kt, dso_file(d));
	return ktabs[nr_ktabs].ok ? &ktabs[nr_ktabs++].kt : (nr_ktabs++, NULL);
}

static int cap_word(const struct capture *c, uint64_t addr, uint64_t *v)
{
	uint64_t lo = c->regs[PERF_REG_X86_SP];

	if (addr < lo || addr + 8 > lo + c->stack_size || (addr & 7))
		return -1;
	memcpy(v, c->stack + (addr - lo), 8);
	return 0;
}

/* Frames into ips (as the kernel's record has them); *whole when it ended in a root */
static size_t kwalk(struct machine *m, const struct capture *c, uint64_t *ips, size_t max,
		    int *whole)
{
	uint64_t ip = c->regs[PERF_REG_X86_IP], sp = c->regs[PERF_REG_X86_SP];
	uint64_t bp = c->regs[PERF_REG_X86_BP];
	int bp_known = 1, activation = 0;
	size_t n = 0;

	*whole = 0;
	while (n < max) {
		uint64_t look = n && !activation ? ip - 1 : ip, bias, off, cfa, ra, v;
		const struct map *mp = machine_find_map(m, getpid(), look, 2);
		const struct unw_ktable *kt;
		const struct kunw_rule *row = NULL;
		size_t lo, hi;
		uint32_t at;

		ips[n++] = ip;
		*whole = 0;
		if (!mp || mp->dso->anon || unwind_map_bias(mp, &bias) || !(kt = ktab_of(mp->dso)))
			break;
		off = look - bias - kt->base;
		if (off >> KUNW_PAGE_SHIFT >= kt->nr_pages)
			break;
		/* as the kernel's: 4-byte rows, their addresses within the page's segment */
		lo = kt->pages[off >> KUNW_PAGE_SHIFT].first;
		hi = kt->pages[off >> KUNW_PAGE_SHIFT].end;
		at = KUNW_SEG_OFF(off);
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (KUNW_ROW_AT(kt->rows[mid]) <= at)
				lo = mid;
			else
				hi = mid;
		}
		if (lo >= kt->nr_rows || KUNW_ROW_AT(kt->rows[lo]) > at)
			break;
		row = &kt->rules[KUNW_ROW_RULE(kt->rows[lo])];
		*whole = row->kind >> 7;
		activation = 0;
		switch (row->kind & ~KR_IN_ROOT) {
		case KR_ROOT:
			*whole = 1;
			return n;
		case KR_SIGNAL:
			if (cap_word(c, sp + KUNW_SIG_RIP, &ip) || cap_word(c, sp + KUNW_SIG_RBP, &bp) ||
			    cap_word(c, sp + KUNW_SIG_RSP, &sp) || !ip)
				return n;
			bp_known = activation = 1;
			continue;
		case KR_RSP:
			cfa = sp + (int64_t)row->cfa * 8;
			break;
		case KR_PLT:
			cfa = sp + (int64_t)row->cfa * 8 + ((ip & 15) >= (uint64_t)row->rbp ? 8 : 0);
			break;
		case KR_RBP:
		case KR_RBP_DEREF:
			if (!bp_known)
				return n;
			cfa = bp + (int64_t)row->cfa * 8;
			if ((row->kind & ~KR_IN_ROOT) == KR_RBP_DEREF && cap_word(c, cfa, &cfa))
				return n;
			break;
		case KR_NONE:
			if (!bp_known || cap_word(c, bp, &v) || cap_word(c, bp + 8, &ra))
				return n;
			cfa = bp + 16;
			bp = v;
			goto step;
		default:
			return n;
		}
		if (cap_word(c, cfa - 8, &ra))
			return n;
		if ((row->kind & ~KR_IN_ROOT) != KR_PLT && row->rbp != KR_RBP_SAME) {
			if (row->rbp == KR_RBP_UNKNOWN)
				bp_known = 0;
			else if (row->rbp == KR_RBP_AT_RBP)
				bp_known = bp_known && !cap_word(c, bp, &bp);
			else
				bp_known = !cap_word(c, cfa + (int64_t)row->rbp * 8, &bp);
		}
step:
		if (!ra || cfa <= sp)
			return n;
		sp = cfa;
		ip = ra;
	}
	return n;
}

/* The tables' walk against the unwinder's: the same frames, as far as it goes (all of
 * them, whole, where no JIT code is on the way) */
static void test_tables(struct machine *m, struct unwinder *u, const struct capture *c,
			const char *title, int through_jit)
{
	struct result r;
	uint64_t ips[MAXF];
	int whole;
	size_t n;

	unwind_one(u, c, &r, title);
	n = kwalk(m, c, ips, MAXF, &whole);
	if (verbose)
		fprintf(stderr, "%s: tables' walk %zu frames, whole=%d\n", title, n, whole);
	CHECK(n <= r.n, "%s: the tables' walk gave %zu frames, the unwinder %zu", title, n, r.n);
	for (size_t i = 0; i < n && i < r.n; i++)
		CHECK(ips[i] == r.ips[i], "%s: frame %zu: %#llx, the unwinder's %#llx", title, i,
		      (unsigned long long)ips[i], (unsigned long long)r.ips[i]);
	if (through_jit) {
		CHECK(n == 3 && !whole, "%s: the walk did not stop at the JIT frame (%zu frames)",
		      title, n);
	} else {
		CHECK(n == r.n && whole && r.complete, "%s: %zu of %zu frames, whole=%d", title,
		      n, r.n, whole);
	}
}

/*
 * The draining thread's walks (unwinder_set_fast), on files no walk has opened yet: they
 * open a file and its .eh_frame themselves and give the stack a walk without fast gives;
 * they give up where a .debug_frame would be read for the first time (dbg_only: the
 * library's CFI is there alone), and after a walk without fast has read it they no
 * longer do.  Runs before any other walk (the files' state is the machine's).
 */
static void test_fast(struct machine *m, int with_lib, int dbg_only)
{
	struct unwinder *fast = unwinder_new(m), *slow;
	struct result a, b;

	if (!fast)
		return;
	unwinder_set_fast(fast, 1);
	unwind_one(fast, &cap_plain, &a, "fast plain");
	CHECK(a.n >= 5 && !unwind_bailed(fast), "fast: the plain stack gave up (%zu frames)", a.n);
	if (with_lib) {
		unwind_one(fast, &cap_lib, &a, "fast lib");
		if (dbg_only) {
			CHECK(a.n == 0 && unwind_bailed(fast),
			      "fast: a .debug_frame not read yet did not give up (%zu frames)", a.n);
			unwinder_set_fast(fast, 0);
			unwind_one(fast, &cap_lib, &a, "lib, not fast");
			CHECK(a.n >= 7 && !unwind_bailed(fast), "not fast: lib gave %zu frames", a.n);
			unwinder_set_fast(fast, 1);
			unwind_one(fast, &cap_lib, &a, "fast lib, read");
		}
		CHECK(a.n >= 7 && !unwind_bailed(fast), "fast: lib gave up (%zu frames)", a.n);
		slow = unwinder_new(m);
		if (slow) {
			unwind_one(slow, &cap_lib, &b, "slow lib");
			CHECK(a.n == b.n && !memcmp(a.ips, b.ips, a.n * sizeof(a.ips[0])),
			      "fast: lib stack differs from a walk without fast");
			unwinder_free(slow);
		}
	}
	unwinder_free(fast);
}

static double time_unwind(struct unwinder *u, const struct capture *c, int iters)
{
	struct dlp_sample s;
	uint64_t regs[PERF_REG_X86_64_MAX], ips[MAXF];
	unsigned flags[MAXF];
	struct timespec t0, t1;
	int complete;

	sample_from(&s, c, regs);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < iters; i++)
		unwind_sample(u, &s, ips, flags, MAXF, &complete);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / iters / 1e3;
}

static const Dwfl_Callbacks self_callbacks = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

/* An executable's wants (unwind_ktable_wants_keep): the files used this run kept, the
 * others a run older each run, gone after KTAB_WANTS_RUNS unused; a line of an older
 * cache (the hex alone) read as used in the last run */
static int has_id(uint8_t (*ids)[21], size_t n, const uint8_t *id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i][0] == 20 && !memcmp(ids[i] + 1, id, 20))
			return 1;
	return 0;
}

/* The decoder kunw_call_before was until 2026-11-29: each length from the end,
 * with an optional notrack or segment prefix and REX skipped before the ff.  The new one
 * tries each place an ff stands, and must say the same of every window. */
static int call_before_by_length(const uint8_t *b)
{
	uint32_t len, p, n, mod, rm, modrm;

	if (b[2] == 0xe8)
		return 1;
	for (len = 2; len <= 7; len++) {
		p = 7 - len;
		if (p < 7 && (b[p] == 0x3e || b[p] == 0x2e || b[p] == 0x67))
			p++;
		if (p < 7 && (b[p] & 0xf0) == 0x40)
			p++;
		if (7 - p < 2 || b[p] != 0xff)
			continue;
		modrm = b[p + 1];
		if (((modrm >> 3) & 7) != 2)
			continue;
		mod = modrm >> 6;
		rm = modrm & 7;
		n = 2;
		if (mod != 3) {
			if (rm == 4) {
				if (7 - p < 3)
					continue;
				n++;
				if (mod == 0 && (b[p + 2] & 7) == 5)
					n += 4;
			} else if (mod == 0 && rm == 5) {
				n += 4;
			}
			if (mod == 1)
				n += 1;
			else if (mod == 2)
				n += 4;
		}
		if (p + n == 7)
			return 1;
	}
	return 0;
}

static void test_call_before(void)
{
	/* the 7 bytes before a return address, by hand from the encodings */
	static const struct {
		uint8_t b[7];
		int call;
		const char *what;
	} known[] = {
		{ { 0x90, 0x90, 0xe8, 0x10, 0x20, 0x30, 0x40 }, 1, "call rel32" },
		{ { 0x90, 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0 }, 1, "call rax" },
		{ { 0x90, 0x90, 0x90, 0x90, 0x41, 0xff, 0xd3 }, 1, "call r11" },
		{ { 0x90, 0x90, 0x90, 0x90, 0x3e, 0xff, 0xd0 }, 1, "notrack call rax" },
		{ { 0x90, 0xff, 0x15, 0x00, 0x10, 0x00, 0x00 }, 1, "call [rip+disp32]" },
		{ { 0x90, 0x90, 0x90, 0x90, 0xff, 0x14, 0x24 }, 1, "call [rsp]" },
		{ { 0x90, 0x90, 0x90, 0xff, 0x54, 0x24, 0x08 }, 1, "call [rsp+8]" },
		{ { 0xff, 0x94, 0x24, 0x00, 0x01, 0x00, 0x00 }, 1, "call [rsp+disp32]" },
		{ { 0x90, 0x90, 0x90, 0x90, 0xff, 0x50, 0x18 }, 1, "call [rax+24]" },
		{ { 0x90, 0x90, 0x90, 0x90, 0xff, 0x24, 0x24 }, 0, "jmp [rsp] (ff /4)" },
		{ { 0x90, 0x90, 0x90, 0x90, 0xff, 0xd0, 0x90 }, 0, "call rax, a byte before the end" },
		{ { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 }, 0, "nops" },
		{ { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0xff }, 0, "ff last, no ModRM" },
	};
	uint8_t b[7];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	static const uint8_t special[] = { 0xff, 0xe8, 0x3e, 0x2e, 0x67, 0x41, 0x48, 0x15, 0x14,
					   0x24, 0x25, 0x94, 0x54, 0xd0, 0x10, 0x50, 0x90, 0x05 };
	size_t differ = 0, calls = 0;

	for (size_t i = 0; i < ARRAY_SIZE(known); i++)
		CHECK(kunw_call_before(known[i].b) == known[i].call &&
		      call_before_by_length(known[i].b) == known[i].call,
		      "call before: %s: %d, by length %d, for %d", known[i].what,
		      kunw_call_before(known[i].b), call_before_by_length(known[i].b),
		      known[i].call);
	/* every ff, ModRM and SIB at each place, and windows of bytes the decoders look for */
	for (uint32_t p = 0; p < 6; p++)
		for (uint32_t v = 0; v < 65536; v++) {
			memset(b, 0x90, sizeof(b));
			b[p] = 0xff;
			b[p + 1] = v >> 8;
			if (p + 2 < 7)
				b[p + 2] = v & 0xff;
			if (p && v % 7 == 0)
				b[p - 1] = special[v % ARRAY_SIZE(special)];
			calls += kunw_call_before(b);
			differ += kunw_call_before(b) != call_before_by_length(b);
		}
	for (size_t i = 0; i < 4000000; i++) {
		for (size_t k = 0; k < 7; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			b[k] = x % 3 ? special[(x >> 8) % ARRAY_SIZE(special)] : (uint8_t)(x >> 16);
		}
		calls += kunw_call_before(b);
		differ += kunw_call_before(b) != call_before_by_length(b);
	}
	if (verbose)
		printf("# call before: %zu windows of 4,393,216 a call, %zu differ\n", calls, differ);
	CHECK(!differ && calls > 10000, "call before: %zu windows differ from the decoder by "
	      "length (%zu calls)", differ, calls);
}

static void test_wants(void)
{
	char dir[] = "/tmp/dlprof-wants.XXXXXX", *old = getenv("DLPROF_KTAB_DIR"), path[256];
	uint8_t exe[20], a[21], b[21], c[20], two[2][21], (*got)[21];
	size_t n;
	FILE *f;
	int w;

	old = old ? strdup(old) : NULL;
	if (!mkdtemp(dir)) {
		CHECK(0, "wants: no folder for the cache: %s", strerror(errno));
		free(old);
		return;
	}
	setenv("DLPROF_KTAB_DIR", dir, 1);
	memset(exe, 0xe1, 20);
	a[0] = b[0] = 20;
	memset(a + 1, 0xa1, 20);
	memset(b + 1, 0xb1, 20);
	memset(c, 0xc1, 20);
	unwind_ktable_wants_keep(exe, 20, NULL, 0);
	n = unwind_ktable_wants(exe, 20, &got);
	CHECK(n == 0, "wants: %zu kept where none was used", n);
	free(got);
	memcpy(two[0], a, 21);
	memcpy(two[1], b, 21);
	unwind_ktable_wants_keep(exe, 20, (const uint8_t (*)[21])two, 2);
	/* a line as an older dlprof wrote it: the hex alone */
	w = snprintf(path, sizeof(path), "%s/e1/", dir);
	for (int k = 1; k < 20; k++)
		w += snprintf(path + w, sizeof(path) - (size_t)w, "e1");
	snprintf(path + w, sizeof(path) - (size_t)w, ".wants");
	f = fopen(path, "a");
	CHECK(f != NULL, "wants: %s not made", path);
	if (f) {
		fputs("c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1c1\n", f);
		fclose(f);
	}
	n = unwind_ktable_wants(exe, 20, &got);
	CHECK(n == 3 && has_id(got, n, a + 1) && has_id(got, n, b + 1) && has_id(got, n, c),
	      "wants: %zu listed, not the two used and the older line", n);
	free(got);
	for (int r = 1; r < KTAB_WANTS_RUNS; r++)
		unwind_ktable_wants_keep(exe, 20, (const uint8_t (*)[21])a, 1);
	n = unwind_ktable_wants(exe, 20, &got);
	CHECK(n == 3, "wants: %zu listed after %d runs unused, not 3", n, KTAB_WANTS_RUNS - 1);
	free(got);
	unwind_ktable_wants_keep(exe, 20, (const uint8_t (*)[21])a, 1);
	n = unwind_ktable_wants(exe, 20, &got);
	CHECK(n == 1 && has_id(got, n, a + 1), "wants: %zu listed after %d runs unused, not the "
	      "used one alone", n, KTAB_WANTS_RUNS);
	free(got);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	(void)!system(path);
	if (old)
		setenv("DLPROF_KTAB_DIR", old, 1);
	else
		unsetenv("DLPROF_KTAB_DIR");
	free(old);
}

int main(int argc, char **argv)
{
	const char *libpath = NULL;
	struct machine *m;
	struct unwinder *u;
	void *page, *lib = NULL;
	int dbg_only = 0;
	double plain_us, jit_us;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = 1;
		else if (!strcmp(argv[i], "-d"))
			dbg_only = 1;	/* the library's CFI is in .debug_frame alone */
		else
			libpath = argv[i];
	}
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return perror("mmap"), 2;
	memcpy(page, jit_code, sizeof(jit_code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC))
		return perror("mprotect"), 2;
	jit_fn = (void (*)(void (*)(void)))page;
	if (libpath) {
		lib = dlopen(libpath, RTLD_NOW);
		if (!lib || !(lib_outer = (void (*)(void (*)(void)))dlsym(lib, "unw_lib_outer"))) {
			fprintf(stderr, "cannot load %s: %s\n", libpath, dlerror());
			return 2;
		}
	}

	m = machine_new();
	if (load_maps(m, getpid()) || !stack_top)
		return fprintf(stderr, "cannot read /proc/self/maps\n"), 2;
	self_dwfl = dwfl_begin(&self_callbacks);
	if (!self_dwfl || dwfl_linux_proc_report(self_dwfl, getpid()) ||
	    dwfl_report_end(self_dwfl, NULL, NULL))
		return fprintf(stderr, "cannot report own modules\n"), 2;

	cap_target = &cap_plain;
	unw_a();
	cap_target = &cap_jit;
	unw_jit_a();
	if (lib) {
		cap_target = &cap_lib;
		unw_lib_a();
	}

	TAP_GROUP(failures, !lib ? "fast walks (the drain's): the plain stack" :
		  dbg_only ? "fast walks give up on a .debug_frame not read yet, not after" :
		  "fast walks (the drain's) open the library, the stack of a walk without fast",
		  test_fast(m, !!lib, dbg_only));
	u = unwinder_new(m);
	if (!u)
		return 2;
	TAP_GROUP(failures, "main -> unw_a -> unw_b -> unw_leaf, to _start", test_plain(u));
	TAP_GROUP(failures, "over JIT code without CFI (a stack scan, marked recovered)",
		  test_jit(u, (uint64_t)page));
	if (lib)
		TAP_GROUP(failures, dbg_only ? "through the library with its CFI in .debug_frame alone" :
			  "through a stripped library without frame pointers", test_lib(u, libpath));
	TAP_GROUP(failures, "the kernel walk's tables give the unwinder's frames: plain stack",
		  test_tables(m, u, &cap_plain, "tables, plain", 0));
	TAP_GROUP(failures, "the kernel walk's tables: up to the JIT frame, where it must scan",
		  test_tables(m, u, &cap_jit, "tables, jit", 1));
	if (lib && !dbg_only)
		TAP_GROUP(failures, "the kernel walk's tables: the stripped library",
			  test_tables(m, u, &cap_lib, "tables, lib", 0));
	for (size_t i = 0; i < nr_ktabs; i++)
		unwind_ktable_release(&ktabs[i].kt);
	TAP_GROUP(failures, "a call before a return address: known encodings, the same as by length",
		  test_call_before());
	TAP_GROUP(failures, "an executable's wants: kept while used, gone after KTAB_WANTS_RUNS unused",
		  test_wants());
	plain_us = time_unwind(u, &cap_plain, 20000);
	jit_us = time_unwind(u, &cap_jit, 20000);
	/* (told, not held: its speed is bench/unwind.sh's to measure, against perf) */
	printf("# unwind time: plain %.1f us/sample, jit (with stack scan) %.1f us/sample\n",
	       plain_us, jit_us);
	unwinder_free(u);
	machine_free(m);
	dwfl_end(self_dwfl);
	return tap_done();
}
