/* rec-hot.c - record test workload: burn CPU in a known function, then end as told.
 *
 *   rec-hot [SECONDS [exit N | kill SIG | segv | wait]]
 *
 * rec_hot_loop() burns SECONDS of CPU time (default 1).  Then: exit with N, kill
 * itself with SIG, crash on a null pointer, or (wait) sleep until a signal arrives.
 * SIGINT and SIGQUIT are reset to their defaults so a test shell that started us in
 * the background (with both ignored) cannot hide the forwarded signal.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long rec_sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void rec_hot_loop(double seconds)
{
	double end = cpu_seconds() + seconds;
	unsigned long x = 1;

	while (cpu_seconds() < end)
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	rec_sink = x;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;

	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	rec_hot_loop(secs);
	if (argc > 3 && !strcmp(argv[2], "exit"))
		return atoi(argv[3]);
	if (argc > 3 && !strcmp(argv[2], "kill"))
		kill(getpid(), atoi(argv[3]));
	if (argc > 2 && !strcmp(argv[2], "segv")) {
		int *volatile nowhere = NULL;

		*nowhere = 1;
	}
	if (argc > 2 && !strcmp(argv[2], "wait"))
		for (;;)
			pause();
	return 0;
}
