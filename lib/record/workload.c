/* workload.c - corked fork/exec of the profiled command and its exit status. */
#include "workload.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

const int workload_signals[WORKLOAD_NR_SIGNALS] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };

static void child_fail(int fd, int err)
{
	ssize_t UNUSED n = write(fd, &err, sizeof(err));
	_exit(127);
}

int workload_prepare(struct workload *w, const char **argv, const sigset_t *orig_mask,
		     const struct sigaction orig_act[WORKLOAD_NR_SIGNALS])
{
	return workload_prepare_stdio(w, argv, orig_mask, orig_act, NULL);
}

int workload_prepare_stdio(struct workload *w, const char **argv, const sigset_t *orig_mask,
			   const struct sigaction orig_act[WORKLOAD_NR_SIGNALS],
			   const int stdio[3])
{
	int go[2], ep[2];
	pid_t pid;

	memset(w, 0, sizeof(*w));
	w->pid = -1;
	w->go_fd = w->err_fd = w->pidfd = -1;
	if (pipe2(go, O_CLOEXEC) < 0)
		return error("cannot create pipe: %s", strerror(errno));
	if (pipe2(ep, O_CLOEXEC) < 0) {
		close(go[0]);
		close(go[1]);
		return error("cannot create pipe: %s", strerror(errno));
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(go[0]); close(go[1]); close(ep[0]); close(ep[1]);
		return error("cannot fork: %s", strerror(e));
	}
	if (!pid) {
		char c;

		close(go[1]);
		close(ep[0]);
		for (int i = 0; i < WORKLOAD_NR_SIGNALS; i++)
			sigaction(workload_signals[i], &orig_act[i], NULL);
		sigprocmask(SIG_SETMASK, orig_mask, NULL);
		for (int i = 0; stdio && i < 3; i++)
			if (stdio[i] >= 0 && stdio[i] != i && dup2(stdio[i], i) < 0)
				_exit(127);
		/* corked: wait until the parent has opened the counters */
		if (read(go[0], &c, 1) != 1)
			_exit(127);	/* parent gave up */
		execvp(argv[0], (char *const *)argv);
		child_fail(ep[1], errno);
	}
	close(go[0]);
	close(ep[1]);
	w->pid = pid;
	w->go_fd = go[1];
	w->err_fd = ep[0];
	w->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	return 0;
}

int workload_start(struct workload *w, const char *cmd)
{
	int err;
	ssize_t n;

	if (write(w->go_fd, "g", 1) != 1) {
		err = errno;
		return error("cannot release '%s': %s", cmd, strerror(err));
	}
	close(w->go_fd);
	w->go_fd = -1;
	do {
		n = read(w->err_fd, &err, sizeof(err));
	} while (n < 0 && errno == EINTR);
	close(w->err_fd);
	w->err_fd = -1;
	if (n == sizeof(err)) {
		w->exec_errno = err;
		return error("cannot run '%s': %s", cmd, strerror(err));
	}
	return 0;
}

void workload_abort(struct workload *w)
{
	int st;

	if (w->pid <= 0)
		return;
	kill(w->pid, SIGKILL);
	while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
		;
	w->pid = -1;
}

int workload_reap(struct workload *w, int wait, int *status)
{
	int st;
	pid_t r;

	if (w->pid <= 0)
		return -1;
	do {
		r = waitpid(w->pid, &st, wait ? 0 : WNOHANG);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		return error("cannot wait for the workload: %s", strerror(errno));
	if (!r)
		return 0;
	if (WIFEXITED(st))
		*status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		*status = 128 + (w->term_sig = WTERMSIG(st));
	else
		*status = 255;
	w->pid = -1;
	return 1;
}

void workload_release(struct workload *w)
{
	if (w->go_fd >= 0)
		close(w->go_fd);
	if (w->err_fd >= 0)
		close(w->err_fd);
	if (w->pidfd >= 0)
		close(w->pidfd);
	w->go_fd = w->err_fd = w->pidfd = -1;
}
