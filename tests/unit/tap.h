/* tap.h - TAP output for the unit test programs (one translation unit each); the shell
 * tests run them with test_unit (tests/lib.sh), which counts each result as a test.
 *
 *	tap_plan(8);					// optional: "1..8" first, 8 results due
 *	ok(cond, "what it checks", got_or_NULL);	// "ok N - what" / "not ok N - what (got '…')"
 *	TAP_GROUP(failures, "what", call);		// call's own checks, counted in failures
 *							// (each printing why), as one result
 *	return tap_done();				// the plan unless given; exit 1 when any
 *							// failed or the plan was not met
 */
#ifndef DLPROF_TEST_TAP_H
#define DLPROF_TEST_TAP_H

#include <stdio.h>

static int nr_tests, nr_failed, nr_planned = -1;

static inline void tap_plan(int n)
{
	nr_planned = n;
	printf("1..%d\n", n);
}

static inline void ok(int cond, const char *what, const char *got)
{
	nr_tests++;
	if (!cond)
		nr_failed++;
	printf("%sok %d - %s", cond ? "" : "not ", nr_tests, what);
	if (!cond && got)
		printf(" (got '%s')", got);
	printf("\n");
	fflush(stdout);	/* a crash later leaves the results so far */
}

#define TAP_GROUP(failures, what, call) do { \
	int tap_before_ = (failures); \
	call; \
	ok((failures) == tap_before_, what, NULL); \
} while (0)

static inline int tap_done(void)
{
	if (nr_planned < 0)
		printf("1..%d\n", nr_tests);
	return nr_failed || (nr_planned >= 0 && nr_planned != nr_tests) ? 1 : 0;
}

#endif
