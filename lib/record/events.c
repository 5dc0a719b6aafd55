/* events.c - the events record opens: attributes, per-cpu and per-thread descriptors, sampling limits (recorder.h). */
#include "recorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

/* ---- event setup ---- */
int events_online_cpus(int **cpus)
{
	struct strbuf sb = STRBUF_INIT;
	int nr = 0;
	size_t alloc = 0;
	char *p;

	*cpus = NULL;
	if (strbuf_read_file(&sb, "/sys/devices/system/cpu/online", 4096) < 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		for (long i = 0; i < n; i++) {
			ALLOC_GROW(*cpus, (size_t)nr + 1, alloc);
			(*cpus)[nr++] = (int)i;
		}
		return nr;
	}
	for (p = sb.buf; *p && *p != '\n';) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			break;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long i = a; i <= b && i < 4096; i++) {
			ALLOC_GROW(*cpus, (size_t)nr + 1, alloc);
			(*cpus)[nr++] = (int)i;
		}
		p = *end == ',' ? end + 1 : end;
	}
	strbuf_release(&sb);
	return nr;
}

/* The file execvp would run for name, or -1. */
static int find_in_path(const char *name, char *out, size_t size)
{
	const char *p = getenv("PATH");

	if (strchr(name, '/')) {
		snprintf(out, size, "%s", name);
		return 0;
	}
	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");

		snprintf(out, size, "%.*s%s%s", (int)n, p, n ? "/" : "", name);
		if (!access(out, X_OK))
			return 0;
		p += n + (p[n] == ':');
	}
	return -1;
}

/* Does the command (or a process of -p) look like a Python interpreter: a python3.X
 * executable, a script run by one, or a process that maps one. */
int events_python_target(const struct record_opts *o)
{
	char path[4096], line[256];
	FILE *f;

	if (o->pids) {
		const char *p = o->pids;

		while (*p) {
			char exe[64], buf[4096];
			long pid = strtol(p, (char **)&p, 10);
			ssize_t n;

			snprintf(exe, sizeof(exe), "/proc/%ld/exe", pid);
			n = readlink(exe, buf, sizeof(buf) - 1);
			if (n > 0) {
				buf[n] = 0;
				if (pyreader_python_path(buf))
					return 1;
			}
			while (*p && (*p < '0' || *p > '9'))
				p++;
		}
		return 0;
	}
	if (!o->argv || !o->argv[0] || find_in_path(o->argv[0], path, sizeof(path)) < 0)
		return 0;
	{
		char *real = realpath(path, NULL);
		int py = real && pyreader_python_path(real);

		free(real);
		if (py)
			return 1;
	}
	f = fopen(path, "re");
	if (!f)
		return 0;
	line[0] = 0;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	return !strncmp(line, "#!", 2) && strstr(line, "python");
}

void events_attr_common(struct recorder *r, struct perf_event_attr *a, int first)
{
	const struct record_opts *o = r->opts;

	a->size = sizeof(*a);
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	if (o->callgraph == RECORD_CG_FP)
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
	if (o->callgraph == RECORD_CG_DWARF) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER |
				  PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = X86_64_USER_REGS;
		a->sample_stack_user = o->stack_size;
		a->exclude_callchain_user = 1;	/* the stack copy replaces the fp chain */
	}
	if (o->memory && !(a->sample_type & PERF_SAMPLE_REGS_USER)) {
		/* the allocation events' arguments; every event keeps one record layout */
		a->sample_type |= PERF_SAMPLE_REGS_USER;
		a->sample_regs_user = X86_64_USER_REGS;
	}
	if (o->period) {
		a->freq = 0;
		a->sample_period = o->period;
	} else {
		a->freq = 1;
		a->sample_freq = o->freq;
	}
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	/* -a: one event per cpu follows every task; the idle task's ticks are no one's */
	a->inherit = !o->system_wide;
	a->exclude_idle = !!o->system_wide;
	if (o->pids || o->system_wide || o->ct_follow) {
		/* running already: counting starts when the counter is opened */
		a->disabled = 0;
		a->enable_on_exec = 0;
	} else {
		a->disabled = 1;
		a->enable_on_exec = 1;
	}
	if (r->py.wakeup && !r->py.pb) {
		/* Python stacks are read when the sample is in: wake up for each one */
		a->watermark = 0;
		a->wakeup_events = 1;
	} else {
		a->watermark = 1;
	}
	if (first) {
		a->mmap = 1;
		a->mmap2 = 1;
		a->build_id = 1;
		a->comm = 1;
		a->comm_exec = 1;
		a->task = 1;
		a->context_switch = 1;
	}
}

int events_one_plain(const struct record_opts *o)
{
	const char *list = o->events ? o->events : "cycles";
	struct perf_event_attr a;
	char name[64];
	size_t n = strlen(list);

	if (strchr(list, ',') || n >= sizeof(name))
		return 0;
	memcpy(name, list, n + 1);
	memset(&a, 0, sizeof(a));
	if (event_resolve(name, &a))
		return 0;
	if (a.type == PERF_TYPE_TRACEPOINT)
		return 0;
	return a.type != PERF_TYPE_SOFTWARE || (a.config != PERF_COUNT_SW_CONTEXT_SWITCHES &&
						a.config != PERF_COUNT_SW_CPU_MIGRATIONS &&
						a.config != PERF_COUNT_SW_CGROUP_SWITCHES);
}

/*
 * Split opts->events and resolve every name, then probe each: an unknown name is
 * reported before any event fails to open (-e cycles,bogus names bogus, not the
 * missing PMU).  Returns 0, or the exit status on error.
 */
int events_setup(struct recorder *r)
{
	const char *list = r->opts->events ? r->opts->events : "cycles";
	int kernel_dropped = 0;
	char *copy = xstrdup(list), *save = NULL, *name;
	char *names[MAX_EVENTS];

	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		struct rec_event *e;
		int ret;

		if (r->nr_ev == MAX_EVENTS) {
			free(copy);
			return error("too many events (at most %d)", MAX_EVENTS), DLP_USAGE;
		}
		e = &r->ev[r->nr_ev];
		memset(e, 0, sizeof(*e));
		ret = event_resolve(name, &e->attr);
		if (ret == EVENT_UNKNOWN) {
			error("unknown event '%s'", name);
			free(copy);
			return DLP_FAILED;
		}
		if (ret < 0) {
			free(copy);
			return DLP_FAILED;
		}
		names[r->nr_ev++] = name;
	}
	for (int i = 0; i < r->nr_ev; i++) {
		struct rec_event *e = &r->ev[i];
		int ret;

		name = names[i];
		events_attr_common(r, &e->attr, i == 0);
		ret = event_probe(&e->attr, &kernel_dropped);
		if (ret < 0 && !r->opts->events && !strcmp(name, "cycles")) {
			snprintf(r->warn.fallback, sizeof(r->warn.fallback),
				 "no hardware PMU available (cycles: %s); sampling cpu-clock instead",
				 strerror(-ret));
			name = "cpu-clock";
			memset(&e->attr, 0, sizeof(e->attr));
			event_resolve(name, &e->attr);
			events_attr_common(r, &e->attr, i == 0);
			ret = event_probe(&e->attr, &kernel_dropped);
		}
		if (ret < 0) {
			event_open_error(name, ret);
			free(copy);
			return DLP_FAILED;
		}
		snprintf(e->name, sizeof(e->name), "%s", name);
	}
	free(copy);
	if (!r->nr_ev)
		return error("no event given"), DLP_USAGE;
	if (r->opts->metrics) {
		struct perf_event_attr common;
		int ret;

		memset(&common, 0, sizeof(common));
		events_attr_common(r, &common, 0);
		ret = metrics_setup(r, &common);

		if (ret)
			return ret;
	}
	/* by default not for a Python target whose stacks are read from outside: record
	 * wakes at each of its samples then, each wake-up preempts a workload thread on a
	 * busy machine, and those preemptions (our own doing) would be most of its
	 * switch-outs (CNN: 17k samples with them against 9.5k, the run time the same);
	 * read in the kernel (pybpf.h), nothing wakes */
	if (r->opts->off_cpu == 1 ||
	    (r->opts->off_cpu == 2 && (r->met.nr || !(r->py.wakeup && !r->py.pb)))) {
		/* where threads block: every switch-out, with its stack (report and fold
		 * --off-cpu weight it by the time until the thread runs again) */
		struct rec_event *e;
		int ret;

		if (r->nr_ev == MAX_EVENTS)
			return error("too many events (at most %d)", MAX_EVENTS), DLP_USAGE;
		e = &r->ev[r->nr_ev];
		memset(e, 0, sizeof(*e));
		e->attr.type = PERF_TYPE_SOFTWARE;
		e->attr.config = PERF_COUNT_SW_CONTEXT_SWITCHES;
		events_attr_common(r, &e->attr, 0);
		e->attr.freq = 0;
		e->attr.sample_period = 1;
		/* a switch-out wakes nobody: with Python's per-sample wake-ups, waking at
		 * each switch would make the switches it counts (and lose samples) */
		e->attr.watermark = 1;
		e->attr.wakeup_events = 0;
		e->off_cpu = 1;
		ret = event_probe(&e->attr, &kernel_dropped);
		if (!ret && r->met.nr)
			metrics_switch_outs(r, &e->attr);
		if (ret < 0 && r->opts->off_cpu == 2) {
			metrics_no_switch_outs(r, strerror(-ret));	/* by default only: left out */
		} else if (ret < 0) {
			event_open_error("context-switches", ret);
			return DLP_FAILED;
		} else {
			snprintf(e->name, sizeof(e->name), "%s", "context-switches");
			r->nr_ev++;
		}
	}
	if (kernel_dropped)
		warning("kernel.perf_event_paranoid is %d: recording user space only",
			event_paranoid());
	return 0;
}

/* kernel.perf_event_max_sample_rate (the kernel may lower it while it runs) */
unsigned long events_max_sample_rate(void)
{
	struct strbuf sb = STRBUF_INIT;
	unsigned long v = (unsigned long)-1;

	if (strbuf_read_file(&sb, "/proc/sys/kernel/perf_event_max_sample_rate", 64) >= 0 &&
	    sb.len)
		v = strtoul(sb.buf, NULL, 10);
	strbuf_release(&sb);
	return v ? v : (unsigned long)-1;
}

static long mlock_kb(void)
{
	struct strbuf sb = STRBUF_INIT;
	long v = -1;

	if (strbuf_read_file(&sb, "/proc/sys/kernel/perf_event_mlock_kb", 64) >= 0 && sb.len)
		v = strtol(sb.buf, NULL, 10);
	strbuf_release(&sb);
	return v;
}

size_t events_default_pages(const struct record_opts *o)
{
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	size_t bytes = o->callgraph == RECORD_CG_DWARF ? (8u << 20) : (512u << 10);

	if (o->mmap_pages)
		return o->mmap_pages;
	return bytes / psz;
}


int events_open(struct recorder *r, pid_t pid)
{
	size_t pages = events_default_pages(r->opts);
	size_t psz = (size_t)sysconf(_SC_PAGESIZE);
	int shrunk = 0;

	r->nr_fds = r->nr_ev * r->nr_cpus;
	ALLOC_GROW(r->fds, (size_t)r->nr_fds, r->alloc_fds);
	for (int i = 0; i < r->nr_fds; i++)
		r->fds[i] = -1;
	r->rings = xcalloc((size_t)r->nr_cpus, sizeof(struct ring));
	for (int e = 0; e < r->nr_ev; e++) {
		ALLOC_GROW(r->ev[e].ids, (size_t)r->nr_cpus, r->ev[e].alloc_ids);
		if (r->ev[e].attr.watermark)
			r->ev[e].attr.wakeup_watermark = (uint32_t)(pages * psz / WAKE_DIV);
	}

	for (int c = 0; c < r->nr_cpus; c++) {
		for (int e = 0; e < r->nr_ev; e++) {
			struct rec_event *ev = &r->ev[e];
			int fd = event_open(&ev->attr, pid, r->cpus[c], metrics_group(r, e, r->fds[c]),
					    PERF_FLAG_FD_CLOEXEC | r->att.pid_flags);
			uint64_t id;

			if (fd < 0) {
				event_open_error(ev->name, -errno);
				return -1;
			}
			r->fds[e * r->nr_cpus + c] = fd;
			if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
				return error("cannot get the id of event '%s': %s", ev->name,
					     strerror(errno));
			ev->ids[ev->nr_ids++] = id;
			if (e == 0) {
				while (ring_mmap(&r->rings[c], fd, pages) < 0) {
					if ((errno != EPERM && errno != ENOMEM) || pages <= 8)
						return error("cannot map the ring buffer of cpu %d: %s "
							     "(kernel.perf_event_mlock_kb is %ld: raise it with "
							     "'sysctl -w kernel.perf_event_mlock_kb=%zu', or RLIMIT_MEMLOCK)",
							     r->cpus[c], strerror(errno), mlock_kb(),
							     events_default_pages(r->opts) * psz / 1024 + psz / 1024);
					/*
					 * A smaller ring needs a smaller wakeup watermark (the kernel
					 * clamps it to the whole ring: no wakeup before it is full,
					 * samples lost): open this cpu's event again with it.
					 */
					pages /= 2;
					shrunk = 1;
					for (int k = 0; k < r->nr_ev; k++)
						if (r->ev[k].attr.watermark)
							r->ev[k].attr.wakeup_watermark =
								(uint32_t)(pages * psz / WAKE_DIV);
					close(fd);
					r->fds[c] = -1;
					fd = event_open(&ev->attr, pid, r->cpus[c], -1, PERF_FLAG_FD_CLOEXEC |
						      r->att.pid_flags);
					if (fd < 0) {
						event_open_error(ev->name, -errno);
						return -1;
					}
					r->fds[c] = fd;
					if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
						return error("cannot get the id of event '%s': %s",
							     ev->name, strerror(errno));
					ev->ids[ev->nr_ids - 1] = id;
				}
				if (r->opts->callgraph == RECORD_CG_DWARF &&
				    pages * psz < (size_t)r->opts->stack_size + 1024)
					return error("a ring of %zu KiB cannot hold one sample with %u "
						     "bytes of stack: use --call-graph dwarf=%zu or raise "
						     "kernel.perf_event_mlock_kb", pages * psz / 1024,
						     r->opts->stack_size, pages * psz / 2);
			} else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fds[c]) < 0) {
				return error("cannot redirect event '%s' to the ring of cpu %d: %s",
					     ev->name, r->cpus[c], strerror(errno));
			}
		}
		/* the counters last: in the group after the switch-out event (metrics.c) */
		if (r->met.nr && metrics_open(r, r->fds[c], pid, r->cpus[c]))
			return -1;
	}
	if (shrunk) {
		snprintf(r->warn.ring, sizeof(r->warn.ring), "ring buffer limited to %zu KiB per "
			 "cpu (kernel.perf_event_mlock_kb is %ld, RLIMIT_MEMLOCK)", pages * psz / 1024,
			 mlock_kb());
		/* asked for with -m: said now; the default's ring is said only if it lost */
		if (r->opts->mmap_pages)
			warning("%s: samples may be lost at high rates", r->warn.ring);
	}
	if (r->py.pb) {
		pykernel_attach(r, 0);
		if (r->py.pb && !r->opts->pids && !r->opts->ct_follow && pid > 0)
			pykernel_bells_open(r, pid);
	}
	return 0;
}

/*
 * -p: counters on one more thread of a running process, one per event and cpu, each
 * writing into the ring of its cpu.  Returns 0, 1 when the thread is gone already, or
 * -1 (error printed).
 */
static int open_thread(struct recorder *r, pid_t tid)
{
	int base = r->nr_fds;

	r->nr_fds += r->nr_ev * r->nr_cpus;
	ALLOC_GROW(r->fds, (size_t)r->nr_fds, r->alloc_fds);
	for (int i = base; i < r->nr_fds; i++)
		r->fds[i] = -1;
	for (int e = 0; e < r->nr_ev; e++) {
		struct rec_event *ev = &r->ev[e];

		for (int c = 0; c < r->nr_cpus; c++) {
			int fd = event_open(&ev->attr, tid, r->cpus[c],
					    metrics_group(r, e, r->fds[base + c]), PERF_FLAG_FD_CLOEXEC);
			uint64_t id;

			if (fd < 0) {
				if (errno == ESRCH)
					return 1;
				event_open_error(ev->name, -errno);
				return -1;
			}
			r->fds[base + e * r->nr_cpus + c] = fd;
			if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
				return error("cannot get the id of event '%s': %s", ev->name,
					     strerror(errno));
			ALLOC_GROW(ev->ids, ev->nr_ids + 1, ev->alloc_ids);
			ev->ids[ev->nr_ids++] = id;
			if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fds[c]) < 0)
				return error("cannot redirect event '%s' to the ring of cpu %d: %s",
					     ev->name, r->cpus[c], strerror(errno));
		}
	}
	/* the counters last: in the group after the switch-out event (metrics.c) */
	for (int c = 0; c < r->nr_cpus && r->met.nr; c++) {
		int ret = metrics_open(r, r->fds[base + c], tid, r->cpus[c]);

		if (ret)
			return ret;
	}
	if (r->py.pb)
		pykernel_attach(r, base);
	return 0;
}

/*
 * -p: counters on every thread of the target processes.  Threads that start after
 * their creator has counters inherit them; the list is read again until it holds no
 * thread without, so none started in between is missed.  Returns 0 or -1.
 */
int events_open_targets(struct recorder *r)
{
	int first = 1;

	for (int round = 0; round < 100; round++) {
		int added = 0;

		for (int t = 0; t < r->att.nr; t++) {
			pid_t *tids;
			size_t nr = attach_list_tids(r->att.targets[t], &tids);

			for (size_t i = 0; i < nr; i++) {
				int ret;

				if (u64map_has(&r->att.tids_open, (uint64_t)tids[i]))
					continue;
				if (first)
					ret = events_open(r, tids[i]);
				else
					ret = open_thread(r, tids[i]);
				if (ret < 0) {
					free(tids);
					return -1;
				}
				first = 0;
				u64map_add(&r->att.tids_open, (uint64_t)tids[i]);
				added++;
			}
			free(tids);
		}
		if (first)
			return error("the processes to attach to have ended"), -1;
		if (!added)
			return 0;
	}
	return error("the threads of the processes to attach to keep changing"), -1;
}

void events_close(struct recorder *r)
{
	metrics_totals(r);	/* (the counters' own counts, before they go) */
	metrics_close(r);
	if (r->fds)
		for (int i = 0; i < r->nr_fds; i++)
			if (r->fds[i] >= 0)
				close(r->fds[i]);
	if (r->rings)
		for (int c = 0; c < r->nr_cpus; c++)
			ring_release(&r->rings[c]);
	free(r->fds);
	free(r->rings);
	r->fds = NULL;
	r->rings = NULL;
	r->nr_fds = r->alloc_fds = 0;
}

int events_write_attrs(struct recorder *r)
{
	for (int e = 0; e < r->nr_ev; e++) {
		struct rec_event *ev = &r->ev[e];
		struct dlp_attr_rec h;
		struct strbuf sb = STRBUF_INIT;
		int ret;

		if (ev->mem == MEM_EV_WAIT)
			continue;	/* it wakes record, nothing of it is written */
		memset(&h, 0, sizeof(h));
		h.attr_size = sizeof(ev->attr);
		h.nr_ids = (uint32_t)ev->nr_ids;
		snprintf(h.name, sizeof(h.name), "%s", ev->name);
		strbuf_add(&sb, &ev->attr, sizeof(ev->attr));
		strbuf_add(&sb, ev->ids, ev->nr_ids * sizeof(uint64_t));
		if (r->ru) {
			struct strbuf all = STRBUF_INIT;

			strbuf_add(&all, &h, sizeof(h));
			strbuf_add(&all, sb.buf, sb.len);
			ret = recunw_attr(r->ru, all.buf, all.len);
			strbuf_release(&all);
		} else {
			ret = recwriter_add2(r->w, DLP_REC_ATTR, &h, sizeof(h), sb.buf, sb.len);
		}
		strbuf_release(&sb);
		if (ret < 0)
			return -1;
	}
	return 0;
}

