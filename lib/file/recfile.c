/* recfile.c - write and read the chunked, compressed recording file (docs/FORMAT.md).
 *
 * Writer: records are appended to an in-memory chunk; when it reaches the target size
 * (or on flush/close) the chunk is deflated (raw deflate, level 1) and written with its
 * header in one write() loop, so a killed writer leaves at most one partial chunk.
 * With recwriter_split_samples() there are two pending chunks: side-band records go to
 * one (flagged SIDEBAND), sample-class perf records to the other (flagged SAMPLES), so a
 * reader's side-band pass skips the bulk of the file without inflating it.  Pending
 * side-band is always written before a sample chunk: a sample on disk never precedes the
 * mmap it needs, even in a file cut short by a kill.
 *
 * Reader: the file is mapped; every chunk header is checked (magic, header crc, sizes,
 * sequence), then the crc32 of the compressed bytes, then the inflated length, then every
 * record length, before any record of the chunk is delivered.  A chunk of the class the
 * caller skips (RECFILE_SKIP_*) has its header checked and is stepped over.
 */
#include "recfile.h"
#include "recfile-priv.h"
#include "util.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static const char file_magic[8] = { 'D', 'L', 'P', 'R', 'O', 'F', '\r', '\n' };
#define CHUNK_MAGIC		0x4b434c44u	/* "DLCK" little-endian */
#define CHUNK_F_END		(1u << 0)	/* last chunk: the recording is complete */
#define CHUNK_F_SIDEBAND	(1u << 1)	/* v2: only side-band records */
#define CHUNK_F_SAMPLES		(1u << 2)	/* v2: only sample-class perf records */
#define CHUNK_F_CLASS		(CHUNK_F_SIDEBAND | CHUNK_F_SAMPLES)
#define CHUNK_F_KNOWN_V1	CHUNK_F_END
#define CHUNK_F_KNOWN_V2	(CHUNK_F_END | CHUNK_F_CLASS)
#define CHUNK_MAX		(64u << 20)	/* cap on raw and compressed chunk size */
#define CHUNK_TARGET		(1u << 20)
#define REC_HDR			8
#ifndef ZLEVEL
#define ZLEVEL			1	/* measured: see docs/FORMAT.md */
#endif

struct file_header {
	char magic[8];
	uint32_t version;
	uint32_t flags;
};

struct chunk_header {
	uint32_t magic;
	uint32_t flags;
	uint32_t comp_len;
	uint32_t raw_len;
	uint32_t nr_records;
	uint32_t data_crc;	/* crc32 of the comp_len compressed bytes */
	uint32_t seq;		/* 0, 1, 2, ... */
	uint32_t hdr_crc;	/* crc32 of the 28 bytes above */
};

static inline size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* ---------------------------------------------------------------- writer */

/* A pending chunk. */
struct wbuf {
	unsigned char *raw;		/* pending records */
	size_t raw_len, raw_alloc;
	uint32_t raw_nr;
	uint32_t flags;			/* CHUNK_F_SIDEBAND / _SAMPLES when split, else 0 */
};

/*
 * A chunk handed to the background compressor.  Its state moves QUEUED -> RUNNING -> DONE
 * by atomic compare-and-swap, so the writer's thread and the worker can both take a
 * queued job and neither ever waits for the other; only the writer's thread touches the
 * FIFO, the free list and the file.
 */
enum job_state { JOB_QUEUED, JOB_RUNNING, JOB_DONE };

struct job {
	struct job *next;		/* FIFO / free list: the writer's thread only */
	unsigned char *raw;
	size_t raw_len, raw_alloc;
	uint32_t raw_nr, flags;
	unsigned char *out;		/* compressed bytes, after room for the header */
	size_t out_alloc, comp;
	int state;			/* enum job_state, accessed atomically */
	int failed;
};

#define BG_RING 256			/* jobs offered to the worker at once */

struct bg {
	pthread_t thread;
	sem_t work;			/* posted once per offered job, and to quit */
	/* single-producer (writer) single-consumer (worker) ring of job offers */
	struct job *ring[BG_RING];
	unsigned ring_head, ring_tail;	/* atomic: next to take / next to fill */
	struct job *head, *tail;	/* jobs not yet written, in file order */
	struct job *free_jobs;		/* recycled, buffers kept; state DONE */
	size_t cap;			/* raw bytes that may wait before the writer helps */
	z_stream zs;			/* the worker's */
	int quit;			/* atomic */
};

struct recwriter {
	int fd;
	char *path;
	struct wbuf main;		/* everything, or side-band only when split */
	struct wbuf smp;		/* sample-class records when split */
	int split;
	unsigned char *out;		/* chunk header + compressed bytes */
	size_t out_alloc;
	size_t target;
	z_stream zs;
	uint32_t seq;
	uint64_t bytes, records;
	int failed;
	struct bg *bg;			/* background compression, NULL: inline */
	int discard;			/* recwriter_open_discard(): no file */
	recwriter_tap_fn *tap;
	void *tap_ctx;
};

static int get_failed(struct recwriter *w)
{
	return __atomic_load_n(&w->failed, __ATOMIC_RELAXED);
}

static void set_failed(struct recwriter *w)
{
	__atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
}

/* 0 when all len bytes went out, else -1 with errno set, 0 for a short write (w->bytes
 * counts what went out) */
static int write_raw(struct recwriter *w, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(w->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!n)
				errno = 0;	/* a short write: no error of its own */
			return -1;
		}
		p += n;
		len -= n;
		w->bytes += n;
	}
	return 0;
}

static int write_failed(struct recwriter *w, int err)
{
	set_failed(w);
	return error("unable to write '%s': %s", w->path,
		     err ? strerror(err) : "short write");
}

static int write_all(struct recwriter *w, const void *buf, size_t len)
{
	if (get_failed(w))
		return -1;
	return write_raw(w, buf, len) < 0 ? write_failed(w, errno) : 0;
}

/*
 * Deflate len raw bytes into *out after room for a chunk header (growing it).  Returns
 * the compressed size, or (size_t)-1 when zlib fails or the result is too large.
 */
static size_t compress_raw(z_stream *zs, const unsigned char *raw, size_t len,
			   unsigned char **out, size_t *out_alloc)
{
	size_t need = sizeof(struct chunk_header) + (len ? deflateBound(zs, len) : 0);

	if (need > *out_alloc) {
		free(*out);
		*out_alloc = need;
		*out = xmalloc(need);
	}
	if (!len)
		return 0;
	deflateReset(zs);
	zs->next_in = (Bytef *)raw;
	zs->avail_in = len;
	zs->next_out = *out + sizeof(struct chunk_header);
	zs->avail_out = *out_alloc - sizeof(struct chunk_header);
	if (deflate(zs, Z_FINISH) != Z_STREAM_END || zs->total_out > CHUNK_MAX)
		return (size_t)-1;
	return zs->total_out;
}

/* Fill in the header in front of comp compressed bytes at out and write the chunk: 0, or
 * -1 with errno set (nothing said) */
static int emit_raw(struct recwriter *w, uint32_t flags, size_t raw_len, uint32_t nr,
		    unsigned char *out, size_t comp)
{
	struct chunk_header h;

	h.magic = CHUNK_MAGIC;
	h.flags = flags;
	h.comp_len = comp;
	h.raw_len = raw_len;
	h.nr_records = nr;
	h.data_crc = crc32(0, out + sizeof(h), comp);
	h.seq = w->seq++;
	h.hdr_crc = crc32(0, (const Bytef *)&h, offsetof(struct chunk_header, hdr_crc));
	memcpy(out, &h, sizeof(h));
	return write_raw(w, out, sizeof(h) + comp);
}

/* The file back to its last whole chunk, at offset start with next sequence number seq */
static int cut_back(struct recwriter *w, uint64_t start, uint32_t seq)
{
	if (ftruncate(w->fd, (off_t)start) < 0 || lseek(w->fd, (off_t)start, SEEK_SET) < 0)
		return -1;
	w->bytes = start;
	w->seq = seq;
	return 0;
}

/*
 * The records of a chunk that did not fit, written again as chunks of SALVAGE_RAW raw
 * bytes or so, as many as fit (the last one that fits with flags' CHUNK_F_END when all
 * do): a recording that fills its disk keeps what room there was, not only the chunks
 * before (1 MiB of records each: on a small disk none of the samples).  0 when all fit.
 */
#define SALVAGE_RAW	(16u << 10)

static int salvage(struct recwriter *w, uint32_t flags, const unsigned char *raw,
		   size_t raw_len)
{
	size_t off = 0;

	while (off < raw_len) {
		size_t end = off, comp;
		uint32_t nr = 0, piece_flags = flags & CHUNK_F_CLASS;
		uint64_t start = w->bytes;
		uint32_t seq = w->seq;

		while (end < raw_len && (end == off || end - off < SALVAGE_RAW)) {
			uint32_t hdr[2];

			memcpy(hdr, raw + end, REC_HDR);
			end += REC_HDR + pad8(hdr[1]);
			nr++;
		}
		if (end >= raw_len)
			piece_flags = flags;	/* the last: the end marker where it had one */
		comp = compress_raw(&w->zs, raw + off, end - off, &w->out, &w->out_alloc);
		if (comp == (size_t)-1)
			return -1;
		if (emit_raw(w, piece_flags, end - off, nr, w->out, comp) < 0) {
			cut_back(w, start, seq);
			return -1;
		}
		off = end;
	}
	return 0;
}

/* Write a chunk (its records raw, compressed at out); where the disk fills, what fits of
 * it (salvage()); said once, and no more written */
static int emit_chunk(struct recwriter *w, uint32_t flags, const unsigned char *raw,
		      size_t raw_len, uint32_t nr, unsigned char *out, size_t comp)
{
	uint64_t start = w->bytes;
	uint32_t seq = w->seq;
	struct stat st;
	int err;

	if (get_failed(w))
		return -1;
	if (!emit_raw(w, flags, raw_len, nr, out, comp))
		return 0;
	/* a file ends at its last whole chunk; a full one takes what fits of this one */
	err = errno;
	if (!fstat(w->fd, &st) && S_ISREG(st.st_mode) && !cut_back(w, start, seq) &&
	    (err == ENOSPC || err == EDQUOT || err == EFBIG) && raw_len > SALVAGE_RAW &&
	    !salvage(w, flags, raw, raw_len))
		return 0;	/* (all of it fit after all) */
	return write_failed(w, err);
}

/* ---- background compression ----
 *
 * In dwarf mode the writer deflates ~50 MB/s of stack copies; inline, that CPU is taken
 * from the profiled workload's cores.  With recwriter_set_background() a worker thread
 * at idle priority (SCHED_IDLE) compresses queued chunks in the time the workload leaves
 * free.  The writer's thread (record's drain loop) must never wait for that worker: an
 * idle-priority thread can stay off the CPU for hundreds of milliseconds while the
 * workload runs, and a drain loop blocked behind it (on a lock it holds, say) lets the
 * ring buffers overflow.  So there is no lock: jobs change state by compare-and-swap,
 * offers go through a single-producer single-consumer ring, and only the writer's thread
 * writes the file, emitting finished jobs in queue order.  When more than `cap` raw bytes
 * wait, the writer's thread compresses queued jobs itself, which bounds memory and what
 * a SIGKILL can lose.
 */
static int job_state(struct job *j)
{
	return __atomic_load_n(&j->state, __ATOMIC_ACQUIRE);
}

/* Take a queued job (QUEUED -> RUNNING); 0 when someone else has it or it is done. */
static int job_claim(struct job *j)
{
	int expect = JOB_QUEUED;

	return __atomic_compare_exchange_n(&j->state, &expect, JOB_RUNNING, 0,
					   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

static void job_compress(struct job *j, z_stream *zs)
{
	j->comp = compress_raw(zs, j->raw, j->raw_len, &j->out, &j->out_alloc);
	j->failed = j->comp == (size_t)-1;
	__atomic_store_n(&j->state, JOB_DONE, __ATOMIC_RELEASE);
}

/* Writer's thread: offer j to the worker; 0 when the ring is full (j stays queued). */
static int ring_push(struct bg *bg, struct job *j)
{
	unsigned tail = bg->ring_tail;
	unsigned head = __atomic_load_n(&bg->ring_head, __ATOMIC_ACQUIRE);

	if (tail - head >= BG_RING)
		return 0;
	bg->ring[tail % BG_RING] = j;
	__atomic_store_n(&bg->ring_tail, tail + 1, __ATOMIC_RELEASE);
	return 1;
}

/* Worker: the next offer, or NULL. */
static struct job *ring_pop(struct bg *bg)
{
	unsigned head = bg->ring_head;
	unsigned tail = __atomic_load_n(&bg->ring_tail, __ATOMIC_ACQUIRE);
	struct job *j;

	if (head == tail)
		return NULL;
	j = bg->ring[head % BG_RING];
	__atomic_store_n(&bg->ring_head, head + 1, __ATOMIC_RELEASE);
	return j;
}

static void *bg_main(void *arg)
{
	struct recwriter *w = arg;
	struct bg *bg = w->bg;
	struct sched_param sp = { 0 };
	struct job *j;

	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp))
		setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
	for (;;) {
		while (sem_wait(&bg->work) < 0 && errno == EINTR)
			;
		/*
		 * An offer may name a job the writer compressed itself, wrote and reused for
		 * a later chunk: the claim fails unless the job is queued, and a queued job
		 * is always one that still waits to be compressed, so either way is right.
		 */
		while ((j = ring_pop(bg)))
			if (job_claim(j))
				job_compress(j, &bg->zs);
		if (__atomic_load_n(&bg->quit, __ATOMIC_ACQUIRE))
			break;
	}
	return NULL;
}

/* Writer's thread: write every finished job at the head of the FIFO, in order. */
static void bg_write_done(struct recwriter *w)
{
	struct bg *bg = w->bg;

	while (bg->head && job_state(bg->head) == JOB_DONE) {
		struct job *j = bg->head;

		if (j->failed) {
			if (!get_failed(w))
				error("unable to compress a chunk of '%s'", w->path);
			set_failed(w);
		} else if (!get_failed(w)) {
			emit_chunk(w, j->flags, j->raw, j->raw_len, j->raw_nr, j->out, j->comp);
		}
		bg->head = j->next;
		if (!bg->head)
			bg->tail = NULL;
		j->next = bg->free_jobs;
		bg->free_jobs = j;
	}
}

/* Raw bytes of the jobs nobody has started on. */
static size_t bg_backlog(struct bg *bg)
{
	size_t n = 0;

	for (struct job *j = bg->head; j; j = j->next)
		if (job_state(j) == JOB_QUEUED)
			n += j->raw_len;
	return n;
}

/* Writer's thread: compress the oldest queued job itself.  0: none was queued. */
static int bg_help_one(struct recwriter *w)
{
	for (struct job *j = w->bg->head; j; j = j->next)
		if (job_claim(j)) {
			job_compress(j, &w->zs);
			return 1;
		}
	return 0;
}

/* Queue b (its buffer moves to the job) with flags; help when the backlog is over cap. */
static int bg_submit(struct recwriter *w, struct wbuf *b, uint32_t flags)
{
	struct bg *bg = w->bg;
	struct job *j;

	j = bg->free_jobs;
	if (j) {
		bg->free_jobs = j->next;
	} else {
		j = xcalloc(1, sizeof(*j));
		j->state = JOB_DONE;	/* not claimable until filled in */
	}
	/* swap buffers: the job takes the records, b gets the job's old buffer */
	{
		unsigned char *raw = j->raw;
		size_t alloc = j->raw_alloc;

		j->raw = b->raw;
		j->raw_alloc = b->raw_alloc;
		b->raw = raw;
		b->raw_alloc = alloc;
	}
	j->raw_len = b->raw_len;
	j->raw_nr = b->raw_nr;
	j->flags = flags | (b->raw_len ? b->flags : 0);	/* an empty chunk has no class */
	j->failed = 0;
	j->next = NULL;
	b->raw_len = 0;
	b->raw_nr = 0;
	if (bg->tail)
		bg->tail->next = j;
	else
		bg->head = j;
	bg->tail = j;
	__atomic_store_n(&j->state, JOB_QUEUED, __ATOMIC_RELEASE);	/* publish last */
	if (ring_push(bg, j))
		sem_post(&bg->work);
	while (bg_backlog(bg) > bg->cap && bg_help_one(w))
		;
	bg_write_done(w);
	return get_failed(w) ? -1 : 0;
}

/* Write every queued chunk (compressing what nobody has started on; waiting for the
 * worker's last job, which gets the CPU now that the caller is done with the workload). */
static void bg_sync(struct recwriter *w)
{
	struct bg *bg = w->bg;
	const struct timespec nap = { 0, 200 * 1000 };

	while (bg_help_one(w))
		;
	for (;;) {
		bg_write_done(w);
		if (!bg->head)
			break;
		nanosleep(&nap, NULL);
	}
}

static void bg_stop(struct recwriter *w)
{
	struct bg *bg = w->bg;

	if (!bg)
		return;
	bg_sync(w);
	__atomic_store_n(&bg->quit, 1, __ATOMIC_RELEASE);
	sem_post(&bg->work);
	pthread_join(bg->thread, NULL);
	while (bg->free_jobs) {
		struct job *j = bg->free_jobs;

		bg->free_jobs = j->next;
		free(j->raw);
		free(j->out);
		free(j);
	}
	deflateEnd(&bg->zs);
	sem_destroy(&bg->work);
	free(bg);
	w->bg = NULL;
}

int recwriter_set_background(struct recwriter *w, size_t cap)
{
	struct bg *bg;
	int ret;

	if (w->bg || w->discard)
		return 0;
	bg = xcalloc(1, sizeof(*bg));
	bg->cap = cap;
	if (deflateInit2(&bg->zs, ZLEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(bg);
		return error("unable to initialize zlib");
	}
	sem_init(&bg->work, 0, 0);
	w->bg = bg;
	ret = thread_start_quiet(&bg->thread, bg_main, w);
	if (ret) {
		deflateEnd(&bg->zs);
		sem_destroy(&bg->work);
		free(bg);
		w->bg = NULL;
		return 0;	/* inline compression works all the same */
	}
	return 0;
}

void recwriter_sync(struct recwriter *w)
{
	if (w->bg)
		bg_sync(w);
}

static int write_chunk(struct recwriter *w, struct wbuf *b, uint32_t flags)
{
	size_t comp;
	int ret;

	if (get_failed(w))
		return -1;
	if (w->bg)
		return bg_submit(w, b, flags);
	comp = compress_raw(&w->zs, b->raw, b->raw_len, &w->out, &w->out_alloc);
	if (comp == (size_t)-1) {
		set_failed(w);
		return error("unable to compress a chunk of '%s'", w->path);
	}
	if (b->raw_len)
		flags |= b->flags;	/* an empty chunk belongs to no class */
	ret = emit_chunk(w, flags, b->raw, b->raw_len, b->raw_nr, w->out, comp);
	b->raw_len = 0;
	b->raw_nr = 0;
	return ret;
}

/* Write out a full (or flushed) buffer; side-band first, so samples never precede it. */
static int write_buf(struct recwriter *w, struct wbuf *b)
{
	if (b == &w->smp && w->main.raw_len && write_chunk(w, &w->main, 0) < 0)
		return -1;
	return write_chunk(w, b, 0);
}

struct recwriter *recwriter_open(const char *path)
{
	struct recwriter *w;
	struct file_header fh;
	struct stat st;
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		error("unable to create '%s': %s", path, strerror(errno));
		return NULL;
	}
	/* an existing file keeps its mode through O_CREAT: make it private too; but never
	 * touch a device or fifo (-o /dev/null as root must leave /dev/null alone) */
	if (!fstat(fd, &st) && S_ISREG(st.st_mode) && fchmod(fd, 0600) < 0) {
		error("unable to set the mode of '%s': %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	w = xcalloc(1, sizeof(*w));
	w->fd = fd;
	w->path = xstrdup(path);
	w->target = CHUNK_TARGET;
	if (deflateInit2(&w->zs, ZLEVEL, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		error("unable to initialize zlib");
		close(fd);
		free(w->path);
		free(w);
		return NULL;
	}
	memcpy(fh.magic, file_magic, sizeof(fh.magic));
	fh.version = DLP_FORMAT_VERSION;
	fh.flags = 0;
	if (write_all(w, &fh, sizeof(fh)) < 0) {
		deflateEnd(&w->zs);
		close(fd);
		free(w->path);
		free(w);
		return NULL;
	}
	return w;
}

struct recwriter *recwriter_open_discard(void)
{
	struct recwriter *w = xcalloc(1, sizeof(*w));

	w->fd = -1;
	w->path = xstrdup("(none)");
	w->discard = 1;
	return w;
}

void recwriter_set_tap(struct recwriter *w, recwriter_tap_fn *tap, void *ctx)
{
	w->tap = tap;
	w->tap_ctx = ctx;
}

void recwriter_set_level(struct recwriter *w, int level)
{
	if (level < 1 || level > 9 || w->discard)
		return;
	deflateParams(&w->zs, level, Z_DEFAULT_STRATEGY);
	if (w->bg)
		deflateParams(&w->bg->zs, level, Z_DEFAULT_STRATEGY);
}

void recwriter_split_samples(struct recwriter *w)
{
	if (w->split || w->main.raw_len || w->seq)
		return;	/* only before the first record */
	w->split = 1;
	w->main.flags = CHUNK_F_SIDEBAND;
	w->smp.flags = CHUNK_F_SAMPLES;
}

void recwriter_set_chunk_size(struct recwriter *w, size_t bytes)
{
	w->target = bytes < 64 ? 64 : bytes > CHUNK_MAX / 2 ? CHUNK_MAX / 2 : bytes;
}

int recwriter_add2(struct recwriter *w, uint32_t type, const void *a, size_t alen,
		   const void *b, size_t blen)
{
	size_t len = alen + blen, total;
	struct wbuf *buf = &w->main;
	uint32_t hdr[2];

	if (get_failed(w))
		return -1;
	if (len < alen || len > CHUNK_MAX / 2)
		return error("record of %zu bytes too large for '%s'", len, w->path);
	if (w->tap)
		w->tap(w->tap_ctx, type, a, alen, b, blen);
	if (w->discard) {
		w->records++;
		return 0;
	}
	if (w->split && dlp_rec_is_sample_class(type, a, alen))
		buf = &w->smp;
	total = REC_HDR + pad8(len);
	if (buf->raw_len && buf->raw_len + total > w->target && write_buf(w, buf) < 0)
		return -1;
	if (buf->raw_len + total > buf->raw_alloc) {
		size_t n = buf->raw_alloc ? buf->raw_alloc : w->target + w->target / 4;

		while (n < buf->raw_len + total)
			n *= 2;
		buf->raw = xrealloc(buf->raw, n);
		buf->raw_alloc = n;
	}
	hdr[0] = type;
	hdr[1] = len;
	memcpy(buf->raw + buf->raw_len, hdr, REC_HDR);
	if (alen)
		memcpy(buf->raw + buf->raw_len + REC_HDR, a, alen);
	if (blen)
		memcpy(buf->raw + buf->raw_len + REC_HDR + alen, b, blen);
	memset(buf->raw + buf->raw_len + REC_HDR + len, 0, total - REC_HDR - len);
	buf->raw_len += total;
	buf->raw_nr++;
	w->records++;
	if (buf->raw_len >= w->target)
		return write_buf(w, buf);
	return 0;
}

int recwriter_add(struct recwriter *w, uint32_t type, const void *data, size_t len)
{
	return recwriter_add2(w, type, data, len, NULL, 0);
}

int recwriter_flush(struct recwriter *w)
{
	if (get_failed(w))
		return -1;
	if (w->discard)
		return 0;
	if (w->main.raw_len && write_chunk(w, &w->main, 0) < 0)
		return -1;
	if (w->smp.raw_len && write_chunk(w, &w->smp, 0) < 0)
		return -1;
	return 0;
}

int recwriter_close(struct recwriter *w)
{
	int ret;

	if (!w)
		return -1;
	if (w->discard) {
		free(w->path);
		free(w);
		return 0;
	}
	/* samples, then the side-band (or an empty chunk) carrying the end marker */
	ret = w->smp.raw_len ? write_buf(w, &w->smp) : 0;
	if (!ret)
		ret = write_chunk(w, &w->main, CHUNK_F_END);
	bg_stop(w);
	if (close(w->fd) < 0 && !ret && !w->failed)
		ret = error("unable to close '%s': %s", w->path, strerror(errno));
	if (w->failed)
		ret = -1;
	deflateEnd(&w->zs);
	free(w->main.raw);
	free(w->smp.raw);
	free(w->out);
	free(w->path);
	free(w);
	return ret;
}

uint64_t recwriter_bytes(const struct recwriter *w)
{
	return w->bytes;
}

uint64_t recwriter_records(const struct recwriter *w)
{
	return w->records;
}

/* ---------------------------------------------------------------- reader */

struct reader {
	const char *path;
	const unsigned char *map;
	size_t size;
	unsigned char *raw;
	size_t raw_alloc;
	z_stream zs;
	size_t dropped;		/* the map's pages below this were given back */
};

/* The chunks before off are read: give their pages back (a 10M-sample file is 120 MB,
 * all of it resident by the end otherwise; a file mapping re-reads them if touched) */
static void drop_read(struct reader *r, size_t off)
{
	size_t psz = 4096, end = off & ~(psz - 1);

	if (end >= r->dropped + (8u << 20)) {
		madvise((void *)(r->map + r->dropped), end - r->dropped, MADV_DONTNEED);
		r->dropped = end;
	}
}

static int corrupt(struct reader *r, uint64_t chunk, size_t off, const char *what)
{
	return error("'%s': corrupt recording: chunk %llu at offset %zu: %s",
		     r->path, (unsigned long long)chunk, off, what);
}

static int inflate_chunk(struct reader *r, const struct chunk_header *h,
			 const unsigned char *data)
{
	int ret;

	if (h->raw_len > r->raw_alloc) {
		free(r->raw);
		r->raw_alloc = h->raw_len < CHUNK_TARGET * 2 ? CHUNK_TARGET * 2 : h->raw_len;
		r->raw = xmalloc(r->raw_alloc);
	}
	inflateReset(&r->zs);
	r->zs.next_in = (Bytef *)data;
	r->zs.avail_in = h->comp_len;
	r->zs.next_out = r->raw;
	r->zs.avail_out = h->raw_len;
	ret = inflate(&r->zs, Z_FINISH);
	if (ret != Z_STREAM_END || r->zs.avail_in || r->zs.total_out != h->raw_len)
		return -1;
	return 0;
}

/* Check that the inflated chunk is exactly nr well-formed records. */
static const char *check_records(const unsigned char *p, size_t len, uint32_t nr)
{
	size_t off = 0;
	uint32_t n = 0;

	while (off < len) {
		uint32_t hdr[2];

		if (len - off < REC_HDR)
			return "record header cut by the end of the chunk";
		memcpy(hdr, p + off, REC_HDR);
		if (hdr[1] > len - off - REC_HDR || pad8(hdr[1]) > len - off - REC_HDR)
			return "record length past the end of the chunk";
		off += REC_HDR + pad8(hdr[1]);
		n++;
	}
	if (n != nr)
		return "record count mismatch";
	return NULL;
}

/*
 * Progress on a terminal: a read that runs longer than a second shows, on standard
 * error, how far into the file it is, refreshed five times a second, and clears the line
 * at the end (each pass of a two-pass reader on its own).  The samples' pass is most of a report's time (unwinding, symbols), and
 * its share of the file is its share of the work.
 */
static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct progress {
	int on;
	uint64_t start, last, after;
	int shown;
};


static void progress_step(struct progress *p, const struct reader *r, size_t off, unsigned flags)
{
	uint64_t now;

	if (!p->on)
		return;
	now = mono_ms();
	if (now - p->start < p->after || now - p->last < 200)
		return;
	p->last = now;
	p->shown = 1;
	fprintf(stderr, "\rdlprof: reading %s: %s%3.0f%%\033[K", r->path,
		(flags & RECFILE_SKIP_SAMPLES) ? "side-band " : "",
		r->size ? 100.0 * off / r->size : 100.0);
}

static void progress_end(struct progress *p)
{
	if (p->shown)
		fputs("\r\033[K", stderr);
	p->shown = 0;
}

static int read_chunks_p(struct reader *r, recfile_cb *cb, void *ctx,
			 struct recfile_info *info, unsigned flags, struct progress *prog)
{
	size_t off = sizeof(struct file_header);
	uint32_t known = info->version >= 2 ? CHUNK_F_KNOWN_V2 : CHUNK_F_KNOWN_V1;
	uint32_t skip = ((flags & RECFILE_SKIP_SAMPLES) ? CHUNK_F_SAMPLES : 0) |
			((flags & RECFILE_SKIP_SIDEBAND) ? CHUNK_F_SIDEBAND : 0);
	uint64_t n = 0;

	for (;;) {
		struct chunk_header h;
		const unsigned char *data;
		const char *bad;
		size_t roff;

		if (r->size - off < sizeof(h))
			break;	/* truncated (or no end marker) */
		memcpy(&h, r->map + off, sizeof(h));
		if (h.magic != CHUNK_MAGIC)
			return corrupt(r, n, off, "bad chunk magic");
		if (h.hdr_crc != crc32(0, (const Bytef *)&h, offsetof(struct chunk_header, hdr_crc)))
			return corrupt(r, n, off, "header checksum mismatch");
		if (h.flags & ~known)
			return corrupt(r, n, off, "unknown chunk flags");
		if ((h.flags & CHUNK_F_CLASS) == CHUNK_F_CLASS ||
		    ((h.flags & CHUNK_F_CLASS) && !h.raw_len))
			return corrupt(r, n, off, "bad chunk class");
		if (h.seq != (uint32_t)n)
			return corrupt(r, n, off, "chunk out of sequence");
		if (h.comp_len > CHUNK_MAX || h.raw_len > CHUNK_MAX)
			return corrupt(r, n, off, "chunk too large");
		if (!h.raw_len != !h.comp_len || (!h.raw_len && h.nr_records))
			return corrupt(r, n, off, "inconsistent chunk lengths");
		if (h.comp_len > r->size - off - sizeof(h))
			break;	/* data cut short */
		data = r->map + off + sizeof(h);
		if (h.flags & skip) {
			/* the other pass checks and delivers it */
			info->records += h.nr_records;
			info->skipped_chunks++;
			goto next;
		}
		if (h.data_crc != crc32(0, data, h.comp_len))
			return corrupt(r, n, off, "checksum mismatch");
		if (h.raw_len) {
			if (inflate_chunk(r, &h, data) < 0)
				return corrupt(r, n, off, "bad compressed data");
			bad = check_records(r->raw, h.raw_len, h.nr_records);
			if (bad)
				return corrupt(r, n, off, bad);
		}
		for (roff = 0; roff < h.raw_len; ) {
			uint32_t hdr[2];
			int ret;

			memcpy(hdr, r->raw + roff, REC_HDR);
			ret = cb(ctx, hdr[0], r->raw + roff + REC_HDR, hdr[1]);
			if (ret)
				return ret;
			info->records++;
			roff += REC_HDR + pad8(hdr[1]);
		}
next:
		info->chunks++;
		n++;
		off += sizeof(h) + h.comp_len;
		drop_read(r, off);
		progress_step(prog, r, off, flags);
		if (h.flags & CHUNK_F_END) {
			if (off != r->size)
				return error("'%s': corrupt recording: %zu bytes after the end marker at offset %zu",
					     r->path, r->size - off, off);
			return 0;
		}
	}
	info->truncated = 1;
	info->ignored_bytes = r->size - off;
	if (!(flags & RECFILE_QUIET))
		warning("'%s' is truncated after %llu complete chunks (recording was interrupted?); showing what it holds",
			r->path, (unsigned long long)n);
	return 0;
}

static int read_chunks(struct reader *r, recfile_cb *cb, void *ctx,
		       struct recfile_info *info, unsigned flags)
{
	/* DLPROF_PROGRESS_AFTER_MS: when it starts (tests: 0) */
	const char *after = getenv("DLPROF_PROGRESS_AFTER_MS");
	struct progress prog = { isatty(STDERR_FILENO), mono_ms(), 0,
				 after ? strtoull(after, NULL, 10) : 1000, 0 };
	int ret = read_chunks_p(r, cb, ctx, info, flags, &prog);

	progress_end(&prog);
	return ret;
}

int recfile_read_flags(const char *path, recfile_cb *cb, void *ctx,
		       struct recfile_info *info, unsigned flags)
{
	struct recfile_info dummy;
	struct reader r;
	struct file_header fh;
	struct stat st;
	void *map;
	int fd, ret;

	if (!info)
		info = &dummy;
	memset(info, 0, sizeof(*info));
	memset(&r, 0, sizeof(r));
	r.path = path;
	/* O_NONBLOCK: a fifo must not block the open; it is refused below */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return error("unable to open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		ret = error("unable to stat '%s': %s", path, strerror(errno));
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return error("'%s' is not a regular file", path);
	}
	if (st.st_size == 0) {
		close(fd);
		return error("'%s' is empty, not a dlprof recording", path);
	}
	map = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return error("unable to map '%s': %s", path, strerror(errno));
	madvise(map, st.st_size, MADV_SEQUENTIAL);
	r.map = map;
	r.size = st.st_size;

	if (r.size < sizeof(fh)) {
		if (!memcmp(r.map, file_magic, r.size < sizeof(file_magic) ? r.size : sizeof(file_magic)))
			ret = error("'%s' is too short to be a dlprof recording (%zu bytes)", path, r.size);
		else
			ret = error("'%s' is not a dlprof recording", path);
		goto out_unmap;
	}
	memcpy(&fh, r.map, sizeof(fh));
	if (memcmp(fh.magic, file_magic, sizeof(file_magic))) {
		ret = error("'%s' is not a dlprof recording", path);
		goto out_unmap;
	}
	info->version = fh.version;
	if (fh.version > DLP_FORMAT_VERSION) {
		ret = error("'%s' has format version %u, newer than this dlprof reads (%u); upgrade dlprof",
			    path, fh.version, DLP_FORMAT_VERSION);
		goto out_unmap;
	}
	if (fh.version == 0 || fh.flags) {
		ret = error("'%s': corrupt recording: bad file header", path);
		goto out_unmap;
	}
	if (inflateInit2(&r.zs, -15) != Z_OK) {
		ret = error("unable to initialize zlib");
		goto out_unmap;
	}
	ret = read_chunks(&r, cb, ctx, info, flags);
	inflateEnd(&r.zs);
	free(r.raw);
out_unmap:
	munmap(map, st.st_size);
	return ret;
}

int recfile_read(const char *path, recfile_cb *cb, void *ctx, struct recfile_info *info)
{
	return recfile_read_flags(path, cb, ctx, info, 0);
}

int recfile_vdso_rec(struct strbuf *sb)
{
	const unsigned char *base = (const void *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const void *)base;
	struct dlp_file_rec h = { sizeof("[vdso]"), 0 };
	size_t size;

	if (!base || memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return -1;
	/* the image is the whole ELF file: its section headers come last */
	size = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	for (int i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const void *)(base + eh->e_phoff +
						      (size_t)i * eh->e_phentsize);

		if (ph->p_offset + ph->p_filesz > size)
			size = ph->p_offset + ph->p_filesz;
	}
	if (size > (1u << 20))
		return -1;
	strbuf_add(sb, &h, sizeof(h));
	strbuf_add(sb, "[vdso]", sizeof("[vdso]"));
	strbuf_add(sb, base, size);
	return 0;
}
