/* metview.h - report --metrics: the counters record --metrics read with each sample,
 * summed by the rows of a DL view (family, operator, primitive, Python line, thread,
 * process) or by symbol, with what they mean (IPC, misses per 1000 instructions, FP
 * operations by width, faults per CPU-second), and what no sample took (the counts
 * after each thread's last sample, read at the end).
 *
 * Each sample carries the counts of the interval it ends (its thread's, on its cpu,
 * since its sample before there): a row's count is the sum over its samples.
 */
#ifndef DLPROF_METVIEW_H
#define DLPROF_METVIEW_H

#include <stdio.h>

#include "attr-stream.h"
#include "dlview.h"
#include "util.h"

struct metview;

/* kind: a DL view's rows, or -1: by the sampled function (report's symbol table) */
struct metview *metview_new(int kind);
void metview_free(struct metview *mv);
/* The recording's META (metrics, metrics_total, event) */
void metview_meta(struct metview *mv, const struct recmeta *m);
/* A sample counted in the report (switch-outs carry no counts and are passed over) */
void metview_sample(struct metview *mv, const struct attributed *as);
/* The factor the counts at read index AT (0 the sampling event's, i counter i's) are
 * scaled up by: 1, or where the counter shared the PMU (multiplexing: META metrics_ran),
 * the time it ran against over the time it ran */
double metview_meta_scale(const struct recmeta *m, int at);
/* Whether the recording had any (META metrics): else the one line why not */
const char *metview_missing(const struct metview *mv);
/* The table; filtered: a filter left samples out (no remainder row) */
void metview_print(struct metview *mv, FILE *out, enum out_format fmt, size_t limit,
		   int filtered);

#endif
