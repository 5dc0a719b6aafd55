/* process.c - processes, threads and mappings over time (see process.h).
 *
 * Each process keeps every mapping ever reported, in insertion order while side-band
 * events arrive.  At the first lookup the list is sorted by start address and a
 * prefix-maximum of the end addresses is built, so a lookup is a binary search plus a
 * short backward scan over the mappings that can still cover the address; among those
 * the one with the latest mmap time not after the sample wins (a later mmap over the
 * same range supersedes an earlier one).  An exec hides every mapping made before it.
 * A forked child falls back to its parent's view as of the fork.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsyms.h"
#include "paths.h"
#include "process.h"
#include "recfile.h"
#include "rephash.h"
#include "util.h"

#define KERNEL_PID 0xffffffffu

struct pmap {
	struct map map;
	uint64_t seq;		/* insertion order, breaks time ties */
};

struct comm_ev {
	uint32_t tid;
	uint64_t time;
	const char *comm;
};

struct proc {
	uint32_t pid;
	uint32_t ppid;		/* parent process, when forked during the recording */
	int has_parent;
	uint64_t fork_time;
	uint64_t *execs;	/* exec times, ascending */
	size_t nr_execs, alloc_execs;
	struct pmap *maps;
	size_t nr_maps, alloc_maps;
	uint64_t *max_end;	/* prefix maximum of end over the sorted maps */
	int sorted;
	struct comm_ev *comms;
	size_t nr_comms, alloc_comms;
	/* what its lookups see changed (a mapping, an exec, a parent): counted, and the
	 * latest such event's time (machine_view) */
	uint64_t changes, last_change;
};

struct machine {
	struct u64map procs;	/* pid -> struct proc */
	struct dso **dsos;
	size_t nr_dsos, alloc_dsos;
	struct u64map dso_index;	/* hash(path) -> first dso index + 1 (chain by scan) */
	struct strpool strings;
	uint64_t seq;
	/* functions named otherwise than their symbols, by their file's build-id */
	struct symname { uint8_t id[20], size; char *sym, *name; } *symnames;
	size_t nr_symnames, alloc_symnames;
	/* build-ids learned from DLP_REC_BUILDID, by path */
	struct bid { char *path; uint8_t id[20]; uint8_t size; } *bids;
	size_t nr_bids, alloc_bids;
	/* files captured at record time (DLP_REC_FILE), by path */
	struct image { char *path; uint8_t *data; size_t len; } *images;
	size_t nr_images, alloc_images;
	struct jitsyms *jit;	/* not owned */
	struct proc_table info;	/* command lines and ranks (DLP_REC_PROC) */
	uint64_t names;		/* changes of what names a file's functions (build-ids, names
				   given, captured images): machine_view */
	machine_root_fn *root_fn;	/* where a process's files are read (record) */
	void *root_ctx;
	const char *symfs;	/* machine_set_symfs(): every dso's symbol root */
};

struct machine *machine_new(void)
{
	struct machine *m = xcalloc(1, sizeof(*m));

	u64map_init(&m->procs);
	u64map_init(&m->dso_index);
	strpool_init(&m->strings);
	return m;
}

static void proc_free(struct proc *p)
{
	free(p->execs);
	free(p->maps);
	free(p->max_end);
	free(p->comms);
	free(p);
}

void machine_free(struct machine *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->procs.cap; i++)
		if (m->procs.used[i])
			proc_free(m->procs.vals[i]);
	u64map_release(&m->procs);
	proc_table_release(&m->info);
	for (size_t i = 0; i < m->nr_dsos; i++) {
		free(m->dsos[i]->file);
		free(m->dsos[i]->path);
		free(m->dsos[i]);
	}
	free(m->dsos);
	u64map_release(&m->dso_index);
	strpool_release(&m->strings);
	for (size_t i = 0; i < m->nr_bids; i++)
		free(m->bids[i].path);
	free(m->bids);
	for (size_t i = 0; i < m->nr_symnames; i++) {
		free(m->symnames[i].sym);
		free(m->symnames[i].name);
	}
	free(m->symnames);
	for (size_t i = 0; i < m->nr_images; i++) {
		free(m->images[i].path);
		free(m->images[i].data);
	}
	free(m->images);
	free(m);
}

static struct proc *find_proc(struct machine *m, uint32_t pid)
{
	return u64map_get(&m->procs, pid);
}

static struct proc *get_proc(struct machine *m, uint32_t pid)
{
	void **slot = u64map_slot(&m->procs, pid);

	if (!*slot) {
		struct proc *p = xcalloc(1, sizeof(*p));

		p->pid = pid;
		*slot = p;
	}
	return *slot;
}

static void proc_changed(struct proc *p, uint64_t time)
{
	p->changes++;
	if (time > p->last_change)
		p->last_change = time;
}

static int path_is_kernel(const char *path)
{
	return !strncmp(path, "[kernel.kallsyms]", 17) || !strncmp(path, "[guest.kernel", 13);
}

static int path_is_anon(const char *path)
{
	return !*path || !strcmp(path, "//anon") || !strncmp(path, "[anon", 5) ||
	       !strncmp(path, "/memfd:", 7) || !strncmp(path, "/dev/zero", 9) ||
	       !strncmp(path, "/SYSV", 5) || !strcmp(path, "[heap]") ||
	       !strncmp(path, "/anon_hugepage", 14);
}

static void classify_dso(struct dso *d, int kernel_mode)
{
	const char *p = d->path;
	const char *slash;

	if (path_is_kernel(p) || (kernel_mode && *p != '/'))
		d->kernel = 1;
	else if (kernel_mode)
		d->kernel = 1;	/* kernel module file */
	else if (path_is_anon(p))
		d->anon = 1;
	else if (*p == '[')
		d->special = 1;
	if (d->kernel && path_is_kernel(p))
		d->short_name = "[kernel.kallsyms]";
	else if (d->anon)
		d->short_name = p;
	else {
		slash = strrchr(p, '/');
		d->short_name = slash ? slash + 1 : p;
	}
}

static const struct bid *find_bid(struct machine *m, const char *path)
{
	for (size_t i = m->nr_bids; i-- > 0; )
		if (!strcmp(m->bids[i].path, path))
			return &m->bids[i];
	return NULL;
}

void machine_set_root_fn(struct machine *m, machine_root_fn *fn, void *ctx)
{
	m->root_fn = fn;
	m->root_ctx = ctx;
}

struct symname;
static int symname_of(const struct symname *n, const struct dso *d);

/* root: the process's root its path is read under (interned by the root function), or
 * NULL: one path under two roots is two files unless their build-ids say otherwise */
static struct dso *intern_dso(struct machine *m, const char *path, const uint8_t *id,
			      size_t id_size, int kernel_mode, const char *root)
{
	uint64_t h = hash_bytes(path, strlen(path));
	struct dso *d;
	const struct bid *b;

	if (id_size > 20)
		id_size = 20;
	if (!id_size && (b = find_bid(m, path))) {
		id = b->id;
		id_size = b->size;
	}
	/* chain: scan all dsos with this path hash (small in practice) */
	for (uintptr_t i = (uintptr_t)u64map_get(&m->dso_index, h); i; ) {
		d = m->dsos[i - 1];
		if (!strcmp(d->path, path) &&
		    (!id_size || !d->build_id_size ||
		     (d->build_id_size == id_size && !memcmp(d->build_id, id, id_size))) &&
		    (d->root == root || (id_size && d->build_id_size))) {
			if (!d->build_id_size && id_size) {
				memcpy(d->build_id, id, id_size);
				d->build_id_size = id_size;
			}
			return d;
		}
		/* next dso with the same path hash */
		uintptr_t next = 0;
		for (size_t k = i; k < m->nr_dsos; k++)
			if (hash_bytes(m->dsos[k]->path, strlen(m->dsos[k]->path)) == h) {
				next = k + 1;
				break;
			}
		i = next;
	}
	d = xcalloc(1, sizeof(*d));
	d->path = xstrdup(path);
	d->root = root;
	d->symfs = m->symfs;
	if (id_size) {
		memcpy(d->build_id, id, id_size);
		d->build_id_size = id_size;
	}
	classify_dso(d, kernel_mode);
	for (size_t i = 0; i < m->nr_symnames; i++)
		if (symname_of(&m->symnames[i], d))
			d->renamed = 1;
	for (size_t i = 0; i < m->nr_images; i++)
		if (!strcmp(m->images[i].path, path)) {
			d->image = m->images[i].data;
			d->image_size = m->images[i].len;
		}
	ALLOC_GROW(m->dsos, m->nr_dsos + 1, m->alloc_dsos);
	m->dsos[m->nr_dsos++] = d;
	if (!u64map_get(&m->dso_index, h))
		u64map_put(&m->dso_index, h, (void *)(uintptr_t)m->nr_dsos);
	return d;
}

int machine_mmap(struct machine *m, const struct dlp_mmap *ev)
{
	int kernel_mode = (ev->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL ||
			  path_is_kernel(ev->filename ? ev->filename : "");
	uint32_t pid = kernel_mode && (int32_t)ev->pid <= 0 ? KERNEL_PID : ev->pid;
	struct proc *p;
	struct pmap *pm;

	if (!ev->len || ev->start + ev->len < ev->start)
		return 0;
	if (ev->misc & PERF_RECORD_MISC_MMAP_DATA)
		return 0;	/* data mappings never hold code */
	p = get_proc(m, pid);
	ALLOC_GROW(p->maps, p->nr_maps + 1, p->alloc_maps);
	pm = &p->maps[p->nr_maps++];
	pm->map.start = ev->start;
	pm->map.end = ev->start + ev->len;
	pm->map.pgoff = ev->pgoff;
	pm->map.time = ev->time;
	pm->map.prot = ev->prot;
	pm->map.flags = ev->flags;
	pm->map.dso = intern_dso(m, ev->filename ? ev->filename : "", ev->build_id,
				 ev->build_id_size, kernel_mode,
				 m->root_fn && !kernel_mode && ev->filename && ev->filename[0] == '/' ?
				 m->root_fn(m->root_ctx, pid, ev->time) : NULL);
	pm->seq = ++m->seq;
	p->sorted = 0;
	proc_changed(p, ev->time);
	return 0;
}

void machine_set_build_id(struct machine *m, const char *path, const uint8_t *id, size_t size)
{
	if (size > 20)
		size = 20;
	ALLOC_GROW(m->bids, m->nr_bids + 1, m->alloc_bids);
	m->bids[m->nr_bids].path = xstrdup(path);
	memcpy(m->bids[m->nr_bids].id, id, size);
	m->bids[m->nr_bids].size = size;
	m->nr_bids++;
	m->names++;
	for (size_t i = 0; i < m->nr_dsos; i++) {
		struct dso *d = m->dsos[i];

		if (!d->build_id_size && !strcmp(d->path, path)) {
			memcpy(d->build_id, id, size);
			d->build_id_size = size;
		}
	}
}

static int symname_of(const struct symname *n, const struct dso *d)
{
	return d->build_id_size && n->size == d->build_id_size &&
	       !memcmp(n->id, d->build_id, n->size);
}

void machine_set_sym_name(struct machine *m, const uint8_t *id, size_t size, const char *sym,
			  const char *name)
{
	struct symname *n;

	if (!size)
		return;
	ALLOC_GROW(m->symnames, m->nr_symnames + 1, m->alloc_symnames);
	n = &m->symnames[m->nr_symnames++];
	n->size = (uint8_t)(size > 20 ? 20 : size);
	memcpy(n->id, id, n->size);
	n->sym = xstrdup(sym);
	n->name = xstrdup(name);
	m->names++;
	for (size_t i = 0; i < m->nr_dsos; i++)
		if (symname_of(n, m->dsos[i]))
			m->dsos[i]->renamed = 1;
}

const char *machine_sym_name(const struct machine *m, const struct dso *d, const char *sym)
{
	if (!d->renamed)
		return NULL;
	for (size_t i = 0; i < m->nr_symnames; i++)
		if (symname_of(&m->symnames[i], d) && !strcmp(m->symnames[i].sym, sym))
			return m->symnames[i].name;
	return NULL;
}

void machine_set_image(struct machine *m, const char *path, const void *data, size_t len)
{
	struct image *im;

	ALLOC_GROW(m->images, m->nr_images + 1, m->alloc_images);
	im = &m->images[m->nr_images++];
	im->path = xstrdup(path);
	im->data = xmalloc(len ? len : 1);
	memcpy(im->data, data, len);
	im->len = len;
	m->names++;
	for (size_t i = 0; i < m->nr_dsos; i++)
		if (!strcmp(m->dsos[i]->path, path)) {
			m->dsos[i]->image = im->data;
			m->dsos[i]->image_size = len;
		}
}

int machine_comm(struct machine *m, uint32_t pid, uint32_t tid, const char *comm, int exec,
		 uint64_t time)
{
	struct proc *p = get_proc(m, pid);
	struct comm_ev *c;

	if (exec) {
		ALLOC_GROW(p->execs, p->nr_execs + 1, p->alloc_execs);
		p->execs[p->nr_execs++] = time;
		proc_changed(p, time);
	}
	ALLOC_GROW(p->comms, p->nr_comms + 1, p->alloc_comms);
	c = &p->comms[p->nr_comms++];
	c->tid = tid;
	c->time = time;
	c->comm = strpool_intern(&m->strings, comm ? comm : "");
	return 0;
}

int machine_fork(struct machine *m, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		 uint64_t time)
{
	struct proc *p;

	if (pid == ppid)
		return 0;	/* a new thread of the same process */
	p = get_proc(m, pid);
	if (!p->has_parent) {
		p->has_parent = 1;
		p->ppid = ppid;
		p->fork_time = time;
		proc_changed(p, time);
	}
	return 0;
}

int machine_exit(struct machine *m, uint32_t pid, uint32_t tid, uint64_t time)
{
	/* mappings stay visible: samples are matched by time, and a pid is rarely reused
	 * within one recording */
	return 0;
}

static int cmp_pmap(const void *a, const void *b)
{
	const struct pmap *x = a, *y = b;

	if (x->map.start != y->map.start)
		return x->map.start < y->map.start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void proc_sort(struct proc *p)
{
	uint64_t mx = 0;

	if (p->nr_maps)	/* a process that mapped nothing: maps is NULL */
		qsort(p->maps, p->nr_maps, sizeof(*p->maps), cmp_pmap);
	free(p->max_end);
	p->max_end = xmalloc((p->nr_maps ? p->nr_maps : 1) * sizeof(*p->max_end));
	for (size_t i = 0; i < p->nr_maps; i++) {
		if (p->maps[i].map.end > mx)
			mx = p->maps[i].map.end;
		p->max_end[i] = mx;
	}
	p->sorted = 1;
}

/* The latest exec at or before time, 0 when none. */
static uint64_t exec_before(const struct proc *p, uint64_t time, int *found)
{
	uint64_t t = 0;

	*found = 0;
	for (size_t i = 0; i < p->nr_execs; i++)
		if (p->execs[i] <= time && p->execs[i] >= t) {
			t = p->execs[i];
			*found = 1;
		}
	return t;
}

static const struct map *proc_find_map(struct proc *p, uint64_t addr, uint64_t time)
{
	const struct pmap *best = NULL;
	size_t lo = 0, hi;
	int has_exec;
	uint64_t exec_t = exec_before(p, time, &has_exec);

	if (!p->sorted)
		proc_sort(p);
	/* first map with start > addr */
	hi = p->nr_maps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p->maps[mid].map.start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && p->max_end[i] > addr; ) {
		const struct pmap *pm = &p->maps[i];

		if (pm->map.end <= addr)
			continue;
		if (pm->map.time > time && pm->map.time)
			continue;
		if (has_exec && pm->map.time < exec_t)
			continue;
		if (!best || pm->map.time > best->map.time ||
		    (pm->map.time == best->map.time && pm->seq > best->seq))
			best = pm;
	}
	return best ? &best->map : NULL;
}

const struct map *machine_find_map(struct machine *m, uint32_t pid, uint64_t addr, uint64_t time)
{
	struct proc *p;
	int depth = 0;

	if (addr >= 0xffff800000000000ULL) {
		p = find_proc(m, KERNEL_PID);
		return p ? proc_find_map(p, addr, time) : NULL;
	}
	while ((p = find_proc(m, pid)) && depth++ < 64) {
		const struct map *mp = proc_find_map(p, addr, time);
		int has_exec;

		if (mp)
			return mp;
		exec_before(p, time, &has_exec);
		if (has_exec || !p->has_parent)
			return NULL;
		if (p->fork_time < time)
			time = p->fork_time;
		pid = p->ppid;
	}
	return NULL;
}

int machine_view(struct machine *m, uint32_t pid, uint64_t time, uint64_t *view)
{
	struct proc *p = find_proc(m, pid), *k = find_proc(m, KERNEL_PID);
	uint64_t sum = (m->names << 40) + (k ? k->changes : 0);
	int depth = 0;

	if (!p || time < p->last_change || (k && time < k->last_change))
		return 0;	/* (before a change: the lookups depend on the time) */
	/* a forked child's lookups go on in its parents' mappings as of its fork */
	for (; p && depth++ < 64; p = p->has_parent ? find_proc(m, p->ppid) : NULL)
		sum += p->changes;
	*view = sum;
	return 1;
}

unsigned machine_exec_gen(struct machine *m, uint32_t pid, uint64_t time)
{
	struct proc *p = find_proc(m, pid);
	unsigned n = 0;

	if (!p)
		return 0;
	for (size_t i = 0; i < p->nr_execs; i++)
		if (p->execs[i] <= time)
			n++;
	return n;
}

static const char *proc_comm(struct proc *p, uint32_t tid, uint64_t time, int any_tid)
{
	const struct comm_ev *best = NULL, *first = NULL;

	for (size_t i = 0; i < p->nr_comms; i++) {
		const struct comm_ev *c = &p->comms[i];

		if (!any_tid && c->tid != tid)
			continue;
		if (!first || c->time < first->time)
			first = c;
		if (c->time <= time && (!best || c->time >= best->time))
			best = c;
	}
	if (best)
		return best->comm;
	return first ? first->comm : NULL;
}

void machine_set_jit(struct machine *m, struct jitsyms *jit)
{
	m->jit = jit;
}

struct jitsyms *machine_jit(const struct machine *m)
{
	return m->jit;
}

const char *machine_comm_at(struct machine *m, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct proc *p = find_proc(m, pid);
	const char *c;
	int depth = 0;

	if (!p) {
		if (pid == 0 || pid == KERNEL_PID)
			return "swapper";
		return "[unknown]";
	}
	if ((c = proc_comm(p, tid, time, 0)))
		return c;
	if ((c = proc_comm(p, pid, time, 0)))
		return c;
	/* a new thread or child before its own comm event: the process's or parent's name */
	while (p && depth++ < 64) {
		int has_exec;

		exec_before(p, time, &has_exec);
		if ((c = proc_comm(p, 0, time, 1)))
			return c;
		if (!p->has_parent || has_exec)
			break;
		if (p->fork_time < time)
			time = p->fork_time;
		p = find_proc(m, p->ppid);
	}
	return "[unknown]";
}

size_t machine_dsos(struct machine *m, struct dso ***out)
{
	*out = m->dsos;
	return m->nr_dsos;
}

/* s when it is a number of 1 to max digits (a rank is printed unquoted), else NULL */
static const char *number_or_null(const char *s, size_t max)
{
	size_t n = strspn(s, "0123456789");

	return n && n <= max && !s[n] ? s : NULL;
}

int proc_rec_parse(const void *data, size_t len, struct proc_info *pi)
{
	const char *p = (const char *)data + sizeof(struct dlp_proc_rec), *end;
	struct dlp_proc_rec h;

	memset(pi, 0, sizeof(*pi));
	if (len < sizeof(h) || ((const char *)data)[len - 1])
		return -1;	/* every pair NUL-terminated */
	memcpy(&h, data, sizeof(h));
	if (h.pid <= 0)
		return -1;
	pi->pid = (uint32_t)h.pid;
	end = (const char *)data + len;
	while (p < end) {
		const char *k = p, *v = k + strlen(k) + 1;

		if (v >= end)
			return -1;	/* a key without its value */
		p = v + strlen(v) + 1;
		if (!strcmp(k, "cmdline"))
			pi->cmdline = v;
		else if (!strcmp(k, "rank"))
			pi->rank = number_or_null(v, 9);
		else if (!strcmp(k, "local_rank"))
			pi->local_rank = number_or_null(v, 9);
		else if (!strcmp(k, "world_size"))
			pi->world_size = number_or_null(v, 9);
		else if (!strcmp(k, "start"))
			pi->start = number_or_null(v, 19);
		else if (!strcmp(k, "job"))
			pi->job = *v ? v : NULL;
		else if (!strcmp(k, "container"))
			pi->container = *v ? v : NULL;
	}
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void entry_release(struct proc_entry *e)
{
	free(e->cmdline);
	free(e->rank);
	free(e->local_rank);
	free(e->world_size);
	free(e->job);
	free(e->container);
}

int proc_table_add(struct proc_table *t, const void *data, size_t len)
{
	struct proc_info pi;
	struct proc_entry *e;

	if (proc_rec_parse(data, len, &pi))
		return -1;
	e = (struct proc_entry *)proc_table_find(t, pi.pid);
	if (e) {
		entry_release(e);
	} else {
		ALLOC_GROW(t->v, t->nr + 1, t->alloc);
		e = &t->v[t->nr++];
	}
	e->pid = pi.pid;
	e->cmdline = dup_or_null(pi.cmdline);
	e->rank = dup_or_null(pi.rank);
	e->local_rank = dup_or_null(pi.local_rank);
	e->world_size = dup_or_null(pi.world_size);
	e->start = pi.start ? strtoull(pi.start, NULL, 10) : 0;
	e->job = dup_or_null(pi.job);
	e->container = dup_or_null(pi.container);
	return 0;
}

const struct proc_entry *proc_table_find(const struct proc_table *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nr; i++)
		if (t->v[i].pid == pid)
			return &t->v[i];
	return NULL;
}

void proc_table_copy(struct proc_table *dst, const struct proc_table *src)
{
	proc_table_release(dst);
	for (size_t i = 0; i < src->nr; i++) {
		ALLOC_GROW(dst->v, dst->nr + 1, dst->alloc);
		dst->v[dst->nr++] = (struct proc_entry){
			src->v[i].pid, dup_or_null(src->v[i].cmdline), dup_or_null(src->v[i].rank),
			dup_or_null(src->v[i].local_rank), dup_or_null(src->v[i].world_size),
			src->v[i].start, dup_or_null(src->v[i].job),
			dup_or_null(src->v[i].container) };
	}
}

int machine_add_proc(struct machine *m, const void *data, size_t len)
{
	return proc_table_add(&m->info, data, len);
}

const struct proc_table *machine_procs(const struct machine *m)
{
	return &m->info;
}

void proc_table_release(struct proc_table *t)
{
	for (size_t i = 0; i < t->nr; i++)
		entry_release(&t->v[i]);
	free(t->v);
	memset(t, 0, sizeof(*t));
}

void machine_set_symfs(struct machine *m, const char *dir)
{
	m->symfs = dir && *dir ? dir : NULL;
}

const char *dso_file(const struct dso *dso)
{
	struct dso *d = (struct dso *)dso;	/* the cache is not part of its value */

	if (d->file)
		return d->file;
	if (d->symfs && d->path[0] == '/') {
		char *p = xasprintf("%s%s", d->symfs, d->path);

		if (access(p, R_OK) == 0)
			return d->file = p;
		free(p);
	}
	if (d->root && d->path[0] == '/') {
		char *p = xasprintf("%s%s", d->root, d->path);

		if (access(p, R_OK) == 0)
			return d->file = p;
		free(p);
	}
	/* the file as recorded, where it still is; else the build-id cache's copy (a
	 * container's file, kept by record: paths.h) */
	if (d->build_id_size && !d->kernel && !d->special && !d->anon && d->path[0] == '/') {
		uint8_t id[20];
		size_t n = elf_file_build_id(d->path, id);

		if (!n || n < d->build_id_size || memcmp(id, d->build_id, d->build_id_size)) {
			char *c = buildid_cache_file(d->build_id, d->build_id_size);

			if (c && access(c, R_OK) == 0)
				return d->file = c;
			free(c);
		}
	}
	return d->file = xstrdup(d->path);
}
