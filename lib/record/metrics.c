/* metrics.c - record --metrics: counters read with every sample.  The sampling event
 * leads a group of counters; each sample carries the counts of its thread on its cpu
 * (PERF_SAMPLE_READ of an inherited group, Linux 6.12 and later), and the drain turns
 * them into the counts of the interval the sample ends (recorder.h: r->met). */
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
static const struct met_def {
	const char *set, *label;
	const char *names[3];
} met_defs[] = {
	{ "faults", "page-faults", { "page-faults" } },
	{ "faults", "minor-faults", { "minor-faults" } },
	{ "faults", "major-faults", { "major-faults" } },
	{ "sched", "context-switches", { "context-switches" } },
	{ "sched", "cpu-migrations", { "cpu-migrations" } },
	{ "ipc", "cycles", { "cycles" } },
	{ "ipc", "instructions", { "instructions" } },
	{ "fp", "fp-scalar", { "FP_ARITH_INST_RETIRED:SCALAR_SINGLE:SCALAR_DOUBLE",
			       "RETIRED_FP_OPS_BY_WIDTH:SCALAR_UOPS_RETIRED" } },
	{ "fp", "fp-128", { "FP_ARITH_INST_RETIRED:128B_PACKED_SINGLE:128B_PACKED_DOUBLE",
			    "RETIRED_FP_OPS_BY_WIDTH:PACK128_UOPS_RETIRED" } },
	{ "fp", "fp-256", { "FP_ARITH_INST_RETIRED:256B_PACKED_SINGLE:256B_PACKED_DOUBLE",
			    "RETIRED_FP_OPS_BY_WIDTH:PACK256_UOPS_RETIRED" } },
	{ "fp", "fp-512", { "FP_ARITH_INST_RETIRED:512B_PACKED_SINGLE:512B_PACKED_DOUBLE",
			    "RETIRED_FP_OPS_BY_WIDTH:PACK512_UOPS_RETIRED" } },
	{ "cache", "instructions", { "instructions" } },
	{ "cache", "L1-dcache-load-misses", { "L1-dcache-load-misses" } },
	{ "cache", "l2-misses", { "L2_RQSTS:MISS" } },
	{ "cache", "LLC-load-misses", { "LLC-load-misses" } },
	{ "amx", "amx-busy", { "EXE:AMX_BUSY" } },
};

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

/* Why no hardware counter can count here (a KVM guest without a virtual PMU), or NULL:
 * asked once of the kernel by opening cycles.  Said of every hardware member, before
 * libpfm4 is asked its name (whose tables may not know this CPU) */
static const char *no_pmu(void)
{
	static char why[96];
	static int asked;

	if (!asked) {
		struct perf_event_attr a;
		int fd;

		asked = 1;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_CPU_CYCLES;
		a.exclude_kernel = 1;
		a.disabled = 1;
		fd = event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd >= 0)
			close(fd);
		else if (errno == ENOENT || errno == ENODEV || errno == EOPNOTSUPP)
			snprintf(why, sizeof(why), "no hardware PMU here: %s", strerror(errno));
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
		int fd, ret;

		memset(&a, 0, sizeof(a));
		ret = event_resolve(names[k], &a);
		if (ret == EVENT_UNKNOWN) {
			if (!why)
				why = "no such event on this CPU";
			continue;
		}
		if (ret < 0) {
			why = "libpfm4 cannot encode it";
			continue;
		}
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
			int err = errno;

			if ((err == ENOENT || err == ENODEV || err == EOPNOTSUPP) &&
			    a.type != PERF_TYPE_SOFTWARE)
				snprintf(buf, sizeof(buf), "no hardware PMU here: %s", strerror(err));
			else
				snprintf(buf, sizeof(buf), "the kernel refuses it: %s",
					 strerror(err));
			why = buf;
			continue;
		}
		close(fd);
		snprintf(m->label[m->nr], sizeof(m->label[0]), "%s", label);
		m->attr[m->nr++] = a;
		return;
	}
	met_left(m, label, why ? why : "no event counts it");
}

int metrics_setup(struct recorder *r)
{
	struct rec_metrics *m = &r->met;
	struct perf_event_attr *lead = &r->ev[0].attr;
	char *copy, *save = NULL, *name;
	int fd;

	if (!r->opts->metrics)
		return 0;
	lead->sample_type |= PERF_SAMPLE_READ;
	lead->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED |
			    PERF_FORMAT_TOTAL_TIME_RUNNING;
	fd = probe_leader(lead);
	if (fd == -EINVAL && lead->inherit) {
		struct utsname u;

		uname(&u);
		return error("--metrics: this kernel (%s) cannot read an inherited group with "
			     "each sample (Linux 6.12 and later can): sample each event on its "
			     "own with -e instead", u.release), DLP_FAILED;
	}
	if (fd < 0)
		return error("--metrics: cannot open '%s' as a group leader: %s",
			     r->ev[0].name, strerror(-fd)), DLP_FAILED;
	copy = xstrdup(r->opts->metrics);
	for (name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		int set = 0;

		for (size_t i = 0; i < ARRAY_SIZE(met_defs); i++)
			if (!strcmp(met_defs[i].set, name)) {
				if (met_def_hw(&met_defs[i]) && no_pmu() &&
				    !met_has(m, met_defs[i].label))
					met_left(m, met_defs[i].label, no_pmu());
				else
					met_add(m, fd, lead, met_defs[i].label, met_defs[i].names,
						ARRAY_SIZE(met_defs[i].names));
				set = 1;
			}
		if (!set) {
			struct perf_event_attr a;
			const char *one[1] = { name };

			memset(&a, 0, sizeof(a));
			if (event_resolve(name, &a) == EVENT_UNKNOWN) {
				error("--metrics: unknown metric '%s' (faults, sched, ipc, fp, cache, "
				      "amx, or an event name)", name);
				close(fd);
				free(copy);
				return DLP_USAGE;
			}
			met_add(m, fd, lead, name, one, 1);
		}
	}
	free(copy);
	close(fd);
	if (m->nr_why) {
		struct strbuf sb = STRBUF_INIT;

		for (int i = 0; i < m->nr_why; i++)
			strbuf_addf(&sb, "%s%s (%s)", i ? "; " : "", m->whose[i].buf, m->why[i]);
		rec_warn(r, "--metrics: left out: %s", sb.buf);
		strbuf_release(&sb);
	}
	if (!m->nr)
		return error("--metrics: none of the counters asked for can be counted here"),
		       DLP_FAILED;
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

int metrics_open(struct recorder *r, int leader_fd, pid_t pid, int cpu)
{
	struct rec_metrics *m = &r->met;

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

int metrics_group(const struct recorder *r, int e, int leader_fd)
{
	return e > 0 && r->met.nr && r->ev[e].off_cpu ? leader_fd : -1;
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

void metrics_totals(struct recorder *r)
{
	struct rec_metrics *m = &r->met;
	size_t block = (size_t)r->nr_ev * (size_t)r->nr_cpus;

	if (!m->nr || m->totals_read || !r->fds || !block)
		return;
	m->totals_read = 1;
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
			for (uint64_t i = 0; i < buf[0]; i++)
				m->total[i] += buf[3 + i];
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
}

void metrics_meta(struct recorder *r, struct strbuf *names, struct strbuf *totals)
{
	struct rec_metrics *m = &r->met;

	int n = m->nr + m->switch_outs;

	if (m->switch_outs)
		strbuf_addstr(names, "context-switches");
	for (int i = 0; i < m->nr; i++)
		strbuf_addf(names, "%s%s", i || m->switch_outs ? "," : "", m->label[i]);
	if (!m->totals_read)
		return;
	strbuf_addf(totals, "%llu %llu", (unsigned long long)m->enabled,
		    (unsigned long long)m->running);
	for (int i = 0; i <= n; i++)
		strbuf_addf(totals, " %llu", (unsigned long long)m->total[i]);
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
	free(m->copy);
}
