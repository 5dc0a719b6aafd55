/* test-session.c - hand-built perf records through recwriter and session_process. */
#include "session.h"
#include "util.h"
#include "../../lib/file/recfile-priv.h"
#include "tools/rec-build.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int failures, checks;
#define CHECK(c) do { checks++; if (!(c)) { failures++; \
	fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); } } while (0)

static const uint8_t bid[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
static const uint64_t chain1[5] = { PERF_CONTEXT_KERNEL, 0xffffffff81000010ull,
				    PERF_CONTEXT_USER, 0x401000, 0x401234 };
static const uint64_t regs1[3] = { 0x7ffd0100, 0x7ffd0000, 0x401111 };

struct log {
	int attrs, metas, mmaps, comms, forks, exits, samples, losts, others, stats_other;
	int sample_before_sideband;
	struct evsel attr;
	char meta[128];
	struct dlp_mmap mm;
	char mm_file[64];
	uint32_t comm_pid, comm_tid;
	char comm[32];
	int comm_exec;
	uint64_t comm_time;
	uint32_t fork[4], exit[4];
	uint64_t fork_time, exit_time;
	struct dlp_sample s[4];
	uint64_t s_chain[4][8];
	uint64_t s_regs[4][3];
	unsigned char s_stack[4][128];
	uint64_t lost_id, lost;
	uint32_t other_type;
	size_t other_len;
};

static int on_attr(void *ctx, const struct evsel *ev)
{
	struct log *l = ctx;

	l->attrs++;
	l->attr = *ev;
	return 0;
}

static int on_meta(void *ctx, const struct recmeta *m)
{
	struct log *l = ctx;

	for (size_t i = 0; i < m->nr; i++) {
		size_t n = strlen(l->meta);

		l->metas++;
		snprintf(l->meta + n, sizeof(l->meta) - n, "%s=%s;", m->pairs[i].key,
			 m->pairs[i].value);
	}
	if (m->cmdline && strcmp(m->cmdline, "python3 x.py"))
		l->metas = -1;	/* the field is the pair's value */
	return 0;
}

static int on_mmap(void *ctx, const struct dlp_mmap *m)
{
	struct log *l = ctx;

	l->mmaps++;
	l->mm = *m;
	snprintf(l->mm_file, sizeof(l->mm_file), "%s", m->filename);
	l->sample_before_sideband |= l->samples > 0;
	return 0;
}

static int on_comm(void *ctx, uint32_t pid, uint32_t tid, const char *comm, int exec, uint64_t time)
{
	struct log *l = ctx;

	l->comms++;
	l->comm_pid = pid;
	l->comm_tid = tid;
	snprintf(l->comm, sizeof(l->comm), "%s", comm);
	l->comm_exec = exec;
	l->comm_time = time;
	return 0;
}

static int on_fork(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time)
{
	struct log *l = ctx;

	l->forks++;
	l->fork[0] = pid, l->fork[1] = ppid, l->fork[2] = tid, l->fork[3] = ptid;
	l->fork_time = time;
	return 0;
}

static int on_exit_(void *ctx, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid, uint64_t time)
{
	struct log *l = ctx;

	l->exits++;
	l->exit[0] = pid, l->exit[1] = ppid, l->exit[2] = tid, l->exit[3] = ptid;
	l->exit_time = time;
	l->sample_before_sideband |= l->samples > 0;
	return 0;
}

static int on_sample(void *ctx, const struct dlp_sample *s)
{
	struct log *l = ctx;
	int i = l->samples++;

	if (i >= 4)
		return 0;
	l->s[i] = *s;
	if (s->nr_callchain <= 8)
		memcpy(l->s_chain[i], s->callchain, s->nr_callchain * 8);
	if (s->user_regs)
		memcpy(l->s_regs[i], s->user_regs, 3 * 8);
	if (s->stack_size <= 128)
		memcpy(l->s_stack[i], s->stack, s->stack_size);
	return 0;
}

static int on_lost(void *ctx, uint64_t id, uint64_t lost)
{
	struct log *l = ctx;

	l->losts++;
	l->lost_id = id;
	l->lost = lost;
	return 0;
}

static int on_other(void *ctx, uint32_t type, const void *data, size_t len)
{
	struct log *l = ctx;

	l->others++;
	if (type == DLP_REC_STATS)
		l->stats_other++;
	else {
		l->other_type = type;
		l->other_len = len;
	}
	return 0;
}

static const struct session_ops ops = {
	.attr = on_attr, .meta = on_meta, .mmap = on_mmap, .comm = on_comm, .fork = on_fork,
	.exit = on_exit_, .sample = on_sample, .lost = on_lost, .other = on_other,
};

static unsigned char stack1[100];

/* layouts written by write_recording() */
enum layout { SPLIT, MIXED, V1 };

static void set_version1(const char *path)
{
	int fd = open(path, O_WRONLY);
	uint32_t one = 1;

	if (fd < 0 || pwrite(fd, &one, 4, 8) != 4)
		perror(path);
	close(fd);
}

static int write_recording(const char *path, int close_it, enum layout lay)
{
	static const char meta[] = "cmdline\0python3 x.py\0host\0h1\0";
	uint64_t ids[2] = { 7, 8 };
	struct recwriter *w = recwriter_open(path);
	struct dlp_buildid_rec br;
	struct dlp_stats st;
	struct rb *b = xmalloc(sizeof(*b));
	size_t i;
	int ret;

	if (!w)
		return -1;
	if (lay == SPLIT)
		recwriter_split_samples(w);
	for (i = 0; i < sizeof(stack1); i++)
		stack1[i] = i * 3;
	rb_attr(w, "cpu-clock", RB_SAMPLE_TYPE, ids, 2);
	recwriter_add(w, DLP_REC_META, meta, sizeof(meta) - 1);
	memset(&br, 0, sizeof(br));
	br.pid = -1;
	br.size = 20;
	memcpy(br.id, bid, 20);
	recwriter_add2(w, DLP_REC_BUILDID, &br, sizeof(br), "/usr/bin/x", 11);
	rb_comm(w, 200, 200, "python3", 1, 5000, 7);

	/* sample 1: callchain only (no regs, no stack) */
	rb_sample(b, 8, 0x401000, 200, 201, 6000, 1, 1000123, chain1, 5, NULL, NULL, 0, 0);
	recwriter_add(w, DLP_REC_PERF, b->buf, b->n * 8);
	/* sample 2: regs and a 100-byte stack (record holds 104, dyn_size 100) */
	rb_sample(b, 7, 0x401111, 200, 200, 7000, 0, 999, chain1 + 2, 3, regs1, stack1, 100, 100);
	recwriter_add(w, DLP_REC_PERF, b->buf, b->n * 8);
	/* sample 3: callchain nr pointing past the end -> skipped, counted */
	rb_sample(b, 7, 0x401000, 200, 200, 7500, 0, 999, chain1, 5, NULL, NULL, 0, 0);
	b->buf[7] = 1000;
	recwriter_add(w, DLP_REC_PERF, b->buf, b->n * 8);
	/* sample 4: unknown id -> skipped, counted */
	rb_sample(b, 99, 0x401000, 200, 200, 7600, 0, 999, chain1, 5, NULL, NULL, 0, 0);
	recwriter_add(w, DLP_REC_PERF, b->buf, b->n * 8);

	/* side-band after the samples: delivered in pass 1 all the same */
	rb_mmap2(w, 200, 200, 0x400000, 0x2000, 0x1000, bid, 20, 5, 2, "/usr/bin/x", 5500, 7);
	rb_task(w, PERF_RECORD_FORK, 200, 200, 201, 200, 5800, 7);
	rb_lost(w, 8, 17, 7700);
	/* an unknown perf record type: skipped silently */
	rb_start(b, 200, 0);
	rb_u64(b, 1);
	rb_write(b, w);
	rb_task(w, PERF_RECORD_EXIT, 200, 200, 201, 200, 8000, 7);
	memset(&st, 0, sizeof(st));
	st.samples = 4;
	st.lost = 17;
	st.exit_status = 3;
	recwriter_add(w, DLP_REC_STATS, &st, sizeof(st));
	free(b);
	if (!close_it) {
		ret = recwriter_flush(w);	/* leaked on purpose: "killed" */
	} else {
		ret = recwriter_close(w);
	}
	if (lay == V1)	/* unsplit chunks are the version-1 layout */
		set_version1(path);
	return ret;
}

static void check_log(struct log *l, struct session_info *info)
{
	CHECK(l->attrs == 1 && !strcmp(l->attr.name, "cpu-clock") && l->attr.nr_ids == 2);
	CHECK(l->attr.attr.sample_type == RB_SAMPLE_TYPE && l->attr.attr.sample_regs_user == RB_REGS_MASK);
	CHECK(!strcmp(l->meta, "cmdline=python3 x.py;host=h1;"));
	CHECK(l->mmaps == 1 && l->mm.pid == 200 && l->mm.tid == 200 && l->mm.start == 0x400000 &&
	      l->mm.len == 0x2000 && l->mm.pgoff == 0x1000 && l->mm.time == 5500 &&
	      l->mm.prot == 5 && l->mm.flags == 2 && l->mm.build_id_size == 20 &&
	      !memcmp(l->mm.build_id, bid, 20) && !strcmp(l->mm_file, "/usr/bin/x") &&
	      (l->mm.misc & PERF_RECORD_MISC_MMAP_BUILD_ID));
	CHECK(l->comms == 1 && l->comm_pid == 200 && l->comm_tid == 200 && !strcmp(l->comm, "python3") &&
	      l->comm_exec == 1 && l->comm_time == 5000);
	CHECK(l->forks == 1 && l->fork[0] == 200 && l->fork[1] == 200 && l->fork[2] == 201 &&
	      l->fork[3] == 200 && l->fork_time == 5800);
	CHECK(l->exits == 1 && l->exit[2] == 201 && l->exit_time == 8000);
	CHECK(!l->sample_before_sideband);
	CHECK(l->samples == 2);
	CHECK(l->s[0].id == 8 && l->s[0].ip == 0x401000 && l->s[0].pid == 200 && l->s[0].tid == 201 &&
	      l->s[0].time == 6000 && l->s[0].cpu == 1 && l->s[0].period == 1000123 &&
	      l->s[0].cpumode == PERF_RECORD_MISC_USER && l->s[0].nr_callchain == 5 &&
	      !memcmp(l->s_chain[0], chain1, 5 * 8) && l->s[0].user_abi == 0 &&
	      l->s[0].user_regs == NULL && l->s[0].stack_size == 0);
	CHECK(l->s[0].evsel && !strcmp(l->s[0].evsel->name, "cpu-clock"));
	CHECK(l->s[1].id == 7 && l->s[1].tid == 200 && l->s[1].nr_callchain == 3 &&
	      !memcmp(l->s_chain[1], chain1 + 2, 3 * 8) && l->s[1].user_abi == PERF_SAMPLE_REGS_ABI_64 &&
	      l->s[1].user_regs_mask == RB_REGS_MASK && !memcmp(l->s_regs[1], regs1, 24) &&
	      l->s[1].stack_size == 100 && !memcmp(l->s_stack[1], stack1, 100));
	CHECK(l->losts == 1 && l->lost_id == 8 && l->lost == 17);
	CHECK(l->other_type == DLP_REC_BUILDID && l->other_len == sizeof(struct dlp_buildid_rec) + 11);
	CHECK(info->bad_records == 2);
	CHECK(info->first_time == 6000 && info->last_time == 7000);
}

static void test_process(const char *dir, enum layout lay)
{
	char *p = xasprintf("%s/s%d.dlp", dir, (int)lay);
	struct session_info info;
	struct log l;

	CHECK(write_recording(p, 1, lay) == 0);
	memset(&l, 0, sizeof(l));
	CHECK(session_process(p, &ops, &l, &info) == 0);
	check_log(&l, &info);
	CHECK(info.have_stats && info.stats.samples == 4 && info.stats.lost == 17 &&
	      info.stats.exit_status == 3 && l.stats_other == 1);
	CHECK(!info.file.truncated && info.file.records == 14);
	CHECK(info.file.version == (lay == V1 ? 1u : DLP_FORMAT_VERSION));
	/* split: side-band, samples, empty END chunk; pass 1 skips the samples */
	CHECK(lay == SPLIT ? info.file.chunks == 3 && info.file.skipped_chunks == 1
			   : info.file.chunks == 1 && info.file.skipped_chunks == 0);

	/* killed after a flush: what was flushed, truncated, return 1 */
	CHECK(write_recording(p, 0, lay) == 0);
	memset(&l, 0, sizeof(l));
	CHECK(session_process(p, &ops, &l, &info) == 1);
	check_log(&l, &info);
	CHECK(info.file.truncated);

	/* no ops at all */
	CHECK(session_process(p, NULL, NULL, NULL) == 1);
	free(p);
}

/*
 * A split recording cut at every byte: samples delivered never miss side-band added
 * before them (the writer puts pending side-band on disk before a sample chunk).
 */
struct cutlog {
	uint64_t mmaps, samples, bad;
};

static int cut_mmap(void *ctx, const struct dlp_mmap *m)
{
	struct cutlog *c = ctx;

	c->mmaps = c->mmaps > m->time ? c->mmaps : m->time;	/* the last mmap's number */
	return 0;
}

static int cut_sample(void *ctx, const struct dlp_sample *s)
{
	struct cutlog *c = ctx;

	c->samples++;
	if (s->time > c->mmaps)	/* sample N was added after mmap N */
		c->bad++;
	return 0;
}

static void test_split_cuts(const char *dir)
{
	static const struct session_ops cops = { .mmap = cut_mmap, .sample = cut_sample };
	char *p = xasprintf("%s/cut.dlp", dir), *q = xasprintf("%s/cut-part.dlp", dir);
	uint64_t ids[1] = { 7 };
	struct recwriter *w = recwriter_open(p);
	struct rb *b = xmalloc(sizeof(*b));
	struct strbuf sb = STRBUF_INIT;
	size_t off, tested = 0, bad = 0, max_samples = 0;
	int fd;

	recwriter_split_samples(w);
	recwriter_set_chunk_size(w, 2048);
	rb_attr(w, "cpu-clock", RB_SAMPLE_TYPE, ids, 1);
	for (uint64_t n = 1; n <= 300; n++) {
		char name[32];

		/* mmap N (time N), then samples of time N: a few per mmap */
		snprintf(name, sizeof(name), "/lib/l%llu.so", (unsigned long long)n);
		rb_mmap2(w, 200, 200, 0x400000 + n * 0x10000, 0x1000, 0, bid, 20, 5, 2, name, n, 7);
		for (int k = 0; k < 3; k++) {
			rb_sample(b, 7, 0x401000, 200, 200, n, 0, 1, chain1, 5, regs1, stack1, 96, 96);
			recwriter_add(w, DLP_REC_PERF, b->buf, b->n * 8);
		}
	}
	CHECK(recwriter_close(w) == 0);
	CHECK(strbuf_read_file(&sb, p, 0) >= 0 && sb.len > 16);
	fd = dup(2);
	for (off = 16; off <= sb.len; off += 37) {
		struct cutlog c = { 0, 0, 0 };
		int out = open(q, O_WRONLY | O_CREAT | O_TRUNC, 0600), ret;

		if (out < 0 || write(out, sb.buf, off) != (ssize_t)off)
			perror(q);
		close(out);
		out = open("/dev/null", O_WRONLY);
		dup2(out, 2);
		close(out);
		ret = session_process(q, &cops, &c, NULL);
		dup2(fd, 2);
		tested++;
		if (ret < 0 || c.bad)
			bad++;
		if (c.samples > max_samples)
			max_samples = c.samples;
	}
	close(fd);
	CHECK(tested > 100 && bad == 0 && max_samples == 900);
	strbuf_release(&sb);
	free(b);
	free(p);
	free(q);
}

/* session_parse_sample on random bytes: never a pointer outside the record. */
static void test_parse_fuzz(void)
{
	struct evsel ev;
	uint64_t *buf = xmalloc(4096);
	uint64_t x = 12345;
	int i, ok = 0, bad = 0;

	memset(&ev, 0, sizeof(ev));
	ev.attr.sample_type = RB_SAMPLE_TYPE;
	ev.attr.sample_regs_user = RB_REGS_MASK;
	for (i = 0; i < 200000; i++) {
		struct dlp_sample s;
		size_t words = 1 + (x >> 7) % 40, k, len;
		struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, 0 };
		const unsigned char *lo = (void *)buf, *hi;

		for (k = 0; k < words; k++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			buf[k] = (x % 3) ? x % 64 : x;	/* small counts often */
		}
		len = words * 8;
		h.size = len;
		memcpy(buf, &h, 8);
		hi = lo + len;
		if (session_parse_sample(&ev, buf, len, &s) < 0)
			continue;
		ok++;
		if ((s.callchain && ((const unsigned char *)(s.callchain + s.nr_callchain) > hi ||
				     (const unsigned char *)s.callchain < lo)) ||
		    (s.user_regs && (const unsigned char *)(s.user_regs + 3) > hi) ||
		    (s.stack && s.stack + s.stack_size > hi))
			bad++;
	}
	CHECK(bad == 0);
	CHECK(ok > 100);
	free(buf);
}

/* A stack whose dyn_size is smaller than the copy: stack_size = dyn_size. */
static void test_dyn_size(void)
{
	struct evsel ev;
	struct dlp_sample s;
	struct rb *b = xmalloc(sizeof(*b));

	memset(&ev, 0, sizeof(ev));
	ev.attr.sample_type = RB_SAMPLE_TYPE;
	ev.attr.sample_regs_user = RB_REGS_MASK;
	rb_sample(b, 1, 2, 3, 4, 5, 6, 7, chain1, 5, regs1, stack1, 96, 40);
	CHECK(session_parse_sample(&ev, b->buf, b->n * 8, &s) == 0 && s.stack_size == 40);
	CHECK(session_parse_sample(&ev, b->buf, b->n * 8 - 8, &s) == -1);	/* size mismatch */
	free(b);
}

int main(void)
{
	char dir[] = "/tmp/test-session.XXXXXX";
	char *cmd;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	TAP_GROUP(failures, "hand-built perf records back through session_process (samples split)",
		  test_process(dir, SPLIT));
	TAP_GROUP(failures, "hand-built perf records back through session_process (in one stream)",
		  test_process(dir, MIXED));
	TAP_GROUP(failures, "hand-built perf records back through session_process (version 1)",
		  test_process(dir, V1));
	TAP_GROUP(failures, "a recording with split samples, cut anywhere", test_split_cuts(dir));
	TAP_GROUP(failures, "session_parse_sample on random bytes stays in the record",
		  test_parse_fuzz());
	TAP_GROUP(failures, "a stack copy past its dyn_size is cut to it", test_dyn_size());
	cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
	free(cmd);
	printf("# %d checks, %d failed\n", checks, failures);
	return tap_done();
}
