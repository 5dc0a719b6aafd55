/* rec-write.c - what every part of record writes through: the recording's records
 * (rec_put), the warnings report repeats (rec_warn), lists of paths (recorder.h).
 * Below the other record files: they all call it, it calls none of them but the
 * unwinding thread's queue (recunwind.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recfile.h"
#include "recunwind.h"
#include "util.h"
#include "recorder.h"

/* Write a record of the run: through the unwinding thread when there is one (it writes
 * in the order records come), else directly. */
void rec_put(struct recorder *r, uint32_t type, const void *a, size_t alen,
		    const void *b, size_t blen)
{
	if (r->ru)
		recunw_add(r->ru, type, a, alen, b, blen);
	else if (!r->write_failed && recwriter_add2(r->w, type, a, alen, b, blen) < 0)
		r->write_failed = 1;
}

/* All of the run's records written (the unwinding thread done): what follows is written
 * directly. */
void rec_put_done(struct recorder *r)
{
	if (!r->ru)
		return;
	r->keep.off = r->opts->no_buildid_cache;
	if (recunw_finish(r->ru, &r->ru_st, &r->keep) < 0)
		r->write_failed = 1;
	r->ru = NULL;
}
/* One line on stderr now, and in the recording for report to repeat (never dropped by
 * -q: it says the recording has less than asked). */
void rec_warn(struct recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rec_warn(struct recorder *r, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	warning("%s", buf);
	strbuf_add(&r->warn.lines, buf, strlen(buf) + 1);
	r->warn.nr++;
}
