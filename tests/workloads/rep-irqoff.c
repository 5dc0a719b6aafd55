/* rep-irqoff.c - kernel work with interrupts off: a signal sent to itself (the kernel
 * queues it under the sighand lock, interrupts off) and a sched_yield (the runqueue lock,
 * interrupts off), in a loop for SECONDS.  Prints its own CPU times from getrusage:
 *	user_ns SYS_ns
 * so a test knows how much of the run was kernel time.
 * usage: rep-irqoff [SECONDS] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_usr1(int sig)
{
	(void)sig;
	got++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;
	struct timespec t0, t;
	struct rusage ru;
	pid_t self = getpid();

	signal(SIGUSR1, on_usr1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++) {
			kill(self, SIGUSR1);
			sched_yield();
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	getrusage(RUSAGE_SELF, &ru);
	printf("%lld %lld\n", (long long)ru.ru_utime.tv_sec * 1000000000 + ru.ru_utime.tv_usec * 1000ll,
	       (long long)ru.ru_stime.tv_sec * 1000000000 + ru.ru_stime.tv_usec * 1000ll);
	return got > 0 ? 0 : 1;
}
