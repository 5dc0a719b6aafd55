/* top.h - dlprof top: a live table of where the time goes, refreshed while recording.
 *
 * top_run() records as record does (the same events, rings and stacks unwound while
 * recording; record.h's live hook) into no file, or into -o FILE, and feeds each record
 * written to the report pipeline (profile.h's live mode): the same process model,
 * symbols, JIT names (perf maps read as they grow) and attribution (attr.h, settled
 * as the OpenMP masters' samples come in).  Four views of the one attribution per
 * sample: functions (self), families, operators, threads.  Each row has its share of
 * a window (the last N seconds) and of the whole run (since start or the last `z`).
 *
 * On a terminal: the alternate screen, redrawn every -d seconds and on resize, keys
 * s f o t (views) z (zero) q (quit); the command's output goes to a log file named at
 * the end, and dlprof's own messages are shown after the screen is restored.  On
 * anything else: one plain table per interval.
 */
#ifndef DLPROF_TOP_H
#define DLPROF_TOP_H

enum top_view { TOP_SELF, TOP_FAMILY, TOP_OP, TOP_THREAD };

struct top_opts {
	const char **argv;	/* the command, NULL-terminated (or NULL with pids, or for
				   every process) */
	const char *pids;	/* -p PID[,PID...] */
	const char *event;	/* -e, NULL: record's default */
	unsigned long freq;	/* -F */
	const char *output;	/* -o FILE: keep the recording; NULL: none */
	const char *families;	/* extra family rules */
	enum top_view view;
	double delay;		/* seconds between refreshes */
	unsigned window;	/* seconds in the window */
	long iterations;	/* refreshes before quitting; 0: no limit */
	int rows;		/* rows per table off a terminal (0: 20) */
	int system_wide;	/* every process (per-cpu events): no command, no -p */
};

/* DLP_OK, with *exit_status 0 when the user quit (q, Ctrl-C, -n) and the command's when
 * it ended on its own (off a terminal); else record's failure (enum dlp_result). */
int top_run(const struct top_opts *o, int *exit_status);

#endif
