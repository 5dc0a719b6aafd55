/* pybpf-prog.h - what the BPF program (pybpf.bpf.c) and its loader (pybpf.c) share: the
 * sizes of its maps and the records it puts in its ring buffer (pybpf.h).  Included by
 * clang -target bpf too: fixed-size types only.
 */
#ifndef DLPROF_PYBPF_PROG_H
#define DLPROF_PYBPF_PROG_H

#include <stdint.h>

#include "kunwind.h"
#include "pybpf.h"

#define PYBPF_RB_MAX		(8u << 20)	/* the ring buffer, at most (a 20-frame
						   chain: 344 bytes with its header) */
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


/* The native walk (kunwind.h): the tables of the files, by id; each process's code
 * mappings, sorted; the chains, to a ring of their own (record's unwinding thread reads
 * it). */
#define KUNW_MAX_FILES		4096
#define KUNW_MAX_MAPS		512	/* a process's file mappings of code */
#define KUNW_MAX_PROCS		1024
#define KUNW_MAXF		256	/* frames a walk gives */
#define KUNW_RB_MAX		(16u << 20)	/* its ring, at most */
#define KUNW_CACHE		4096	/* rows cached per cpu */
#define KUNW_WIN		2048	/* bytes of stack read at a time */
#define KUNW_MAX_SCANS		16	/* stack scans a walk makes (the copy's walk: as many) */
/* scanned frames a walk drops as dead ends (pybpf_dead_end); past them a step to an
 * address in no mapping ends the walk, as one to a mapping not told yet: at a process's
 * start, before its libraries' mappings are told, each frame a scan found led nowhere,
 * and a walk scanned its 16 times 4 KiB (the sample's time, read after the program, then
 * fell more than 250 us after the walk's) */
#define KUNW_DEAD_ENDS		2
#define KUNW_SCAN_BYTES		4096	/* how far one looks (the copy's walk: as far) */
#define KUNW_ANON		0xffffffffu	/* kunw_map.fid of anonymous code (JIT) */

struct kunw_map {
	uint64_t start, end;	/* [start, end) in the process */
	uint64_t bias;		/* less this: the file's address */
	uint32_t fid;		/* its file */
	uint32_t pad;
};

/* A file's table, by its id: where it starts, its pages (0: no table yet) and rules */
struct kunw_file {
	uint64_t base;		/* less this: the address in the table */
	uint32_t nr_pages;
	uint32_t nr_rules;
	uint32_t walked;	/* set by a walk that read a row of it (keep_files) */
	uint32_t pad;
};

struct kunw_proc {
	uint32_t n;
	uint32_t gen;		/* another for each change (the rows cached are of one) */
	uint64_t lo, hi;	/* from the first mapping's start to the last's end */
	struct kunw_map m[KUNW_MAX_MAPS];
};

/* why a walk ended */
enum {
	KW_ROOT = 1,	/* the frame the CFI says is the first */
	KW_END,		/* a return address of 0 */
	KW_DEEP,	/* KUNW_MAXF frames */
	KW_NO_PROC,	/* a process record did not describe (yet) */
	KW_NO_MAP,	/* an address in no mapping of code it knows (not yet told) */
	KW_NO_TAB,	/* a file without a table */
	KW_NO_ROW,	/* outside the file's table */
	KW_OTHER,	/* a row it cannot follow (KR_OTHER, rbp not known) */
	KW_READ,	/* a read of the stack failed */
	KW_BAD,		/* the stack did not grow toward the root */
	KW_JIT,		/* anonymous code: JIT code, which has no CFI */
	KW_NR
};

/* A walk: KUNW_HEAD + 8 (n + nk) bytes of it go to the ring */
#define KUNW_HEAD		64
#define KUNW_MAXK		64	/* kernel frames a sample walked in the kernel keeps */
#define KUNW_IPS		512	/* room for both, a power of 2 */
#define KUNW_SCANNED		(1ull << 63)	/* in ip[]: a frame a stack scan found */

struct kunw_chain {
	uint32_t tid;
	uint32_t why;		/* KW_*, | the scans made << 16, | why the first began << 8 */
	uint64_t time;		/* as a chain's (pybpf_chain_rec) */
	uint32_t n;		/* user frames in ip[] */
	uint32_t whole;		/* it reached the thread's root (as the unwinder says it) */
	uint32_t pid, cpu;
	uint32_t event;		/* the sampling event's index in record (0) */
	uint32_t nk;		/* kernel frames after the user ones (a sample in the kernel,
				   whose own record the program dropped) */
	uint64_t period;	/* the sample's */
	uint64_t sample_ip;	/* where it was taken: a kernel address, or ip[0] */
	uint32_t fid;		/* KW_NO_TAB: the file */
	uint32_t dropped;	/* the program dropped the sample's own record: this is it */
	uint64_t ip[KUNW_IPS];	/* the sample's user ip, then the return
						   addresses (| KUNW_SCANNED), then nk kernel
						   frames, innermost first */
	/* (the program's scratch: not written out) */
	uint32_t tmp;
	uint32_t win_len;	/* bytes of the stack in win (0: none) */
	uint64_t win_at;	/* from this address */
	uint64_t win[KUNW_WIN / 8];
};

#endif
