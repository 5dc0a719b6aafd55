/* test-ranks.c - the steps of a distributed job's ranks (ranks.h) from made-up main
 * threads whose steps are known: waits in the gradient all-reduce in some steps, none in
 * others, the backward's samples every step.  TAP output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ranks.h"
#include "rephash.h"
#include "util.h"

#include "unit/tap.h"

#define MS 1000000ull
#define STEP (30 * MS)

static const char *F_ALLREDUCE, *C_FWD, *C_EXTRA, *C_BWD, *C_HOOK, *C_WARM;

static struct rank_wait marks[4096];
static size_t nr_marks;

static void sample(uint64_t t, const char *chain)
{
	marks[nr_marks++] = (struct rank_wait){ t, 0, NULL, chain, 0 };
}

static void wait_in(uint64_t t, uint64_t ns, const char *frame, const char *chain)
{
	marks[nr_marks++] = (struct rank_wait){ t, ns, frame, chain, 1 };
}

/* One training step from t0: 3 ms forward, 20 ms extra work, 4 ms backward (a sample a
 * millisecond, one of them in a Python hook the backward calls), then, where wait_ns,
 * a wait in the all-reduce; the step ends at t0 + STEP.  Returns the end of its
 * backward (the all-reduce's end where it waited). */
static uint64_t step(uint64_t t0, uint64_t wait_ns, int python)
{
	uint64_t t = t0;

	for (int i = 0; i < 3; i++)
		sample(t += MS, python ? C_FWD : NULL);
	for (int i = 0; i < 20; i++)
		sample(t += MS, python ? C_EXTRA : NULL);
	for (int i = 0; i < 4; i++)
		sample(t += MS, python ? (i == 2 ? C_HOOK : C_BWD) : NULL);
	if (wait_ns) {
		wait_in(t + 100000, wait_ns, F_ALLREDUCE, python ? C_BWD : NULL);
		return t + 100000 + wait_ns;
	}
	return t;
}

static size_t ends_of(struct rank_end **e)
{
	return ranks_step_ends(marks, nr_marks, e);
}

/* 31 steps (a warm-up, then 30) on each of two ranks; in step 23 neither blocks, and rank
 * 1 blocks only in every other step.  Both ranks' own runs give 31 ends; the job's ends
 * are the all-reduce's where either blocked. */
static void test_unblocked_step(void)
{
	struct rank_wait r0[4096], r1[4096];
	size_t n0, n1;
	struct rank_end *e;
	uint64_t want[31], want_job[31], *job;
	struct rank_waits rw[2];
	size_t n;
	int good = 1;
	char got[64];

	nr_marks = 0;
	for (int s = 0; s < 31; s++)
		want[s] = step((uint64_t)s * STEP + 2 * MS, s == 23 ? 0 : 2 * MS, 1);
	n0 = nr_marks;
	memcpy(r0, marks, n0 * sizeof(*marks));
	n = ends_of(&e);
	snprintf(got, sizeof(got), "%zu", n);
	ok(n == 31, "a step without a wait still ends: 31 ends from 30 waits", got);
	for (size_t i = 0; i < n && i < 31; i++)
		good &= e[i].time == want[i] && e[i].wait == (i != 23);
	ok(good, "each end at the wait's end, or the backward's last sample", NULL);
	free(e);

	/* rank 1 two milliseconds ahead: where it did not wait, its backward's end comes before
	 * rank 0's wait ends, and the all-reduce's end is rank 0's */
	nr_marks = 0;
	for (int s = 0; s < 31; s++) {
		int waits = !(s % 2 || s == 23);
		uint64_t end = step((uint64_t)s * STEP, waits ? 1 * MS : 0, 1);

		want_job[s] = waits && end < want[s] ? end : s == 23 ? end : want[s];
	}
	n1 = nr_marks;
	memcpy(r1, marks, n1 * sizeof(*marks));

	rw[0] = (struct rank_waits){ r0, n0, 0 };
	rw[1] = (struct rank_waits){ r1, n1, 0 };
	n = ranks_job_step_ends(rw, 2, &job);
	snprintf(got, sizeof(got), "%zu", n);
	ok(n == 31, "the job: 31 ends from two ranks, one a rank a step", got);
	good = 1;
	for (size_t i = 0; i < n && i < 31; i++)
		good &= job[i] == want_job[i];
	ok(good, "the job's ends: the earliest wait's end, else the earliest end", NULL);
	free(job);
}

/* Only the calls that waited count: a no_sync step (no all-reduce, the same backward from
 * another caller) is not a step; a call that waited once is one each time */
static void test_calls(void)
{
	struct rank_end *e;
	size_t n;
	char got[64];
	uint64_t t = 0;

	nr_marks = 0;
	for (int s = 0; s < 3; s++) {	/* calibration: backward under no_sync, no wait */
		for (int i = 0; i < 10; i++)
			sample(t += MS, C_FWD);
		for (int i = 0; i < 4; i++)
			sample(t += MS, C_WARM);
	}
	for (int s = 0; s < 5; s++)
		step(t + (uint64_t)s * STEP, 2 * MS, 1);
	n = ends_of(&e);
	snprintf(got, sizeof(got), "%zu", n);
	ok(n == 5, "a backward that never waits in the all-reduce ends no step", got);
	free(e);

	wait_in(t - 2 * MS, 1 * MS, F_ALLREDUCE, C_WARM);	/* the last calibration step waits */
	n = ends_of(&e);
	snprintf(got, sizeof(got), "%zu", n);
	ok(n == 8, "a call that waited once ends a step each time it runs after other code",
	   got);
	free(e);
}

/* Without Python frames the waits alone tell the steps: two waits 0.1 ms apart are one,
 * and a step without a wait is not seen */
static void test_no_python(void)
{
	struct rank_end *e;
	size_t n;
	char got[64];

	nr_marks = 0;
	for (int s = 0; s < 10; s++) {
		uint64_t end = step((uint64_t)s * STEP, s == 4 ? 0 : 2 * MS, 0);

		if (s != 4)
			wait_in(end + 100000, 1 * MS, F_ALLREDUCE, NULL);
	}
	n = ends_of(&e);
	snprintf(got, sizeof(got), "%zu", n);
	ok(n == 9, "no Python frames: waits 0.1 ms apart one, a step without waits unseen",
	   got);
	free(e);
}

int main(void)
{
	F_ALLREDUCE = str_intern("c10d::Reducer::finalize_backward", 32);
#define CHAIN(s) str_intern(s, strlen(s))
#define STEP_CALL "<module> (t.py:90);main (t.py:80);train_step (t.py:40);"
	C_FWD = CHAIN(STEP_CALL "run_step (t.py:30);forward (t.py:10)");
	C_EXTRA = CHAIN(STEP_CALL "run_step (t.py:31);extra_work (t.py:20)");
	C_BWD = CHAIN(STEP_CALL "run_step (t.py:32);backward (__init__.py:197)");
	C_HOOK = CHAIN(STEP_CALL "run_step (t.py:32);backward (__init__.py:197);hook (t.py:50)");
	C_WARM = CHAIN("<module> (t.py:90);main (t.py:80);calib_step (t.py:45);"
		       "run_step (t.py:32);backward (__init__.py:197)");
	test_unblocked_step();
	test_calls();
	test_no_python();
	return tap_done();
}
