/* recmeta.h - a recording's META record (docs/FORMAT.md), parsed once by the reader
 * (session.c) into the facts the views read, and every pair as written.
 *
 * The views used to match META's keys one by one, each for its own few; they read
 * these fields instead, and recmeta_get() for a key only one of them needs.
 */
#ifndef DLPROF_RECMETA_H
#define DLPROF_RECMETA_H

#include <stddef.h>
#include <stdint.h>

struct recmeta_pair {
	const char *key, *value;
};

struct recmeta_clock {
	int set;			/* the pair was there and readable */
	uint64_t mono, real, err;	/* "MONOTONIC REALTIME ERR", ns */
};

struct recmeta {
	struct recmeta_pair *pairs;	/* in the order written; the strings are the
					   record's own (recmeta_parse's data) */
	size_t nr, alloc;
	/* the keys several views read; NULL, 0: not in the record */
	const char *cmdline;		/* the command, or what was attached to */
	const char *hostname;
	const char *event;		/* the events, comma-separated */
	const char *metrics;		/* record --metrics: the counters' names, in order */
	int metrics_switch_outs;	/* the switch-outs read the counters too */
	int system_wide;		/* record -a */
	int attach;			/* record -p, --container, --cgroup */
	/* clock_start [0], clock_end [1] */
	struct recmeta_clock clock[2];
	/* what record said the recording lacks (warn.N), in order */
	const char **warn;
	size_t nr_warn, alloc_warn;
};

/* Parse a META record's "key\0value\0" pairs (a pair cut short ends it); m points into
 * data, which must outlive it.  0. */
int recmeta_parse(struct recmeta *m, const void *data, size_t len);
/* The value of key, or NULL (the last one where a key came twice) */
const char *recmeta_get(const struct recmeta *m, const char *key);
void recmeta_release(struct recmeta *m);

#endif
