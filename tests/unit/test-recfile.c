/* test-recfile.c - recording file writer/reader: round trip, truncation, bit flips, fuzz. */
#include "recfile.h"
#include "util.h"
#include "../../lib/file/recfile-priv.h"
#include "../xorshift.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static int failures, checks;
#define CHECK(c) do { checks++; if (!(c)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

static char dir[] = "/dev/shm/test-recfile.XXXXXX";

struct rec {
	uint32_t type;
	size_t len;
	unsigned char *data;
};

static struct rec *recs;
static size_t nr_recs;

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	return xorshift64(&rs);
}

static char *tmp(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

/* ---- what a read delivered, compared on the fly with recs[] */
struct got {
	size_t n;
	int mismatch;
};

static int cmp_cb(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct got *g = ctx;

	if (g->n >= nr_recs || recs[g->n].type != type || recs[g->n].len != len ||
	    (len && memcmp(recs[g->n].data, data, len)) || ((uintptr_t)data & 7))
		g->mismatch = 1;
	g->n++;
	return 0;
}

static void make_records(size_t n, size_t maxlen, int huge)
{
	size_t i, j;

	for (i = 0; i < nr_recs; i++)
		free(recs[i].data);
	free(recs);
	recs = xcalloc(n, sizeof(*recs));
	nr_recs = n;
	for (i = 0; i < n; i++) {
		recs[i].type = 1 + rnd() % (DLP_REC_MAX - 1);
		recs[i].len = rnd() % (maxlen + 1);
		if (huge && i % 97 == 50)
			recs[i].len = (1u << 20) + rnd() % (2u << 20);	/* larger than a chunk */
		recs[i].data = xmalloc(recs[i].len + 1);
		for (j = 0; j < recs[i].len; j++)	/* compressible, but not trivially */
			recs[i].data[j] = (rnd() % 4) ? (unsigned char)(j * 7 + i) : (unsigned char)rnd();
	}
}

static int write_file(const char *path, size_t chunk)
{
	struct recwriter *w = recwriter_open(path);
	size_t i;

	if (!w)
		return -1;
	if (chunk)
		recwriter_set_chunk_size(w, chunk);
	for (i = 0; i < nr_recs; i++) {
		int ret;

		if (i % 3 == 0)	/* exercise the two-piece form */
			ret = recwriter_add2(w, recs[i].type, recs[i].data, recs[i].len / 2,
					     recs[i].data + recs[i].len / 2,
					     recs[i].len - recs[i].len / 2);
		else
			ret = recwriter_add(w, recs[i].type, recs[i].data, recs[i].len);
		if (ret < 0) {
			recwriter_close(w);
			return -1;
		}
		if (i % 50 == 49 && recwriter_flush(w) < 0)
			return -1;
	}
	return recwriter_close(w);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	struct strbuf sb = STRBUF_INIT;

	if (strbuf_read_file(&sb, path, 0) < 0)
		return NULL;
	*len = sb.len;
	return (unsigned char *)sb.buf;
}

static void spit(const char *path, const void *p, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, p, len) != (ssize_t)len)
		perror(path);
	close(fd);
}

/* Offsets where chunks end and the records they hold, from the documented layout. */
struct cut {
	size_t end;
	size_t records;	/* records in all chunks up to end */
};

static size_t chunk_ends(const unsigned char *f, size_t len, struct cut *c, size_t max)
{
	size_t off = 16, n = 0, total = 0;

	while (off + 32 <= len && n < max) {
		uint32_t comp, nr;

		memcpy(&comp, f + off + 8, 4);
		memcpy(&nr, f + off + 16, 4);
		off += 32 + comp;
		total += nr;
		c[n].end = off;
		c[n].records = total;
		n++;
	}
	return n;
}

static int quiet_fd = -1;
static void quiet(int on)
{
	if (on) {
		int fd = open("/dev/null", O_WRONLY);

		fflush(stderr);
		quiet_fd = dup(2);
		dup2(fd, 2);
		close(fd);
	} else {
		fflush(stderr);
		dup2(quiet_fd, 2);
		close(quiet_fd);
	}
}

static void test_round_trip(void)
{
	char *p = tmp("rt.dlp");
	struct recfile_info info;
	struct got g = { 0, 0 };
	struct stat st;

	make_records(1200, 3000, 1);
	CHECK(write_file(p, 64 << 10) == 0);
	CHECK(recfile_read(p, cmp_cb, &g, &info) == 0);
	CHECK(g.n == nr_recs && !g.mismatch);
	CHECK(info.records == nr_recs && !info.truncated && info.chunks > 20);
	CHECK(info.version == DLP_FORMAT_VERSION);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);

	/* default chunk size */
	g.n = g.mismatch = 0;
	CHECK(write_file(p, 0) == 0);
	CHECK(recfile_read(p, cmp_cb, &g, &info) == 0);
	CHECK(g.n == nr_recs && !g.mismatch && !info.truncated);

	/* an empty recording is complete */
	make_records(0, 0, 0);
	CHECK(write_file(p, 0) == 0);
	g.n = g.mismatch = 0;
	CHECK(recfile_read(p, cmp_cb, &g, &info) == 0);
	CHECK(g.n == 0 && !info.truncated && info.chunks == 1);
	free(p);
}

static void test_mode(void)
{
	char *p = tmp("mode.dlp");
	struct recwriter *w;
	struct stat st;
	mode_t old = umask(0);
	int fd = open(p, O_WRONLY | O_CREAT, 0666);

	close(fd);
	chmod(p, 0666);
	w = recwriter_open(p);
	CHECK(w != NULL);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0600);
	CHECK(recwriter_close(w) == 0);
	umask(old);
	free(p);
}

static int cb_stop(void *ctx, uint32_t type, const void *data, size_t len)
{
	return ++*(int *)ctx == 5 ? 42 : 0;
}

static void test_callback_stop(void)
{
	char *p = tmp("stop.dlp");
	int n = 0;

	make_records(100, 100, 0);
	CHECK(write_file(p, 0) == 0);
	CHECK(recfile_read(p, cb_stop, &n, NULL) == 42 && n == 5);
	free(p);
}

static void test_truncation(void)
{
	char *p = tmp("trunc.dlp"), *q = tmp("trunc-cut.dlp");
	unsigned char *f;
	size_t len, off, nc, bad = 0, tested = 0;
	struct cut cuts[4096];

	make_records(200, 400, 0);
	CHECK(write_file(p, 4096) == 0);
	f = slurp(p, &len);
	nc = chunk_ends(f, len, cuts, ARRAY_SIZE(cuts));
	CHECK(nc > 10 && cuts[nc - 1].end == len && cuts[nc - 1].records == nr_recs);
	quiet(1);
	for (off = 0; off < len; off += (off < 200 ? 1 : 7)) {
		struct recfile_info info;
		struct got g = { 0, 0 };
		size_t i, expect = 0;
		int ret;

		for (i = 0; i < nc && cuts[i].end <= off; i++)
			expect = cuts[i].records;
		spit(q, f, off);
		ret = recfile_read(q, cmp_cb, &g, &info);
		tested++;
		if (off < 16) {
			bad += ret != -1;
			continue;
		}
		if (ret != 0 || !info.truncated || g.mismatch || g.n != expect ||
		    info.chunks != i) {
			if (bad++ < 5)
				fprintf(stderr, "cut at %zu: ret %d trunc %d got %zu want %zu\n",
					off, ret, info.truncated, g.n, expect);
		}
	}
	quiet(0);
	CHECK(bad == 0);
	CHECK(tested > 1000);
	free(f);
	free(p);
	free(q);
}

/* Flip one bit at many positions: an error or a clean truncation, never wrong data. */
static void test_bit_flips(void)
{
	char *p = tmp("flip.dlp"), *q = tmp("flip-bad.dlp");
	unsigned char *f;
	size_t len, pos, bad = 0, errors = 0, tested = 0;

	make_records(150, 300, 0);
	CHECK(write_file(p, 4096) == 0);
	f = slurp(p, &len);
	quiet(1);
	for (pos = 0; pos < len; pos += (pos < 400 ? 1 : 3)) {
		struct recfile_info info;
		struct got g = { 0, 0 };
		int ret;

		/* a flipped version that names another readable version with the same
		 * chunk flags (2 and 3) is not damage the reader can see */
		if (pos == 8 && (DLP_FORMAT_VERSION ^ (1u << (pos % 8))) >= 2 &&
		    (DLP_FORMAT_VERSION ^ (1u << (pos % 8))) <= DLP_FORMAT_VERSION)
			continue;
		f[pos] ^= 1u << (pos % 8);
		spit(q, f, len);
		f[pos] ^= 1u << (pos % 8);
		ret = recfile_read(q, cmp_cb, &g, &info);
		tested++;
		if (ret == -1)
			errors++;
		if (g.mismatch || (ret == 0 && !info.truncated) || (ret != 0 && ret != -1)) {
			if (bad++ < 5)
				fprintf(stderr, "flip at %zu: ret %d trunc %d mismatch %d\n",
					pos, ret, info.truncated, g.mismatch);
		}
	}
	quiet(0);
	CHECK(bad == 0);
	CHECK(errors == tested);
	free(f);
	free(p);
	free(q);
}

/* Random mutations for a bounded time: no crash, never wrong data. */
static void test_fuzz(double seconds)
{
	char *p = tmp("fuzz.dlp"), *q = tmp("fuzz-bad.dlp");
	unsigned char *f, *m;
	size_t len, iter = 0, bad = 0;
	uint64_t end = now_ns() + (uint64_t)(seconds * 1e9);

	make_records(200, 800, 0);
	CHECK(write_file(p, 2048) == 0);
	f = slurp(p, &len);
	m = xmalloc(len);
	quiet(1);
	while (now_ns() < end) {
		struct recfile_info info;
		struct got g = { 0, 0 };
		size_t mlen = len, k, nmut = 1 + rnd() % 4;
		int ret;

		memcpy(m, f, len);
		for (k = 0; k < nmut; k++) {
			size_t at = rnd() % len;

			switch (rnd() % 4) {
			case 0: m[at] = rnd(); break;
			case 1: m[at] ^= 1u << (rnd() % 8); break;
			case 2: memset(m + at, rnd() % 2 ? 0xff : 0, (len - at) < 8 ? len - at : 8); break;
			case 3: mlen = at; break;
			}
		}
		spit(q, m, mlen);
		ret = recfile_read(q, cmp_cb, &g, &info);
		if (g.mismatch || (ret == 0 && !info.truncated && memcmp(m, f, len)) ||
		    (ret != 0 && ret != -1))
			bad++;
		iter++;
	}
	quiet(0);
	CHECK(bad == 0);
	CHECK(iter > 100);
	fprintf(stderr, "# fuzz: %zu mutated files read\n", iter);
	free(m);
	free(f);
	free(p);
	free(q);
}

/* ---- split files: side-band and sample-class records in chunks of their own */
static int is_sample_class(const struct rec *r)
{
	uint32_t t;

	if (r->type == DLP_REC_STACK || r->type == DLP_REC_USAMPLE || r->type == DLP_REC_MEMALLOC ||
	    r->type == DLP_REC_USAMPLES)
		return 1;
	if (r->type != DLP_REC_PERF || r->len < 8)
		return 0;
	memcpy(&t, r->data, 4);
	return t != PERF_RECORD_MMAP && t != PERF_RECORD_MMAP2 && t != PERF_RECORD_COMM &&
	       t != PERF_RECORD_FORK && t != PERF_RECORD_EXIT;
}

struct classed {
	size_t n, want_next;
	int cls;		/* 0: side-band expected, 1: samples */
	int mismatch;
};

static int class_cb(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct classed *c = ctx;
	size_t i = c->want_next;

	while (i < nr_recs && is_sample_class(&recs[i]) != c->cls)
		i++;
	if (i >= nr_recs || recs[i].type != type || recs[i].len != len ||
	    (len && memcmp(recs[i].data, data, len)) || ((uintptr_t)data & 7))
		c->mismatch = 1;
	c->want_next = i + 1;
	c->n++;
	return 0;
}

static void make_perf_records(size_t n)
{
	static const uint32_t types[] = { PERF_RECORD_SAMPLE, PERF_RECORD_SAMPLE, PERF_RECORD_SAMPLE,
		PERF_RECORD_MMAP2, PERF_RECORD_COMM, PERF_RECORD_SWITCH, PERF_RECORD_LOST,
		PERF_RECORD_FORK, PERF_RECORD_EXIT, PERF_RECORD_MMAP, 200 };

	make_records(n, 600, 0);
	for (size_t i = 0; i < n; i++) {
		struct perf_event_header h;

		if (rnd() % 5 == 0 || recs[i].len < 8)	/* some non-perf records stay */
			continue;
		recs[i].type = DLP_REC_PERF;
		h.type = types[rnd() % ARRAY_SIZE(types)];
		h.misc = 0;
		h.size = (uint16_t)recs[i].len;
		memcpy(recs[i].data, &h, 8);
	}
}

static uint32_t chunk_flags_seen(const unsigned char *f, size_t len, int *unclassed)
{
	size_t off = 16;
	uint32_t seen = 0;

	*unclassed = 0;
	while (off + 32 <= len) {
		uint32_t flags, comp, raw;

		memcpy(&flags, f + off + 4, 4);
		memcpy(&comp, f + off + 8, 4);
		memcpy(&raw, f + off + 12, 4);
		seen |= flags;
		if (raw && !(flags & 6))
			(*unclassed)++;
		off += 32 + comp;
	}
	return seen;
}

/* bg: 0 inline, 1 background thread, 2 background with cap 0 (the adder compresses too) */
static void test_split(int bg)
{
	char *p = tmp("split.dlp");
	struct recwriter *w;
	struct recfile_info info;
	struct classed sb = { 0, 0, 0, 0 }, sm = { 0, 0, 1, 0 };
	struct got g = { 0, 0 };
	size_t nsample = 0, i, len;
	unsigned char *f;
	int unclassed;

	make_perf_records(3000);
	for (i = 0; i < nr_recs; i++)
		nsample += is_sample_class(&recs[i]);
	CHECK(nsample > 1000 && nsample < 2500);
	w = recwriter_open(p);
	recwriter_split_samples(w);
	recwriter_set_chunk_size(w, 16 << 10);
	if (bg)
		CHECK(recwriter_set_background(w, bg == 2 ? 0 : 64 << 20) == 0);
	for (i = 0; i < nr_recs; i++) {
		CHECK(recwriter_add(w, recs[i].type, recs[i].data, recs[i].len) == 0);
		if (i % 700 == 699)
			CHECK(recwriter_flush(w) == 0);
	}
	recwriter_sync(w);
	CHECK(recwriter_bytes(w) > 16);
	CHECK(recwriter_close(w) == 0);

	f = slurp(p, &len);
	CHECK(chunk_flags_seen(f, len, &unclassed) == 7 && unclassed == 0);
	free(f);

	/* side-band pass: side-band records in order, sample chunks stepped over */
	CHECK(recfile_read_flags(p, class_cb, &sb, &info, RECFILE_SKIP_SAMPLES) == 0);
	CHECK(!sb.mismatch && sb.n == nr_recs - nsample);
	CHECK(info.records == nr_recs && info.skipped_chunks > 3 && !info.truncated);
	CHECK(info.version == DLP_FORMAT_VERSION);
	/* sample pass */
	CHECK(recfile_read_flags(p, class_cb, &sm, &info, RECFILE_SKIP_SIDEBAND) == 0);
	CHECK(!sm.mismatch && sm.n == nsample && info.skipped_chunks > 3);
	/* a plain read delivers everything (each class in order) */
	CHECK(recfile_read(p, cmp_cb, &g, &info) == 0 && g.n == nr_recs && info.skipped_chunks == 0);

	/* not split: one stream in add order, no class flags */
	w = recwriter_open(p);
	recwriter_set_chunk_size(w, 16 << 10);
	for (i = 0; i < nr_recs; i++)
		recwriter_add(w, recs[i].type, recs[i].data, recs[i].len);
	CHECK(recwriter_close(w) == 0);
	f = slurp(p, &len);
	CHECK(chunk_flags_seen(f, len, &unclassed) == 1);
	free(f);
	g.n = g.mismatch = 0;
	CHECK(recfile_read_flags(p, cmp_cb, &g, &info, RECFILE_SKIP_SAMPLES) == 0);
	CHECK(g.n == nr_recs && !g.mismatch && info.skipped_chunks == 0);
	free(p);
}

/* Hand-made chunks with valid checksums but bad content. */
static void put_chunk(struct strbuf *sb, uint32_t seq, uint32_t flags, const void *raw,
		      size_t rawlen, uint32_t nr, int32_t raw_len_delta)
{
	unsigned char out[65536];
	uint32_t h[8];
	z_stream zs;

	memset(&zs, 0, sizeof(zs));
	deflateInit2(&zs, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = (Bytef *)raw;
	zs.avail_in = rawlen;
	zs.next_out = out;
	zs.avail_out = sizeof(out);
	deflate(&zs, Z_FINISH);
	h[0] = 0x4b434c44;
	h[1] = flags;
	h[2] = rawlen ? zs.total_out : 0;
	h[3] = rawlen + raw_len_delta;
	h[4] = nr;
	h[5] = crc32(0, out, h[2]);
	h[6] = seq;
	h[7] = crc32(0, (Bytef *)h, 28);
	deflateEnd(&zs);
	strbuf_add(sb, h, 32);
	strbuf_add(sb, out, h[2]);
}

static int read_crafted(const char *name, struct strbuf *sb, struct recfile_info *info)
{
	char *q = tmp(name);
	int ret;

	spit(q, sb->buf, sb->len);
	quiet(1);
	ret = recfile_read(q, cmp_cb, &(struct got){ 0, 0 }, info);
	quiet(0);
	free(q);
	return ret;
}

static void test_crafted(void)
{
	static const char fh[16] = { 'D', 'L', 'P', 'R', 'O', 'F', '\r', '\n', 1, 0, 0, 0 };
	uint32_t good[4] = { 1, 8, 0x11111111, 0x22222222 };
	uint32_t longrec[4] = { 1, 9, 0, 0 };		/* 9 bytes pad to 16: past the end */
	struct recfile_info info;
	struct strbuf sb = STRBUF_INIT;

	make_records(0, 0, 0);
	/* well formed: one record then an empty END chunk */
	free(recs);
	recs = xcalloc(1, sizeof(*recs));
	nr_recs = 1;
	recs[0].type = 1;
	recs[0].len = 8;
	recs[0].data = xmalloc(8);
	memcpy(recs[0].data, good + 2, 8);
	strbuf_add(&sb, fh, 16);
	put_chunk(&sb, 0, 0, good, 16, 1, 0);
	put_chunk(&sb, 1, 1, NULL, 0, 0, 0);
	CHECK(read_crafted("c0", &sb, &info) == 0 && !info.truncated && info.records == 1);

	strbuf_reset(&sb);
	strbuf_add(&sb, fh, 16);
	put_chunk(&sb, 0, 1, longrec, 16, 1, 0);
	CHECK(read_crafted("c1", &sb, &info) == -1);

	strbuf_reset(&sb);	/* record count mismatch */
	strbuf_add(&sb, fh, 16);
	put_chunk(&sb, 0, 1, good, 16, 2, 0);
	CHECK(read_crafted("c2", &sb, &info) == -1);

	strbuf_reset(&sb);	/* declared raw length differs from the inflated one */
	strbuf_add(&sb, fh, 16);
	put_chunk(&sb, 0, 1, good, 16, 1, 8);
	CHECK(read_crafted("c3", &sb, &info) == -1);

	strbuf_reset(&sb);	/* out of sequence */
	strbuf_add(&sb, fh, 16);
	put_chunk(&sb, 1, 1, good, 16, 1, 0);
	CHECK(read_crafted("c4", &sb, &info) == -1);

	strbuf_reset(&sb);	/* garbage after the end marker */
	strbuf_add(&sb, fh, 16);
	put_chunk(&sb, 0, 1, good, 16, 1, 0);
	strbuf_add(&sb, "junk", 4);
	CHECK(read_crafted("c5", &sb, &info) == -1);

	strbuf_reset(&sb);	/* newer version */
	strbuf_add(&sb, fh, 16);
	sb.buf[8] = DLP_FORMAT_VERSION + 1;
	put_chunk(&sb, 0, 1, good, 16, 1, 0);
	CHECK(read_crafted("c6", &sb, &info) == -1);

	strbuf_reset(&sb);	/* wrong magic */
	strbuf_add(&sb, "PERFILE2", 8);
	strbuf_add(&sb, fh + 8, 8);
	CHECK(read_crafted("c7", &sb, &info) == -1);

	strbuf_reset(&sb);	/* empty, short */
	CHECK(read_crafted("c8", &sb, &info) == -1);
	strbuf_add(&sb, fh, 10);
	CHECK(read_crafted("c9", &sb, &info) == -1);

	/* format 2: chunk class flags */
	strbuf_reset(&sb);	/* version 1 knows no class flag */
	strbuf_add(&sb, fh, 16);
	put_chunk(&sb, 0, 1 | 2, good, 16, 1, 0);
	CHECK(read_crafted("c11", &sb, &info) == -1);
	strbuf_reset(&sb);	/* version 2: one class flag is fine */
	strbuf_add(&sb, fh, 16);
	sb.buf[8] = 2;
	put_chunk(&sb, 0, 2, good, 16, 1, 0);
	put_chunk(&sb, 1, 1, NULL, 0, 0, 0);
	CHECK(read_crafted("c12", &sb, &info) == 0 && info.records == 1 && !info.truncated);
	strbuf_reset(&sb);	/* both classes */
	strbuf_add(&sb, fh, 16);
	sb.buf[8] = 2;
	put_chunk(&sb, 0, 1 | 2 | 4, good, 16, 1, 0);
	CHECK(read_crafted("c13", &sb, &info) == -1);
	strbuf_reset(&sb);	/* a class on an empty chunk */
	strbuf_add(&sb, fh, 16);
	sb.buf[8] = 2;
	put_chunk(&sb, 0, 1 | 4, NULL, 0, 0, 0);
	CHECK(read_crafted("c14", &sb, &info) == -1);
	strbuf_reset(&sb);	/* unknown flag in version 2 */
	strbuf_add(&sb, fh, 16);
	sb.buf[8] = 2;
	put_chunk(&sb, 0, 1 | 8, good, 16, 1, 0);
	CHECK(read_crafted("c15", &sb, &info) == -1);
	{
		/* a skipped chunk: header checked (bad header crc: error), data not inflated */
		char *q = tmp("c16");
		struct got g = { 0, 0 };

		strbuf_reset(&sb);
		strbuf_add(&sb, fh, 16);
		sb.buf[8] = 2;
		put_chunk(&sb, 0, 4, good, 16, 1, 0);
		sb.buf[16 + 32] ^= 0x55;	/* compressed data: crc now wrong */
		put_chunk(&sb, 1, 1, NULL, 0, 0, 0);
		spit(q, sb.buf, sb.len);
		quiet(1);
		CHECK(recfile_read_flags(q, cmp_cb, &g, &info, RECFILE_SKIP_SAMPLES) == 0 &&
		      g.n == 0 && info.skipped_chunks == 1 && info.chunks == 2);
		CHECK(recfile_read_flags(q, cmp_cb, &g, &info, RECFILE_SKIP_SIDEBAND) == -1);
		sb.buf[16 + 20] ^= 1;	/* data crc field: header crc now wrong */
		spit(q, sb.buf, sb.len);
		CHECK(recfile_read_flags(q, cmp_cb, &g, &info, RECFILE_SKIP_SAMPLES) == -1);
		quiet(0);
		free(q);
	}

	strbuf_reset(&sb);	/* header only: truncated, nothing delivered */
	strbuf_add(&sb, fh, 16);
	CHECK(read_crafted("c10", &sb, &info) == 0 && info.truncated && info.chunks == 0);
	strbuf_release(&sb);
}

/* A write error is reported once; later calls fail quietly. */
static void test_write_error(void)
{
	char *p = tmp("full.dlp");
	struct rlimit old, lim;
	struct recwriter *w;
	unsigned char buf[4096];
	int i, first_fail = -1;

	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 64 << 10;
	setrlimit(RLIMIT_FSIZE, &lim);
	w = recwriter_open(p);
	CHECK(w != NULL);
	for (i = 0; i < (int)sizeof(buf); i++)
		buf[i] = rnd();
	quiet(1);
	for (i = 0; i < 200; i++) {
		if (recwriter_add(w, 1, buf, sizeof(buf)) < 0 && first_fail < 0)
			first_fail = i;
		if (i % 8 == 7)
			recwriter_flush(w);
	}
	CHECK(recwriter_add(w, 1, buf, 8) < 0);
	CHECK(recwriter_close(w) < 0);
	quiet(0);
	setrlimit(RLIMIT_FSIZE, &old);
	CHECK(first_fail > 0);
	free(p);
}

int main(int argc, char **argv)
{
	double fuzz = argc > 1 ? atof(argv[1]) : 2.0;

	if (access("/dev/shm", W_OK))
		memcpy(dir, "/tmp/test-recfile.XXXXXX", sizeof("/tmp/test-recfile.XXXXXX"));
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	TAP_GROUP(failures, "round trip: every record back, in order, aligned", test_round_trip());
	TAP_GROUP(failures, "written mode 0600 whatever the umask or the old file", test_mode());
	TAP_GROUP(failures, "a callback's non-zero return stops the read", test_callback_stop());
	TAP_GROUP(failures, "a cut file reads its complete chunks, truncated", test_truncation());
	TAP_GROUP(failures, "a flipped bit: an error or a clean cut, never wrong data",
		  test_bit_flips());
	TAP_GROUP(failures, "crafted chunks are refused", test_crafted());
	TAP_GROUP(failures, "records split over chunks, written inline", test_split(0));
	TAP_GROUP(failures, "records split over chunks, a background writer", test_split(1));
	TAP_GROUP(failures, "records split over chunks, background, cap 0", test_split(2));
	TAP_GROUP(failures, "a write error is reported once", test_write_error());
	TAP_GROUP(failures, "random mutations: no crash, never wrong data", test_fuzz(fuzz));
	make_records(0, 0, 0);
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);

		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", dir);
		free(cmd);
	}
	printf("# %d checks, %d failed\n", checks, failures);
	return tap_done();
}
