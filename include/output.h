/* output.h - report renderers: a top-style table, JSON and CSV.
 *
 * They see only the header facts and the aggregated rows (calltree.h).
 */
#ifndef DLPROF_OUTPUT_H
#define DLPROF_OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "calltree.h"

struct report_header {
	const char *file;
	const char *cmdline;		/* NULL when not recorded */
	const char *event;
	const char *other_events;	/* recorded too, not counted here ("a,b"), or NULL */
	const char *sampling;		/* "999 Hz", "every 100000 events", ... */
	uint64_t samples, lost;
	uint64_t duration_ns;
	uint64_t complete_stacks, named;
	uint64_t recovered_stacks;	/* stacks with a frame found by stack scanning */
	uint64_t past_copy_stacks;	/* of complete_stacks, outer frames past the copy */
	int unwound;			/* dwarf stacks: say how many were recovered */
	uint64_t recorded_stacks;	/* user stacks unwound while recording */
	uint64_t copied_stacks;		/* user stacks unwound here from their copies */
	/* report --check-unwind: compared, the same, different after a scanned frame,
	 * different (profile_stats.unwind_*); checked 0: not asked */
	uint64_t unwind_checked, unwind_same, unwind_scan_differs, unwind_differs;
	uint64_t unwind_past_copy;
	int no_stacks;			/* recorded without call chains (--call-graph none) */
	int leaf_only;			/* --no-children: stacks not walked, not counted */
	int perf_data;			/* the input is perf record's perf.data */
	int sample_is_time;		/* the time column is exact rather than estimated */
	int no_time;			/* the event measures no time: no time column values */
	uint64_t ns_per_sample;
	int truncated;
	uint64_t skipped;		/* malformed records the reader skipped (session_info) */
	uint64_t irqs_off;		/* samples taken where interrupts came back on */
	/* Python (pystack.h): samples of Python threads read by record, those with
	 * Python frames here, those the reader could not trust or read, those whose
	 * stacks disagreed, and the mean time from sample to read */
	uint64_t py_records, py_merged, py_moved, py_failed, py_mismatched, py_delay_ns;
	uint64_t py_at_sample;		/* of py_records, read as the sample was taken */
	int raw_irqs;			/* ... left there (--raw-irqs) */
	int off_cpu;			/* rows count microseconds: 1 off the CPU (--off-cpu),
					   2 on and off (--wall) */
	uint64_t weight_total;		/* what the rows' shares are of, when not the samples */
	const char *key;		/* "symbol", "dso", "comm", "tid", ... */
	const char *filter;		/* the filters in force ("--tid 12"), or NULL */
	uint64_t filter_total;		/* samples before the filter (samples: kept) */
	const char *const *warnings;	/* what record said the recording lacks */
	size_t nr_warnings;
	/* several recordings (readings.h): how well their times line up (the line, NULL
	 * for one recording; with anchors, hosts, the largest anchor read uncertainty and
	 * drift), and the processes recorded twice (the line, NULL: none) */
	size_t recordings;
	const char *aligned;
	size_t anchored, hosts;
	uint64_t anchor_err_ns, drift_ns;
	const char *twice;
	size_t dup_procs;
	uint64_t dup_samples;
};

struct output_opts {
	int width;		/* terminal columns */
	int color;
	int no_children;	/* hide the Total columns */
	size_t limit;		/* 0: all rows */
};

/* Columns for tables on stdout: the terminal's width, else $COLUMNS, else 80; kept
 * within 60..200. */
int output_width(void);

/* The "# file: ... # time:" block that starts every table report. */
void output_header(FILE *out, const struct report_header *h);
void output_table(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		  const struct output_opts *o);
void output_json(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		 const struct output_opts *o, const char *(*family)(void *ctx, const struct ct_row *r),
		 void *fctx);
void output_csv(FILE *out, const struct report_header *h, struct ct_row **rows, size_t nr,
		const struct output_opts *o);

/* Shorten a (C++) name to at most width display columns into buf (UTF-8 '…' used):
 * template arguments and parameter lists collapse first, then the middle is cut. */
void output_shorten_name(const char *name, size_t width, char *buf, size_t bufsz);
/* Shorten a DSO name to at most width columns: "[kernel.kallsyms]" -> "[kernel]", then
 * trailing version numbers go ("libgomp.so.1.0.0" -> "libgomp.so.1" -> "libgomp.so"),
 * then the end is cut with '…' (never the middle). */
void output_shorten_dso(const char *dso, size_t width, char *buf, size_t bufsz);
/* The row's name as the table shows it: an FDE-bounded function without the "dso!" prefix
 * when the DSO column names the DSO ("func@0x1f5e0"); JSON and CSV keep the full name. */
const char *output_row_name(const struct ct_row *r);
/* The table's symbol cell in at most width columns: the display name, then
 * " ← caller" for unnamed code whose named caller is known and fits; with a srcline
 * (report --srcline) "name @ file.c:12" instead. */
void output_table_symbol(const struct ct_row *r, size_t width, char *buf, size_t bufsz);
/* Human duration: "12.3 ms", "4.56 s". */
void output_duration(char *buf, size_t sz, uint64_t ns);
/* The same from nanoseconds up: "40 ns" below a microsecond; "-" for none (<= 0: an
 * event that measures no time) */
const char *output_duration_ns(char *buf, size_t sz, double ns);

/* n in percent of total (0 of nothing) */
static inline double pct(uint64_t n, uint64_t total)
{
	return total ? 100.0 * (double)n / (double)total : 0.0;
}

#endif
