/* report.h - dlprof report's tables: the symbol table (self/total by symbol, dso, comm or
 * tid), the DL views (family, operator, thread, line, process), the wait families of an
 * off-CPU recording, and a row per recording (--by-input); table, JSON or CSV on stdout.
 */
#ifndef DLPROF_REPORT_H
#define DLPROF_REPORT_H

#include <stddef.h>

#include "calltree.h"
#include "profile.h"
#include "util.h"

struct family_rules;
struct sample_filter;


struct report_opts {
	const char *const *inputs;	/* one recording, or several of one job */
	size_t nr_inputs;
	enum ct_key key;		/* the symbol table's rows */
	enum ct_sort sort;
	int view;			/* enum dlview_kind instead of the symbol table; -1: none */
	int by_input;			/* a row per recording */
	enum out_format format;
	int limit;			/* rows; -1: the format's default (table 40, else all) */
	int no_findings;
	int metrics;			/* --metrics: the counters' table of the rows */
	struct profile_opts po;		/* srcline, event, no_children, raw_irqs, off_cpu, wall,
					   reunwind, check_unwind */
	const struct family_rules *rules;
	struct sample_filter *filt;
};

/* Read the recordings and print the report.  Options that do not go together are the
 * caller's to refuse.  enum dlp_result. */
int report_run(const struct report_opts *o);

#endif
