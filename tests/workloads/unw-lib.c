/* unw-lib.c - a shared library for the unwinder tests: built without frame pointers and
 * stripped (only .dynsym and .eh_frame remain).  unw_lib_outer -> (static) inner -> cb,
 * none of them tail calls, so both frames must appear in a CFI-unwound stack. */
#include <stdint.h>

static volatile int unw_lib_sink;

__attribute__((noinline)) static void unw_lib_inner(void (*cb)(void), int depth)
{
	volatile char pad[40];	/* give the frame a stack size of its own */

	pad[depth & 31] = (char)depth;
	cb();
	unw_lib_sink += pad[depth & 31];
}

__attribute__((visibility("default"))) void unw_lib_outer(void (*cb)(void));

void unw_lib_outer(void (*cb)(void))
{
	unw_lib_inner(cb, 3);
	unw_lib_sink++;
}

/* a busy loop for the recorded workload: the library calls back into main's code */
__attribute__((visibility("default"))) uint64_t unw_lib_spin(uint64_t n);

__attribute__((noinline)) static uint64_t unw_lib_spin_inner(uint64_t n)
{
	uint64_t x = 1;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL + (x >> 7);
	return x;
}

uint64_t unw_lib_spin(uint64_t n)
{
	uint64_t r = unw_lib_spin_inner(n);

	unw_lib_sink++;
	return r;
}
