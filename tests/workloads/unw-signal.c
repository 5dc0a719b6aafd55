/* unw-signal [SECONDS]: a known stack through a signal frame.
 *
 * main() calls outer_loop(), which spins in inner_spin(); an interval timer (SIGALRM
 * every 20 ms) interrupts it, and the handler spins 10 ms in handler_spin().  About half
 * of the samples are in the handler, whose stacks are
 *   handler_spin <- on_alarm <- __restore_rt <- inner_spin <- outer_loop <- main
 * (the frame after the signal frame is where the signal came: its own address, not a
 * return address), and the others main -> outer_loop -> inner_spin.  Built without
 * frame pointers: the CFI, and the signal frame's saved registers, are the only way. */
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile double sink;
static volatile int stop;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void handler_spin(double seconds)
{
	double end = now() + seconds, x = 1.0;

	while (now() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) void on_alarm(int sig)
{
	(void)sig;
	handler_spin(0.010);
}

__attribute__((noinline)) void inner_spin(double end)
{
	double x = 1.0;

	while (!stop && now() < end)
		for (int i = 0; i < 1000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

__attribute__((noinline)) void outer_loop(double seconds)
{
	inner_spin(now() + seconds);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	struct sigaction sa = { 0 };
	struct itimerval it = { { 0, 20000 }, { 0, 20000 } };

	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	outer_loop(seconds);
	return 0;
}
