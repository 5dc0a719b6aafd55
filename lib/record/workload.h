/* workload.h - the profiled command: started corked, released on demand, waited for.
 *
 * workload_prepare() forks a child that blocks reading a pipe, so the parent can open
 * counters on its pid (enable_on_exec) before anything runs.  workload_start() releases
 * it: the child execvp()s; when that fails the errno comes back through a close-on-exec
 * pipe, so the parent can report "cannot run 'X'" and exit 127 as a shell would.
 * The exit is noticed through a pidfd (poll it: readable once the child has exited).
 */
#ifndef DLPROF_WORKLOAD_H
#define DLPROF_WORKLOAD_H

#include <signal.h>
#include <sys/types.h>

struct workload {
	pid_t pid;
	int go_fd;		/* write end: closing/writing releases the child */
	int err_fd;		/* read end: errno of a failed exec, EOF on success */
	int pidfd;		/* -1 where pidfd_open is missing */
	int exec_errno;		/* set by workload_start() when exec failed */
	int term_sig;		/* set by workload_reap(): the signal that killed it, else 0 */
	sigset_t child_mask;	/* signal mask the child restores before exec */
};

/*
 * The signals whose dispositions record changes for itself: the ones it passes on
 * to the workload (all but the last) and SIGPIPE, which it ignores.
 */
#define WORKLOAD_NR_SIGNALS 5
extern const int workload_signals[WORKLOAD_NR_SIGNALS];

/*
 * Fork the child (corked).  orig_mask is the signal mask to restore in the child and
 * orig_act the dispositions of workload_signals (in that order) it restores (the
 * parent may have changed them for itself).  Returns 0 or -1.
 */
int workload_prepare(struct workload *w, const char **argv, const sigset_t *orig_mask,
		     const struct sigaction orig_act[WORKLOAD_NR_SIGNALS]);

/* The same, the child's standard input, output and error replaced by stdio[0..2] where
 * those are >= 0 (stdio NULL: inherited). */
int workload_prepare_stdio(struct workload *w, const char **argv, const sigset_t *orig_mask,
			   const struct sigaction orig_act[WORKLOAD_NR_SIGNALS],
			   const int stdio[3]);

/* Release the child.  Returns 0 when it exec'd, -1 when exec failed (error printed). */
int workload_start(struct workload *w, const char *cmd);

/* Kill (SIGKILL) and reap a child that was never started. */
void workload_abort(struct workload *w);

/*
 * Reap the child if it has exited.  Returns 1 with *status set to its exit code or
 * 128+signal, 0 when it is still running, -1 on error.  Blocks when wait is non-zero.
 */
int workload_reap(struct workload *w, int wait, int *status);

void workload_release(struct workload *w);

#endif
