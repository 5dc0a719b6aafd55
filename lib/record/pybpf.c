/* pybpf.c - the BPF program that reads a sampled thread's Python frames in the kernel
 * (pybpf.h).  Written here as instructions (no compiler for BPF, no libbpf): four maps
 * (threads: tid -> struct pybpf_thread; the ring buffer of chains; a counter of chains
 * the ring buffer had no room for; a per-cpu scratch chain) and one program:
 *
 *	t = threads[current tid]; none: done
 *	the u32 at t->tstate + ts_tid must be the tid (a state freed and reused: done)
 *	f = *(tstate + ts_frame); 3.11/3.12: f = *(f + cf_current)
 *	the chain is built in a per-cpu scratch: its time (ktime: CLOCK_MONOTONIC, the
 *	samples' clock) and tid
 *	up to PYBPF_MAXF times: read the 72 bytes of frame f (failing: the chain is
 *	flagged); code, instruction, owner (3.11: and is_entry) into the chain;
 *	f = its previous
 *	each code object of the chain not met before (a map of the ones met, by process
 *	and address): its head, qualified name, file name and line table read and put in
 *	the ring buffer first (at most PYBPF_CODE_BUDGET a sample)
 *	copied to the ring buffer as long as it is, without a wake-up (no room: counted)
 *
 * A code object is read at the sample that first meets it: a module's code, freed once
 * its import is over, or code made by exec() and dropped, is named however short its life
 * (read from outside, it had to be read within a millisecond or two; record polled that
 * often while new code came: a thousand wake-ups a run).
 * The frame's fields are read at constant offsets (the verifier wants them so): one
 * unrolled copy of the loop for each frame layout pyread knows (3.11's, and 3.12's which
 * is 3.13's), the thread's entry saying which.
 * Every read goes through bpf_probe_read_user: a bad pointer is an error, not a fault.
 * The program always lets the sample be written (returns 1).
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memevent.h"
#include "pybpf.h"
#include "pyrec.h"
#include "util.h"

#define RB_SIZE		(8u << 20)	/* the ring buffer of chains (a 20-frame one: 344
					   bytes with its header) */
#define MAX_THREADS	4096
#define FR_READ		72
#define CHAIN_BYTES	(16 + 16 * PYBPF_MAXF)
#define MAX_CODES	65536	/* code objects remembered as met (least recently met go) */
/* a code record (pybpf.h): pid, PYBPF_CODE, address, then at these offsets the sample's
 * time, the line table's size, what was read; the code object's head, its two names'
 * objects as they lie (header and characters) and the line table's bytes */
#define CR_TIME		16
#define CR_TAB_SIZE	24
#define CR_GOT		32
#define CR_HEAD		40
#define CR_NAMES	(CR_HEAD + PYBPF_CODE_HEAD)
#define CR_TAB		(CR_NAMES + 2 * PYBPF_STR_READ)
#define CODE_BYTES	(CR_TAB + PYBPF_TAB_READ)

struct pybpf {
	int threads, rb, drops, scratch, codes, cscratch, prog;
	const char *codes_why;	/* why code objects are not read here */
	void *cons;		/* the consumer position's page */
	const void *prod;	/* the producer position's page, then the data twice */
	long psz;
};

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

/* ---- the program ---- */

#define R0 0
#define R1 1
#define R2 2
#define R3 3
#define R4 4
#define R5 5
#define R6 6
#define R7 7
#define R8 8
#define R9 9
#define FP 10

struct emit {
	struct bpf_insn insn[16384];
	int n;
	/* forward jumps to labels, patched when the label is placed */
	struct { int at, label; } fix[4096];
	int nfix;
	int func_at;	/* the ld_imm64 of the callback's address, patched when it is placed */
	int callback_at;	/* where the callback begins */
};

enum { L_OUT, L_HAVE, L_SUBMIT, L_NOROOM, L_FAILED, L_CB_NEXT, L_CB_STOP, L_CB_TAB,
       L_LOOP };	/* L_LOOP + layout */
#define MAX_LAYOUTS	8

static void op(struct emit *e, uint8_t code, int dst, int src, int16_t off, int32_t imm)
{
	if (e->n < (int)ARRAY_SIZE(e->insn))
		e->insn[e->n] = (struct bpf_insn){ code, (uint8_t)dst, (uint8_t)src, off, imm };
	e->n++;
}

/* a jump to a label placed later */
static void jmp(struct emit *e, uint8_t code, int dst, int src, int32_t imm, int label)
{
	if (e->nfix < (int)ARRAY_SIZE(e->fix)) {
		e->fix[e->nfix].at = e->n;
		e->fix[e->nfix++].label = label;
	}
	op(e, code, dst, src, 0, imm);
}

static void label(struct emit *e, int l)
{
	for (int i = 0; i < e->nfix; i++)
		if (e->fix[i].label == l && e->fix[i].at < e->n) {
			e->insn[e->fix[i].at].off = (int16_t)(e->n - e->fix[i].at - 1);
			e->fix[i].label = -1;
		}
}

static void ld_map(struct emit *e, int dst, int fd)
{
	op(e, BPF_LD | BPF_IMM | BPF_DW, dst, BPF_PSEUDO_MAP_FD, 0, fd);
	op(e, 0, 0, 0, 0, 0);
}

static void call(struct emit *e, int fn)
{
	op(e, BPF_JMP | BPF_CALL, 0, 0, 0, fn);
}

/* r0 = &map[0] (an array's one element; its key at fp-8); none: to label none */
static void first_elem(struct emit *e, int map, int none)
{
	op(e, BPF_ST | BPF_MEM | BPF_W, FP, 0, -8, 0);
	ld_map(e, R1, map);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R2, FP, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R2, 0, 0, -8);
	call(e, BPF_FUNC_map_lookup_elem);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 0, none);
}

/* r1 = fp + off; r2 = len; r3 = src (a register); probe_read_user */
static void read_user(struct emit *e, int16_t fp_off, int len, int src)
{
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R1, FP, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R1, 0, 0, fp_off);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R2, 0, 0, len);
	if (src != R3)
		op(e, BPF_ALU64 | BPF_MOV | BPF_X, R3, src, 0, 0);
	call(e, BPF_FUNC_probe_read_user);
}

/* The frame loop for one layout: code, previous, instruction, owner (and is_entry) at
 * its offsets of the FR_READ bytes read to fp-88. */
static void frame_loop(struct emit *e, const struct pyframe_layout *l)
{
	int code = l->code, prev = l->previous, instr = l->instr, owner = l->owner;
	int entry = l->is_entry == MEM_PY_NONE ? -1 : l->is_entry;
	const int16_t buf = -88;

	for (int i = 0; i < PYBPF_MAXF; i++) {
		op(e, BPF_ST | BPF_MEM | BPF_W, R8, 0, 4, i);	/* n = i */
		jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R9, 0, 0, L_SUBMIT);
		read_user(e, buf, FR_READ, R9);
		jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_FAILED);
		op(e, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, (int16_t)(buf + code), 0);
		op(e, BPF_LDX | BPF_MEM | BPF_B, R2, FP, (int16_t)(buf + owner), 0);
		/* an entry shim (MEM_PY_SHIM), a generator's frame (MEM_PY_GEN) */
		op(e, BPF_JMP | BPF_JNE | BPF_K, R2, 0, 2, MEM_PY_OWNED_BY_CSTACK);
		op(e, BPF_ALU64 | BPF_OR | BPF_K, R1, 0, 0, MEM_PY_SHIM);
		op(e, BPF_JMP | BPF_JA, 0, 0, 2, 0);
		op(e, BPF_JMP | BPF_JNE | BPF_K, R2, 0, 1, MEM_PY_OWNED_BY_GENERATOR);
		op(e, BPF_ALU64 | BPF_OR | BPF_K, R1, 0, 0, MEM_PY_GEN);
		if (entry >= 0) {
			op(e, BPF_LDX | BPF_MEM | BPF_B, R2, FP, (int16_t)(buf + entry), 0);
			op(e, BPF_JMP | BPF_JEQ | BPF_K, R2, 0, 1, 0);
			op(e, BPF_ALU64 | BPF_OR | BPF_K, R1, 0, 0, MEM_PY_ENTRY);
		}
		op(e, BPF_STX | BPF_MEM | BPF_DW, R8, R1, (int16_t)(16 + 16 * i), 0);
		op(e, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, (int16_t)(buf + instr), 0);
		op(e, BPF_STX | BPF_MEM | BPF_DW, R8, R1, (int16_t)(24 + 16 * i), 0);
		op(e, BPF_LDX | BPF_MEM | BPF_DW, R9, FP, (int16_t)(buf + prev), 0);
	}
	op(e, BPF_ST | BPF_MEM | BPF_W, R8, 0, 4, PYBPF_MAXF);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R9, 0, 0, L_SUBMIT);
	op(e, BPF_ST | BPF_MEM | BPF_W, R8, 0, 4, (int32_t)(PYBPF_MAXF | PYBPF_TRUNC));
	jmp(e, BPF_JMP | BPF_JA, 0, 0, 0, L_SUBMIT);
}

/* r<dst> = the address of the callback (placed later: code_callback()) */
static void ld_func(struct emit *e, int dst)
{
	e->func_at = e->n;
	op(e, BPF_LD | BPF_IMM | BPF_DW, dst, BPF_PSEUDO_FUNC, 0, 0);
	op(e, 0, 0, 0, 0, 0);
}

/* probe_read_user(r9 + off, len, r3): r3 set by the caller */
static void read_to_rec(struct emit *e, int off, int len)
{
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R1, R9, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R1, 0, 0, off);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R2, 0, 0, len);
	call(e, BPF_FUNC_probe_read_user);
}

/*
 * bpf_loop's callback (index, ctx: the pid and the reads left for this sample, on the
 * program's stack), once for each frame of the chain in the scratch: its code object,
 * when not met before at that address (the map of those met holds the XOR of its
 * co_filename, co_qualname and co_linetable pointers: another object made at the address
 * of a freed one has other names or another table), read and put in the ring buffer
 * (pybpf.h).  Returns 0 (go on) or 1 (stop: no reads left).  Its stack: fp-8 an array
 * index, fp-24 the key (pid, 0, address), fp-64 the four pointers from co_filename on,
 * fp-72 the sample's time, fp-80 the map's value.
 */
static void code_callback(struct emit *e, int scratch, int codes, int cscratch, int rb)
{
	e->callback_at = e->n;
	e->insn[e->func_at].imm = e->n - (e->func_at + 1);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R6, R1, 0, 0);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R7, R2, 0, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_W, R1, R7, 4, 0);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R1, 0, 0, L_CB_STOP);
	/* the frame's code object (its flags in the low bits) */
	first_elem(e, scratch, L_CB_STOP);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R1, R0, 8, 0);
	op(e, BPF_STX | BPF_MEM | BPF_DW, FP, R1, -72, 0);
	op(e, BPF_ALU64 | BPF_AND | BPF_K, R6, 0, 0, PYBPF_MAXF - 1);
	op(e, BPF_ALU64 | BPF_LSH | BPF_K, R6, 0, 0, 4);
	op(e, BPF_ALU64 | BPF_ADD | BPF_X, R0, R6, 0, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R8, R0, 16, 0);
	op(e, BPF_ALU64 | BPF_AND | BPF_K, R8, 0, 0, -8);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R8, 0, 0, L_CB_NEXT);
	/* which object it is */
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R3, R8, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, PYBPF_CO_FILENAME);
	read_user(e, -64, 32, R3);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_CB_NEXT);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, -64, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R2, FP, -64 + PYBPF_CO_QUALNAME - PYBPF_CO_FILENAME, 0);
	op(e, BPF_ALU64 | BPF_XOR | BPF_X, R1, R2, 0, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R2, FP, -64 + PYBPF_CO_LINETABLE - PYBPF_CO_FILENAME, 0);
	op(e, BPF_ALU64 | BPF_XOR | BPF_X, R1, R2, 0, 0);
	op(e, BPF_STX | BPF_MEM | BPF_DW, FP, R1, -80, 0);
	/* met before, as this object? */
	op(e, BPF_LDX | BPF_MEM | BPF_W, R1, R7, 0, 0);
	op(e, BPF_STX | BPF_MEM | BPF_W, FP, R1, -24, 0);
	op(e, BPF_ST | BPF_MEM | BPF_W, FP, 0, -20, 0);
	op(e, BPF_STX | BPF_MEM | BPF_DW, FP, R8, -16, 0);
	ld_map(e, R1, codes);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R2, FP, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R2, 0, 0, -24);
	call(e, BPF_FUNC_map_lookup_elem);
	op(e, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 3, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R1, R0, 0, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R2, FP, -80, 0);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_X, R1, R2, 0, L_CB_NEXT);
	op(e, BPF_LDX | BPF_MEM | BPF_W, R1, R7, 4, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R1, 0, 0, -1);
	op(e, BPF_STX | BPF_MEM | BPF_W, R7, R1, 4, 0);
	/* the record, in this cpu's other scratch */
	first_elem(e, cscratch, L_CB_STOP);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R9, R0, 0, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_W, R1, R7, 0, 0);
	op(e, BPF_STX | BPF_MEM | BPF_W, R9, R1, 0, 0);
	op(e, BPF_ST | BPF_MEM | BPF_W, R9, 0, 4, (int32_t)PYBPF_CODE);
	op(e, BPF_STX | BPF_MEM | BPF_DW, R9, R8, 8, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R1, FP, -72, 0);
	op(e, BPF_STX | BPF_MEM | BPF_DW, R9, R1, CR_TIME, 0);
	op(e, BPF_ST | BPF_MEM | BPF_DW, R9, 0, CR_TAB_SIZE, 0);
	/* its head; unreadable: not marked as met (read from outside, if ever) */
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R3, R8, 0, 0);
	read_to_rec(e, CR_HEAD, PYBPF_CODE_HEAD);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_CB_NEXT);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R6, 0, 0, PYBPF_GOT_HEAD);	/* r6: what was read */
	/* the two names' objects as they lie */
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R3, R9, CR_HEAD + PYBPF_CO_QUALNAME, 0);
	read_to_rec(e, CR_NAMES, PYBPF_STR_READ);
	op(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 1, 0);
	op(e, BPF_ALU64 | BPF_OR | BPF_K, R6, 0, 0, PYBPF_GOT_QUALNAME);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R3, R9, CR_HEAD + PYBPF_CO_FILENAME, 0);
	read_to_rec(e, CR_NAMES + PYBPF_STR_READ, PYBPF_STR_READ);
	op(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 1, 0);
	op(e, BPF_ALU64 | BPF_OR | BPF_K, R6, 0, 0, PYBPF_GOT_FILENAME);
	/* the line table: its size (ob_size), then up to PYBPF_TAB_READ of its bytes */
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R3, R9, CR_HEAD + PYBPF_CO_LINETABLE, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, 16);
	read_to_rec(e, CR_TAB_SIZE, 8);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_CB_TAB);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R2, R9, CR_TAB_SIZE, 0);
	op(e, BPF_JMP | BPF_JLE | BPF_K, R2, 0, 1, PYBPF_TAB_READ);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R2, 0, 0, PYBPF_TAB_READ);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R3, R9, CR_HEAD + PYBPF_CO_LINETABLE, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, 32);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R1, R9, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R1, 0, 0, CR_TAB);
	call(e, BPF_FUNC_probe_read_user);
	op(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 1, 0);
	op(e, BPF_ALU64 | BPF_OR | BPF_K, R6, 0, 0, PYBPF_GOT_TAB);
	label(e, L_CB_TAB);
	op(e, BPF_STX | BPF_MEM | BPF_W, R9, R6, CR_GOT, 0);
	/* out: as long as what was read of the table */
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R3, R9, CR_TAB_SIZE, 0);
	op(e, BPF_JMP | BPF_JLE | BPF_K, R3, 0, 1, PYBPF_TAB_READ);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R3, 0, 0, PYBPF_TAB_READ);
	op(e, BPF_JMP | BPF_JSET | BPF_K, R6, 0, 1, PYBPF_GOT_TAB);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R3, 0, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, CR_TAB);
	ld_map(e, R1, rb);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R2, R9, 0, 0);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R4, 0, 0, BPF_RB_NO_WAKEUP);
	call(e, BPF_FUNC_ringbuf_output);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_CB_STOP);	/* no room: the chain has none */
	/* met, as this object */
	ld_map(e, R1, codes);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R2, FP, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R2, 0, 0, -24);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R3, FP, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, -80);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R4, 0, 0, BPF_ANY);
	call(e, BPF_FUNC_map_update_elem);
	label(e, L_CB_NEXT);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 0);
	op(e, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	label(e, L_CB_STOP);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 1);
	op(e, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

/* The program; codes < 0: without reading code objects (a kernel without bpf_loop). */
static void build(struct emit *e, int threads, int rb, int drops, int scratch, int codes,
		  int cscratch, const struct pyframe_layout *lays, size_t nr)
{
	memset(e, 0, sizeof(*e));
	call(e, BPF_FUNC_get_current_pid_tgid);
	op(e, BPF_STX | BPF_MEM | BPF_W, FP, R0, -4, 0);		/* fp-4: tid */
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R6, R0, 0, 0);		/* r6: pid (tgid) */
	op(e, BPF_ALU64 | BPF_RSH | BPF_K, R6, 0, 0, 32);
	ld_map(e, R1, threads);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R2, FP, 0, 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R2, 0, 0, -4);
	call(e, BPF_FUNC_map_lookup_elem);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R0, 0, 0, L_OUT);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R7, R0, 0, 0);
	/* the state's native thread id must be the thread's */
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R3, R7, offsetof(struct pybpf_thread, tstate), 0);
	op(e, BPF_LDX | BPF_MEM | BPF_H, R4, R7, offsetof(struct pybpf_thread, ts_tid), 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_X, R3, R4, 0, 0);
	op(e, BPF_ST | BPF_MEM | BPF_W, FP, 0, -16, 0);
	read_user(e, -16, 4, R3);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_OUT);
	op(e, BPF_LDX | BPF_MEM | BPF_W, R1, FP, -16, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_W, R2, FP, -4, 0);
	jmp(e, BPF_JMP | BPF_JNE | BPF_X, R1, R2, 0, L_OUT);
	/* the running frame */
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R3, R7, offsetof(struct pybpf_thread, tstate), 0);
	op(e, BPF_LDX | BPF_MEM | BPF_H, R4, R7, offsetof(struct pybpf_thread, ts_frame), 0);
	op(e, BPF_ALU64 | BPF_ADD | BPF_X, R3, R4, 0, 0);
	read_user(e, -16, 8, R3);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_OUT);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R9, FP, -16, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_H, R1, R7, offsetof(struct pybpf_thread, cf_current), 0);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R1, 0, 0xffff, L_HAVE);
	jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R9, 0, 0, L_HAVE);
	op(e, BPF_ALU64 | BPF_ADD | BPF_X, R9, R1, 0, 0);
	read_user(e, -16, 8, R9);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_OUT);
	op(e, BPF_LDX | BPF_MEM | BPF_DW, R9, FP, -16, 0);
	label(e, L_HAVE);
	/* the chain is built in this cpu's scratch, then copied as long as it is */
	first_elem(e, scratch, L_OUT);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R8, R0, 0, 0);
	call(e, BPF_FUNC_ktime_get_ns);
	op(e, BPF_STX | BPF_MEM | BPF_DW, R8, R0, 8, 0);
	op(e, BPF_LDX | BPF_MEM | BPF_W, R1, FP, -4, 0);
	op(e, BPF_STX | BPF_MEM | BPF_W, R8, R1, 0, 0);
	/* the thread's layout's loop (an unknown one: an empty chain) */
	op(e, BPF_LDX | BPF_MEM | BPF_H, R1, R7, offsetof(struct pybpf_thread, layout), 0);
	for (size_t k = 0; k < nr; k++)
		jmp(e, BPF_JMP | BPF_JEQ | BPF_K, R1, 0, (int32_t)k, L_LOOP + (int)k);
	op(e, BPF_ST | BPF_MEM | BPF_W, R8, 0, 4, 0);
	jmp(e, BPF_JMP | BPF_JA, 0, 0, 0, L_SUBMIT);
	for (size_t k = 0; k < nr; k++) {
		label(e, L_LOOP + (int)k);
		frame_loop(e, &lays[k]);
	}
	label(e, L_FAILED);
	op(e, BPF_LDX | BPF_MEM | BPF_W, R1, R8, 4, 0);
	op(e, BPF_ALU | BPF_OR | BPF_K, R1, 0, 0, (int32_t)PYBPF_FAIL);
	op(e, BPF_STX | BPF_MEM | BPF_W, R8, R1, 4, 0);
	label(e, L_SUBMIT);
	if (codes >= 0) {
		/* the chain's code objects not met before go first: bpf_loop(n, callback,
		 * fp-40: pid, reads left) */
		op(e, BPF_STX | BPF_MEM | BPF_W, FP, R6, -40, 0);
		op(e, BPF_ST | BPF_MEM | BPF_W, FP, 0, -36, PYBPF_CODE_BUDGET);
		op(e, BPF_LDX | BPF_MEM | BPF_W, R1, R8, 4, 0);
		op(e, BPF_ALU64 | BPF_AND | BPF_K, R1, 0, 0, 0x3ff);
		op(e, BPF_JMP | BPF_JLE | BPF_K, R1, 0, 1, PYBPF_MAXF);
		op(e, BPF_ALU64 | BPF_MOV | BPF_K, R1, 0, 0, PYBPF_MAXF);
		ld_func(e, R2);
		op(e, BPF_ALU64 | BPF_MOV | BPF_X, R3, FP, 0, 0);
		op(e, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, -40);
		op(e, BPF_ALU64 | BPF_MOV | BPF_K, R4, 0, 0, 0);
		call(e, BPF_FUNC_loop);
	}
	/* 16 + 16 n bytes (n clamped: the verifier must see the bound) */
	op(e, BPF_LDX | BPF_MEM | BPF_W, R3, R8, 4, 0);
	op(e, BPF_ALU64 | BPF_AND | BPF_K, R3, 0, 0, 0x3ff);
	op(e, BPF_JMP | BPF_JLE | BPF_K, R3, 0, 1, PYBPF_MAXF);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R3, 0, 0, PYBPF_MAXF);
	op(e, BPF_ALU64 | BPF_LSH | BPF_K, R3, 0, 0, 4);
	op(e, BPF_ALU64 | BPF_ADD | BPF_K, R3, 0, 0, 16);
	ld_map(e, R1, rb);
	op(e, BPF_ALU64 | BPF_MOV | BPF_X, R2, R8, 0, 0);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R4, 0, 0, BPF_RB_NO_WAKEUP);
	call(e, BPF_FUNC_ringbuf_output);
	jmp(e, BPF_JMP | BPF_JNE | BPF_K, R0, 0, 0, L_NOROOM);
	jmp(e, BPF_JMP | BPF_JA, 0, 0, 0, L_OUT);
	label(e, L_NOROOM);
	/* drops[0] += 1 */
	first_elem(e, drops, L_OUT);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R1, 0, 0, 1);
	op(e, BPF_STX | BPF_ATOMIC | BPF_DW, R0, R1, 0, BPF_ADD);
	label(e, L_OUT);
	op(e, BPF_ALU64 | BPF_MOV | BPF_K, R0, 0, 0, 1);
	op(e, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	if (codes >= 0)
		code_callback(e, scratch, codes, cscratch, rb);
}

/* ---- set-up ---- */

static int map_new(uint32_t type, uint32_t key, uint32_t value, uint32_t max)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = type;
	a.key_size = key;
	a.value_size = value;
	a.max_entries = max;
	return (int)sys_bpf(BPF_MAP_CREATE, &a);
}

/*
 * The BTF the kernel wants with a program that passes a callback (bpf_loop): each function
 * named and typed, int main(void *ctx) and int callback(u64 index, void *ctx), both static.
 * An fd, or -1.
 */
static int btf_load(void)
{
	static const char strs[] = "\0int\0u64\0ctx\0i\0dlprof_py\0dlprof_py_code";
	enum { S_INT = 1, S_U64 = 5, S_CTX = 9, S_I = 13, S_MAIN = 15, S_CB = 25 };
#define T(name, kind, vlen, st)	(name), ((uint32_t)(kind) << 24 | (vlen)), (st)
	static const uint32_t types[] = {
		T(S_INT, BTF_KIND_INT, 0, 4), BTF_INT_SIGNED << 24 | 32,	/* 1 int */
		T(S_U64, BTF_KIND_INT, 0, 8), 64,				/* 2 u64 */
		T(0, BTF_KIND_PTR, 0, 0),					/* 3 void * */
		T(0, BTF_KIND_FUNC_PROTO, 1, 1), S_CTX, 3,			/* 4 */
		T(S_MAIN, BTF_KIND_FUNC, BTF_FUNC_STATIC, 4),			/* 5 */
		T(0, BTF_KIND_FUNC_PROTO, 2, 1), S_I, 2, S_CTX, 3,		/* 6 */
		T(S_CB, BTF_KIND_FUNC, BTF_FUNC_STATIC, 6),			/* 7 */
	};
#undef T
	unsigned char blob[sizeof(struct btf_header) + sizeof(types) + sizeof(strs)];
	struct btf_header h = {
		.magic = BTF_MAGIC, .version = BTF_VERSION, .hdr_len = sizeof(h),
		.type_off = 0, .type_len = sizeof(types),
		.str_off = sizeof(types), .str_len = sizeof(strs),
	};
	union bpf_attr a;

	memcpy(blob, &h, sizeof(h));
	memcpy(blob + sizeof(h), types, sizeof(types));
	memcpy(blob + sizeof(h) + sizeof(types), strs, sizeof(strs));
	memset(&a, 0, sizeof(a));
	a.btf = (uintptr_t)blob;
	a.btf_size = sizeof(blob);
	return (int)sys_bpf(BPF_BTF_LOAD, &a);
}
#define BTF_MAIN	5
#define BTF_CALLBACK	7

/* Load the program; 0, or -1 (errno: the kernel's). */
static int load(struct pybpf *pb, const struct pyframe_layout *lays, size_t nr)
{
	struct emit *e = xmalloc(sizeof(*e));
	struct bpf_func_info fi[2];
	union bpf_attr a;
	int btf = -1;

	build(e, pb->threads, pb->rb, pb->drops, pb->scratch, pb->codes, pb->cscratch, lays, nr);
	if (e->n > (int)ARRAY_SIZE(e->insn)) {
		free(e);
		errno = E2BIG;
		return -1;
	}
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	a.insns = (uintptr_t)e->insn;
	a.insn_cnt = (uint32_t)e->n;
	a.license = (uintptr_t)"GPL";	/* bpf_probe_read_user is GPL-only */
	if (pb->codes >= 0) {
		btf = btf_load();
		if (btf < 0) {
			free(e);
			return -1;
		}
		fi[0] = (struct bpf_func_info){ 0, BTF_MAIN };
		fi[1] = (struct bpf_func_info){ (uint32_t)e->callback_at, BTF_CALLBACK };
		a.prog_btf_fd = (uint32_t)btf;
		a.func_info_rec_size = sizeof(fi[0]);
		a.func_info = (uintptr_t)fi;
		a.func_info_cnt = 2;
	}
	pb->prog = (int)sys_bpf(BPF_PROG_LOAD, &a);
	if (pb->prog < 0 && getenv("DLPROF_DEBUG_BPF")) {
		static char log[1 << 20];
		int err = errno;

		a.log_buf = (uintptr_t)log;
		a.log_size = sizeof(log);
		a.log_level = 1;
		sys_bpf(BPF_PROG_LOAD, &a);
		fprintf(stderr, "%s\n", log);
		errno = err;
	}
	free(e);
	if (btf >= 0) {
		int err = errno;

		close(btf);	/* the program holds it */
		errno = err;
	}
	return pb->prog < 0 ? -1 : 0;
}

struct pybpf *pybpf_new(const struct pyframe_layout *lays, size_t nr, const char **why)
{
	struct pybpf *pb = xcalloc(1, sizeof(*pb));

	pb->threads = pb->rb = pb->drops = pb->scratch = pb->codes = pb->cscratch = -1;
	pb->prog = -1;
	pb->psz = sysconf(_SC_PAGESIZE);
	if (getenv("DLPROF_NO_BPF")) {
		*why = "DLPROF_NO_BPF is set";
		goto fail;
	}
	for (size_t k = 0; k < nr; k++) {
		const struct pyframe_layout *l = &lays[k];

		if (nr > MAX_LAYOUTS || l->code + 8 > FR_READ || l->previous + 8 > FR_READ ||
		    l->instr + 8 > FR_READ || l->owner >= FR_READ ||
		    (l->is_entry != MEM_PY_NONE && l->is_entry >= FR_READ)) {
			*why = "a frame layout it cannot read";
			goto fail;
		}
	}
	pb->threads = map_new(BPF_MAP_TYPE_HASH, 4, sizeof(struct pybpf_thread), MAX_THREADS);
	pb->rb = map_new(BPF_MAP_TYPE_RINGBUF, 0, 0, RB_SIZE);
	pb->drops = map_new(BPF_MAP_TYPE_ARRAY, 4, 8, 1);
	pb->scratch = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, 4, CHAIN_BYTES, 1);
	if (pb->threads < 0 || pb->rb < 0 || pb->drops < 0 || pb->scratch < 0) {
		*why = errno == EPERM ? "no permission for BPF maps" : "BPF maps not available";
		goto fail;
	}
	/* code objects read at the sample too, where the kernel has bpf_loop (5.17) */
	if (!getenv("DLPROF_NO_BPF_CODES")) {
		pb->codes = map_new(BPF_MAP_TYPE_LRU_HASH, 16, 8, MAX_CODES);
		pb->cscratch = map_new(BPF_MAP_TYPE_PERCPU_ARRAY, 4, CODE_BYTES, 1);
		pb->codes_why = "the kernel would not run the program with bpf_loop";
	} else {
		pb->codes_why = "DLPROF_NO_BPF_CODES is set";
	}
	if (pb->codes < 0 || pb->cscratch < 0 || load(pb, lays, nr) < 0) {
		if (pb->codes >= 0)
			close(pb->codes);
		if (pb->cscratch >= 0)
			close(pb->cscratch);
		pb->codes = pb->cscratch = -1;
		if (load(pb, lays, nr) < 0) {
			*why = errno == E2BIG ? "the program is too long" :
			       "the kernel refused the program";
			goto fail;
		}
	}
	pb->cons = mmap(NULL, (size_t)pb->psz, PROT_READ | PROT_WRITE, MAP_SHARED, pb->rb, 0);
	pb->prod = mmap(NULL, (size_t)pb->psz + 2 * RB_SIZE, PROT_READ, MAP_SHARED, pb->rb,
			pb->psz);
	if (pb->cons == MAP_FAILED || pb->prod == MAP_FAILED) {
		*why = "cannot map the BPF ring buffer";
		goto fail;
	}
	return pb;
fail:
	if (pb->cons == MAP_FAILED)
		pb->cons = NULL;
	if (pb->prod == MAP_FAILED)
		pb->prod = NULL;
	pybpf_free(pb);
	return NULL;
}

const char *pybpf_codes_off(const struct pybpf *pb)
{
	return pb->codes >= 0 ? NULL : pb->codes_why;
}

void pybpf_free(struct pybpf *pb)
{
	if (!pb)
		return;
	if (pb->cons)
		munmap(pb->cons, (size_t)pb->psz);
	if (pb->prod)
		munmap((void *)pb->prod, (size_t)pb->psz + 2 * RB_SIZE);
	int fds[] = { pb->threads, pb->rb, pb->drops, pb->scratch, pb->codes, pb->cscratch,
		      pb->prog };

	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(pb);
}

int pybpf_attach(struct pybpf *pb, int perf_fd)
{
	return ioctl(perf_fd, PERF_EVENT_IOC_SET_BPF, pb->prog) < 0 ? -errno : 0;
}

/* One element operation on map fd: 0, or -errno. */
static int map_op(int cmd, int fd, const void *key, const void *value)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = (uintptr_t)key;
	a.value = (uintptr_t)value;
	a.flags = cmd == BPF_MAP_UPDATE_ELEM ? BPF_ANY : 0;
	return sys_bpf(cmd, &a) < 0 ? -errno : 0;
}

int pybpf_set_thread(struct pybpf *pb, uint32_t tid, const struct pybpf_thread *t)
{
	return map_op(BPF_MAP_UPDATE_ELEM, pb->threads, &tid, t);
}

void pybpf_drop_thread(struct pybpf *pb, uint32_t tid)
{
	map_op(BPF_MAP_DELETE_ELEM, pb->threads, &tid, NULL);
}

uint64_t pybpf_dropped(const struct pybpf *pb)
{
	uint32_t k = 0;
	uint64_t v = 0;

	return map_op(BPF_MAP_LOOKUP_ELEM, pb->drops, &k, &v) < 0 ? 0 : v;
}

/* A code record (rlen bytes, at least CR_TAB) as the program wrote it */
static const struct pybpf_code *code_of(const unsigned char *r, uint32_t rlen)
{
	static struct pybpf_code pc;
	uint32_t got;

	memset(&pc, 0, sizeof(pc));
	memcpy(&pc.pid, r, 4);
	memcpy(&pc.addr, r + 8, 8);
	memcpy(&pc.time, r + CR_TIME, 8);
	memcpy(&pc.tab_size, r + CR_TAB_SIZE, 8);
	memcpy(&got, r + CR_GOT, 4);
	pc.head = r + CR_HEAD;
	if (got & PYBPF_GOT_QUALNAME)
		pc.qualname = r + CR_NAMES;
	if (got & PYBPF_GOT_FILENAME)
		pc.filename = r + CR_NAMES + PYBPF_STR_READ;
	if (got & PYBPF_GOT_TAB) {
		pc.tab = r + CR_TAB;
		pc.tab_len = rlen - CR_TAB;
		if (pc.tab_len > pc.tab_size)
			pc.tab_len = (size_t)pc.tab_size;
	}
	return &pc;
}

/* The ring buffer: a consumer position (ours), a producer position (the kernel's), the
 * data mapped twice in a row (a record never wraps for us); each record an 8-byte header,
 * u32 length with the busy (bit 31) and discard (bit 30) bits, then the data, 8-aligned. */
size_t pybpf_drain(struct pybpf *pb, pybpf_chain_fn *fn, pybpf_code_fn *code_fn, void *ctx)
{
	uint64_t *cpos = pb->cons;
	const unsigned char *data = (const unsigned char *)pb->prod + pb->psz;
	uint64_t c = __atomic_load_n(cpos, __ATOMIC_RELAXED);
	uint64_t p = __atomic_load_n((const uint64_t *)pb->prod, __ATOMIC_ACQUIRE);
	size_t n = 0;

	while (c < p) {
		const unsigned char *h = data + (c & (RB_SIZE - 1));
		uint32_t len = __atomic_load_n((const uint32_t *)h, __ATOMIC_ACQUIRE);
		uint32_t rlen = len & ~(3u << 30);

		if (len & (1u << 31))
			break;	/* still being written */
		if (!(len & (1u << 30)) && rlen >= 16) {
			const unsigned char *r = h + 8;
			uint32_t tid, nf;
			uint64_t t;

			memcpy(&tid, r, 4);
			memcpy(&nf, r + 4, 4);
			memcpy(&t, r + 8, 8);
			if (nf == PYBPF_CODE) {
				if (rlen >= CR_TAB)
					code_fn(ctx, code_of(r, rlen));
			} else if ((nf & ~(PYBPF_TRUNC | PYBPF_FAIL)) <= PYBPF_MAXF) {
				fn(ctx, tid, t, (const uint64_t *)(const void *)(r + 16),
				   nf & ~(PYBPF_TRUNC | PYBPF_FAIL), !!(nf & (PYBPF_TRUNC | PYBPF_FAIL)));
				n++;
			}
		}
		c += 8 + ((rlen + 7) & ~7u);
		__atomic_store_n(cpos, c, __ATOMIC_RELEASE);
	}
	return n;
}
