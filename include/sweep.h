/* sweep.h - the thread sweep: run a workload under several OpenMP settings, each run
 * recorded at a low rate, and say which setting was fastest and why.
 *
 * Settings: thread counts (1, the cores of one socket, all cores, and what the user adds)
 * times wait policies (the runtime's default, or active/passive).  Each run is
 * `dlprof record` of the command with OMP_NUM_THREADS/MKL_NUM_THREADS set, bound to
 * cores (OMP_PROC_BIND=close, OMP_PLACES=cores; the first socket's CPUs as the process
 * affinity when the threads fit in one socket of several), into DIR/<setting>.<n>.data
 * with the workload's output in DIR/<setting>.<n>.out.  Runs are interleaved over the
 * repeats.  Each recording gives the run's wall time (the workload's, from record's
 * start and end), CPU time, the omp-spin share and the top families.
 */
#ifndef DLPROF_SWEEP_H
#define DLPROF_SWEEP_H

#include "util.h"

struct sweep_opts {
	const char **argv;	/* the command */
	const char *threads;	/* "1,2,4": thread counts added to the default ones */
	const char *wait;	/* "active,passive": wait policies, NULL: the default */
	int repeat;		/* runs per setting (median) */
	const char *metric;	/* POSIX extended regex with one group: the workload's figure */
	int metric_higher;	/* the figure is better when higher (throughput) */
	const char *dir;	/* where the runs go */
	unsigned long freq;	/* record's rate */
	enum out_format format;	/* the text table or JSON */
	const char *self;	/* this dlprof binary (to run `record`) */
};

/* enum dlp_result: DLP_PARTIAL when interrupted (what finished is printed: dlprof
 * exits 130), DLP_USAGE for bad options, DLP_FAILED when nothing could run (message
 * printed). */
int sweep_run(const struct sweep_opts *o);

#endif
