/* diff.h - compare two recordings (dlprof diff): where the time moved between a base run
 * and a new one, by operator family, framework operator, symbol or DSO.
 *
 * Each side's samples are classified as report does (family rules, ITT, stacks); rows
 * are the union of both sides' keys with each side's share and estimated time, sorted
 * by how much the time changed.
 */
#ifndef DLPROF_DIFF_H
#define DLPROF_DIFF_H

#include <stddef.h>
#include <stdio.h>

#include "util.h"

struct family_rules;

enum diff_key { DIFF_FAMILY, DIFF_OP, DIFF_SYMBOL, DIFF_DSO };

struct diff;

/* event: the event whose samples count in both recordings; NULL: each one's first. */
struct diff *diff_new(enum diff_key key, const struct family_rules *rules, const char *event);
void diff_free(struct diff *d);

/* Read side 0 (base) or 1 (new).  Returns 0, 1 when the recording was partial
 * (truncated, records skipped: warned), -1 on error (printed). */
int diff_load(struct diff *d, int side, const char *path);
/* Count only the samples filter keeps, on both sides (before diff_load). */
struct sample_filter;
void diff_set_filter(struct diff *d, struct sample_filter *filter);
/* Compare the counts of counter NAME of record --metrics (META metrics) instead of
 * samples: each read's count goes to its sample's row, switch-outs' reads too; a side
 * without that counter is an error.  NULL: samples. */
void diff_set_metric(struct diff *d, const char *name);
/* Keep samples taken where interrupts came back on as taken (profile_opts.raw_irqs). */
void diff_set_raw_irqs(struct diff *d, int raw);

/* Print the comparison; limit 0: all rows; width: table columns. */
void diff_print(struct diff *d, FILE *out, enum out_format fmt, size_t limit, int width);

#endif
