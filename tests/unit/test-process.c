/* test-process.c - the process model over time (process.h): which mapping covers an
 * address at a time, and machine_view(), which says when that answer no longer depends
 * on the time and how long it holds.  Made-up mappings, forks and execs of known times;
 * TAP output. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "process.h"
#include "session.h"

#include "unit/tap.h"

static void map(struct machine *m, uint32_t pid, uint64_t start, uint64_t time, const char *path)
{
	struct dlp_mmap ev;

	memset(&ev, 0, sizeof(ev));
	ev.pid = ev.tid = pid;
	ev.start = start;
	ev.len = 0x1000;
	ev.time = time;
	ev.prot = PROT_READ | PROT_EXEC;
	ev.filename = path;
	machine_mmap(m, &ev);
}

static const char *at(struct machine *m, uint32_t pid, uint64_t addr, uint64_t time)
{
	const struct map *mp = machine_find_map(m, pid, addr, time);

	return mp ? mp->dso->path : "(none)";
}

int main(void)
{
	struct machine *m = machine_new();
	uint64_t v1, v2, v3, v4, v;
	uint8_t id[20] = { 1, 2, 3 };

	map(m, 10, 0x10000, 100, "/lib/a.so");
	ok(!strcmp(at(m, 10, 0x10010, 150), "/lib/a.so"), "a.so maps the address after its mmap",
	   at(m, 10, 0x10010, 150));
	ok(!strcmp(at(m, 10, 0x10010, 50), "(none)"), "nothing before it", at(m, 10, 0x10010, 50));
	ok(!machine_view(m, 10, 50, &v), "no view before the process's last mapping", NULL);
	ok(machine_view(m, 10, 150, &v1), "a view after it", NULL);
	ok(!machine_view(m, 99, 150, &v), "no view of a process never seen", NULL);

	/* the same range mapped again by another file (dlclose, dlopen) */
	map(m, 10, 0x10000, 200, "/lib/b.so");
	ok(!strcmp(at(m, 10, 0x10010, 150), "/lib/a.so") &&
	   !strcmp(at(m, 10, 0x10010, 250), "/lib/b.so"), "each time its own file", NULL);
	ok(!machine_view(m, 10, 150, &v), "a time between the two mappings has no view", NULL);
	ok(machine_view(m, 10, 250, &v2) && v2 != v1, "after the second: a new view", NULL);
	ok(machine_view(m, 10, 300, &v) && v == v2, "the same view later while nothing changes",
	   NULL);

	/* a forked child looks on in its parent's mappings as of the fork */
	machine_fork(m, 11, 10, 11, 10, 400);
	ok(!strcmp(at(m, 11, 0x10010, 450), "/lib/b.so"), "the child finds its parent's file",
	   at(m, 11, 0x10010, 450));
	ok(!machine_view(m, 11, 350, &v), "no child view before its fork", NULL);
	ok(machine_view(m, 11, 450, &v3), "a child view after its fork", NULL);
	/* a parent's mapping that arrives late, made before the fork, changes the child's */
	map(m, 10, 0x20000, 300, "/lib/c.so");
	ok(!strcmp(at(m, 11, 0x20010, 450), "/lib/c.so"), "the late mapping found through the parent",
	   at(m, 11, 0x20010, 450));
	ok(machine_view(m, 11, 450, &v4) && v4 != v3, "the child's view changed with its parent's",
	   NULL);
	ok(machine_view(m, 10, 450, &v) && v != v2, "so did the parent's", NULL);

	/* an exec hides what came before */
	machine_comm(m, 10, 10, "x", 1, 500);
	ok(!strcmp(at(m, 10, 0x10010, 550), "(none)"), "nothing mapped after the exec",
	   at(m, 10, 0x10010, 550));
	ok(!machine_view(m, 10, 450, &v), "no view before the exec", NULL);
	ok(machine_view(m, 10, 550, &v1) && v1 != v, "a new view after it", NULL);
	/* a name given to a function changes every view (frames named by it) */
	machine_set_sym_name(m, id, sizeof(id), "f", "g");
	ok(machine_view(m, 10, 550, &v) && v != v1, "a function's name given: a new view", NULL);
	machine_free(m);
	return tap_done();
}
