/* test-itt.c - run dl-itt-user with the collector and check what lib/attribute/itt.c reads back;
 * feed the reader malformed files.  TAP output.  Run from the top of the tree (or set
 * BUILD to the build directory). */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "itt.h"
#include "util.h"

static int nr_tests, nr_failed;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	nr_tests++;
	if (!cond)
		nr_failed++;
	printf("%sok %d - ", cond ? "" : "not ", nr_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static size_t stderr_bytes;	/* what itt_data_add printed through quiet_add, in total */

/* itt_data_add with stderr caught: the reader must print nothing (its caller warns once) */
static int quiet_add(struct itt_data *d, const void *buf, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(2), ret;

	fflush(stderr);
	dup2(fileno(tmp), 2);
	ret = itt_data_add(d, buf, len);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	{
		off_t end = lseek(fileno(tmp), 0, SEEK_END);

		stderr_bytes += end > 0 ? (size_t)end : 0;
	}
	fclose(tmp);
	return ret;
}

/* A collector file by hand: name 1 "conv", thread 7 with two conv tasks, then one event
 * whose name is last_name (ITT_END: an unmatched end, ignored; 2: an id no name block
 * defines). */
static char *make_file(size_t *lenp, uint32_t last_name)
{
	struct itt_file_header h = { ITT_MAGIC, 1, 42 };	/* before primitive blocks */
	struct itt_block_header nb = { ITT_BLOCK_NAME, 8 }, eb = { ITT_BLOCK_EVENTS, 8 + 5 * 16 };
	struct itt_event ev[5] = {
		{ 1000, 1, 0 }, { 2000, ITT_END, 0 }, { 3000, 1, 0 }, { 4000, ITT_END, 0 },
		{ 5000, last_name, 0 },
	};
	uint32_t id = 1, tid = 7, nr = 5;
	char *buf = xmalloc(sizeof(h) + 8 + 8 + 8 + 8 + sizeof(ev)), *p = buf;

	memcpy(p, &h, sizeof(h)), p += sizeof(h);
	memcpy(p, &nb, 8), p += 8;
	memcpy(p, &id, 4), p += 4;
	memcpy(p, "conv", 4), p += 4;
	memcpy(p, &eb, 8), p += 8;
	memcpy(p, &tid, 4), p += 4;
	memcpy(p, &nr, 4), p += 4;
	memcpy(p, ev, sizeof(ev)), p += sizeof(ev);
	*lenp = p - buf;
	return buf;
}

/* One call of "conv" on thread 7 with its OpenMP worker's share on thread 8 inside it,
 * thread 8's own call later, and thread 9's call overlapping thread 7's end (not inside). */
static char *make_team_file(size_t *lenp)
{
	struct itt_file_header h = { ITT_MAGIC, ITT_VERSION, 42 };
	struct itt_block_header nb = { ITT_BLOCK_NAME, 8 };
	struct { uint32_t tid, nr; struct itt_event ev[4]; } blk[3] = {
		{ 7, 2, { { 1000, 1, 0 }, { 10000, ITT_END, 0 } } },
		{ 8, 4, { { 2000, 1, 0 }, { 9000, ITT_END, 0 }, { 20000, 1, 0 }, { 30000, ITT_END, 0 } } },
		{ 9, 2, { { 9500, 1, 0 }, { 12000, ITT_END, 0 } } },
	};
	uint32_t id = 1;
	char *buf = xmalloc(sizeof(h) + 16 + 3 * (16 + sizeof(blk[0].ev))), *p = buf;

	memcpy(p, &h, sizeof(h)), p += sizeof(h);
	memcpy(p, &nb, 8), p += 8;
	memcpy(p, &id, 4), p += 4;
	memcpy(p, "conv", 4), p += 4;
	for (int i = 0; i < 3; i++) {
		struct itt_block_header eb = { ITT_BLOCK_EVENTS, 8 + blk[i].nr * 16 };

		memcpy(p, &eb, 8), p += 8;
		memcpy(p, &blk[i].tid, 4), p += 4;
		memcpy(p, &blk[i].nr, 4), p += 4;
		memcpy(p, blk[i].ev, blk[i].nr * 16), p += blk[i].nr * 16;
	}
	*lenp = p - buf;
	return buf;
}

/* The team file (version 2) with primitive 1 "conv" executed by thread 7 around its
 * task (500..10500), thread 8's own call executing primitive 2 (19000..31000), and
 * blocks appended: extra (len bytes, e.g. a bad block) */
static char *make_prim_file(size_t *lenp, const void *extra, size_t extra_len)
{
	static const char d1[] = "kind=convolution\nimpl=ref:any\nprop=forward_inference\n"
		"shape=mb1_ic16oc16_ih14oh14kh3sh1dh0ph1_iw14ow14kw3sw1dw0pw1\n"
		"src=f32:aBcd16b:1x16x14x14\nwei=f32:abcd:16x16x3x3\ndst=f32:aBcd16b:1x16x14x14\nnew=ignored";
	static const char d2[] = "kind=convolution\nimpl=jit:avx2\nprop=backward_data\n"
		"diff_src=bf16:aBcd8b:2x32x28x28";
	size_t tlen, len;
	char *team = make_team_file(&tlen), *buf, *p;
	struct itt_exec ex7 = { 500, 10500, 1, 0 }, ex8 = { 19000, 31000, 2, 0 };
	uint32_t v = 2, one = 1, two = 2, tid7 = 7, tid8 = 8;

	len = tlen + 2 * 12 + sizeof(d1) - 1 + sizeof(d2) - 1 + 2 * (16 + sizeof(ex7)) + extra_len;
	buf = p = xmalloc(len);
	memcpy(p, team, tlen);
	memcpy(p + 8, &v, 4);
	p += tlen;
#define BLK(kind, a, alen, b, blen) do { struct itt_block_header bh = { kind, (uint32_t)((alen) + (blen)) }; \
	memcpy(p, &bh, 8); p += 8; memcpy(p, a, alen); p += alen; memcpy(p, b, blen); p += blen; } while (0)
	BLK(ITT_BLOCK_PRIM, &one, 4, d1, sizeof(d1) - 1);
	BLK(ITT_BLOCK_PRIM, &two, 4, d2, sizeof(d2) - 1);
	{
		uint32_t h7[2] = { tid7, 1 }, h8[2] = { tid8, 1 };

		BLK(ITT_BLOCK_EXECS, h7, 8, &ex7, sizeof(ex7));
		BLK(ITT_BLOCK_EXECS, h8, 8, &ex8, sizeof(ex8));
	}
#undef BLK
	memcpy(p, extra, extra_len);
	p += extra_len;
	free(team);
	*lenp = p - buf;
	return buf;
}

static void count_call(void *ctx, uint32_t pid, uint32_t tid, const struct itt_interval *iv)
{
	(*(uint64_t *)ctx) += tid * 1000000ull + (iv->end - iv->start);
	(void)pid;
}

int main(void)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char dir[] = "/tmp/test-itt.XXXXXX";
	char *cmd, *path, line[256];
	struct strbuf sb = STRBUF_INIT;
	struct itt_data *d;
	FILE *f;
	long tid_a = 0, tid_b = 0;
	int pid = 0, n;
	uint64_t calls, total, call_ns, sum = 0;
	const char *name;
	size_t i;
	int seen_conv = 0, seen_reorder = 0, seen_inner = 0;

	if (!mkdtemp(dir))
		return 1;
	cmd = xasprintf("INTEL_LIBITTNOTIFY64=%s/libdlprof-itt.so INTEL_ITTNOTIFY_GROUPS=all "
			"DLPROF_ITT_DIR=%s %s/tests/workloads/dl-itt-user", build, dir, build);
	f = popen(cmd, "r");
	ok(f != NULL, "run dl-itt-user");
	while (f && fgets(line, sizeof(line), f)) {
		long t;
		char what[64];

		if (sscanf(line, "%ld %63s %d", &t, what, &n) == 3) {
			if (!strcmp(what, "convolution"))
				tid_a = t;
			else if (!strcmp(what, "reorder"))
				tid_b = t;
		} else if (sscanf(line, "%ld %63s", &t, what) == 2 && !strcmp(what, "pid")) {
			pid = t;
		}
	}
	ok(f && pclose(f) == 0 && tid_a && tid_b && pid, "dl-itt-user ran (pid %d)", pid);

	path = xasprintf("%s/itt-%d.bin", dir, pid);
	ok(strbuf_read_file(&sb, path, 64 << 20) == 0, "collector wrote %s", path);
	d = itt_data_new();
	ok(itt_data_add(d, sb.buf, sb.len) == 0, "reader accepts the collector's file (%zu bytes)", sb.len);
	itt_data_finish(d);
	ok(itt_nr_intervals(d) == 200 + 100 + 100, "400 intervals (got %zu)", itt_nr_intervals(d));
	for (i = 0; (name = itt_name_stats(d, i, &calls, &total, NULL)); i++) {
		if (!strcmp(name, "convolution")) {
			seen_conv = calls == 200;
			/* 200 x 100 us = 20 ms of task time, allow scheduling noise */
			ok(total >= 19000000 && total < 200000000, "convolution total %.1f ms", total / 1e6);
		} else if (!strcmp(name, "reorder")) {
			seen_reorder = calls == 100;
		} else if (!strcmp(name, "inner")) {
			seen_inner = calls == 100;
		}
	}
	ok(seen_conv && seen_reorder && seen_inner, "task names and call counts from the stub's handles");

	/* lookup: find an interval of thread B and look in the middle of the nested one
	 * (only with the collector's file: sb is empty when it could not be read) */
	if (sb.len > sizeof(struct itt_file_header)) {
		const struct itt_interval *iv = NULL;

		/* times are absolute: take thread B's second event (begin of "inner") from
		 * the raw file */
		{
			const unsigned char *p = (const unsigned char *)sb.buf + sizeof(struct itt_file_header);
			const unsigned char *end = (const unsigned char *)sb.buf + sb.len;
			uint64_t first_b = 0;

			while (p + 8 <= end) {
				struct itt_block_header bh;
				uint32_t tid;

				memcpy(&bh, p, 8);
				if (bh.kind == ITT_BLOCK_EVENTS) {
					memcpy(&tid, p + 8, 4);
					if (tid == (uint32_t)tid_b) {
						struct itt_event ev[2];

						memcpy(ev, p + 16, sizeof(ev));
						first_b = ev[1].time;	/* begin of "inner" */
						break;
					}
				}
				p += 8 + bh.len;
			}
			iv = itt_lookup(d, pid, tid_b, first_b + 1000);
			ok(iv && !strcmp(iv->name, "inner") && iv->depth == 1,
			   "lookup inside the nested task gives the innermost one");
			iv = itt_lookup(d, pid, tid_b, first_b - 1000);
			ok(iv && !strcmp(iv->name, "reorder") && iv->depth == 0,
			   "lookup before the nested task gives the outer one");
			ok(itt_lookup(d, pid, tid_a, first_b) == NULL || !strcmp(itt_lookup(d, pid, tid_a, first_b)->name, "convolution"),
			   "thread A only has convolution tasks");
			ok(itt_lookup(d, pid + 1, tid_b, first_b + 1000) == NULL, "other pid: no task");
		}
	}
	itt_data_free(d);

	/* malformed input: a small file of our own, so these run even when the collector
	 * could not be loaded above (sb empty) */
	d = itt_data_new();
	{
		size_t flen;
		char *good = make_file(&flen, ITT_END), *bad = xmalloc(flen);

		int r;

		r = itt_data_add(d, good, flen);
		ok(r == 0 && itt_nr_intervals(d) == 2, "hand-made file: 2 intervals (got %zu)",
		   itt_nr_intervals(d));
		itt_data_free(d);
		d = itt_data_new();
		r = quiet_add(d, good, 10);
		ok(r == -1 && strstr(itt_data_error(d), "too short"),
		   "short file rejected: %s", itt_data_error(d));
		memcpy(bad, good, flen);
		bad[0] = 'X';
		r = quiet_add(d, bad, flen);
		ok(r == -1 && !strcmp(itt_data_error(d), "bad magic"),
		   "bad magic rejected: %s", itt_data_error(d));
		r = quiet_add(d, good, flen - 3);
		ok(r == -1 && strstr(itt_data_error(d), "overruns"),
		   "truncated block rejected: %s", itt_data_error(d));
		memcpy(bad, good, flen);
		{
			uint32_t huge = 0x7fffffff;

			memcpy(bad + sizeof(struct itt_file_header) + 4, &huge, 4);
		}
		r = quiet_add(d, bad, flen);
		ok(r == -1, "overlong block rejected: %s", itt_data_error(d));
		free(good);
		good = make_file(&flen, 2);
		r = quiet_add(d, good, flen);
		ok(r == -1 && strstr(itt_data_error(d), "unknown id 2"),
		   "event naming an unknown id rejected: %s", itt_data_error(d));
		free(good);
		free(bad);
	}
	ok(itt_nr_intervals(d) == 0, "nothing kept from rejected files");
	itt_data_free(d);

	/* an OpenMP team: the worker's share of a call is no call of its own */
	d = itt_data_new();
	{
		size_t flen;
		char *team = make_team_file(&flen);

		ok(itt_data_add(d, team, flen) == 0, "team file read");
		itt_data_finish(d);
		name = itt_name_stats(d, 0, &calls, &total, &call_ns);
		ok(name && !strcmp(name, "conv") && calls == 3,
		   "3 calls, the worker's share not one of them (got %llu)", (unsigned long long)calls);
		ok(total == 9000 + 7000 + 10000 + 2500 && call_ns == 9000 + 10000 + 2500,
		   "task time counts every thread, call time the callers (%llu, %llu)",
		   (unsigned long long)total, (unsigned long long)call_ns);
		itt_each_call(d, count_call, &sum);
		ok(sum == 7009000 + 8010000 + 9002500, "itt_each_call gives the 3 calls (%llu)",
		   (unsigned long long)sum);
		free(team);
	}
	itt_data_free(d);

	/* version 2: primitives and their executions */
	d = itt_data_new();
	{
		size_t flen;
		char *f2 = make_prim_file(&flen, NULL, 0), *bad;
		const struct itt_prim *p1, *p2;
		const struct itt_interval *iv;
		struct { struct itt_block_header bh; uint32_t tid, nr; struct itt_exec ex; } unk = {
			{ ITT_BLOCK_EXECS, 8 + sizeof(struct itt_exec) }, 7, 1, { 40000, 41000, 3, 0 },
		};

		ok(quiet_add(d, f2, flen) == 0, "version 2 file read: %s", itt_data_error(d));
		itt_data_finish(d);
		p1 = itt_prim_at(d, 42, 7, 5000);
		p2 = itt_prim_at(d, 42, 8, 25000);
		ok(itt_nr_prims(d) == 2 && p1 && p2 && p1 != p2, "2 primitives, one per execution");
		ok(p1 && !strcmp(p1->impl, "ref:any") && !strcmp(p1->kind, "convolution") &&
		   !strcmp(p1->shape, "mb1_ic16oc16_ih14oh14kh3sh1dh0ph1_iw14ow14kw3sw1dw0pw1") &&
		   !strcmp(p1->md[ITT_MD_WEI], "f32:abcd:16x16x3x3") && !strcmp(p1->dtype, "f32") &&
		   p1->calls == 1 && p1->ns == 10000, "primitive 1's fields, calls and time");
		ok(p2 && !strcmp(p2->prop, "backward_data") && !strcmp(p2->dtype, "bf16") &&
		   !p2->md[ITT_MD_SRC] && p2->md[ITT_MD_DIFF_SRC], "primitive 2: the diff tensor gives the type");
		/* the worker's share (thread 8, 2000..9000) is inside thread 7's execution */
		iv = itt_lookup(d, 42, 8, 5000);
		ok(iv && iv->worker && !itt_prim_at(d, 42, 8, 5000) &&
		   itt_prim_at(d, 42, iv->caller_tid, 5000) == p1,
		   "a worker's share: no execution of its own, its caller's is primitive 1");
		ok(!itt_prim_at(d, 42, 7, 10500) && !itt_prim_at(d, 42, 7, 400) &&
		   !itt_prim_at(d, 43, 7, 5000), "outside an execution, or another pid: none");
		itt_data_free(d);

		/* a second file with the same description: the same primitive */
		d = itt_data_new();
		ok(quiet_add(d, f2, flen) == 0 && quiet_add(d, f2, flen) == 0, "two files read");
		itt_data_finish(d);
		ok(itt_nr_prims(d) == 2 && itt_prim_each(d, 0)->calls == 2,
		   "equal descriptions are one primitive across files (%zu)", itt_nr_prims(d));
		itt_data_free(d);

		d = itt_data_new();
		bad = make_prim_file(&flen, &unk, sizeof(unk));
		n = quiet_add(d, bad, flen);
		ok(n == -1 && strstr(itt_data_error(d), "unknown primitive 3"),
		   "an execution of an undescribed primitive: rejected (%s)", itt_data_error(d));
		ok(itt_nr_intervals(d) == 0, "nothing kept of it");
		free(bad);
		bad = make_prim_file(&flen, NULL, 0);
		memcpy(bad + 8, &(uint32_t){ 1 }, 4);
		n = quiet_add(d, bad, flen);
		ok(n == -1 && strstr(itt_data_error(d), "unknown block kind 3"),
		   "primitive blocks in a version 1 file: rejected (%s)", itt_data_error(d));
		memcpy(bad + 8, &(uint32_t){ 3 }, 4);
		n = quiet_add(d, bad, flen);
		ok(n == -1 && strstr(itt_data_error(d), "unsupported version 3"),
		   "version 3: rejected (%s)", itt_data_error(d));
		free(bad);
		free(f2);
	}
	ok(stderr_bytes == 0, "the reader printed nothing (%zu bytes): the caller warns", stderr_bytes);
	itt_data_free(d);

	unlink(path);
	rmdir(dir);
	printf("1..%d\n", nr_tests);
	return nr_failed ? 1 : 0;
}
