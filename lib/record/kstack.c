/* kstack.c - the native walk in the kernel (pybpf.h, kunwind.h), fed and checked by the
 * unwinding thread: each file mapped for code gets an id, each process its sorted code
 * mappings, and each walk the kernel made is set beside the walk of the sample's stack
 * copy (the same sample: its thread, the closest time), counted as the same stack, a
 * walk that stopped early (and why), or another.  A file's table is made once walks
 * stopped for the want of it KS_MAKE_AFTER times (a process maps hundreds of files and
 * runs in a few), by a thread of its own: libtorch_cpu.so's 1.4 M rows take 0.7 s.
 *
 * Where the walks replace the copies (PYBPF_NATIVE_INSTEAD), the draining thread takes
 * them from the kernel instead (kstack_drain): each walk that reached its thread's root
 * is its sample, whose own record the program dropped; the others are counted, and ask
 * for the table they stopped for.  The default where BPF is allowed; DLPROF_KSTACK
 * (record.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "elffile.h"
#include "frame.h"
#include "kstack.h"
#include "python/pybpf.h"
#include "python/pybpf-prog.h"
#include "rephash.h"
#include "unwind.h"
#include "util.h"

#define KS_JOIN_NS	(250 * 1000)	/* a walk this far from its sample's time */
#define KS_KEEP_NS	(1000 * 1000000ull)	/* an unmatched walk kept this long */
#define KS_BUILDERS	4		/* threads that make and load tables */
/* A file's table is made once walks stopped for it this many times: a file met by a
 * sample or two (a library's constructor as the CNN imports torchvision) costs those
 * samples their copies, not a table (libavcodec's 151,187 rows: 95 ms of CPU, for one
 * sample).  A hot file is met this often in a few milliseconds.  A kept table is read
 * at the first. */
#define KS_MAKE_AFTER	16
/* a walk stopped at a process or mapping the kernel was not told of yet: the rings are
 * read soon (the mappings are told as they are read) this long after it, while
 * mappings come (not for a mapping never told: [vsyscall]) */
#define KS_BEHIND_NS	(50 * 1000000ull)
#define KS_MAPPING_NS	(500 * 1000000ull)

struct ks_walk {
	uint64_t time;
	uint32_t n, why, whole, scans, first, fid, pid;
	uint64_t *ip;
};

struct ks_thread {
	struct ks_walk *v;	/* by time */
	size_t nr, alloc;
};

struct ks_proc {
	struct kunw_map *m;	/* sorted, disjoint */
	size_t nr, alloc;
};

struct ks_job {
	struct ks_job *next;
	uint32_t fid;
	char *file;
	void *image;		/* the file's bytes, where record captured them ([vdso]) */
	size_t image_size;
	uint8_t id[20], id_size;
};

struct kstack {
	struct pybpf *pb;
	int mode;		/* PYBPF_NATIVE_BESIDE or _INSTEAD */
	struct machine *m;
	struct u64map fids;	/* dso -> its id + 1 */
	/* by id, set before the id is given to the kernel (then read by either thread):
	 * where its bytes are, a captured image's */
	char **paths;
	const void **images;
	size_t *image_sizes;
	uint8_t (*ids)[21];	/* build-id: size, then bytes */
	unsigned char *asked;	/* by id: its table asked for */
	/* by id: its program headers (for each mapping's bias), read at its first mapping;
	 * heads_from: 0 not yet, 1 read, 2 the unwinder's open file, 3 none */
	struct elffile_heads **heads;
	unsigned char *heads_from;
	uint32_t nr_files;
	uint32_t gen;		/* the last kunw_proc.gen given */
	struct u64map procs;	/* pid -> struct ks_proc */
	struct u64map threads;	/* tid -> struct ks_thread */
	struct kunw_proc *out;	/* a process's entry, as written */
	struct kstack_stats st;
	/* the tables' threads: their jobs and counts, under mu.  Each table given to the
	 * kernel waits for an RCU grace period (an update of a map of maps): 5 to 24 ms
	 * here whatever its size, 1.2 s for the container CNN's 100 tables, one after the
	 * other, while its samples fell back to their copies; several threads share the
	 * waits */
	pthread_t builders[KS_BUILDERS];
	int started, closing;
	pthread_mutex_t mu;
	pthread_cond_t more;
	struct ks_job *head, **tail;
	uint64_t tables, rows, table_bytes, table_ns, table_failed, tables_kept, rules_cut;
	uint64_t table_cpu_ns;	/* the threads' CPU time at their tables */
	int busy;		/* threads at a table, since busy_since */
	uint64_t busy_since;
	int no_keep;		/* --no-buildid-cache: none kept */
	/* Kept tables are loaded as their files are mapped only where walks in a process
	 * of the same executable wanted them in an earlier run (unwind_ktable_wants);
	 * others when a walk first stops for them */
	struct u64map preload;	/* build-id's first 8 bytes (| 1) -> 1 */
	unsigned char *wants_read;	/* by id: the wants of it as an executable read */
	unsigned char *walked;		/* by id: a walk read a row of its table (at the end) */
	struct u64map wanted;	/* (exe id + 1) << 32 | id -> 1: wanted by a walk this run */
	/* by id, where walks are drained: the walks that stopped for its table (up to
	 * KS_MAKE_AFTER), and whether one is kept (0 not known, 1 kept, 2 none) */
	uint16_t *stops;
	unsigned char *kept;
	/* pid -> its executable's file id + 1: the first file it maps for code after its
	 * exec (set by the unwinding thread, read where walks are drained: under mu) */
	struct u64map exes;
	uint64_t stopped_at;	/* the last walk drained that stopped so (the drain's thread) */
	uint64_t mapped_at;	/* the last mapping told (the unwinding thread's; atomic) */
};

static void keep_wants(struct kstack *ks);

static void *build_tables(void *arg)
{
	struct kstack *ks = arg;

	pthread_mutex_lock(&ks->mu);
	for (;;) {
		struct ks_job *j;
		struct unw_ktable kt;
		uint64_t t0, t1, c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		int ok, loaded;

		while (!ks->head && !ks->closing)
			pthread_cond_wait(&ks->more, &ks->mu);
		if (ks->closing)
			break;
		j = ks->head;
		ks->head = j->next;
		if (!ks->head)
			ks->tail = &ks->head;
		if (!ks->busy++)
			ks->busy_since = now_ns();
		pthread_mutex_unlock(&ks->mu);
		t0 = now_ns();
		/* kept from an earlier run, else made (and kept) */
		ok = j->id_size && !unwind_ktable_load(j->id, j->id_size, &kt);
		if (ok) {
			loaded = 1;
		} else {
			loaded = 0;
			ok = j->image ? !unwind_ktable_image(j->image, j->image_size, j->file, &kt) :
					!unwind_ktable(j->file, j->id, j->id_size, &kt);
			if (ok && j->id_size && !ks->no_keep)
				unwind_ktable_keep(j->id, j->id_size, &kt);
		}
		t1 = now_ns();
		if (ok && (errno = -pybpf_native_table(ks->pb, j->fid, &kt)) != 0) {
			if (getenv("DLPROF_KSTACK_DEBUG"))
				fprintf(stderr, "kstack: table of %s: %s\n", j->file, strerror(errno));
			ok = 0;
		}
		pthread_mutex_lock(&ks->mu);
		if (ok) {
			ks->tables++;
			ks->tables_kept += loaded;
			ks->rows += kt.nr_rows;
			ks->table_bytes += UNW_KTABLE_BYTES(&kt);
			ks->rules_cut += kt.rules_cut;
		} else {
			ks->table_failed++;
		}
		if (getenv("DLPROF_KSTACK_DEBUG"))
			fprintf(stderr, "kstack: table of %s: %s, %zu rows, %.1f ms (%.1f to the kernel)\n",
				j->file, !ok ? "none" : loaded ? "kept" : j->id_size ? "made" :
				"made (no build-id: not kept)", (size_t)kt.nr_rows,
				(double)(now_ns() - t0) / 1e6, (double)(now_ns() - t1) / 1e6);
		unwind_ktable_release(&kt);
		if (!--ks->busy)
			ks->table_ns += now_ns() - ks->busy_since;	/* (wall time) */
		ks->table_cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		free(j->file);
		free(j->image);
		free(j);
	}
	pthread_mutex_unlock(&ks->mu);
	return NULL;
}

struct kstack *kstack_new(struct pybpf *pb, struct machine *m, int no_keep)
{
	struct kstack *ks;

	if (!pybpf_native(pb))
		return NULL;
	ks = xcalloc(1, sizeof(*ks));
	ks->pb = pb;
	ks->m = m;
	u64map_init(&ks->fids);
	u64map_init(&ks->procs);
	u64map_init(&ks->threads);
	ks->out = xcalloc(1, sizeof(*ks->out));
	ks->mode = pybpf_native(pb);
	ks->no_keep = no_keep;
	ks->paths = xcalloc(KUNW_MAX_FILES, sizeof(*ks->paths));
	ks->images = xcalloc(KUNW_MAX_FILES, sizeof(*ks->images));
	ks->image_sizes = xcalloc(KUNW_MAX_FILES, sizeof(*ks->image_sizes));
	ks->ids = xcalloc(KUNW_MAX_FILES, sizeof(*ks->ids));
	ks->asked = xcalloc(KUNW_MAX_FILES, 1);
	ks->heads = xcalloc(KUNW_MAX_FILES, sizeof(*ks->heads));
	ks->heads_from = xcalloc(KUNW_MAX_FILES, 1);
	ks->wants_read = xcalloc(KUNW_MAX_FILES, 1);
	ks->walked = xcalloc(KUNW_MAX_FILES, 1);
	ks->stops = xcalloc(KUNW_MAX_FILES, sizeof(*ks->stops));
	ks->kept = xcalloc(KUNW_MAX_FILES, 1);
	u64map_init(&ks->preload);
	u64map_init(&ks->wanted);
	u64map_init(&ks->exes);
	ks->tail = &ks->head;
	pthread_mutex_init(&ks->mu, NULL);
	pthread_cond_init(&ks->more, NULL);
	while (ks->started < KS_BUILDERS &&
	       !thread_start_quiet(&ks->builders[ks->started], build_tables, ks))
		ks->started++;
	if (!ks->started) {
		kstack_free(ks);
		return NULL;
	}
	return ks;
}

static void proc_free(struct ks_proc *p)
{
	if (p) {
		free(p->m);
		free(p);
	}
}

void kstack_free(struct kstack *ks)
{
	if (!ks)
		return;
	if (ks->started) {
		pthread_mutex_lock(&ks->mu);
		ks->closing = 1;
		pthread_cond_broadcast(&ks->more);
		pthread_mutex_unlock(&ks->mu);
		for (int i = 0; i < ks->started; i++)
			pthread_join(ks->builders[i], NULL);
	}
	while (ks->head) {
		struct ks_job *j = ks->head;

		ks->head = j->next;
		free(j->file);
		free(j->image);
		free(j);
	}
	if (!ks->no_keep)
		keep_wants(ks);
	for (size_t i = 0; i < ks->procs.cap; i++)
		if (ks->procs.used[i])
			proc_free(ks->procs.vals[i]);
	for (size_t i = 0; i < ks->threads.cap; i++) {
		struct ks_thread *t = ks->threads.used[i] ? ks->threads.vals[i] : NULL;

		if (!t)
			continue;
		for (size_t k = 0; k < t->nr; k++)
			free(t->v[k].ip);
		free(t->v);
		free(t);
	}
	u64map_release(&ks->fids);
	u64map_release(&ks->procs);
	u64map_release(&ks->threads);
	for (uint32_t i = 0; i < ks->nr_files; i++) {
		free(ks->paths[i]);
		free(ks->heads[i]);
	}
	free(ks->heads);
	free(ks->heads_from);
	free(ks->wants_read);
	free(ks->walked);
	free(ks->stops);
	free(ks->kept);
	u64map_release(&ks->preload);
	u64map_release(&ks->wanted);
	u64map_release(&ks->exes);
	free(ks->paths);
	free(ks->images);
	free(ks->image_sizes);
	free(ks->ids);
	free(ks->asked);
	free(ks->out);
	free(ks);
}

/* A walk stopped at a file without a table: have it made (once; from the unwinding
 * thread, or the draining one where the walks replace the copies). */
static void want_table(struct kstack *ks, uint32_t fid)
{
	struct ks_job *j;

	if (fid >= KUNW_MAX_FILES || !ks->paths[fid] ||
	    __atomic_exchange_n(&ks->asked[fid], 1, __ATOMIC_ACQ_REL))
		return;
	j = xcalloc(1, sizeof(*j));
	j->fid = fid;
	j->file = xstrdup(ks->paths[fid]);
	if (ks->images[fid]) {
		j->image = xmalloc(ks->image_sizes[fid]);
		memcpy(j->image, ks->images[fid], ks->image_sizes[fid]);
		j->image_size = ks->image_sizes[fid];
	}
	j->id_size = ks->ids[fid][0];
	memcpy(j->id, ks->ids[fid] + 1, j->id_size);
	pthread_mutex_lock(&ks->mu);
	*ks->tail = j;
	ks->tail = &j->next;
	pthread_cond_signal(&ks->more);
	pthread_mutex_unlock(&ks->mu);
}

static uint64_t id_key(const uint8_t *id, size_t size)
{
	uint64_t k = 0;

	memcpy(&k, id, size < 8 ? size : 8);
	return k | 1;
}

/* The id of a file (its table made later, when a walk wants it) */
static int file_id(struct kstack *ks, const struct dso *d, uint32_t *fid)
{
	uintptr_t v = (uintptr_t)u64map_get(&ks->fids, (uint64_t)(uintptr_t)d);

	if (!v) {
		uint32_t f = ks->nr_files;

		if (f >= KUNW_MAX_FILES)
			return -1;
		ks->paths[f] = xstrdup(d->image ? d->path : dso_file(d));
		ks->images[f] = d->image;
		ks->image_sizes[f] = d->image_size;
		ks->ids[f][0] = d->build_id_size;
		memcpy(ks->ids[f] + 1, d->build_id, d->build_id_size);
		v = ++ks->nr_files;
		u64map_put(&ks->fids, (uint64_t)(uintptr_t)d, (void *)v);
		/* a table kept from an earlier run, which walks in this executable wanted
		 * then: read at once, not at the first walk that wants it */
		if (d->build_id_size && u64map_get(&ks->preload, id_key(d->build_id, d->build_id_size)) &&
		    unwind_ktable_cached(d->build_id, d->build_id_size))
			want_table(ks, f);
	}
	*fid = (uint32_t)(v - 1);
	return 0;
}

/* The load bias of a mapping of file fid, from the file's program headers: read once a
 * file with a few preads, where opening it whole (mapped, read by libelf) took 22 ms
 * of the 30 that the CNN's records took to read.  The same file as recorded or none:
 * its build-id must be the mapping's. */
static int map_bias(struct kstack *ks, const struct map *mp, uint32_t fid, uint64_t *bias)
{
	const struct dso *d = mp->dso;
	struct elffile_heads *h = ks->heads[fid];

	if (!ks->heads_from[fid]) {
		h = ks->heads[fid] = xcalloc(1, sizeof(*h));
		if (d->image || elffile_heads(ks->paths[fid], h))
			ks->heads_from[fid] = 2;	/* (the [vdso]'s bytes; no notes) */
		else if (h->machine != EM_X86_64 || (h->type != ET_EXEC && h->type != ET_DYN) ||
			 (d->build_id_size && (h->build_id_size < d->build_id_size ||
					       memcmp(h->build_id, d->build_id, d->build_id_size))))
			ks->heads_from[fid] = 3;
		else
			ks->heads_from[fid] = 1;
	}
	switch (ks->heads_from[fid]) {
	case 1:
		return elffile_map_bias(h->type, h->segs, h->nr_segs, mp->start, mp->pgoff, bias);
	case 2:
		return unwind_map_bias(mp, bias);
	default:
		return -1;
	}
}

/* Process pid's executable (its file id + 1; 0 not known yet), and setting it */
static uint32_t exe_of(struct kstack *ks, uint32_t pid)
{
	uintptr_t x;

	pthread_mutex_lock(&ks->mu);
	x = (uintptr_t)u64map_get(&ks->exes, pid);
	pthread_mutex_unlock(&ks->mu);
	return (uint32_t)x;
}

static void set_exe(struct kstack *ks, uint32_t pid, uint32_t exe)
{
	pthread_mutex_lock(&ks->mu);
	u64map_put(&ks->exes, pid, (void *)(uintptr_t)exe);
	pthread_mutex_unlock(&ks->mu);
}

/* A process's executable is fid: the tables walks wanted in its processes before are
 * loaded now (those of files mapped already) or as their files are mapped */
static void exe_is(struct kstack *ks, uint32_t pid, uint32_t fid)
{
	uint8_t (*ids)[21];
	size_t nr;

	set_exe(ks, pid, fid + 1);
	if (ks->wants_read[fid] || !ks->ids[fid][0])
		return;
	ks->wants_read[fid] = 1;
	nr = unwind_ktable_wants(ks->ids[fid] + 1, ks->ids[fid][0], &ids);
	for (size_t i = 0; i < nr; i++)
		u64map_put(&ks->preload, id_key(ids[i] + 1, ids[i][0]), (void *)1);
	for (uint32_t f = 0; nr && f < ks->nr_files; f++)
		if (ks->ids[f][0] && u64map_get(&ks->preload, id_key(ks->ids[f] + 1, ks->ids[f][0])) &&
		    unwind_ktable_cached(ks->ids[f] + 1, ks->ids[f][0]))
			want_table(ks, f);
	free(ids);
}

/* A walk in process pid stopped for want of file fid's table: have it read where one is
 * kept, else made after KS_MAKE_AFTER such walks; kept on its executable's wants */
static void walk_wants(struct kstack *ks, uint32_t pid, uint32_t fid)
{
	uint32_t exe;

	if (fid >= KUNW_MAX_FILES || !ks->paths[fid])
		return;
	if (!ks->kept[fid])
		ks->kept[fid] = unwind_ktable_cached(ks->ids[fid] + 1, ks->ids[fid][0]) ? 1 : 2;
	if (ks->kept[fid] == 2 && ks->stops[fid] < KS_MAKE_AFTER && ++ks->stops[fid] < KS_MAKE_AFTER)
		return;
	exe = exe_of(ks, pid);
	if (exe)
		u64map_put(&ks->wanted, (uint64_t)exe << 32 | fid, (void *)1);
	want_table(ks, fid);
}

/* exe added to *exes where it is not there yet */
static void add_exe(uint32_t **exes, size_t *nr, size_t *alloc, uint32_t exe)
{
	for (size_t k = 0; k < *nr; k++)
		if ((*exes)[k] == exe)
			return;
	ALLOC_GROW(*exes, *nr + 1, *alloc);
	(*exes)[(*nr)++] = exe;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Each executable's wants at the end (unwind_ktable_wants_keep): the files its walks
 * stopped for this run, and those on its list whose tables a walk read (any process's:
 * the kernel marks a file, not a process) */
static void keep_wants(struct kstack *ks)
{
	uint8_t (*ids)[21] = NULL;
	uint32_t *exes = NULL;
	size_t nr_exes = 0, alloc = 0, ids_alloc = 0;
	struct u64map walked;	/* id_key() -> the id + 1 of a file walked */

	u64map_init(&walked);
	for (uint32_t f = 0; f < ks->nr_files; f++)
		if (ks->walked[f] && ks->ids[f][0])
			u64map_put(&walked, id_key(ks->ids[f] + 1, ks->ids[f][0]),
				   (void *)(uintptr_t)(f + 1));

	/* the executables (id + 1): those walks wanted a file in, those whose list was read */
	for (size_t i = 0; i < ks->wanted.cap; i++)
		if (ks->wanted.used[i] && ks->wanted.keys[i] >> 32)
			add_exe(&exes, &nr_exes, &alloc, (uint32_t)(ks->wanted.keys[i] >> 32));
	for (uint32_t x = 0; x < ks->nr_files; x++)
		if (ks->wants_read[x])
			add_exe(&exes, &nr_exes, &alloc, x + 1);
	/* in the order their files were first mapped, whatever the map's order */
	if (nr_exes)
		qsort(exes, nr_exes, sizeof(*exes), cmp_u32);
	for (size_t e = 0; e < nr_exes; e++) {
		uint32_t x = exes[e] - 1;
		uint8_t (*listed)[21] = NULL;
		size_t nr = 0, nl;

		for (size_t i = 0; i < ks->wanted.cap; i++) {
			uint32_t f = (uint32_t)ks->wanted.keys[i];

			if (!ks->wanted.used[i] || ks->wanted.keys[i] >> 32 != exes[e] || !ks->ids[f][0])
				continue;
			ALLOC_GROW(ids, nr + 1, ids_alloc);
			memcpy(ids[nr++], ks->ids[f], sizeof(ids[0]));
		}
		nl = ks->ids[x][0] ? unwind_ktable_wants(ks->ids[x] + 1, ks->ids[x][0], &listed) : 0;
		for (size_t l = 0; l < nl; l++) {
			uintptr_t f = (uintptr_t)u64map_get(&walked, id_key(listed[l] + 1, listed[l][0]));

			if (!f || memcmp(ks->ids[f - 1], listed[l], (size_t)listed[l][0] + 1))
				continue;
			ALLOC_GROW(ids, nr + 1, ids_alloc);
			memcpy(ids[nr++], listed[l], sizeof(ids[0]));
		}
		free(listed);
		if (ks->ids[x][0])
			unwind_ktable_wants_keep(ks->ids[x] + 1, ks->ids[x][0],
						 (const uint8_t (*)[21])ids, nr);
	}
	u64map_release(&walked);
	free(ids);
	free(exes);
}

static struct ks_proc *proc_get(struct kstack *ks, uint32_t pid)
{
	void **slot = u64map_slot(&ks->procs, pid);

	if (!*slot)
		*slot = xcalloc(1, sizeof(struct ks_proc));
	return *slot;
}

static void proc_write(struct kstack *ks, uint32_t pid, const struct ks_proc *p)
{
	size_t n = p->nr < KUNW_MAX_MAPS ? p->nr : KUNW_MAX_MAPS;

	ks->out->n = (uint32_t)n;
	ks->out->gen = ++ks->gen;
	ks->out->lo = UINT64_MAX;
	ks->out->hi = 0;
	for (size_t i = 0; i < n; i++)
		if (p->m[i].fid != KUNW_ANON) {
			if (p->m[i].start < ks->out->lo)
				ks->out->lo = p->m[i].start;
			if (p->m[i].end > ks->out->hi)
				ks->out->hi = p->m[i].end;
		}
	memcpy(ks->out->m, p->m, n * sizeof(*p->m));
	if (pybpf_native_proc(ks->pb, pid, ks->out))
		ks->st.proc_failed++;
}

void kstack_mmap(struct kstack *ks, const struct map *mp, uint32_t pid)
{
	struct kunw_map km;
	struct ks_proc *p;
	uint64_t bias;
	uint32_t fid;
	size_t i, w;

	if (!ks || !mp || !mp->dso || !(mp->prot & PROT_EXEC) || mp->dso->kernel ||
	    (mp->dso->special && !mp->dso->image))
		return;
	if (mp->dso->anon) {
		fid = KUNW_ANON;	/* JIT code: the walk scans past it */
		bias = 0;
	} else if (file_id(ks, mp->dso, &fid) || map_bias(ks, mp, fid, &bias)) {
		return;
	}
	km = (struct kunw_map){ mp->start, mp->end, bias, fid, 0 };
	p = proc_get(ks, pid);
	if (fid != KUNW_ANON && !exe_of(ks, pid))
		exe_is(ks, pid, fid);
	/*
	 * What it covers of the mappings before is gone; what lies outside it stays.  An
	 * mprotect of a page of a library's code is a mapping record of that page alone:
	 * UCX patches libc that way in torch 2.6's Debian 13 container, and dropping the
	 * rest of libc's text stopped every walk there (93 of 8,550 samples walked).
	 * Sorted and disjoint: at most one mapping reaches past each end of it.
	 */
	ALLOC_GROW(p->m, p->nr + 2, p->alloc);
	for (i = w = 0; i < p->nr; i++) {
		struct kunw_map old = p->m[i];

		if (old.end <= km.start || old.start >= km.end) {
			p->m[w++] = old;
			continue;
		}
		if (old.start < km.start) {
			p->m[w] = old;
			p->m[w++].end = km.start;
		}
		if (old.end > km.end) {
			/* (past km: after every kept one, so it may take a slot ahead of i) */
			if (w > i) {
				memmove(&p->m[w + 1], &p->m[i + 1], (p->nr - i - 1) * sizeof(*p->m));
				p->nr++;
				i++;
			}
			p->m[w] = old;
			p->m[w++].start = km.end;
		}
	}
	p->nr = w;
	ALLOC_GROW(p->m, p->nr + 1, p->alloc);
	for (i = p->nr; i > 0 && p->m[i - 1].start > km.start; i--)
		p->m[i] = p->m[i - 1];
	p->m[i] = km;
	p->nr++;
	if (p->nr > KUNW_MAX_MAPS)
		ks->st.maps_over++;
	proc_write(ks, pid, p);
	__atomic_store_n(&ks->mapped_at, now_ns(), __ATOMIC_RELAXED);
}

void kstack_fork(struct kstack *ks, uint32_t pid, uint32_t ppid)
{
	struct ks_proc *parent, *p;

	if (!ks || pid == ppid || !(parent = u64map_get(&ks->procs, ppid)))
		return;
	p = proc_get(ks, pid);
	p->nr = 0;
	ALLOC_GROW(p->m, parent->nr + 1, p->alloc);
	memcpy(p->m, parent->m, parent->nr * sizeof(*p->m));
	p->nr = parent->nr;
	set_exe(ks, pid, exe_of(ks, ppid));
	proc_write(ks, pid, p);
}

void kstack_exec(struct kstack *ks, uint32_t pid)
{
	struct ks_proc *p = ks ? u64map_get(&ks->procs, pid) : NULL;

	if (ks)
		set_exe(ks, pid, 0);	/* its new one's first mapping says it */
	if (p && p->nr) {
		p->nr = 0;	/* its mappings follow */
		pybpf_native_drop(ks->pb, pid);
	}
}

void kstack_exit(struct kstack *ks, uint32_t pid)
{
	struct ks_proc *p = ks ? u64map_get(&ks->procs, pid) : NULL;

	if (p) {
		proc_free(p);
		u64map_put(&ks->procs, pid, NULL);
		pybpf_native_drop(ks->pb, pid);
	}
}

static void got_walk(void *ctx, const struct kunw_chain *c)
{
	struct kstack *ks = ctx;
	void **slot = u64map_slot(&ks->threads, c->tid);
	struct ks_thread *t = *slot;
	struct ks_walk *w;
	size_t i;

	if (!t)
		t = *slot = xcalloc(1, sizeof(*t));
	ALLOC_GROW(t->v, t->nr + 1, t->alloc);
	for (i = t->nr; i > 0 && t->v[i - 1].time > c->time; i--)
		t->v[i] = t->v[i - 1];
	w = &t->v[i];
	w->time = c->time;
	w->n = c->n;
	w->why = c->why & 0xff;
	w->scans = c->why >> 16;
	w->first = (c->why >> 8) & 0xff;
	w->whole = c->whole;
	w->fid = c->fid;
	w->pid = c->pid;
	w->ip = xmalloc(c->n ? c->n * 8 : 1);
	memcpy(w->ip, c->ip, 8 * (size_t)c->n);	/* (| KUNW_SCANNED) */
	t->nr++;
	ks->st.walks++;
	ks->st.kring_bytes += KUNW_HEAD + 8 * ((uint64_t)c->n + c->nk);
}

/* Are the walk's first n frames these? */
static int same_frames(const struct ks_walk *w, const uint64_t *ips, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((w->ip[i] & ~KUNW_SCANNED) != ips[i])
			return 0;
	return 1;
}

size_t kstack_compare(struct kstack *ks, uint32_t tid, uint64_t time, const uint64_t *ips,
		      size_t n, int complete, int past_copy, uint64_t *kips, unsigned *kflags,
		      size_t max)
{
	struct ks_thread *t;
	struct ks_walk *w = NULL;
	size_t k, got = 0;
	int same;

	if (!ks || ks->mode != PYBPF_NATIVE_BESIDE)
		return 0;
	pybpf_native_drain(ks->pb, got_walk, ks);
	t = u64map_get(&ks->threads, tid);
	ks->st.samples++;
	/* the walk closest to the sample: the program runs as the sample is taken, and
	 * the sample's time is read a little before or after (k: the first after it) */
	if (t) {
		size_t lo = 0, hi = t->nr;

		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (t->v[mid].time <= time)
				lo = mid + 1;
			else
				hi = mid;
		}
		k = lo;
	} else {
		k = 0;
	}
	if (k && time - t->v[k - 1].time <= KS_JOIN_NS)
		w = &t->v[k - 1];
	if (t && k < t->nr && t->v[k].time - time <= KS_JOIN_NS &&
	    (!w || t->v[k].time - time < time - w->time))
		w = &t->v[k++];
	if (!w) {
		ks->st.unmatched++;
		return 0;
	}
	ks->st.matched++;
	ks->st.frames += w->n;
	if (w->why == KW_NO_TAB)
		walk_wants(ks, w->pid, w->fid);
	same = w->n == n && same_frames(w, ips, n);
	if (past_copy && w->whole) {
		/* the kernel's walk has no copy's end: the outer frames, read */
		if (same)
			ks->st.past_same++;
		else
			ks->st.past_differ++;
	}
	if (same && w->whole == !!complete) {
		ks->st.same++;
	} else if (w->whole && !complete && n < w->n && same_frames(w, ips, n)) {
		ks->st.further++;
	} else if (!w->whole && w->n <= n && same_frames(w, ips, w->n)) {
		ks->st.stopped[w->why < KW_NR ? w->why : 0]++;
	} else {
		ks->st.differ++;
		if (getenv("DLPROF_KSTACK_DEBUG")) {
			fprintf(stderr, "kstack: tid %u why %u scans %u first %u n %u/%zu whole %u/%d:",
				tid, w->why, w->scans, w->first, w->n, n, w->whole, complete);
			for (size_t i = 0; i < (w->n > n ? w->n : n) && i < 64; i++)
				fprintf(stderr, " %llx/%llx", i < w->n ? (unsigned long long)w->ip[i] : 0ull,
					i < n ? (unsigned long long)ips[i] : 0ull);
			fputc('\n', stderr);
		}
	}
	/* the kernel's stack, where it reached the thread's root */
	if (kips && w->whole && w->n <= max) {
		for (size_t i = 0; i < w->n; i++) {
			kips[i] = w->ip[i] & ~KUNW_SCANNED;
			kflags[i] = w->ip[i] & KUNW_SCANNED ? FRAME_RECOVERED : 0;
		}
		got = w->n;
	}
	/* it is done, and so are the walks KS_KEEP_NS older than it: not those just
	 * before it, whose samples may come yet (the copy's walk defers a sample that met
	 * an address in no mapping until later mappings are read: two drains after later
	 * samples, whose match used to drop its walk) */
	k--;
	free(t->v[k].ip);
	memmove(t->v + k, t->v + k + 1, (t->nr - k - 1) * sizeof(*t->v));
	t->nr--;
	for (k = 0; k < t->nr && t->v[k].time + KS_KEEP_NS < time; k++)
		free(t->v[k].ip);
	ks->st.unmatched_walks += k;
	memmove(t->v, t->v + k, (t->nr - k) * sizeof(*t->v));
	t->nr -= k;
	return got;
}

/* The instead mode's walks, in the draining thread: each that replaced its sample to
 * fn; the others (their samples came with the copy) counted by why, a table asked for */
struct drain_ctx {
	struct kstack *ks;
	kstack_sample_fn *fn;
	void *ctx;
};

static void got_sample(void *arg, const struct kunw_chain *c)
{
	struct drain_ctx *d = arg;
	struct kstack *ks = d->ks;

	ks->st.walks++;
	ks->st.kring_bytes += KUNW_HEAD + 8 * ((uint64_t)c->n + c->nk);
	if (c->dropped) {
		ks->st.instead++;
		ks->st.frames += c->n;
		d->fn(d->ctx, c);
		return;
	}
	if (c->whole) {
		ks->st.kept++;	/* a switch-out's: it keeps its copy */
		return;
	}
	ks->st.stopped[(c->why & 0xff) < KW_NR ? c->why & 0xff : 0]++;
	if ((c->why & 0xff) == KW_NO_TAB)
		walk_wants(ks, c->pid, c->fid);
	if ((c->why & 0xff) == KW_NO_PROC || (c->why & 0xff) == KW_NO_MAP)
		ks->stopped_at = now_ns();
}

int kstack_behind(const struct kstack *ks)
{
	uint64_t now = now_ns();

	return ks && ks->mode == PYBPF_NATIVE_INSTEAD && now - ks->stopped_at < KS_BEHIND_NS &&
	       now - __atomic_load_n(&ks->mapped_at, __ATOMIC_RELAXED) < KS_MAPPING_NS;
}

void kstack_drain(struct kstack *ks, kstack_sample_fn *fn, void *ctx)
{
	struct drain_ctx d = { ks, fn, ctx };

	if (ks && ks->mode == PYBPF_NATIVE_INSTEAD)
		pybpf_native_drain(ks->pb, got_sample, &d);
}

int kstack_instead(const struct kstack *ks)
{
	return ks && ks->mode == PYBPF_NATIVE_INSTEAD;
}

void kstack_get_stats(struct kstack *ks, struct kstack_stats *st)
{
	*st = ks->st;
	pthread_mutex_lock(&ks->mu);
	st->tables = ks->tables;
	st->rows = ks->rows;
	st->table_bytes = ks->table_bytes;
	st->table_ns = ks->table_ns;
	/* (those the kernel did not take: made, counted as tables, then without) */
	st->table_failed = ks->table_failed + pybpf_native_tables_failed(ks->pb);
	st->tables_kept = ks->tables_kept;
	st->rules_cut = ks->rules_cut;
	st->table_cpu_ns = ks->table_cpu_ns;
	pthread_mutex_unlock(&ks->mu);
	st->dropped = pybpf_native_dropped(ks->pb);
}

void kstack_mark_walked(struct kstack *ks)
{
	for (size_t i = 0; i < ks->fids.cap; i++) {
		struct dso *d = (struct dso *)(uintptr_t)ks->fids.keys[i];
		uint32_t fid = (uint32_t)((uintptr_t)ks->fids.vals[i] - 1);

		if (ks->fids.used[i] && pybpf_native_walked(ks->pb, fid) > 0) {
			d->walked = 1;
			ks->walked[fid] = 1;
		}
	}
}
