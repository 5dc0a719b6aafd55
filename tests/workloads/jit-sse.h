/* jit-sse.h - the SSE kernel the JIT test programs write into executable memory
 * (unw-jit.c, jit-chain.c): void kernel(float buf[8], uint64_t n): two vectors from
 * buf, n rounds of addps/mulps, results back to buf.  Every x86-64 runs it. */
#ifndef DLPROF_TEST_JIT_SSE_H
#define DLPROF_TEST_JIT_SSE_H

#include <stdint.h>

static const uint8_t sse_code[] = {
	0x0f, 0x10, 0x07,				/* movups (%rdi),%xmm0 */
	0x0f, 0x10, 0x4f, 0x10,				/* movups 0x10(%rdi),%xmm1 */
	0x0f, 0x58, 0xc1,				/* 1: addps %xmm1,%xmm0 */
	0x0f, 0x28, 0xd1,				/* movaps %xmm1,%xmm2 */
	0x0f, 0x58, 0xd0,				/* addps %xmm0,%xmm2 */
	0x0f, 0x59, 0xca,				/* mulps %xmm2,%xmm1 */
	0x48, 0xff, 0xce,				/* dec %rsi */
	0x75, 0xef,					/* jne 1b */
	0x0f, 0x11, 0x07,				/* movups %xmm0,(%rdi) */
	0x0f, 0x11, 0x4f, 0x10,				/* movups %xmm1,0x10(%rdi) */
	0xc3,						/* ret */
};

#endif
