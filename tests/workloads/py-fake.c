/* py-fake.c - a fake CPython 3.11 (or 3.12) for dlprof's Python reader: built as
 * "python3.11" and exporting _PyRuntime, Py_Version and PyCode_Type, it lays out an
 * interpreter, a thread state, a _PyCFrame on the stack of a function named
 * _PyEval_EvalFrameDefault, and a chain of three interpreter frames (fake_root ->
 * fake_mid -> fake_leaf, in fake.py) with CPython 3.11's offsets (3.12's in good312, with
 * the eval loop's entry shim frame outside fake_root), then spins there.
 *
 * Py_Version is what it is from exec on, as in a real interpreter (dlprof may probe the
 * process as it starts): each version is its own binary, built with -DFAKE_VERSION
 * (tests/report.mk: fakepy/python3.11, fakepy312/python3.12, fakepy313/python3.13,
 * fakepy314/python3.14); a mode run by another version's binary exits 2.
 *
 * usage: python3.X MODE SECONDS
 *   good	the chain as described
 *   good312	the same as CPython 3.12 lays it out
 *   half	fake_mid's previous points into an unmapped page: reads fail half-way
 *   torn	a second thread rewrites the frames' pointers with garbage all the time
 *   v313	Py_Version says 3.13, no _Py_DebugOffsets (the process is not read)
 *   v314	Py_Version says 3.14 (not read)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

unsigned char _PyRuntime[4096] __attribute__((aligned(64)));
#ifndef FAKE_VERSION
#define FAKE_VERSION 0x030b02f0
#endif
unsigned int Py_Version = FAKE_VERSION;
unsigned char PyCode_Type[416] __attribute__((aligned(64)));

static unsigned char *page;	/* frames, code objects, strings */
static volatile int torn_run = 1;

/* the offsets of the version laid out (pyread.c's table, written independently here) */
static struct {
	int is_threads_head, ts_tid, cf_current, fr_code, fr_previous, fr_owner, fr_is_entry;
	int co_firstline, co_code, str_data;
} L = { 16, 160, 8, 32, 48, 69, 68, 72, 184, 48 };
static const typeof(L) L312 = { 72, 144, 0, 0, 8, 70, -1, 68, 192, 40 };

static void put64(unsigned char *base, size_t off, uint64_t v)
{
	memcpy(base + off, &v, 8);
}

/* a compact ASCII str object (PyASCIIObject: length 16, state 32, data 48 or 40) */
static unsigned char *mkstr(unsigned char **at, const char *s)
{
	unsigned char *o = *at;
	uint32_t state = (1u << 2) | (1u << 5) | (1u << 6);	/* kind 1, compact, ascii */

	put64(o, 16, strlen(s));
	memcpy(o + 32, &state, 4);
	memcpy(o + L.str_data, s, strlen(s) + 1);
	*at += 48 + ((strlen(s) + 16) & ~7ul);
	return o;
}

static unsigned char *mkcode(unsigned char **at, const char *name, int firstline)
{
	unsigned char *code = *at, *fn, *qn, *tab;

	*at += 256;
	fn = mkstr(at, "/srv/fake.py");
	qn = mkstr(at, name);
	tab = *at;		/* an empty bytes object: ob_size 0 */
	*at += 64;
	put64(code, 8, (uint64_t)(uintptr_t)PyCode_Type);
	memcpy(code + L.co_firstline, &firstline, 4);
	put64(code, 112, (uint64_t)(uintptr_t)fn);
	put64(code, 120, (uint64_t)(uintptr_t)qn);
	put64(code, 128, (uint64_t)(uintptr_t)qn);
	put64(code, 136, (uint64_t)(uintptr_t)tab);
	return code;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *tear(void *arg)
{
	unsigned char *frames = arg;
	uint64_t x = 88172645463325252ull;

	while (torn_run) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		put64(frames, (x >> 8) % 3 * 72 + ((x & 1) ? L.fr_code : L.fr_previous),
		      x & 1 ? x : (x & 0xffffffffff));
	}
	return NULL;
}

/* named like the interpreter's eval loop: its _PyCFrame is on this stack frame */
__attribute__((noinline)) void _PyEval_EvalFrameDefault(unsigned char *tstate,
							 unsigned char *leaf, double secs)
{
	volatile uint64_t cframe[3] = { 0, 0, 0 };
	double end = now() + secs;
	volatile uint64_t spin = 0;

	cframe[L.cf_current / 8] = (uint64_t)(uintptr_t)leaf;
	put64(tstate, 56, (uint64_t)(uintptr_t)cframe);
	while (now() < end)
		for (int i = 0; i < 100000; i++)
			spin += i;
	put64(tstate, 56, 0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "good";
	double secs = argc > 2 ? atof(argv[2]) : 1.0;
	unsigned char *at, *interp, *ts, *frames, *root, *mid, *leaf, *hole;
	pthread_t th;

	unsigned int want = !strcmp(mode, "v313") ? 0x030d00f0 :	/* no _Py_DebugOffsets */
			    !strcmp(mode, "v314") ? 0x030e00f0 :
			    !strcmp(mode, "good312") ? 0x030c03f0 : 0x030b02f0;

	if ((Py_Version >> 16) != (want >> 16)) {
		fprintf(stderr, "py-fake: mode %s is run by the 3.%u binary\n", mode,
			(want >> 16) & 0xff);
		return 2;
	}
	if (!strcmp(mode, "good312"))
		L = L312;
	page = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED || hole == MAP_FAILED)
		return 1;
	munmap(hole, 4096);	/* an address that reads fail on */
	at = page;
	interp = at, at += 512;
	ts = at, at += 512;
	frames = at, at += 4 * 72 + 8;
	put64(_PyRuntime, 40, (uint64_t)(uintptr_t)interp);
	put64(interp, L.is_threads_head, (uint64_t)(uintptr_t)ts);
	put64(ts, L.ts_tid, (uint64_t)gettid());
	root = frames, mid = frames + 72, leaf = frames + 144;
	{
		unsigned char *c_root = mkcode(&at, "fake_root", 10);
		unsigned char *c_mid = mkcode(&at, "fake_mid", 20);
		unsigned char *c_leaf = mkcode(&at, "fake_leaf", 30);

		put64(root, L.fr_code, (uint64_t)(uintptr_t)c_root);
		put64(mid, L.fr_code, (uint64_t)(uintptr_t)c_mid);
		put64(leaf, L.fr_code, (uint64_t)(uintptr_t)c_leaf);
		/* prev_instr past the code's start: complete frames */
		put64(root, 56, (uint64_t)(uintptr_t)(c_root + L.co_code + 4));
		put64(mid, 56, (uint64_t)(uintptr_t)(c_mid + L.co_code + 4));
		put64(leaf, 56, (uint64_t)(uintptr_t)(c_leaf + L.co_code + 4));
	}
	put64(leaf, L.fr_previous, (uint64_t)(uintptr_t)mid);
	put64(mid, L.fr_previous, !strcmp(mode, "half") ? (uint64_t)(uintptr_t)hole :
			       (uint64_t)(uintptr_t)root);
	put64(root, L.fr_previous, 0);
	if (L.fr_is_entry >= 0) {
		root[L.fr_is_entry] = 1;	/* is_entry: the frame the eval loop entered at */
	} else {
		/* 3.12: the eval loop's shim frame (FRAME_OWNED_BY_CSTACK) outside it */
		unsigned char *shim = frames + 3 * 72;

		put64(root, L.fr_previous, (uint64_t)(uintptr_t)shim);
		put64(shim, L.fr_code, (uint64_t)(uintptr_t)mkcode(&at, "<shim>", 1));
		shim[L.fr_owner] = 3;
		put64(shim, L.fr_previous, 0);
	}
	if (!strcmp(mode, "torn"))
		pthread_create(&th, NULL, tear, frames);
	_PyEval_EvalFrameDefault(ts, leaf, secs);
	if (!strcmp(mode, "torn")) {
		torn_run = 0;
		pthread_join(th, NULL);
	}
	printf("fake python %s done\n", mode);
	return 0;
}
