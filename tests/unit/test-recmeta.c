/* test-recmeta.c - a META record parsed once (lib/file/recmeta.c): the pairs in order,
 * the fields the views read, a key written twice, a pair cut short, an empty record. */
#include "recmeta.h"
#include "tap.h"

#include <string.h>

static const char rec[] =
	"cmdline\0python3 train.py --steps 3\0hostname\0node-7\0event\0cpu-clock,page-faults\0"
	"metrics\0page-faults,minor-faults\0metrics_switch_outs\0001\0attach\0001234\0"
	"clock_start\0" "100 1700000000000000000 250\0clock_end\0bad\0"
	"warn.0\0first said\0release\0" "6.1.0\0warn.1\0second said\0release\0" "6.18.0\0"
	"cut\0";	/* the last pair has no value */

int main(void)
{
	struct recmeta m;

	recmeta_parse(&m, rec, sizeof(rec) - 1);
	ok(m.nr == 12, "every whole pair, the one cut short left out", NULL);
	ok(m.nr && !strcmp(m.pairs[0].key, "cmdline") && !strcmp(m.pairs[11].key, "release"),
	   "the pairs in the order written", m.nr ? m.pairs[0].key : NULL);
	ok(m.cmdline && !strcmp(m.cmdline, "python3 train.py --steps 3"), "cmdline", m.cmdline);
	ok(m.hostname && !strcmp(m.hostname, "node-7"), "hostname", m.hostname);
	ok(m.event && !strcmp(m.event, "cpu-clock,page-faults"), "event", m.event);
	ok(m.metrics && !strcmp(m.metrics, "page-faults,minor-faults"), "metrics", m.metrics);
	ok(m.metrics_switch_outs && m.attach && !m.system_wide,
	   "flags set by their keys, not by others", NULL);
	ok(m.clock[0].set && m.clock[0].mono == 100 && m.clock[0].real == 1700000000000000000ull &&
	   m.clock[0].err == 250, "clock_start read as MONOTONIC REALTIME ERR", NULL);
	ok(!m.clock[1].set, "an unreadable clock_end is not set", NULL);
	ok(m.nr_warn == 2 && !strcmp(m.warn[0], "first said") && !strcmp(m.warn[1], "second said"),
	   "warn.N in order", m.nr_warn ? m.warn[0] : NULL);
	ok(recmeta_get(&m, "release") && !strcmp(recmeta_get(&m, "release"), "6.18.0"),
	   "a key written twice: the last", recmeta_get(&m, "release"));
	ok(!recmeta_get(&m, "cut") && !recmeta_get(&m, "nothing"), "absent keys: NULL", NULL);
	recmeta_release(&m);
	recmeta_parse(&m, "", 0);
	ok(m.nr == 0 && !m.cmdline && !recmeta_get(&m, "cmdline"), "an empty record", NULL);
	recmeta_release(&m);
	return tap_done();
}
