/* rec-bad.c - write a recording with valid chunks (CRCs right) but one kind of bad content.
 *
 *   build/tests/rec-bad MODE FILE
 *   build/tests/rec-bad -l            list the modes
 *
 * Every file holds a normal part first (ATTR, META, COMM, MMAP2 of a 64 KiB text mapping,
 * 40 good samples with a callchain, registers and a small stack, EXIT, STATS) so a
 * reader that skips the bad record still has a table to show; MODE adds or replaces one
 * record with damage a reader must survive (t6000-robust-report.sh).
 */
#include "recfile.h"
#include "util.h"
#include "rec-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID 11
#define PID 100
#define BASE 0x7f1234500000ull
#define FILE_NAME "/nonexistent/libbad.so"

static const uint8_t bid[20] = { 0xba, 0xd0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
				 15, 16, 17, 18 };

static struct rb b;
static uint64_t stk[512];

struct attr_buf {
	struct dlp_attr_rec h;
	struct perf_event_attr a;
	uint64_t ids[4];
};

static void attr_init(struct attr_buf *r, uint64_t regs_mask)
{
	memset(r, 0, sizeof(*r));
	r->h.attr_size = sizeof(r->a);
	r->h.nr_ids = 1;
	strcpy(r->h.name, "cpu-clock");
	r->a.size = sizeof(r->a);
	r->a.type = PERF_TYPE_SOFTWARE;
	r->a.config = PERF_COUNT_SW_CPU_CLOCK;
	r->a.sample_type = RB_SAMPLE_TYPE;
	r->a.sample_id_all = 1;
	r->a.sample_regs_user = regs_mask;
	r->a.sample_stack_user = 8192;
	r->ids[0] = ID;
}

static void write_attr(struct recwriter *w, const struct attr_buf *r, size_t len)
{
	recwriter_add(w, DLP_REC_ATTR, r, len);
}

/* One sample at ip with a 3-deep user callchain and a 256-byte stack. */
static void good_sample(int i)
{
	uint64_t chain[4] = { PERF_CONTEXT_USER, BASE + 0x1000 + i % 16, BASE + 0x2000, BASE + 0x3000 };
	uint64_t regs[3] = { 0x7ffc00001000ull, 0x7ffc00000f00ull, BASE + 0x1000 + i % 16 };

	for (size_t k = 0; k < 32; k++)
		stk[k] = k % 3 ? BASE + 0x2000 + k : 0x7ffc00000f00ull + k * 8;
	rb_sample(&b, ID, regs[2], PID, PID + i % 2, 1000000 + i * 1000ull, i % 2, 1000000,
		  chain, 4, regs, stk, 256, 256);
}

/* Set the misc field (and the size when not 0) of the record in b. */
static void set_hdr(uint16_t misc, uint16_t size)
{
	struct perf_event_header h;

	memcpy(&h, b.buf, sizeof(h));
	h.misc = misc;
	if (size)
		h.size = size;
	memcpy(b.buf, &h, sizeof(h));
}

/* An MMAP2 record with a build-id into b (not written). */
static void mk_mmap2(uint64_t start, uint64_t len, const char *file)
{
	unsigned char u[24];

	rb_start(&b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID);
	rb_u32x2(&b, PID, PID);
	rb_u64(&b, start);
	rb_u64(&b, len);
	rb_u64(&b, 0);
	memset(u, 0, sizeof(u));
	u[0] = 20;
	memcpy(u + 4, bid, 20);
	rb_bytes(&b, u, sizeof(u));
	rb_u32x2(&b, 5, 2);
	rb_str(&b, file);
	rb_trailer(&b, PID, PID, 999600, 0, ID);
	rb_finish(&b);
}

static void prologue(struct recwriter *w, uint64_t regs_mask)
{
	static const char meta[] = "cmdline\0rec-bad\0freq\0999\0callgraph\0fp\0";
	struct attr_buf a;

	attr_init(&a, regs_mask);
	write_attr(w, &a, sizeof(a.h) + sizeof(a.a) + 8);
	recwriter_add(w, DLP_REC_META, meta, sizeof(meta) - 1);
	rb_comm(w, PID, PID, "badwork", 1, 999000, ID);
	rb_mmap2(w, PID, PID, BASE, 0x10000, 0, bid, 20, 5, 2, FILE_NAME, 999500, ID);
	rb_task(w, PERF_RECORD_FORK, PID, PID, PID + 1, PID, 999800, ID);
}

static void samples(struct recwriter *w, int n)
{
	for (int i = 0; i < n; i++) {
		good_sample(i);
		rb_write(&b, w);
	}
}

static void epilogue(struct recwriter *w)
{
	struct dlp_stats st;

	rb_task(w, PERF_RECORD_EXIT, PID, PID, PID, PID, 2000000, ID);
	memset(&st, 0, sizeof(st));
	st.samples = 40;
	st.start_ns = 999000;
	st.end_ns = 2000000;
	recwriter_add(w, DLP_REC_STATS, &st, sizeof(st));
}

static void add_jit(struct recwriter *w, uint32_t type, const void *p, size_t len)
{
	struct dlp_jit_rec h = { PID, 0 };

	recwriter_add2(w, type, &h, sizeof(h), p, len);
}

/* A jitdump image: header, then one code-load record whose fields the caller spoils. */
static size_t jitdump(unsigned char *buf, uint32_t hdr_size, uint32_t rec_size, uint64_t code_size,
		      int name_nul)
{
	uint32_t h[10] = { 0x4A695444u, 1, 40, 62, 0, PID, 0, 0, 0, 0 };
	uint32_t r[4] = { 0, 0, 0, 0 };
	uint64_t f[5] = { PID | (uint64_t)PID << 32, BASE + 0x8000, BASE + 0x8000, code_size, 1 };
	size_t n = 0;

	h[2] = hdr_size;
	memcpy(buf, h, 40);
	n = 40;
	r[1] = rec_size;
	memcpy(buf + n, r, 16);		/* id 0 (load), size, timestamp */
	memcpy(buf + n + 16, f, 40);	/* pid/tid, vma, code_addr, code_size, index */
	memcpy(buf + n + 56, "jit_fn", 6);
	buf[n + 62] = name_nul ? 0 : 'x';
	memset(buf + n + 63, 0x90, 64);
	return n + 63 + 64;
}

static const char *const modes[] = {
	"good", "attr-size", "attr-ids", "attr-short", "no-attr", "attr-twice",
	"meta-nonul", "mmap2-nonul", "mmap2-bidsize", "mmap-wrap", "comm-nonul",
	"callchain-huge", "callchain-long", "callchain-markers", "regs64", "regs64-short",
	"stack-huge", "stack-dyn-huge", "stack-no-dyn", "sample-short", "sample-size",
	"unknown-id", "fork-self", "fork-loop", "exit-first", "kernel-ip",
	"ksyms-garbage", "ksyms-binary", "jitmap-garbage", "jitmap-huge",
	"jitdump-hdr", "jitdump-recsize", "jitdump-codesize", "jitdump-noname", "jitdump-short",
	"itt-garbage", "itt-magic", "buildid-bad", "stats-short", "unknown-type", "empty-records",
	"file-bad", "lost-huge", "ustack-bad", NULL
};

int main(int argc, char **argv)
{
	const char *mode, *path;
	struct recwriter *w;
	unsigned char buf[4096];
	struct attr_buf a;
	uint64_t regs_mask = RB_REGS_MASK;
	size_t n;

	if (argc == 2 && !strcmp(argv[1], "-l")) {
		for (const char *const *m = modes; *m; m++)
			puts(*m);
		return 0;
	}
	if (argc != 3)
		goto usage;
	mode = argv[1];
	path = argv[2];
	for (n = 0; modes[n] && strcmp(modes[n], mode); n++)
		;
	if (!modes[n])
		goto usage;
	w = recwriter_open(path);
	if (!w)
		return 2;

#define IS(m) (!strcmp(mode, (m)))
	if (IS("regs64") || IS("regs64-short"))
		regs_mask = ~0ull;
	if (IS("no-attr")) {
		static const char meta[] = "cmdline\0rec-bad\0";

		recwriter_add(w, DLP_REC_META, meta, sizeof(meta) - 1);
		rb_mmap2(w, PID, PID, BASE, 0x10000, 0, bid, 20, 5, 2, FILE_NAME, 999500, ID);
	} else if (IS("attr-size") || IS("attr-ids") || IS("attr-short")) {
		attr_init(&a, regs_mask);
		if (IS("attr-size"))
			a.h.attr_size = 0xfffffff0u;
		else if (IS("attr-ids"))
			a.h.nr_ids = 1000;
		write_attr(w, &a, IS("attr-short") ? 20 : sizeof(a.h) + sizeof(a.a) + 8);
		prologue(w, regs_mask);
	} else {
		prologue(w, regs_mask);
	}
	if (IS("attr-twice")) {
		attr_init(&a, regs_mask);
		a.a.sample_type = PERF_SAMPLE_IP;	/* same id, another layout */
		write_attr(w, &a, sizeof(a.h) + sizeof(a.a) + 8);
	}
	samples(w, 20);

	if (IS("meta-nonul")) {
		memset(buf, 'k', 300);
		recwriter_add(w, DLP_REC_META, buf, 300);
	} else if (IS("mmap2-nonul") || IS("mmap2-bidsize") || IS("mmap-wrap")) {
		mk_mmap2(IS("mmap-wrap") ? ~0ull - 0x1000 : BASE + 0x100000,
			 IS("mmap-wrap") ? 0x100000 : 0x1000, "/x/libnonul.so");
		if (IS("mmap2-nonul")) {
			/* overwrite the name and the trailer with non-NUL bytes */
			memset((char *)b.buf + 72, 'A', b.n * 8 - 72);
		} else if (IS("mmap2-bidsize")) {
			((unsigned char *)b.buf)[8 + 32] = 200;
		}
		recwriter_add(w, DLP_REC_PERF, b.buf, b.n * 8);
	} else if (IS("comm-nonul")) {
		rb_start(&b, PERF_RECORD_COMM, 0);
		rb_u32x2(&b, PID, PID + 1);
		rb_bytes(&b, "xxxxxxxxxxxxxxxx", 16);
		rb_write(&b, w);
	} else if (IS("callchain-huge")) {
		good_sample(1);
		b.buf[7] = 1ull << 61;
		recwriter_add(w, DLP_REC_PERF, b.buf, b.n * 8);
		b.buf[7] = ~0ull;
		recwriter_add(w, DLP_REC_PERF, b.buf, b.n * 8);
	} else if (IS("callchain-long") || IS("callchain-markers")) {
		static uint64_t chain[7000];

		for (size_t k = 0; k < 7000; k++)
			chain[k] = IS("callchain-markers") ? (uint64_t)PERF_CONTEXT_USER - k % 3 :
				   k % 500 == 0 ? PERF_CONTEXT_USER : BASE + 0x1000 + k % 4000;
		for (int i = 0; i < 5; i++) {
			rb_sample(&b, ID, BASE + 0x1000, PID, PID, 1500000 + i, 0, 1000000, chain,
				  7000, NULL, NULL, 0, 0);
			rb_write(&b, w);
		}
	} else if (IS("regs64") || IS("regs64-short")) {
		/* samples laid out for a 64-register mask: 64 values, all of them addresses */
		uint64_t chain[2] = { PERF_CONTEXT_USER, BASE + 0x1000 };

		for (int i = 0; i < 5; i++) {
			rb_start(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
			rb_u64(&b, ID);
			rb_u64(&b, BASE + 0x1000);
			rb_u32x2(&b, PID, PID);
			rb_u64(&b, 1500000 + i);
			rb_u32x2(&b, 0, 0);
			rb_u64(&b, 1000000);
			rb_u64(&b, 2);
			rb_u64(&b, chain[0]);
			rb_u64(&b, chain[1]);
			rb_u64(&b, PERF_SAMPLE_REGS_ABI_64);
			for (int k = 0; k < (IS("regs64") ? 64 : 10); k++)
				rb_u64(&b, k == 7 ? 0x7ffc00000f00ull : BASE + 0x1000 + k);
			if (IS("regs64")) {
				rb_u64(&b, 256);
				rb_bytes(&b, stk, 256);
				rb_u64(&b, 256);
			}
			rb_write(&b, w);
		}
	} else if (IS("stack-huge") || IS("stack-dyn-huge") || IS("stack-no-dyn")) {
		good_sample(2);
		/* layout: hdr id ip tid time cpu period nr chain[4] abi regs[3] size stack[32] dyn */
		if (IS("stack-huge"))
			b.buf[16] = 1ull << 40;
		else if (IS("stack-dyn-huge"))
			b.buf[16 + 1 + 32] = ~0ull;
		else
			b.n--;	/* no dyn_size word */
		rb_finish(&b);
		recwriter_add(w, DLP_REC_PERF, b.buf, b.n * 8);
	} else if (IS("sample-short")) {
		rb_start(&b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
		rb_u64(&b, ID);
		rb_write(&b, w);
		good_sample(3);
		recwriter_add(w, DLP_REC_PERF, b.buf, 12);	/* cut inside a field */
	} else if (IS("sample-size")) {
		good_sample(3);
		set_hdr(PERF_RECORD_MISC_USER, 8);	/* header says 8, record longer */
		recwriter_add(w, DLP_REC_PERF, b.buf, b.n * 8);
	} else if (IS("unknown-id")) {
		good_sample(3);
		b.buf[1] = 12345;
		recwriter_add(w, DLP_REC_PERF, b.buf, b.n * 8);
	} else if (IS("fork-self") || IS("fork-loop")) {
		rb_task(w, PERF_RECORD_FORK, PID + 5, PID + 5, PID + 5, PID + 5, 1200000, ID);
		if (IS("fork-loop")) {
			rb_task(w, PERF_RECORD_FORK, PID + 6, PID + 7, PID + 6, PID + 7, 1200001, ID);
			rb_task(w, PERF_RECORD_FORK, PID + 7, PID + 6, PID + 7, PID + 6, 1200002, ID);
			rb_task(w, PERF_RECORD_FORK, PID, PID + 7, PID, PID + 7, 1200003, ID);
		}
		for (int i = 0; i < 5; i++) {
			good_sample(i);
			b.buf[3] = (uint64_t)(PID + 5 + i % 3) << 32 | (PID + 5 + i % 3);	/* pid, tid */
			recwriter_add(w, DLP_REC_PERF, b.buf, b.n * 8);
		}
	} else if (IS("exit-first")) {
		rb_task(w, PERF_RECORD_EXIT, PID + 9, PID + 9, PID + 9, PID + 9, 1, ID);
		rb_task(w, PERF_RECORD_EXIT, PID, PID, PID, PID, 2, ID);
	} else if (IS("kernel-ip")) {
		uint64_t chain[3] = { PERF_CONTEXT_KERNEL, 0xffffffff81000000ull, ~0ull - 5 };

		rb_sample(&b, ID, ~0ull - 5, PID, PID, 1500000, 0, 1000000, chain, 3, NULL, NULL, 0, 0);
		set_hdr(PERF_RECORD_MISC_KERNEL, 0);
		rb_write(&b, w);
	} else if (IS("ksyms-garbage") || IS("ksyms-binary")) {
		static const char text[] =
			"ffffffff81000000 10 _stext\n"
			"zzzz 10 bad\n"
			"ffffffff81000000\n"
			"ffffffffffffffff ffffffffffffffff wrap [mod\n"
			"0 0 zero\n"
			"12345678901234567890 1 toolong\n"
			"ffffffff81000010 0 \t\t\n"
			"ffffffff81000020 1 a b c d e f\n"
			"ffffffff81000030 1 [] []\n"
			"ffffffff81000040";
		uint64_t chain[3] = { PERF_CONTEXT_KERNEL, 0xffffffff81000005ull, ~0ull - 1 };

		if (IS("ksyms-garbage")) {
			recwriter_add(w, DLP_REC_KSYMS, text, sizeof(text) - 1);
		} else {
			for (n = 0; n < sizeof(buf); n++)
				buf[n] = (unsigned char)(n * 131 + 7);
			recwriter_add(w, DLP_REC_KSYMS, buf, sizeof(buf));
		}
		rb_sample(&b, ID, 0xffffffff81000005ull, PID, PID, 1500000, 0, 1000000, chain, 3,
			  NULL, NULL, 0, 0);
		set_hdr(PERF_RECORD_MISC_KERNEL, 0);
		rb_write(&b, w);
	} else if (IS("jitmap-garbage")) {
		static const char text[] = "7f1234508000 40 ok_fn\nnot a line at all\n\x01\x02\x03\n";

		add_jit(w, DLP_REC_JITMAP, text, sizeof(text) - 1);
	} else if (IS("jitmap-huge")) {
		static const char text[] =
			"ffffffffffffff00 ffffffffffffffff wraps\n"
			"0 1 zero\n"
			"10000000000000000 1 toolong\n"
			"7f1234508000 ffffffffffff all_of_it\n";

		add_jit(w, DLP_REC_JITMAP, text, sizeof(text) - 1);
		add_jit(w, DLP_REC_JITMAP, "", 0);
		recwriter_add(w, DLP_REC_JITMAP, "ab", 2);	/* shorter than its header */
	} else if (IS("jitdump-hdr")) {
		n = jitdump(buf, 0xffffff00u, 127, 64, 1);
		add_jit(w, DLP_REC_JITDUMP, buf, n);
		n = jitdump(buf, 8, 127, 64, 1);
		add_jit(w, DLP_REC_JITDUMP, buf, n);
	} else if (IS("jitdump-recsize")) {
		n = jitdump(buf, 40, 0xfffffff0u, 64, 1);
		add_jit(w, DLP_REC_JITDUMP, buf, n);
		n = jitdump(buf, 40, 8, 64, 1);
		add_jit(w, DLP_REC_JITDUMP, buf, n);
	} else if (IS("jitdump-codesize")) {
		n = jitdump(buf, 40, 127, ~0ull, 1);
		add_jit(w, DLP_REC_JITDUMP, buf, n);
		n = jitdump(buf, 40, 127, 65, 1);
		add_jit(w, DLP_REC_JITDUMP, buf, n);
	} else if (IS("jitdump-noname")) {
		n = jitdump(buf, 40, 127, 64, 0);
		add_jit(w, DLP_REC_JITDUMP, buf, n);
	} else if (IS("jitdump-short")) {
		n = jitdump(buf, 40, 127, 64, 1);
		add_jit(w, DLP_REC_JITDUMP, buf, 39);
		add_jit(w, DLP_REC_JITDUMP, buf, 60);
		recwriter_add(w, DLP_REC_JITDUMP, buf, 3);
	} else if (IS("itt-garbage")) {
		for (n = 0; n < 1000; n++)
			buf[n] = (unsigned char)(n * 97 + 3);
		recwriter_add(w, DLP_REC_ITT, buf, 1000);
		recwriter_add(w, DLP_REC_ITT, buf, 1);
	} else if (IS("itt-magic")) {
		/* the right magic and version, then blocks of absurd lengths and contents */
		uint32_t v[2] = { 1, PID };
		uint32_t blk[6] = { 2, 16, PID, 0x7fffffff, 0, 0 };	/* events: nr far too big */
		uint32_t nam[4] = { 1, 0xfffffff0u, 1, 0 };		/* name: len past the end */
		uint32_t ev[8] = { 2, 24, PID, 1, 5, 0, 77, 0 };	/* an event naming id 77 */

		memcpy(buf, "DLPITT\0\0", 8);
		memcpy(buf + 8, v, 8);
		memcpy(buf + 16, blk, sizeof(blk));
		recwriter_add(w, DLP_REC_ITT, buf, 16 + sizeof(blk));
		memcpy(buf + 16, nam, sizeof(nam));
		recwriter_add(w, DLP_REC_ITT, buf, 16 + sizeof(nam));
		memcpy(buf + 16, ev, sizeof(ev));
		recwriter_add(w, DLP_REC_ITT, buf, 16 + sizeof(ev));
	} else if (IS("buildid-bad")) {
		struct dlp_buildid_rec br;

		memset(&br, 0, sizeof(br));
		br.pid = -1;
		br.size = 200;
		recwriter_add2(w, DLP_REC_BUILDID, &br, sizeof(br), FILE_NAME, sizeof(FILE_NAME));
		br.size = 20;
		recwriter_add2(w, DLP_REC_BUILDID, &br, sizeof(br), "nonul", 5);
		recwriter_add(w, DLP_REC_BUILDID, &br, 4);
	} else if (IS("stats-short")) {
		recwriter_add(w, DLP_REC_STATS, "xx", 2);
	} else if (IS("unknown-type")) {
		recwriter_add(w, 999, "whatever", 8);
		recwriter_add(w, 0, "", 0);
		rb_start(&b, 0x7777, 0);
		rb_u64(&b, 1);
		rb_write(&b, w);
	} else if (IS("empty-records")) {
		for (uint32_t t = 0; t < DLP_REC_MAX + 2; t++)
			recwriter_add(w, t, "", 0);
	} else if (IS("file-bad")) {
		struct dlp_file_rec fr = { 0xffffff00u, 0 };

		recwriter_add2(w, DLP_REC_FILE, &fr, sizeof(fr), "abc", 3);
		fr.path_len = 3;
		recwriter_add2(w, DLP_REC_FILE, &fr, sizeof(fr), "abc", 3);
	} else if (IS("ustack-bad")) {
		/* stacks unwound while recording: one good stack and sample, then a stack out
		 * of order, one whose length lies, a sample naming no stack, a short one */
		struct dlp_stack_rec sr = { 1, 2, DLP_STACK_COMPLETE };
		struct dlp_usample_rec us = { 1, DLP_USAMPLE_RAW_KEPT };
		uint64_t st[3] = { BASE + 0x1000, BASE + 0x2000, 0 };
		size_t len;

		recwriter_add2(w, DLP_REC_STACK, &sr, sizeof(sr), st, 2 * 8 + 1);
		sr.id = 5;
		recwriter_add2(w, DLP_REC_STACK, &sr, sizeof(sr), st, 2 * 8 + 1);
		sr.id = 2;
		recwriter_add2(w, DLP_REC_STACK, &sr, sizeof(sr), st, 3 * 8);
		good_sample(0);
		len = rb_finish(&b);
		recwriter_add2(w, DLP_REC_USAMPLE, &us, sizeof(us), b.buf, len);
		us.stack_id = 99;
		recwriter_add2(w, DLP_REC_USAMPLE, &us, sizeof(us), b.buf, len);
		us.stack_id = 1;
		recwriter_add2(w, DLP_REC_USAMPLE, &us, sizeof(us), b.buf, len - 8);
	} else if (IS("lost-huge")) {
		rb_lost(w, ID, ~0ull, 1500000);
		rb_lost(w, ID, ~0ull, 1500001);
	}
	samples(w, 20);
	epilogue(w);
	if (recwriter_close(w) < 0)
		return 2;
	return 0;
usage:
	fprintf(stderr, "usage: rec-bad MODE FILE | rec-bad -l\n");
	return 64;
}
