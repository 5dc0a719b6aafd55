/* switches.h - a recording's context switches, kept to be read per thread in time order.
 *
 * The switch records come per CPU ring, so a thread that moved between CPUs has them out
 * of time order in the file: views that pair a switch-out with the next switch-in (the
 * timeline's off-CPU slices, the thread table's on/off-CPU time) add them here and read
 * them after switches_sort().
 */
#ifndef DLPROF_SWITCHES_H
#define DLPROF_SWITCHES_H

#include <stddef.h>
#include <stdint.h>

struct switch_ev {
	uint32_t pid, tid;
	uint64_t time;
	int out, preempt;	/* switched out; out while still runnable */
};

struct switches {
	struct switch_ev *v;
	size_t nr, alloc;
};

void switches_add(struct switches *s, uint32_t pid, uint32_t tid, uint64_t time, int out,
		  int preempt);
/* By process, thread, then time. */
void switches_sort(struct switches *s);
void switches_release(struct switches *s);

#endif
