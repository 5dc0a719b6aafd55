/* perfdata.h - read a perf.data file (perf record's own format) as if it were a dlprof
 * recording, so report, fold, pprof, diff and check-isa -i work on it.
 *
 * The file's event attributes become ATTR records, its records PERF records in file
 * order, and its header features what dlprof records itself: META (command line, host,
 * kernel release, CPU count) and BUILDID records.  JIT maps are read from
 * /tmp/perf-PID.map at report time, as perf report does (a map not owned by the user or
 * root is ignored).  Kernel symbols come from /proc/kallsyms.
 */
#ifndef DLPROF_PERFDATA_H
#define DLPROF_PERFDATA_H

#include "recfile.h"

/* Is path a regular file that starts with perf.data's magic ("PERFILE2")? */
int perfdata_is(const char *path);

/*
 * Read path and call cb for every record, in the order recfile_read() would give a
 * dlprof recording: META, ATTR, the perf records, then BUILDID and JITMAP (with
 * records_only, the perf records alone: a second pass).  info gets truncated when the
 * data section is cut short or perf never finished the file.  Returns 0, or -1 with a
 * one-line error for what cannot be read (pipe-mode or compressed files, a damaged
 * header).
 */
int perfdata_read(const char *path, recfile_cb *cb, void *ctx, struct recfile_info *info,
		  int records_only);

#endif
