/* mem-probes.c - record --memory's uprobes on the allocation sampler's event functions (recorder.h). */
#include "recorder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>

/*
 * --memory's uprobes are trace events made through tracefs (as perf probe makes them),
 * group "dlprof_PID": an event of the uprobe PMU would be simpler, but the kernel copies
 * its path from the memory of whichever task inherits it (a workload's new thread gets
 * no event), while a trace event is inherited like any other.
 */
static const char *tracefs_dir(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char p[64];

		snprintf(p, sizeof(p), "%s/uprobe_events", dirs[i]);
		if (!access(p, W_OK))
			return dirs[i];
	}
	/* not mounted: mount it where it belongs (root only, as uprobes are) */
	if (!mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) &&
	    !access("/sys/kernel/tracing/uprobe_events", W_OK))
		return "/sys/kernel/tracing";
	return NULL;
}

static int write_uprobe_events(const char *dir, const char *line)
{
	char p[64];
	int fd, ret = 0;

	snprintf(p, sizeof(p), "%s/uprobe_events", dir);
	fd = open(p, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, strlen(line)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Remove the uprobes of dlprof processes that are gone (a recorder that was killed). */
static void remove_stale_uprobes(const char *dir)
{
	struct strbuf sb = STRBUF_INIT;
	char p[64];

	snprintf(p, sizeof(p), "%s/uprobe_events", dir);
	if (strbuf_read_file(&sb, p, 1 << 16) < 0) {
		strbuf_release(&sb);
		return;
	}
	for (char *l = sb.buf, *nl; l && *l; l = nl) {
		char group[64], ev[64], cmd[160];
		int pid;

		nl = strchr(l, '\n');
		if (nl)
			*nl++ = 0;
		/* "p:dlprof_123/alloc /path:0x..." */
		if (sscanf(l, "p:%63[^/]/%63s", group, ev) == 2 &&
		    sscanf(group, "dlprof_%d", &pid) == 1 && pid > 0 &&
		    kill(pid, 0) < 0 && errno == ESRCH) {
			snprintf(cmd, sizeof(cmd), "-:%s/%s\n", group, ev);
			write_uprobe_events(dir, cmd);
		}
	}
	strbuf_release(&sb);
}

/* Make the uprobe dlprof_PID/NAME at path:offset; its tracepoint id, or -errno. */
static long make_uprobe(const char *dir, const char *name, const char *path, uint64_t off)
{
	struct strbuf sb = STRBUF_INIT;
	char *line = xasprintf("p:dlprof_%d/%s %s:0x%llx\n", (int)getpid(), name, path,
			       (unsigned long long)off);
	char *idp;
	long id = -ENOENT;
	int ret = write_uprobe_events(dir, line);

	free(line);
	if (ret < 0)
		return ret;
	idp = xasprintf("%s/events/dlprof_%d/%s/id", dir, (int)getpid(), name);
	if (strbuf_read_file(&sb, idp, 32) >= 0 && sb.len)
		id = strtol(sb.buf, NULL, 10);
	free(idp);
	strbuf_release(&sb);
	return id;
}

void mem_probes_remove(struct recorder *r)
{
	static const char *const names[3] = { "alloc", "free", "wait" };

	if (!r->mem.tracefs)
		return;
	for (int i = 0; i < 3; i++)
		if (r->mem.probe[i]) {
			char line[64];

			snprintf(line, sizeof(line), "-:dlprof_%d/%s\n", (int)getpid(), names[i]);
			write_uprobe_events(r->mem.tracefs, line);
			r->mem.probe[i] = 0;
		}
}

/*
 * --memory: the allocation and free events, uprobes on the preloaded library's
 * functions (memevent.h), sampled every time they are hit, and the wait event, which
 * only wakes the recorder (its samples are not written, nor its event).  The free and
 * wait events copy no stack worth the name (8 bytes: the records keep the layout of the
 * first event's).  Returns 0, or the exit status on error (printed).
 */
int mem_probes_add(struct recorder *r, int *kernel_dropped)
{
	static const char *const names[3] = { "mem-alloc", "mem-free", "mem-wait" };
	static const char *const funcs[3] = { MEM_ALLOC_FUNC, MEM_FREE_FUNC, MEM_WAIT_FUNC };
	static const char *const probes[3] = { "alloc", "free", "wait" };

	if (r->opts->pids)
		return error("--memory needs a command to start: the allocator it samples is "
			     "preloaded (-p cannot attach it to a running process)"), DLP_USAGE;
	r->mem.lib = dlprof_libfile(MEM_LIBRARY);
	if (!r->mem.lib) {
		char *where = dlprof_libfile_places();

		error("--memory: %s is missing (looked in %s); build it with 'make' in dlprof's "
		      "source tree, or 'make install'", MEM_LIBRARY, where);
		free(where);
		return DLP_FAILED;
	}
	r->mem.tracefs = tracefs_dir();
	if (!r->mem.tracefs)
		return error("--memory: no tracefs to make uprobes in (/sys/kernel/tracing: "
			     "root, and a kernel with CONFIG_UPROBE_EVENTS)"), DLP_FAILED;
	remove_stale_uprobes(r->mem.tracefs);
	for (int i = 0; i < 3; i++) {
		struct rec_event *e;
		long id;
		int ret;

		r->mem.off[i] = elf_func_offset(r->mem.lib, funcs[i]);
		if (!r->mem.off[i])
			return error("--memory: no function %s in %s", funcs[i], r->mem.lib), DLP_FAILED;
		id = make_uprobe(r->mem.tracefs, probes[i], r->mem.lib, r->mem.off[i]);
		if (id < 0)
			return error("--memory: cannot make a uprobe on %s:%s in %s/uprobe_events: %s",
				     r->mem.lib, funcs[i], r->mem.tracefs, strerror((int)-id)), DLP_FAILED;
		r->mem.probe[i] = 1;
		if (r->nr_ev == MAX_EVENTS)
			return error("too many events (at most %d)", MAX_EVENTS), DLP_USAGE;
		e = &r->ev[r->nr_ev];
		memset(e, 0, sizeof(*e));
		events_attr_common(r, &e->attr, 0);
		e->attr.type = PERF_TYPE_TRACEPOINT;
		e->attr.config = (uint64_t)id;
		e->attr.freq = 0;
		e->attr.sample_period = 1;
		if (i && (e->attr.sample_type & PERF_SAMPLE_STACK_USER))
			e->attr.sample_stack_user = 8;
		if (i == 2) {
			/* a thread waits for the drain: now */
			e->attr.watermark = 0;
			e->attr.wakeup_events = 1;
		} else {
			/* allocations and frees wake nobody (the ring's watermark, set with
			 * the others'): read with the rest, or at once when a thread waits */
			e->attr.watermark = 1;
			e->attr.wakeup_watermark = 0;
		}
		e->mem = i == 2 ? MEM_EV_WAIT : i ? MEM_EV_FREE : MEM_EV_ALLOC;
		ret = event_probe(&e->attr, kernel_dropped);
		if (ret < 0) {
			error("--memory: cannot open a uprobe on %s:%s: %s%s", r->mem.lib, funcs[i],
			      strerror(-ret), ret == -EACCES || ret == -EPERM ?
			      " (uprobes need root or CAP_PERFMON)" : "");
			return DLP_FAILED;
		}
		snprintf(e->name, sizeof(e->name), "%s", names[i]);
		r->nr_ev++;
	}
	return 0;
}

