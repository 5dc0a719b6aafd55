/* test-metview.c - report --metrics on counts made here (lib/views/metview.c): a counter
 * that ran half of its threads' CPU time (a PMU shared: multiplexing) has its rows and
 * totals scaled by two and is said to be; one that never ran is said to have never
 * counted; software counters that ran the whole time are left as read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"
#include "metview.h"
#include "recmeta.h"
#include "session.h"
#include "tap.h"

/* Two operators, conv (3 samples) and relu (1), each sample's counts: 1 ms of the clock,
 * 10 page faults, 1000 cycles, 500 instructions */
static char *run(const char *ran, enum out_format fmt)
{
	char meta[512];
	size_t n = 0;
	struct recmeta m;
	struct metview *mv = metview_new(DLVIEW_OP);
	static const uint64_t read[4] = { 1000000, 10, 1000, 500 };
	struct sample_attr conv = { .op = "aten::conv2d" }, relu = { .op = "aten::relu" };
	char *out = NULL;
	size_t len = 0;
	FILE *f;

#define PAIR(k, v) do { memcpy(meta + n, k, sizeof(k)); n += sizeof(k); \
			memcpy(meta + n, v, strlen(v) + 1); n += strlen(v) + 1; } while (0)
	PAIR("event", "cpu-clock");
	PAIR("metrics", "page-faults,cycles,instructions");
	PAIR("metrics_mode", "group");
	/* enabled, running, then the leader's and the members' counts at the end: the rows'
	 * and 2 ms, 20 faults, 2000 cycles, 1000 instructions after the last samples */
	PAIR("metrics_total", "9000000 4000000 6000000 60 6000 3000");
	if (ran)
		PAIR("metrics_ran", ran);
#undef PAIR
	recmeta_parse(&m, meta, n);
	metview_meta(mv, &m);
	for (int i = 0; i < 4; i++) {
		struct dlp_sample s = { .pid = 7, .tid = 7, .nr_read = 4, .read = read };
		struct frame fr = { .sym = "f" };
		struct attributed as = { .s = &s, .frames = &fr, .nr = 1,
					 .a = i < 3 ? &conv : &relu };

		metview_sample(mv, &as);
	}
	f = open_memstream(&out, &len);
	metview_print(mv, f, fmt, 0, 0);
	fclose(f);
	metview_free(mv);
	recmeta_release(&m);
	return out;
}

static int has(const char *s, const char *needle)
{
	return s && strstr(s, needle) != NULL;
}

int main(void)
{
	char *t, *j;

	/* the threads ran 6 ms; cycles and instructions 3 of them, the clock and the
	 * faults all 6 */
	t = run("6000000 6000000 6000000 3000000 3000000", OUT_TEXT);
	j = run("6000000 6000000 6000000 3000000 3000000", OUT_JSON);
	ok(has(j, "\"cycles\": 0.500000") && has(j, "\"page-faults\": 1.000000") &&
	   has(j, "\"scaled\": true"), "each counter's share of the time, in JSON", j);
	ok(has(j, "\"cycles\": 6000,") && has(j, "\"cycles\": 2000,") &&
	   has(j, "\"instructions\": 3000,") && has(j, "\"instructions\": 1000,"),
	   "a half-time counter's rows doubled: conv 3000 -> 6000 cycles, relu 1000 -> 2000",
	   j);
	ok(has(j, "\"page-faults\": 30,") && has(j, "\"page-faults\": 10,"),
	   "a counter that ran the whole time left as read", j);
	ok(has(j, "\"cycles\": 12000") && has(j, "\"instructions\": 6000"),
	   "its total doubled too", j);
	ok(has(j, "\"ipc\": 0.5"), "IPC of two counters scaled alike unchanged", j);
	ok(has(t, "# multiplexed: counted cycles 50.0%, instructions 50.0% of their threads' "
		  "CPU time") && !has(t, "page-faults 100.0% of"),
	   "said in the header, only of those scaled", t);
	ok(has(t, "cycles 12000 (66.7% in the rows)"),
	   "the share in the rows is of the read counts (4000 of 6000)", t);
	free(t);
	free(j);

	t = run("6000000 6000000 6000000 0 0", OUT_TEXT);
	ok(has(t, "# never counted: cycles, instructions (not once on the PMU"),
	   "counters that never ran are named", t);
	free(t);

	t = run("6000000 6000000 6000000 6000000 6000000", OUT_TEXT);
	j = run("6000000 6000000 6000000 6000000 6000000", OUT_JSON);
	ok(!has(t, "multiplexed") && has(j, "\"scaled\": false") && has(j, "\"cycles\": 3000,"),
	   "counters that ran the whole time: nothing scaled, nothing said", t);
	free(t);
	free(j);

	t = run(NULL, OUT_TEXT);
	j = run(NULL, OUT_JSON);
	ok(!has(t, "multiplexed") && !has(j, "counted_share") && has(j, "\"cycles\": 3000,"),
	   "a recording without metrics_ran: as read, no share", j);
	free(t);
	free(j);

	/* the sampling event leads the group: it ran as long as its members */
	t = run("6000000 3000000 3000000 3000000 3000000", OUT_TEXT);
	ok(has(t, "# the sampling event ran 50.0% of their threads' CPU time"),
	   "a sampling event that ran part of the time is said", t);
	free(t);
	return tap_done();
}
