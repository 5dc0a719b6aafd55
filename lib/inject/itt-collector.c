/* collector.c - libdlprof-itt.so, the ITT collector dlprof record loads into a workload.
 *
 * oneDNN (and other code built with ittnotify's static part) dlopens the library named
 * by INTEL_LIBITTNOTIFY64 when INTEL_ITTNOTIFY_GROUPS is set.  Exporting
 * __itt_api_version (and not __itt_api_init) selects the stub's "version 1" protocol:
 * it looks each API function up by name.  We provide the few that matter for task
 * labels; the stub keeps its no-op for the rest.
 *
 * Domains and string handles passed to __itt_task_begin usually belong to the stub
 * (created before the collector was consulted): they are only read, never written.
 * Their layouts (name first for string handles, flags first for domains) are mirrored
 * below for the handles we create ourselves.
 *
 * Events go to a per-thread buffer (no locks on the hot path) and are written to
 * $DLPROF_ITT_DIR/itt-PID.bin when a buffer fills, at the first event a quarter of a
 * second after the buffer's last write (a process record attaches to while it runs is
 * read as it is then), when a thread exits and at process exit, in the format of
 * include/itt-format.h.  No dependency on libdlprof.a.
 *
 * record also preloads this library, so that dnnl-hook.c's dnnl_primitive_execute()
 * sees each oneDNN primitive executed through libdnnl's C API; its executions go to
 * the same per-thread buffers (collector.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "itt-format.h"

#define EXPORT __attribute__((visibility("default")))
#define TBUF_EVENTS 8192
#define TBUF_EXECS 4096
#define NAME_CACHE 64
#define FLUSH_EVERY_NS 250000000ull

/* ittnotify's public types, as far as we touch them */
typedef struct itt_id { unsigned long long d1, d2, d3; } itt_id;

typedef struct itt_domain {
	volatile int flags;
	const char *nameA;
	void *nameW;
	int extra1;
	void *extra2;
	struct itt_domain *next;
} itt_domain;

typedef struct itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct itt_string_handle *next;
} itt_string_handle;

struct name_slot {
	const void *handle;
	uint32_t id;
};

struct tbuf {
	struct tbuf *next;
	uint32_t tid;
	uint32_t nr;
	int busy;			/* being flushed */
	uint32_t nr_ex;
	uint64_t flushed_at;		/* collector_now() of the last write (0: none yet) */
	struct name_slot cache[NAME_CACHE];
	struct itt_event ev[TBUF_EVENTS];
	struct itt_exec ex[TBUF_EXECS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static int out_failed;
static pid_t out_pid;
static struct tbuf *all_bufs;		/* every thread's buffer (atomic push) */
static pthread_key_t tbuf_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static __thread struct tbuf *my_buf;
static __thread int my_buf_failed;

/* names: id = index + 1 */
static char **names;
static size_t nr_names, alloc_names;

/* handles we created ourselves (the stub may ask us after it is initialized) */
static itt_domain *my_domains;
static itt_string_handle *my_strings;

uint64_t collector_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* Called with lock held. */
static int open_output(void)
{
	const char *dir;
	char path[PATH_MAX];
	struct itt_file_header h;

	if (out_fd >= 0 && out_pid == getpid())
		return 0;
	if (out_failed)
		return -1;
	dir = getenv("DLPROF_ITT_DIR");
	if (!dir || !*dir)
		goto fail;
	out_pid = getpid();
	if (snprintf(path, sizeof(path), "%s/itt-%d.bin", dir, (int)out_pid) >= (int)sizeof(path))
		goto fail;
	out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (out_fd < 0)
		goto fail;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, ITT_MAGIC, sizeof(h.magic));
	h.version = ITT_VERSION;
	h.pid = out_pid;
	if (write_all(out_fd, &h, sizeof(h)))
		goto fail;
	return 0;
fail:
	if (out_fd >= 0)
		close(out_fd);
	out_fd = -1;
	out_failed = 1;
	return -1;
}

/* One block of a thread's records (events or executions).  Called with lock held. */
static void write_thread_block(uint32_t kind, uint32_t tid, const void *v, uint32_t nr,
			       size_t size)
{
	struct itt_block_header bh;
	uint32_t hdr[2];
	size_t len = sizeof(bh) + sizeof(hdr) + nr * size;
	char *blk;

	if (open_output())
		return;
	/* one write per block keeps blocks whole under O_APPEND */
	blk = malloc(len);
	if (!blk)
		return;
	bh.kind = kind;
	bh.len = sizeof(hdr) + nr * size;
	hdr[0] = tid;
	hdr[1] = nr;
	memcpy(blk, &bh, sizeof(bh));
	memcpy(blk + sizeof(bh), hdr, sizeof(hdr));
	memcpy(blk + sizeof(bh) + sizeof(hdr), v, nr * size);
	write_all(out_fd, blk, len);
	free(blk);
}

static void flush_buf(struct tbuf *tb)
{
	uint32_t nr, nr_ex;

	if (__atomic_exchange_n(&tb->busy, 1, __ATOMIC_ACQUIRE))
		return;
	nr = __atomic_load_n(&tb->nr, __ATOMIC_ACQUIRE);
	nr_ex = __atomic_load_n(&tb->nr_ex, __ATOMIC_ACQUIRE);
	if (nr || nr_ex) {
		pthread_mutex_lock(&lock);
		if (nr)
			write_thread_block(ITT_BLOCK_EVENTS, tb->tid, tb->ev, nr,
					   sizeof(struct itt_event));
		if (nr_ex)
			write_thread_block(ITT_BLOCK_EXECS, tb->tid, tb->ex, nr_ex,
					   sizeof(struct itt_exec));
		pthread_mutex_unlock(&lock);
		__atomic_store_n(&tb->nr, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&tb->nr_ex, 0, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&tb->busy, 0, __ATOMIC_RELEASE);
}

/* a buffer last written FLUSH_EVERY_NS before now is written out */
static void flush_if_old(struct tbuf *tb, uint64_t now)
{
	if (!tb->flushed_at)
		tb->flushed_at = now;
	else if (now - tb->flushed_at >= FLUSH_EVERY_NS) {
		tb->flushed_at = now;
		flush_buf(tb);
	}
}

static void thread_gone(void *p)
{
	flush_buf(p);
	/* the buffer stays on all_bufs (empty) so the exit flush never sees freed memory */
}

static void at_fork_child(void)
{
	/* the child starts a file of its own; the parent's buffers are not ours */
	out_fd = -1;
	out_failed = 0;
	all_bufs = NULL;
	my_buf = NULL;
	nr_names = 0;
	pthread_mutex_init(&lock, NULL);
}

static void make_key(void)
{
	pthread_key_create(&tbuf_key, thread_gone);
	pthread_atfork(NULL, NULL, at_fork_child);
}

static struct tbuf *get_buf(void)
{
	struct tbuf *tb = my_buf;

	if (tb || my_buf_failed)
		return tb;
	pthread_once(&key_once, make_key);
	tb = calloc(1, sizeof(*tb));
	if (!tb) {
		my_buf_failed = 1;
		return NULL;
	}
	tb->tid = (uint32_t)syscall(SYS_gettid);
	tb->next = __atomic_load_n(&all_bufs, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&all_bufs, &tb->next, tb, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	pthread_setspecific(tbuf_key, tb);
	my_buf = tb;
	return tb;
}

/* The id of a task name; writes a name block the first time a string is seen. */
static uint32_t intern_name(const char *s)
{
	size_t i, len;
	uint32_t id = 0;

	if (!s)
		s = "(null)";
	len = strnlen(s, ITT_MAX_NAME);
	pthread_mutex_lock(&lock);
	for (i = 0; i < nr_names; i++)
		if (strlen(names[i]) == len && !memcmp(names[i], s, len)) {
			id = i + 1;
			goto out;
		}
	if (nr_names == alloc_names) {
		size_t na = alloc_names ? alloc_names * 2 : 64;
		char **nn = realloc(names, na * sizeof(*nn));

		if (!nn)
			goto out;
		names = nn;
		alloc_names = na;
	}
	names[nr_names] = strndup(s, len);
	if (!names[nr_names])
		goto out;
	id = ++nr_names;
	if (!open_output()) {
		struct itt_block_header bh = { ITT_BLOCK_NAME, (uint32_t)(4 + len) };
		char blk[sizeof(bh) + 4 + ITT_MAX_NAME];

		memcpy(blk, &bh, sizeof(bh));
		memcpy(blk + sizeof(bh), &id, 4);
		memcpy(blk + sizeof(bh) + 4, s, len);
		write_all(out_fd, blk, sizeof(bh) + 4 + len);
	}
out:
	pthread_mutex_unlock(&lock);
	return id;
}

static void add_event(struct tbuf *tb, uint32_t name)
{
	uint32_t nr;

	if (__atomic_load_n(&tb->busy, __ATOMIC_ACQUIRE))
		return;		/* being written out at exit: drop */
	nr = tb->nr;
	tb->ev[nr].time = collector_now();
	tb->ev[nr].name = name;
	tb->ev[nr].pad = 0;
	__atomic_store_n(&tb->nr, nr + 1, __ATOMIC_RELEASE);
	if (nr + 1 == TBUF_EVENTS)
		flush_buf(tb);
	else
		flush_if_old(tb, tb->ev[nr].time);
}

void collector_add_exec(uint64_t start, uint64_t end, uint32_t prim)
{
	struct tbuf *tb = get_buf();
	uint32_t nr;

	if (!tb || __atomic_load_n(&tb->busy, __ATOMIC_ACQUIRE))
		return;		/* no buffer, or being written out at exit: drop */
	nr = tb->nr_ex;
	tb->ex[nr] = (struct itt_exec){ .start = start, .end = end, .prim = prim };
	__atomic_store_n(&tb->nr_ex, nr + 1, __ATOMIC_RELEASE);
	if (nr + 1 == TBUF_EXECS)
		flush_buf(tb);
	else
		flush_if_old(tb, end);
}

int collector_write_block(uint32_t kind, uint32_t id, const void *data, size_t len)
{
	struct itt_block_header bh = { kind, (uint32_t)(4 + len) };
	char *blk = malloc(sizeof(bh) + 4 + len);
	int ret = -1;

	if (!blk)
		return -1;
	memcpy(blk, &bh, sizeof(bh));
	memcpy(blk + sizeof(bh), &id, 4);
	memcpy(blk + sizeof(bh) + 4, data, len);
	pthread_mutex_lock(&lock);
	if (!open_output())
		ret = write_all(out_fd, blk, sizeof(bh) + 4 + len);
	pthread_mutex_unlock(&lock);
	free(blk);
	return ret;
}

EXPORT const char *__itt_api_version(void);
EXPORT const char *__itt_api_version(void)
{
	return "dlprof-itt 1";
}

EXPORT itt_domain *__itt_domain_create(const char *name);
EXPORT itt_domain *__itt_domain_create(const char *name)
{
	itt_domain *d;

	if (!name)
		return NULL;
	pthread_mutex_lock(&lock);
	for (d = my_domains; d; d = d->next)
		if (!strcmp(d->nameA, name))
			break;
	if (!d && (d = calloc(1, sizeof(*d)))) {
		d->nameA = strdup(name);
		d->flags = 1;
		d->next = my_domains;
		my_domains = d;
	}
	pthread_mutex_unlock(&lock);
	return d;
}

EXPORT itt_string_handle *__itt_string_handle_create(const char *name);
EXPORT itt_string_handle *__itt_string_handle_create(const char *name)
{
	itt_string_handle *h;

	if (!name)
		return NULL;
	pthread_mutex_lock(&lock);
	for (h = my_strings; h; h = h->next)
		if (!strcmp(h->strA, name))
			break;
	if (!h && (h = calloc(1, sizeof(*h)))) {
		h->strA = strdup(name);
		h->next = my_strings;
		my_strings = h;
	}
	pthread_mutex_unlock(&lock);
	return h;
}

EXPORT void __itt_task_begin(const itt_domain *domain, itt_id taskid, itt_id parentid,
			     itt_string_handle *name);
EXPORT void __itt_task_begin(const itt_domain *domain, itt_id taskid, itt_id parentid,
			     itt_string_handle *name)
{
	struct tbuf *tb = get_buf();
	struct name_slot *slot;
	uint32_t id;

	(void)domain; (void)taskid; (void)parentid;
	if (!tb)
		return;
	slot = &tb->cache[((uintptr_t)name >> 4) % NAME_CACHE];
	if (slot->handle == name && slot->id) {
		id = slot->id;
	} else {
		id = intern_name(name ? name->strA : NULL);
		if (!id)
			return;
		slot->handle = name;
		slot->id = id;
	}
	add_event(tb, id);
}

EXPORT void __itt_task_end(const itt_domain *domain);
EXPORT void __itt_task_end(const itt_domain *domain)
{
	struct tbuf *tb = get_buf();

	(void)domain;
	if (tb)
		add_event(tb, ITT_END);
}

EXPORT void __itt_thread_set_name(const char *name);
EXPORT void __itt_thread_set_name(const char *name)
{
	(void)name;
}

__attribute__((destructor)) static void collector_fini(void)
{
	struct tbuf *tb;

	for (tb = __atomic_load_n(&all_bufs, __ATOMIC_ACQUIRE); tb; tb = tb->next)
		flush_buf(tb);
	pthread_mutex_lock(&lock);
	if (out_fd >= 0)
		close(out_fd);
	out_fd = -1;
	out_failed = 1;		/* late events from threads still running are dropped */
	pthread_mutex_unlock(&lock);
}
