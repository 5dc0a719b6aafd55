/* xorshift.h - Marsaglia's xorshift64 (shifts 13, 7, 17): the test programs' reproducible
 * pseudo-random numbers; each program keeps its own state and seed. */
#ifndef DLPROF_TESTS_XORSHIFT_H
#define DLPROF_TESTS_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
