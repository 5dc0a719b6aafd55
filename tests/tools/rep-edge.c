/* rep-edge.c - write recordings with the report side's edge cases (t6006).
 *
 *   build/tests/rep-edge MODE FILE [ELF]
 *
 *   nosamples   events, a process and its mapping, but not one sample
 *   nomaps      samples of a process that never mapped anything (and of one that did)
 *   nosyms      20 samples in ELF (mapped at 0x400000 from offset 0), which has no symbols
 *   at:OFFSET   20 samples at OFFSET.. in ELF, mapped at 0x400000 from offset 0 for 64 KiB
 *               (each, as every mode's, with registers and a copied stack to unwind)
 *   lost-wrap   20 samples and two LOST records, of 2^64 - 2 and of 3 (a sum that wraps to 1)
 */
#include "recfile.h"
#include "util.h"
#include "rec-build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID 7
#define PID 300
#define BASE 0x400000ull

static struct rb b;

static void sample(struct recwriter *w, uint32_t pid, uint64_t ip, int i)
{
	uint64_t chain[2] = { PERF_CONTEXT_USER, ip };
	uint64_t regs[3] = { 0x7ffc00001000ull, 0x7ffc00000f00ull, ip };
	uint64_t stk[4] = { 0, 0, 0, 0 };

	rb_sample(&b, ID, ip, pid, pid, 1000000 + i * 1000ull, 0, 1000000, chain, 2, regs,
		  stk, sizeof(stk), sizeof(stk));
	rb_write(&b, w);
}

int main(int argc, char **argv)
{
	static const char meta[] = "cmdline\0rep-edge\0freq\0999\0callgraph\0fp\0";
	uint64_t id = ID;
	struct recwriter *w;
	const char *mode, *elf = "/nonexistent/rep-edge";

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: rep-edge nosamples|nomaps|nosyms|lost-wrap|at:OFFSET FILE [ELF]\n");
		return 64;
	}
	mode = argv[1];
	if (argc == 4)
		elf = argv[3];
	w = recwriter_open(argv[2]);
	if (!w)
		return 2;
	rb_attr(w, "cpu-clock", RB_SAMPLE_TYPE, &id, 1);
	recwriter_add(w, DLP_REC_META, meta, sizeof(meta) - 1);
	rb_comm(w, PID, PID, "edge", 1, 999000, ID);
	rb_mmap2(w, PID, PID, BASE, strncmp(mode, "at:", 3) ? 0x1000 : 0x10000, 0, NULL, 0, 5, 2, elf,
		 999500, ID);
	if (!strncmp(mode, "at:", 3)) {
		uint64_t off = strtoull(mode + 3, NULL, 0);

		for (int i = 0; i < 20; i++)
			sample(w, PID, BASE + off + i, i);
	} else if (!strcmp(mode, "nosamples")) {
		;
	} else if (!strcmp(mode, "nomaps")) {
		rb_comm(w, PID + 1, PID + 1, "bare", 1, 999000, ID);
		for (int i = 0; i < 20; i++)
			sample(w, i % 2 ? PID : PID + 1, BASE + 0x100 + i, i);
	} else if (!strcmp(mode, "nosyms") || !strcmp(mode, "lost-wrap")) {
		for (int i = 0; i < 20; i++)
			sample(w, PID, BASE + 0x100 + i, i);
		if (!strcmp(mode, "lost-wrap")) {
			rb_lost(w, ID, UINT64_MAX - 1, 1500000);
			rb_lost(w, ID, 3, 1600000);
		}
	} else {
		fprintf(stderr, "rep-edge: unknown mode '%s'\n", mode);
		return 64;
	}
	rb_task(w, PERF_RECORD_EXIT, PID, PID, PID, PID, 2000000, ID);
	return recwriter_close(w) ? 2 : 0;
}
