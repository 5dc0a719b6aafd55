/* event.c - event names (generic perf names, libpfm4) to perf_event_attr; probing. */
#include <linux/perf_event.h>	/* before libpfm4, whose copy then steps aside */
#include <perfmon/pfmlib_perf_event.h>

#include "dynlib.h"
#include "event.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct generic_event {
	const char *name;
	uint32_t type;
	uint64_t config;
};

static const struct generic_event generic_events[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
};

int event_open(struct perf_event_attr *attr, int pid, int cpu, int group_fd, unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

void event_dummy_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
}

static void *warm_open(void *arg)
{
	struct event_warm *w = arg;
	struct perf_event_attr a;

	event_dummy_attr(&a);
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	w->fd = event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return NULL;
}

void event_warm_start(struct event_warm *w)
{
	w->fd = -1;
	w->started = !pthread_create(&w->thread, NULL, warm_open, w);
}

void event_warm_end(struct event_warm *w)
{
	if (w->started)
		pthread_join(w->thread, NULL);
	w->started = 0;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

int event_paranoid(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v;

	if (!f)
		return -100;
	if (fscanf(f, "%d", &v) != 1)
		v = -100;
	fclose(f);
	return v;
}

/* "name[:u|:k|:uk]" among the generic names. */
static int resolve_generic(const char *name, struct perf_event_attr *attr)
{
	const char *colon = strchr(name, ':');
	size_t len = colon ? (size_t)(colon - name) : strlen(name);
	int u = 1, k = 1;

	if (colon) {
		const char *m = colon + 1;

		if (!*m)
			return EVENT_UNKNOWN;
		u = k = 0;
		for (; *m; m++) {
			if (*m == 'u')
				u = 1;
			else if (*m == 'k')
				k = 1;
			else
				return EVENT_UNKNOWN;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(generic_events); i++) {
		if (strlen(generic_events[i].name) != len || strncmp(generic_events[i].name, name, len))
			continue;
		attr->type = generic_events[i].type;
		attr->config = generic_events[i].config;
		attr->exclude_user = !u;
		attr->exclude_kernel = !k;
		attr->exclude_hv = !k;
		return 0;
	}
	return EVENT_UNKNOWN;
}

static int pfm_state;	/* 0 not tried, 1 ok, -1 failed */

static int resolve_pfm(const char *name, struct perf_event_attr *attr)
{
	const struct dynlib_pfm *pfm = dynlib_pfm();
	struct perf_event_attr pa;
	pfm_perf_encode_arg_t arg;
	int ret;

	if (!pfm)
		pfm_state = -1;	/* (said why) */
	if (!pfm_state) {
		ret = pfm->initialize();
		pfm_state = ret == PFM_SUCCESS ? 1 : -1;
		if (pfm_state < 0)
			warning("libpfm4 cannot initialize (%s); only generic event names work",
				pfm->strerror(ret));
	}
	if (pfm_state < 0)
		return EVENT_UNKNOWN;
	memset(&pa, 0, sizeof(pa));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &pa;
	arg.size = sizeof(arg);
	ret = pfm->get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (ret == PFM_ERR_NOTFOUND || ret == PFM_ERR_ATTR || ret == PFM_ERR_INVAL ||
	    ret == PFM_ERR_UMASK || ret == PFM_ERR_NOTSUPP)
		return EVENT_UNKNOWN;
	if (ret != PFM_SUCCESS)
		return error("cannot encode event '%s': %s", name, pfm->strerror(ret));
	attr->type = pa.type;
	attr->config = pa.config;
	attr->config1 = pa.config1;
	attr->config2 = pa.config2;
	attr->exclude_user = pa.exclude_user;
	attr->exclude_kernel = pa.exclude_kernel;
	attr->exclude_hv = pa.exclude_hv;
	if (pa.precise_ip)
		attr->precise_ip = pa.precise_ip;
	return 0;
}

int event_resolve(const char *name, struct perf_event_attr *attr)
{
	if (!*name || strlen(name) >= 64)
		return EVENT_UNKNOWN;
	if (!resolve_generic(name, attr))
		return 0;
	return resolve_pfm(name, attr);
}

static int try_open(struct perf_event_attr *attr)
{
	struct perf_event_attr a = *attr;
	int fd;

	a.disabled = 1;
	a.enable_on_exec = 0;
	fd = event_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int event_probe(struct perf_event_attr *attr, int *kernel_dropped)
{
	int ret = try_open(attr);

	/* Upstream kernels treat paranoid > 2 like 2 (user space allowed); distributions that
	 * forbid unprivileged perf there refuse this second try as well. */
	if ((ret == -EACCES || ret == -EPERM) && !attr->exclude_kernel) {
		struct perf_event_attr a = *attr;

		int ret2;

		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		ret2 = try_open(&a);
		if (!ret2) {
			*attr = a;
			*kernel_dropped = 1;
			return 0;
		}
		if (ret2 != -EACCES && ret2 != -EPERM)
			return ret2;	/* the real reason (no such counter) once access is fine */
	}
	return ret;
}

/* Whether this process runs under a seccomp filter (/proc/self/status "Seccomp: 2"), as
 * container runtimes start their processes: their default profiles refuse
 * perf_event_open and bpf to root as to anyone */
static int under_seccomp_filter(void)
{
	char line[128];
	int mode = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Seccomp: %d", &mode) == 1)
			break;
	fclose(f);
	return mode == 2;
}

void event_open_error(const char *name, int err)
{
	int p;

	switch (-err) {
	case ENOENT:
	case ENODEV:
	case EOPNOTSUPP:
		error("cannot open event '%s': no such counter here (%s)", name, strerror(-err));
		break;
	case EACCES:
	case EPERM:
		p = event_paranoid();
		if (!geteuid() && under_seccomp_filter()) {
			/* root, refused: a container's seccomp profile (Docker's, Podman's) */
			error("cannot open event '%s': %s: a seccomp filter refuses perf_event_open "
			      "to this process (a container's default profile): start the container "
			      "with --security-opt seccomp=unconfined (--cap-add PERFMON,BPF too for "
			      "Python stacks read in the kernel), or --privileged", name,
			      strerror(-err));
			break;
		}
		/* 2 lets a user profile its own processes in user space; 1 adds the kernel */
		error("cannot open event '%s': %s (kernel.perf_event_paranoid is %d; "
		      "'sysctl -w kernel.perf_event_paranoid=%d' or run as root/with CAP_PERFMON)",
		      name, strerror(-err), p, p > 2 ? 2 : 1);
		break;
	default:
		error("cannot open event '%s': %s", name, strerror(-err));
		break;
	}
}
