/* ranks.h - report --sort rank: the ranks of a distributed job, from one recording or
 * several (one per host, or one per rank), and the straggler among them.
 *
 * Each process with a rank (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID in its
 * environment, read by record) is a row: its on-CPU time, its time in collectives, and
 * per step the time its main thread waited in them and the time it did not.  The
 * recordings are read on- and off-CPU together (record's switch-outs: a wait weighs
 * the time until its thread ran again), attributed as every view attributes them; a
 * wait is in a collective when its family is wait-collective (share/families.rules).
 *
 * Steps: a rank's main thread (the process's first thread, which runs the training
 * loop) runs the gradient all-reduce once a step and blocks in it while another rank is
 * late; a step ends where the call that blocks there (its Python frames) or the wait
 * ends (ranks_step_ends).  The job's steps end where any rank's end (ranks_job_step_ends:
 * one that did not block in a step, or ran no Python, is seen through the others).
 * Between the first end and the last lie the steps, and each rank's on-CPU samples and
 * waits of that span are the ones counted per step (start-up and rendezvous left out).
 *
 * The straggler: the rank that waits least per step, when the median of the others
 * waits at least RANKS_STRAGGLER_MIN_NS and RANKS_STRAGGLER_PCT of their step more than
 * it, and it waits at most RANKS_STRAGGLER_WAIT_FRAC of what they do.  Balanced ranks
 * are not even: 3.4 ms against 4.7 ms in 12.7 ms steps on a busy machine, 2.4 ms
 * against 5.5 ms in 16.6 ms steps (18%) where one rank took more page faults, and the
 * workload's own waits 1.0 against 4.6 ms in 14.6 ms (25%); a rank with 60 ms of
 * extra work held the others 54-62 ms of 71-76 ms steps (75-80%).  The others are held
 * that difference a step; its extra time per step is the CPU time a step it spends
 * more than the others' median, family by family where it spends more (their wait is
 * less than its extra work where that work slows them down too, as on shared cores,
 * and its whole CPU time over theirs less what another does more), or the difference
 * where that is not CPU time.
 * Where it goes is the Python line and operator on which it spends the most time per
 * step more than the median of the others.
 */
#ifndef DLPROF_RANKS_H
#define DLPROF_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

#define RANKS_EPISODE_GAP_NS	250000ull	/* waits closer than this are one */
#define RANKS_STRAGGLER_MIN_NS	1000000ull	/* 1 ms a step ... */
#define RANKS_STRAGGLER_PCT	33.0		/* ... and a third of the others' step, */
#define RANKS_STRAGGLER_WAIT_FRAC 0.5		/* ... and it waits half as long at most */

/* What a rank's main thread did: a wait in a collective (wait set: from time, ns long, in
 * frame, attr_collective_frame) or an on-CPU sample (at time); chain: its Python frames
 * (attr.h's pychain), NULL where there are none */
struct rank_wait {
	uint64_t time, ns;
	const char *frame, *chain;
	int wait;
};

/* A step end: when, and whether a wait in the collective ended it (else the last sample
 * of the call that runs the collective: the rank did not block) */
struct rank_end {
	uint64_t time;
	int wait;
};

/* The ends of a rank's steps, from its waits in the frame it waits in most often (DDP's
 * gradient all-reduce, not the broadcast of its start).  Where those waits have Python
 * frames, a step is a run of the main thread's waits in that frame and samples under the
 * Python call that waited there (a sample whose chain starts with a waiting chain):
 * runs apart where a sample of the thread runs other Python code between them.  A rank
 * runs the all-reduce every step but blocks in it only when another rank is late (two
 * balanced ranks on 2 cores once did not block in the same step, and a 61 ms gap read
 * as one step); its backward, which launches it, it runs every step.  Without Python
 * frames, its waits alone, those closer than RANKS_EPISODE_GAP_NS taken as one.  A
 * run's end: its last wait's, else its last sample's.  Sorts w by time.  Returns how
 * many (the steps between them: one less), the ends in *ends (free it). */
size_t ranks_step_ends(struct rank_wait *w, size_t nr, struct rank_end **ends);

/* One rank's waits in collectives and samples, and what puts its clock on the job's axis */
struct rank_waits {
	struct rank_wait *w;
	size_t nr;
	int64_t shift;		/* added to its times: the job's axis */
};

/* The job's step ends on its axis: every rank's step ends (ranks_step_ends) in time
 * order, one a rank a step: a rank's next end opens the next step, another rank's joins
 * the open one until 4/5 of a step (the median interval of the rank with the most ends)
 * has gone by, and the step ends at its earliest wait's end (the all-reduce's: a rank
 * that did not block left its backward before), else its earliest end.  The
 * ranks leave one all-reduce at once, but one woken while the CPUs are busy runs again
 * up to 5 ms later (balanced ranks, 2 cores, 7 ms steps: the workload's own clocks put
 * the two ranks' returns from one all-reduce 5.2 ms apart), so a time gap alone split
 * steps (27-36 steps found for 30); a step in which one rank did not block (a
 * straggler, or balanced ranks now and then) is seen in another's.  Returns how many;
 * the times in *ends (free it). */
size_t ranks_job_step_ends(struct rank_waits *r, size_t nr, uint64_t **ends);

/* report --sort rank over o->inputs; table, JSON or CSV on stdout.  enum dlp_result. */
int ranks_report(const struct report_opts *o);

#endif
