/* tap.h - TAP output for the unit test programs (one translation unit each).
 *
 *	ok(cond, "what it checks", got_or_NULL);	// "ok N - what" / "not ok N - what (got '…')"
 *	return tap_done();				// prints the plan; exit 1 when any failed
 */
#ifndef DLPROF_TEST_TAP_H
#define DLPROF_TEST_TAP_H

#include <stdio.h>

static int nr_tests, nr_failed;

static inline void ok(int cond, const char *what, const char *got)
{
	nr_tests++;
	if (!cond)
		nr_failed++;
	printf("%sok %d - %s", cond ? "" : "not ", nr_tests, what);
	if (!cond && got)
		printf(" (got '%s')", got);
	printf("\n");
}

static inline int tap_done(void)
{
	printf("1..%d\n", nr_tests);
	return nr_failed ? 1 : 0;
}

#endif
