/* rec-fork.c - record test workload: the parent forks; the child burns CPU in
 * rec_child_work() (0.5 s), the parent waits for it and exits with the child's status. */
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long rec_sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void rec_child_work(double seconds)
{
	double end = cpu_seconds() + seconds;
	unsigned long x = 5;

	while (cpu_seconds() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1ul;
	rec_sink = x;
}

int main(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return 1;
	if (!pid) {
		rec_child_work(0.5);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) != pid)
		return 1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
