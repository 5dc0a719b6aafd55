/* event.h - event names to perf_event_attr, and probing that the kernel accepts them.
 *
 * Names are the generic perf ones (cycles, instructions, cpu-clock, task-clock,
 * page-faults, context-switches, ...; optional :u or :k suffix) or anything libpfm4
 * knows (PMU-specific names such as inst_retired.any, with its modifiers).  libpfm4
 * decides which PMU exists from CPUID, so a name it encodes may still be refused by the
 * kernel (a guest without a virtual PMU): event_probe() asks the kernel for real.
 */
#ifndef DLPROF_EVENT_H
#define DLPROF_EVENT_H

#include <linux/perf_event.h>
#include <pthread.h>

#define EVENT_UNKNOWN 1		/* event_resolve(): no such name */

/*
 * Fill attr's type, config, config1, config2 and privilege-level excludes for name.  The
 * rest of attr is left as it was.  Returns 0, EVENT_UNKNOWN, or -1 (libpfm4 failed to
 * initialize or encode; error printed).
 */
int event_resolve(const char *name, struct perf_event_attr *attr);

/*
 * Try to open attr for this process (disabled) and close it again.  When the kernel
 * refuses the kernel-mode part (EACCES/EPERM), retry with exclude_kernel/exclude_hv set
 * (upstream kernels allow that at any perf_event_paranoid above 1), keep those in attr and
 * set *kernel_dropped.  Returns 0 or a negative errno (the retry's, when it is not
 * EACCES/EPERM: the real reason once access is settled).
 */
int event_probe(struct perf_event_attr *attr, int *kernel_dropped);

/* Print a one-line error explaining why event name could not be opened (err < 0). */
void event_open_error(const char *name, int err);

/* Current kernel.perf_event_paranoid, or -100 when unreadable. */
int event_paranoid(void);

/* perf_event_open(2). */
int event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd, unsigned long flags);
/* A dummy software event's attr (no counter: side-band records alone), all else 0 */
void event_dummy_attr(struct perf_event_attr *a);

/*
 * The first event on a task that a system opens turns the scheduler's perf hooks on (a
 * static key patched in, then an RCU grace period: 10 to 30 ms on these guests), and they
 * go off a second after the last one closes.  event_warm_start opens such an event (a
 * dummy one on a thread of its own, which waits for it) so that the wait falls beside
 * the work record does as it starts (the BPF program's load); event_warm_end waits for
 * it and closes it, once record's own events are open.  Nothing is said where the open
 * fails: the events' own probe says why.
 */
struct event_warm {
	pthread_t thread;
	int started;
	int fd;
};
void event_warm_start(struct event_warm *w);
void event_warm_end(struct event_warm *w);

#endif
