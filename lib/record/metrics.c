/* metrics.c - record --metrics: counters given to each sample's attribution.  Where the
 * kernel can (Linux 6.12 and later), the sampling event leads a group of counters; each
 * sample carries the counts of its thread on its cpu (PERF_SAMPLE_READ of an inherited
 * group), and the drain turns them into the counts of the interval the sample ends
 * (recorder.h: r->met).  Elsewhere, or with --metrics-mode events, each counter is
 * sampled on its own every so many events, and each of its samples stands for that many
 * at its own stack (META metrics_mode=events, metrics_period). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util.h"
#include "recorder.h"

/* What a named set holds: each member by the name it is shown as, and the event names
 * that count it, tried in order (the generic one, Intel's, AMD's) */
/* What a named set holds: each member by the name it is shown as, the event names that
 * count it, tried in order (the generic one, Intel's, AMD's), and its events per sample
 * where it is sampled on its own (prime for the busy ones: no beat with a loop's) */
static const struct met_def {
	const char *set, *label;
	const char *names[3];
	uint64_t period;
} met_defs[] = {
	{ "faults", "page-faults", { "page-faults" }, 64 },
	{ "faults", "minor-faults", { "minor-faults" }, 64 },
	{ "faults", "major-faults", { "major-faults" }, 1 },
	{ "sched", "context-switches", { "context-switches" }, 1 },
	{ "sched", "cpu-migrations", { "cpu-migrations" }, 1 },
	{ "ipc", "cycles", { "cycles" }, 2000003 },
	{ "ipc", "instructions", { "instructions" }, 2000003 },
	{ "fp", "fp-scalar", { "FP_ARITH_INST_RETIRED:SCALAR_SINGLE:SCALAR_DOUBLE",
			       "RETIRED_FP_OPS_BY_WIDTH:SCALAR_UOPS_RETIRED" }, 200003 },
	{ "fp", "fp-128", { "FP_ARITH_INST_RETIRED:128B_PACKED_SINGLE:128B_PACKED_DOUBLE",
			    "RETIRED_FP_OPS_BY_WIDTH:PACK128_UOPS_RETIRED" }, 200003 },
	{ "fp", "fp-256", { "FP_ARITH_INST_RETIRED:256B_PACKED_SINGLE:256B_PACKED_DOUBLE",
			    "RETIRED_FP_OPS_BY_WIDTH:PACK256_UOPS_RETIRED" }, 200003 },
	{ "fp", "fp-512", { "FP_ARITH_INST_RETIRED:512B_PACKED_SINGLE:512B_PACKED_DOUBLE",
			    "RETIRED_FP_OPS_BY_WIDTH:PACK512_UOPS_RETIRED" }, 200003 },
	{ "cache", "instructions", { "instructions" }, 2000003 },
	{ "cache", "L1-dcache-load-misses", { "L1-dcache-load-misses" }, 100003 },
	{ "cache", "l2-misses", { "L2_RQSTS:MISS" }, 20011 },
	{ "cache", "LLC-load-misses", { "LLC-load-misses" }, 10007 },
	{ "amx", "amx-busy", { "EXE:AMX_BUSY" }, 2000003 },
};

/* An event named by the user, sampled on its own: a software one every event (faults of
 * other kinds, alignment faults: rare), another every 100,003 */
#define MET_PERIOD_SW	1
#define MET_PERIOD_HW	100003

static int met_has(const struct rec_metrics *m, const char *label)
{
	for (int i = 0; i < m->nr; i++)
		if (!strcmp(m->label[i], label))
			return 1;
	return 0;
}

/* A counter left out: its label under its reason, for the one line ("cycles,
 * instructions (no such counter here: ...); ...") */
static void met_left(struct rec_metrics *m, const char *label, const char *why)
{
	int i;

	for (int k = 0; k < m->nr_why; k++) {
		/* (a member of two sets: instructions) */
		const char *at = m->whose[k].len ? strstr(m->whose[k].buf, label) : NULL;
		size_t n = strlen(label);

		for (; at; at = strstr(at + 1, label))
			if ((at == m->whose[k].buf || at[-1] == ' ') && (!at[n] || at[n] == ','))
				return;
	}
	for (i = 0; i < m->nr_why && strcmp(m->why[i], why); i++)
		;
	if (i == m->nr_why) {
		if (i == MET_MAX)
			i--;	/* (more reasons than counters: the last takes them) */
		else
			snprintf(m->why[m->nr_why++], sizeof(m->why[0]), "%s", why);
	}
	if (m->whose[i].len)
		strbuf_addstr(&m->whose[i], ", ");
	strbuf_addstr(&m->whose[i], label);
}

/* Why the kernel would not open counter a (err, its errno), in buf */
static const char *met_refused(char *buf, size_t len, int err, const struct perf_event_attr *a)
{
	if ((err == ENOENT || err == ENODEV || err == EOPNOTSUPP) && a->type != PERF_TYPE_SOFTWARE)
		snprintf(buf, len, "no hardware PMU here: %s", strerror(err));
	else
		snprintf(buf, len, "the kernel refuses it: %s", strerror(err));
	return buf;
}

/* Why no hardware counter can count here (a KVM guest without a virtual PMU), or NULL:
 * asked once of the kernel by opening cycles.  Said of every hardware member, before
 * libpfm4 is asked its name (whose tables may not know this CPU) */
static const char *no_pmu(void)
{
	static char why[96];
	static int asked;

	if (!asked) {
		struct perf_event_attr a;
		int dropped = 0, ret;

		asked = 1;
		memset(&a, 0, sizeof(a));
		if (event_resolve("cycles", &a))
			return NULL;
		a.size = sizeof(a);
		ret = event_probe(&a, &dropped);
		if (ret == -ENOENT || ret == -ENODEV || ret == -EOPNOTSUPP)
			met_refused(why, sizeof(why), -ret, &a);
	}
	return why[0] ? why : NULL;
}

/* A named set's member that only a PMU counts */
static int met_def_hw(const struct met_def *d)
{
	return strcmp(d->set, "faults") && strcmp(d->set, "sched");
}

/* Open a copy of the leader as it will be opened (disabled) for this process: the
 * probe's group; -errno when the kernel refuses it */
static int probe_leader(const struct perf_event_attr *lead)
{
	struct perf_event_attr a = *lead;
	int fd;

	a.disabled = 1;
	a.enable_on_exec = 0;
	fd = event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A counter's event name into a, zeroed first: 0, or -1 with why set (a name libpfm4
 * does not know says so only where no other name gave a reason) */
static int met_resolve(const char *name, struct perf_event_attr *a, const char **why)
{
	int ret;

	memset(a, 0, sizeof(*a));
	ret = event_resolve(name, a);
	if (ret == EVENT_UNKNOWN) {
		if (!*why)
			*why = "no such event on this CPU";
		return -1;
	}
	if (ret < 0) {
		*why = "libpfm4 cannot encode it";
		return -1;
	}
	return 0;
}

/* One member: the first of its names that resolves and opens in the probe's group */
static void met_add(struct rec_metrics *m, int leader_fd, const struct perf_event_attr *lead,
		    const char *label, const char *const *names, size_t nr_names)
{
	const char *why = NULL;
	char buf[128];

	if (met_has(m, label))
		return;
	if (m->nr == MET_MAX) {
		met_left(m, label, "too many counters");
		return;
	}
	for (size_t k = 0; k < nr_names && names[k]; k++) {
		struct perf_event_attr a;
		int fd;

		if (met_resolve(names[k], &a, &why))
			continue;
		a.size = sizeof(a);
		a.inherit = lead->inherit;
		a.use_clockid = lead->use_clockid;	/* (a group has one clock) */
		a.clockid = lead->clockid;
		if (lead->exclude_kernel) {
			a.exclude_kernel = 1;
			a.exclude_hv = 1;
		}
		fd = event_open(&a, 0, -1, leader_fd, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			why = met_refused(buf, sizeof(buf), errno, &a);
			continue;
		}
		close(fd);
		snprintf(m->label[m->nr], sizeof(m->label[0]), "%s", label);
		m->attr[m->nr++] = a;
		return;
	}
	met_left(m, label, why ? why : "no event counts it");
}

/* Say in one line what was left out, and why */
static void met_say_left(struct recorder *r)
{
	struct rec_metrics *m = &r->met;
	struct strbuf sb = STRBUF_INIT;

	if (!m->nr_why)
		return;
	for (int i = 0; i < m->nr_why; i++)
		strbuf_addf(&sb, "%s%s (%s)", i ? "; " : "", m->whose[i].buf, m->why[i]);
	rec_warn(r, "--metrics: left out: %s", sb.buf);
	strbuf_release(&sb);
	for (int i = 0; i < m->nr_why; i++)
		strbuf_reset(&m->whose[i]);
	m->nr_why = 0;
}

/* --metrics-period NAME=N,...: label's N, 0 where it is not named */
static uint64_t named_period(const char *list, const char *label)
{
	size_t n = strlen(label);

	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ",");

		if (len > n && p[n] == '=' && !strncmp(p, label, n))
			return strtoull(p + n + 1, NULL, 10);
		p += len + (p[len] == ',');
	}
	return 0;
}

/*
 * Each counter sampled on its own (RECORD_MET_EVENTS): an event of r->ev with the
 * sampling event's record layout and stacks, sampled every opts->metrics_period events
 * or its own default.  Context switches are the switch-out event's samples (one each),
 * so they need it: -a and --no-off-cpu leave it out.
 */
static void met_add_event(struct recorder *r, const struct perf_event_attr *common,
			  const char *label, const char *const *names, size_t nr_names,
			  uint64_t period)
{
	struct rec_metrics *m = &r->met;
	const char *why = NULL;
	char buf[128];

	if (met_has(m, label))
		return;
	if (m->nr == MET_MAX || r->nr_ev == MAX_EVENTS) {
		met_left(m, label, "too many counters");
		return;
	}
	if (!strcmp(label, "context-switches")) {
		if (!r->opts->off_cpu) {
			met_left(m, label, "sampled on its own as the switch-out events, which "
				 "-a and --no-off-cpu leave out");
			return;
		}
		snprintf(m->label[m->nr], sizeof(m->label[0]), "%s", label);
		m->period[m->nr++] = 1;
		return;
	}
	for (int e = 0; e < r->nr_ev; e++)
		if (!strcmp(r->ev[e].name, label)) {
			met_left(m, label, "sampled already (-e)");
			return;
		}
	for (size_t k = 0; k < nr_names && names[k]; k++) {
		struct rec_event *e = &r->ev[r->nr_ev];
		struct perf_event_attr a;
		int dropped = 0, ret;
		uint64_t named;

		if (met_resolve(names[k], &a, &why))
			continue;
		memset(e, 0, sizeof(*e));
		e->attr = *common;
		e->attr.type = a.type;
		e->attr.config = a.config;
		e->attr.config1 = a.config1;
		e->attr.config2 = a.config2;
		e->attr.exclude_user = a.exclude_user;
		e->attr.exclude_kernel = a.exclude_kernel;
		e->attr.exclude_hv = a.exclude_hv;
		e->attr.precise_ip = a.precise_ip;
		if (!period)
			period = e->attr.type == PERF_TYPE_SOFTWARE ? MET_PERIOD_SW : MET_PERIOD_HW;
		if (r->opts->metrics_period)
			period = r->opts->metrics_period;
		else if ((named = named_period(r->opts->metrics_periods, label)))
			period = named;
		e->attr.freq = 0;
		e->attr.sample_period = period;
		/* a software counter whose samples carry their period is sampled at every
		 * event, each sample's period the events it stands for (1), whatever its
		 * sample_period (t1018: 83,551 samples of 92,560 faults at 8): its period is
		 * its attr's, and its samples carry none */
		e->attr.sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
		e->attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
				      PERF_FORMAT_TOTAL_TIME_RUNNING;
		ret = event_probe(&e->attr, &dropped);
		if (ret < 0) {
			why = met_refused(buf, sizeof(buf), -ret, &e->attr);
			continue;
		}
		snprintf(e->name, sizeof(e->name), "%s", label);
		snprintf(m->label[m->nr], sizeof(m->label[0]), "%s", label);
		m->period[m->nr++] = period;
		e->metric = m->nr;
		r->nr_ev++;
		return;
	}
	met_left(m, label, why ? why : "no event counts it");
}

/* How a mode adds one counter: its label, the event names that count it (tried in
 * order), its events per sample where sampled on its own (0: its kind's default) */
typedef void met_add_fn(struct recorder *r, int leader_fd, const struct perf_event_attr *common,
			const char *label, const char *const *names, size_t nr_names,
			uint64_t period);

/* Each counter of LIST to add(): a set's members, or an event by its name; a hardware
 * member where there is no PMU is left out with that reason, unasked.  Then what was
 * left out is said.  DLP_USAGE on a name that is neither, DLP_FAILED when none is left
 * (said). */
static int met_each(struct recorder *r, int leader_fd, const struct perf_event_attr *common,
		    met_add_fn *add)
{
	char *copy = xstrdup(r->opts->metrics), *save = NULL, *name;

	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		const char *one[1] = { name };
		int set = 0;

		for (size_t i = 0; i < ARRAY_SIZE(met_defs); i++) {
			const struct met_def *d = &met_defs[i];

			if (strcmp(d->set, name))
				continue;
			set = 1;
			strbuf_addf(&r->met.asked, ",%s,", d->label);	/* (--metrics-period) */
			if (met_def_hw(d) && no_pmu() && !met_has(&r->met, d->label))
				met_left(&r->met, d->label, no_pmu());
			else
				add(r, leader_fd, common, d->label, d->names, ARRAY_SIZE(d->names),
				    d->period);
		}
		if (!set) {
			struct perf_event_attr a;

			memset(&a, 0, sizeof(a));
			if (event_resolve(name, &a) == EVENT_UNKNOWN) {
				error("--metrics: unknown metric '%s' (faults, sched, ipc, fp, cache, "
				      "amx, or an event name)", name);
				free(copy);
				return DLP_USAGE;
			}
			strbuf_addf(&r->met.asked, ",%s,", name);
			add(r, leader_fd, common, name, one, 1, 0);
		}
	}
	free(copy);
	met_say_left(r);
	if (!r->met.nr)
		return error("--metrics: none of the counters asked for can be counted here"),
		       DLP_FAILED;
	return 0;
}

/* A group's member (met_add_fn) */
static void add_member(struct recorder *r, int leader_fd, const struct perf_event_attr *common,
		       const char *label, const char *const *names, size_t nr_names,
		       uint64_t period)
{
	(void)common;
	(void)period;
	met_add(&r->met, leader_fd, &r->ev[0].attr, label, names, nr_names);
}

/* A counter sampled on its own (met_add_fn) */
static void add_event(struct recorder *r, int leader_fd, const struct perf_event_attr *common,
		      const char *label, const char *const *names, size_t nr_names,
		      uint64_t period)
{
	(void)leader_fd;
	met_add_event(r, common, label, names, nr_names, period);
}

/* RECORD_MET_EVENTS, asked for or where the kernel cannot read a group with inherited
 * samples (old_kernel: its release, said) */
static int setup_events(struct recorder *r, const struct perf_event_attr *common,
			const char *old_kernel)
{
	struct rec_metrics *m = &r->met;
	struct strbuf sb = STRBUF_INIT;
	int ret;

	m->events = 1;
	/* the counts at the end: value, enabled, running of each (metrics_totals) */
	r->ev[0].attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED |
				    PERF_FORMAT_TOTAL_TIME_RUNNING;
	ret = met_each(r, -1, common, add_event);
	if (ret)
		return ret;
	/* a name of --metrics-period that is no counter asked for (kept or left out) */
	for (const char *p = r->opts->metrics_periods; p && *p;) {
		size_t len = strcspn(p, ","), name = strcspn(p, "=");
		char nm[66];
		int found;

		/* (one left out was said so) */
		snprintf(nm, sizeof(nm), ",%.*s,", (int)name, p);
		found = m->asked.len && strstr(m->asked.buf, nm);
		nm[strlen(nm) - 1] = 0;
		if (!found)
			return error("--metrics-period: '%s' is not a counter of --metrics %s", nm + 1,
				     r->opts->metrics), DLP_USAGE;
		p += len + (p[len] == ',');
	}
	for (int i = 0; i < m->nr; i++)
		strbuf_addf(&sb, "%s%s every %llu", i ? ", " : "", m->label[i],
			    (unsigned long long)m->period[i]);
	if (!r->opts->quiet)
		fprintf(stderr, "dlprof: --metrics: each counter sampled on its own%s%s%s: %s\n",
			old_kernel ? " (this kernel, " : "", old_kernel ? old_kernel : "",
			old_kernel ? ", cannot read an inherited group with each sample; Linux "
				     "6.12 and later can)" : "", sb.buf);
	strbuf_release(&sb);
	return 0;
}

int metrics_setup(struct recorder *r, const struct perf_event_attr *common)
{
	struct rec_metrics *m = &r->met;
	struct perf_event_attr *lead = &r->ev[0].attr;
	int fd, ret;

	if (!r->opts->metrics)
		return 0;
	if (r->opts->metrics_mode == RECORD_MET_EVENTS)
		return setup_events(r, common, NULL);
	lead->sample_type |= PERF_SAMPLE_READ;
	lead->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
			    PERF_FORMAT_TOTAL_TIME_RUNNING;
	fd = probe_leader(lead);
	if (fd == -EINVAL && lead->inherit) {
		struct utsname u;

		uname(&u);
		lead->sample_type &= ~(uint64_t)PERF_SAMPLE_READ;
		lead->read_format = 0;
		if (r->opts->metrics_mode == RECORD_MET_AUTO)
			return setup_events(r, common, u.release);
		return error("--metrics-mode group: this kernel (%s) cannot read an inherited "
			     "group with each sample (Linux 6.12 and later can): use "
			     "--metrics-mode events", u.release), DLP_FAILED;
	}
	if (fd < 0)
		return error("--metrics: cannot open '%s' as a group leader: %s",
			     r->ev[0].name, strerror(-fd)), DLP_FAILED;
	ret = met_each(r, fd, NULL, add_member);
	close(fd);
	if (ret)
		return ret;
	if (!lead->disabled) {
		/* -p, -a: the group starts once whole (metrics_open): a member added to a
		 * group already counting on a cpu's own context is not scheduled in until
		 * the group is again, which there may be never (it counted nothing) */
		lead->disabled = 1;
		m->enable = 1;
	}
	u64map_init(&m->last);
	return 0;
}

/*
 * Beside the counters, what they ran against: a task-clock on the same threads and cpu,
 * outside the group.  A counter runs only while its group (or it, sampled on its own) is
 * on the PMU: a PMU shared with other users (another profiler, the NMI watchdog) gives
 * it a share of the time.  Its enabled time says nothing here: an inherited per-cpu
 * counter is enabled while its thread runs on any cpu, running only on its own.  A
 * software clock never waits for the PMU, so the two clocks' ratio is the counters' share
 * (metrics_meta: META metrics_ran).  -a has no threads: a cpu's enabled time is the
 * reference there.  Returns 1 when the thread is gone.
 */
static int open_ref(struct recorder *r, pid_t pid, int cpu)
{
	struct rec_metrics *m = &r->met;
	const struct perf_event_attr *lead = &r->ev[0].attr;
	struct perf_event_attr a;
	int fd;

	if (pid < 0 || r->opts->system_wide || r->att.pid_flags || m->no_ref)
		return 0;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.inherit = lead->inherit;
	a.disabled = m->enable ? 0 : lead->disabled;
	a.enable_on_exec = lead->enable_on_exec;
	fd = event_open(&a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		if (errno == ESRCH)
			return 1;
		m->no_ref = 1;	/* (then not known: nothing said of the counters' share) */
		return 0;
	}
	ALLOC_GROW(m->ref_fds, m->nr_ref_fds + 1, m->alloc_ref_fds);
	m->ref_fds[m->nr_ref_fds++] = fd;
	return 0;
}

int metrics_open(struct recorder *r, int leader_fd, pid_t pid, int cpu)
{
	struct rec_metrics *m = &r->met;

	if (open_ref(r, pid, cpu))
		return 1;
	if (m->events)
		return 0;	/* (events of their own, opened with the others) */

	for (int i = 0; i < m->nr; i++) {
		int fd = event_open(&m->attr[i], pid, cpu, leader_fd, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			if (errno == ESRCH)
				return 1;
			return error("--metrics: cannot open '%s' on cpu %d: %s", m->label[i], cpu,
				     strerror(errno)), -1;
		}
		ALLOC_GROW(m->fds, m->nr_fds + 1, m->alloc_fds);
		m->fds[m->nr_fds++] = fd;
	}
	if (m->enable && ioctl(leader_fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return error("--metrics: cannot start the counters on cpu %d: %s", cpu,
			     strerror(errno)), -1;
	return 0;
}

/*
 * The switch-out event joins the group, its first member: its samples read the counters
 * too, so a thread's counts are read as it leaves a cpu, before it can move to another,
 * and each interval ends where its thread stopped running (a sample, a switch-out).  Its
 * own count is the context switches, the one it samples included; a member counting them
 * goes: the kernel ran it after the switch-out event (a cpu's software events of one
 * kind run last added first), so the switch a read ended was the next interval's (t1018:
 * 2.8% of an operator's switches moved to the next one).
 */
void metrics_switch_outs(struct recorder *r, struct perf_event_attr *a)
{
	struct rec_metrics *m = &r->met;

	if (m->events) {
		/* its samples are the context switches (one each); its count at the end */
		a->read_format = r->ev[0].attr.read_format;
		return;
	}
	a->sample_type |= PERF_SAMPLE_READ;
	a->read_format = r->ev[0].attr.read_format;
	for (int i = 0; i < m->nr; i++)
		if (!strcmp(m->label[i], "context-switches")) {
			memmove(&m->label[i], &m->label[i + 1], (size_t)(m->nr - i - 1) * sizeof(m->label[0]));
			memmove(&m->attr[i], &m->attr[i + 1], (size_t)(m->nr - i - 1) * sizeof(m->attr[0]));
			m->nr--;
			break;
		}
	m->switch_outs = 1;
}

/* Sampled on its own, context switches are the switch-out event's samples: without it
 * (it could not open), none */
void metrics_no_switch_outs(struct recorder *r, const char *why)
{
	struct rec_metrics *m = &r->met;

	for (int i = 0; m->events && i < m->nr; i++)
		if (!strcmp(m->label[i], "context-switches")) {
			memmove(&m->label[i], &m->label[i + 1], (size_t)(m->nr - i - 1) * sizeof(m->label[0]));
			memmove(&m->period[i], &m->period[i + 1], (size_t)(m->nr - i - 1) * sizeof(m->period[0]));
			m->nr--;
			for (int e = 0; e < r->nr_ev; e++)
				if (r->ev[e].metric > i + 1)
					r->ev[e].metric--;
			rec_warn(r, "--metrics: left out: context-switches (no switch-out event: %s)",
				 why);
			break;
		}
}

int metrics_group(const struct recorder *r, int e, int leader_fd)
{
	return e > 0 && r->met.nr && !r->met.events && r->ev[e].off_cpu ? leader_fd : -1;
}

/* Where the interval's counts were last: per thread and cpu (an inherited counter counts
 * its thread on one cpu), per cpu system-wide (it counts every thread there) */
struct met_last {
	uint64_t v[MET_MAX + 2];
	uint64_t enabled, running;
};

void metrics_sample(struct recorder *r, unsigned char *read, size_t len, uint32_t tid,
		    uint32_t cpu)
{
	struct rec_metrics *m = &r->met;
	uint64_t nr, key, cur;
	struct met_last *last;
	void **slot;

	if (len < 24)
		return;
	memcpy(&nr, read, 8);
	if (nr > MET_MAX + 2 || len < 24 + nr * 8)
		return;
	key = (r->opts->system_wide ? 0xffffffffull : (uint64_t)tid) << 32 | cpu;
	slot = u64map_slot(&m->last, key);
	if (!*slot)
		*slot = xcalloc(1, sizeof(struct met_last));
	last = *slot;
	for (uint64_t i = 0; i < nr + 2; i++) {
		/* enabled, running, then the values, leader first */
		uint64_t *prev = i == 0 ? &last->enabled : i == 1 ? &last->running : &last->v[i - 2];
		uint64_t d;

		memcpy(&cur, read + 8 + i * 8, 8);
		d = cur >= *prev ? cur - *prev : 0;
		*prev = cur;
		memcpy(read + 8 + i * 8, &d, 8);
	}
}

/* Sampled each on its own: an event's place in the counts (0 the sampling event's, i + 1
 * label i's), -1 none */
static int event_count_at(const struct recorder *r, int e)
{
	const struct rec_metrics *m = &r->met;

	if (e == 0 || r->ev[e].metric)
		return r->ev[e].metric;
	for (int i = 0; r->ev[e].off_cpu && i < m->nr; i++)
		if (!strcmp(m->label[i], "context-switches"))
			return i + 1;
	return -1;
}

/* ... their counts at the end: each event's (value, enabled, running) on every cpu */
static void totals_of_events(struct recorder *r, size_t block)
{
	struct rec_metrics *m = &r->met;

	for (size_t b = 0; b + block <= (size_t)r->nr_fds; b += block)
		for (int e = 0; e < r->nr_ev; e++) {
			int at = event_count_at(r, e);

			for (int c = 0; at >= 0 && c < r->nr_cpus; c++) {
				int fd = r->fds[b + (size_t)e * (size_t)r->nr_cpus + (size_t)c];
				uint64_t buf[3];

				if (fd < 0 || read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
					continue;
				m->total[at] += buf[0];
				m->ran[at] += buf[2];
				if (e == 0) {
					m->enabled += buf[1];
					m->running += buf[2];
				}
			}
		}
}

void metrics_totals(struct recorder *r)
{
	struct rec_metrics *m = &r->met;
	size_t block = (size_t)r->nr_ev * (size_t)r->nr_cpus;

	if (!m->nr || m->totals_read || !r->fds || !block)
		return;
	m->totals_read = 1;
	for (size_t i = 0; !m->no_ref && i < m->nr_ref_fds; i++) {
		uint64_t v;

		if (read(m->ref_fds[i], &v, sizeof(v)) != (ssize_t)sizeof(v)) {
			m->no_ref = 1;
			break;
		}
		m->ref_ns += v;
	}
	if (m->events) {
		totals_of_events(r, block);
		return;
	}
	for (size_t b = 0; b + block <= (size_t)r->nr_fds; b += block)
		for (int c = 0; c < r->nr_cpus; c++) {
			uint64_t buf[3 + MET_MAX + 2];
			int fd = r->fds[b + (size_t)c];
			ssize_t n;

			if (fd < 0)
				continue;
			n = read(fd, buf, sizeof(buf));
			if (n < 24 || buf[0] > MET_MAX + 2 || (size_t)n < 24 + buf[0] * 8)
				continue;
			m->enabled += buf[1];
			m->running += buf[2];
			for (uint64_t i = 0; i < buf[0]; i++) {
				m->total[i] += buf[3 + i];
				m->ran[i] += buf[2];	/* (a group runs whole or not at all) */
			}
		}
}

void metrics_close(struct recorder *r)
{
	struct rec_metrics *m = &r->met;

	for (size_t i = 0; i < m->nr_fds; i++)
		close(m->fds[i]);
	free(m->fds);
	m->fds = NULL;
	m->nr_fds = m->alloc_fds = 0;
	for (size_t i = 0; i < m->nr_ref_fds; i++)
		close(m->ref_fds[i]);
	free(m->ref_fds);
	m->ref_fds = NULL;
	m->nr_ref_fds = m->alloc_ref_fds = 0;
}

void metrics_meta(struct recorder *r, struct strbuf *names, struct strbuf *periods,
		  struct strbuf *totals, struct strbuf *ran)
{
	struct rec_metrics *m = &r->met;

	int n = m->nr + m->switch_outs;

	if (m->switch_outs)
		strbuf_addstr(names, "context-switches");
	for (int i = 0; i < m->nr; i++)
		strbuf_addf(names, "%s%s", i || m->switch_outs ? "," : "", m->label[i]);
	for (int i = 0; m->events && i < m->nr; i++)
		strbuf_addf(periods, "%s%llu", i ? " " : "", (unsigned long long)m->period[i]);
	if (!m->totals_read)
		return;
	strbuf_addf(totals, "%llu %llu", (unsigned long long)m->enabled,
		    (unsigned long long)m->running);
	for (int i = 0; i <= n; i++)
		strbuf_addf(totals, " %llu", (unsigned long long)m->total[i]);
	/* the time they ran against (the threads' CPU time; -a: the cpus' enabled time),
	 * then the time each ran, the sampling event's first */
	if (r->opts->system_wide ? !m->enabled : m->no_ref || !m->ref_ns)
		return;
	strbuf_addf(ran, "%llu", (unsigned long long)(r->opts->system_wide ? m->enabled :
							m->ref_ns));
	for (int i = 0; i <= n; i++)
		strbuf_addf(ran, " %llu", (unsigned long long)m->ran[i]);
}

void metrics_release(struct recorder *r)
{
	struct rec_metrics *m = &r->met;

	metrics_close(r);
	if (m->last.cap) {
		for (size_t i = 0; i < m->last.cap; i++)
			if (m->last.used[i])
				free(m->last.vals[i]);
		u64map_release(&m->last);
	}
	for (int i = 0; i < MET_MAX; i++)
		strbuf_release(&m->whose[i]);
	strbuf_release(&m->asked);
	free(m->copy);
}
