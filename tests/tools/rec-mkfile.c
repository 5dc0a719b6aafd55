/* rec-mkfile.c - write a sample-like dlprof recording for tests and measurements.
 *
 *   build/tests/rec-mkfile [-n SAMPLES] [-s STACK_BYTES] [-c CHUNK_BYTES] [-k] [-t] FILE
 *
 * ATTR, META, COMM (exec), MMAP2 (with build-id), FORK, then SAMPLES samples of two
 * threads with an 8-deep callchain, registers and a copied stack that looks like a real
 * one (return addresses, stack pointers, small integers, zeros, floats), LOST, EXIT and
 * STATS.  -k stops without closing (as a killed recorder: no end marker, pending chunk
 * lost).  -t prints the write speed and compression ratio to stderr.
 * Contents are deterministic: sample i has pid 100, tid 100 + i % 2, time 1000000 + i*1000.
 */
#include "recfile.h"
#include "util.h"
#include "../../lib/file/recfile-priv.h"
#include "rec-build.h"
#include "../xorshift.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rnd_state = 88172645463325252ull;

static uint64_t rnd(void)
{
	return xorshift64(&rnd_state);
}

static void fill_stack(uint64_t *st, size_t words, uint64_t sp)
{
	static const uint64_t libs[] = { 0x7f1234500000ull, 0x7f2222200000ull, 0x55aa00000000ull };
	size_t i;

	for (i = 0; i < words; i++) {
		uint64_t r = rnd() % 100;

		if (r < 25)
			st[i] = 0;
		else if (r < 40)
			st[i] = libs[rnd() % 3] + (rnd() % 0x400000);	/* return address */
		else if (r < 60)
			st[i] = sp + (rnd() % 8192 & ~7ull);		/* frame pointer-ish */
		else if (r < 75)
			st[i] = rnd() % 4096;				/* small ints */
		else if (r < 85)
			st[i] = 0x0000555500000000ull + (rnd() % 0x100000) * 16; /* heap */
		else
			st[i] = (uint64_t)(rnd() & 0x3fffffff) << 32 | (rnd() & 0xffffffff); /* float pairs */
	}
}

int main(int argc, char **argv)
{
	static const uint8_t bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6,
					 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
	static const char meta[] = "cmdline\0rec-mkfile\0hostname\0test\0";
	unsigned long n = 1000, stack = 8192, chunk = 0;
	int kill = 0, timing = 0, opt;
	struct recwriter *w;
	struct dlp_stats st;
	uint64_t ids[2] = { 11, 12 }, raw = 0, t0, t1, tw = 0;
	uint64_t *stk;
	struct rb *b;
	unsigned long i;

	const char *replay = NULL;

	while ((opt = getopt(argc, argv, "n:s:c:ktr:")) != -1) {
		switch (opt) {
		case 'n': n = strtoul(optarg, NULL, 0); break;
		case 's': stack = strtoul(optarg, NULL, 0); break;
		case 'c': chunk = strtoul(optarg, NULL, 0); break;
		case 'k': kill = 1; break;
		case 't': timing = 1; break;
		case 'r': replay = optarg; break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || stack > 60000)
		goto usage;
	b = xmalloc(sizeof(*b));
	stk = xmalloc(stack + 8);
	w = recwriter_open(argv[optind]);
	if (!w)
		return 2;
	if (chunk)
		recwriter_set_chunk_size(w, chunk);
	t0 = now_ns();
	if (rb_attr(w, "cpu-clock", RB_SAMPLE_TYPE, ids, 2) < 0 ||
	    recwriter_add(w, DLP_REC_META, meta, sizeof(meta) - 1) < 0 ||
	    rb_comm(w, 100, 100, "python3", 1, 999000, 11) < 0 ||
	    rb_mmap2(w, 100, 100, 0x7f1234500000ull, 0x400000, 0x1000, bid, 20, 5, 2,
		     "/usr/lib/libfoo.so", 999500, 11) < 0 ||
	    rb_task(w, PERF_RECORD_FORK, 100, 100, 101, 100, 999800, 11) < 0)
		return 2;
	if (replay) {
		/* -r FILE: perf records back to back (e.g. a perf.data data section) */
		struct strbuf sb = STRBUF_INIT;
		size_t off = 0;

		if (strbuf_read_file(&sb, replay, 0) < 0)
			return 2;
		while (sb.len - off >= 8) {
			struct perf_event_header h;

			memcpy(&h, sb.buf + off, 8);
			if (h.size < 8 || h.size > sb.len - off)
				break;
			memcpy(b->buf, sb.buf + off, h.size);
			t1 = now_ns();
			if (recwriter_add(w, DLP_REC_PERF, b->buf, h.size) < 0)
				return 2;
			tw += now_ns() - t1;
			raw += h.size;
			off += h.size;
		}
		n = 0;
		strbuf_release(&sb);
	}
	for (i = 0; i < n; i++) {
		uint64_t chain[8], regs[3], sp = 0x7ffc00000000ull + (i % 64) * 256;
		size_t k;

		for (k = 0; k < 8; k++)
			chain[k] = k == 0 ? PERF_CONTEXT_USER : 0x7f1234500000ull + k * 0x100 + i % 7;
		regs[0] = sp + 64;
		regs[1] = sp;
		regs[2] = 0x7f1234500000ull + i % 4096;
		fill_stack(stk, stack / 8, sp);
		rb_sample(b, ids[i % 2], regs[2], 100, 100 + i % 2, 1000000 + i * 1000, i % 2, 1000,
			  chain, 8, regs, stk, stack, stack);
		raw += b->n * 8;
		t1 = now_ns();
		if (recwriter_add(w, DLP_REC_PERF, b->buf, b->n * 8) < 0)
			return 2;
		tw += now_ns() - t1;
		if (i == n / 2 && rb_lost(w, 11, 3, 1000000 + i * 1000) < 0)
			return 2;
	}
	if (kill) {
		/* as SIGKILL would: what was flushed stays, the pending chunk is lost */
		fflush(stdout);
		_exit(0);
	}
	if (rb_task(w, PERF_RECORD_EXIT, 100, 100, 101, 100, 1000000 + n * 1000, 11) < 0)
		return 2;
	memset(&st, 0, sizeof(st));
	st.samples = n;
	st.lost = 3;
	st.lost_records = 1;
	st.start_ns = 999000;
	st.end_ns = 1000000 + n * 1000;
	if (recwriter_add(w, DLP_REC_STATS, &st, sizeof(st)) < 0)
		return 2;
	{
		uint64_t bytes;

		t1 = now_ns();
		if (recwriter_flush(w) < 0)
			return 2;
		tw += now_ns() - t1;
		bytes = recwriter_bytes(w);
		if (recwriter_close(w) < 0)
			return 2;
		if (timing) {
			double s = tw / 1e9;

			fprintf(stderr, "wrote %lu samples, %.1f MB raw, %.1f MB file, ratio %.2f, %.3f s in recwriter (%.3f s total), %.0f MB/s raw\n",
				n, raw / 1e6, bytes / 1e6, (double)raw / bytes, s, (now_ns() - t0) / 1e9, raw / 1e6 / s);
		}
	}
	free(stk);
	free(b);
	return 0;
usage:
	fprintf(stderr, "usage: rec-mkfile [-n SAMPLES] [-s STACK_BYTES] [-c CHUNK_BYTES] [-k] [-t] FILE\n");
	return 64;
}
