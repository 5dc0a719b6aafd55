/* pybpf-prog.h - what the BPF program (pybpf.bpf.c) and its loader (pybpf.c) share: the
 * sizes of its maps and the records it puts in its ring buffer (pybpf.h).  Included by
 * clang -target bpf too: fixed-size types only.
 */
#ifndef DLPROF_PYBPF_PROG_H
#define DLPROF_PYBPF_PROG_H

#include <stdint.h>

#include "pybpf.h"

#define PYBPF_RB_SIZE		(8u << 20)	/* the ring buffer (a 20-frame chain: 344
						   bytes with its header) */
#define PYBPF_MAX_THREADS	4096
#define PYBPF_MAX_FORKS		1024	/* children of listed threads not yet listed */
#define PYBPF_MAX_CODES		65536	/* code objects remembered as met (least recently
					   met go) */
#define PYBPF_MAX_LAYOUTS	8
#define PYBPF_FR_READ		72	/* bytes read of each frame: its fields lie in them */

/* A chain: 16 + 16 n bytes of it go to the ring buffer. */
struct pybpf_chain_rec {
	uint32_t tid;
	uint32_t n;		/* frames, | PYBPF_TRUNC, PYBPF_FAIL */
	uint64_t time;		/* ktime: CLOCK_MONOTONIC, the samples' clock */
	struct {
		uint64_t code;	/* the code object | MEM_PY_* flags */
		uint64_t instr;
	} f[PYBPF_MAXF];	/* innermost first */
};

/* A code record (pybpf.h): tab_len bytes of the line table after the fixed part. */
struct pybpf_code_rec {
	uint32_t pid;
	uint32_t kind;		/* PYBPF_CODE, where a chain has n */
	uint64_t addr;
	uint64_t time;		/* the sample's */
	uint64_t tab_size;	/* the line table's ob_size */
	uint32_t got;		/* PYBPF_GOT_* */
	uint32_t zero;
	unsigned char head[PYBPF_CODE_HEAD];
	unsigned char qualname[PYBPF_STR_READ];	/* the objects as they lie */
	unsigned char filename[PYBPF_STR_READ];
	unsigned char tab[PYBPF_TAB_READ];
};

#endif
