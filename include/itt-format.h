/* itt-format.h - the ITT collector's file (build/libdlprof-itt.so writes it in the
 * workload, record stores it, report reads it back: itt.h): an ABI shared with inject.
 *
 * The collector writes $DLPROF_ITT_DIR/itt-PID.bin; dlprof record stores each such file
 * as one DLP_REC_ITT record (payload = the file's bytes).  Layout, little-endian:
 *
 *	struct itt_file_header		magic "DLPITT\0\0", version, pid
 *	blocks, each:  struct itt_block_header { u32 kind; u32 len; }  then len bytes
 *	  ITT_BLOCK_NAME:    u32 id, then the name (len - 4 bytes, no NUL)
 *	  ITT_BLOCK_EVENTS:  u32 tid, u32 nr, then nr struct itt_event
 *	  ITT_BLOCK_PRIM:    (version 2) u32 id, then a oneDNN primitive's description
 *	                     (len - 4 bytes, no NUL): "NAME=VALUE" lines joined by '\n'
 *	  ITT_BLOCK_EXECS:   (version 2) u32 tid, u32 nr, then nr struct itt_exec
 *
 * Name ids are small integers starting at 1; a name block precedes (in file order or not)
 * the events that use it.  An event with name ITT_END closes the innermost open task of
 * its thread.  Times are CLOCK_MONOTONIC nanoseconds, the clock of the samples.
 *
 * Version 2 adds what the collector's dnnl_primitive_execute() interposer saw (record
 * preloads the collector; DLPROF_NO_DNNL_HOOK=1 turns it off): each primitive, described
 * once per process through oneDNN's C API, and each execution, on the thread that called
 * it, from entry to return.  Primitive ids are their own small integers from 1 (one per
 * distinct description, not per primitive object).  The description's names, each at
 * most once, in this order, unknown names ignored by readers:
 *	kind	 primitive kind as oneDNN prints it ("convolution", "reorder"); required
 *	impl	 dnnl_query_impl_info_str ("jit:avx2", "ref:any", "brgconv:avx512_core")
 *	prop	 propagation kind ("forward_training", "backward_data"; "undef" for none)
 *	shape	 the problem in ONEDNN_VERBOSE's spelling (lib/inject/dnnl-hook.c says which
 *		 kinds get which): "mb32_ic3oc32_ih64oh64kh3sh1dh0ph1_iw64ow64kw3sw1dw0pw1"
 *	src, diff_src, wei, diff_wei, dst, diff_dst
 *		 a tensor: "DT:FORMAT:DIMS", e.g. "f32:aBcd16b:32x64x32x32" (FORMAT in
 *		 verbose's spelling: the dimensions a, b, ... outermost first by stride,
 *		 blocked ones upper-case, then the inner blocks; "any", "wino", "packed")
 * A file without these blocks had no such call seen: oneDNN linked statically (its
 * calls do not reach the interposer), another path to it, or the hook off.
 */
#ifndef DLPROF_ITT_FORMAT_H
#define DLPROF_ITT_FORMAT_H

#include <stdint.h>

#define ITT_MAGIC "DLPITT\0\0"
#define ITT_VERSION 2		/* readers take 1 (no primitive blocks) and 2 */
#define ITT_BLOCK_NAME 1
#define ITT_BLOCK_EVENTS 2
#define ITT_BLOCK_PRIM 3
#define ITT_BLOCK_EXECS 4
#define ITT_END 0u
#define ITT_MAX_NAME 1024
#define ITT_MAX_PRIM 4096	/* a description's bytes */

struct itt_file_header {
	char magic[8];
	uint32_t version;
	uint32_t pid;
};

struct itt_block_header {
	uint32_t kind;
	uint32_t len;
};

struct itt_event {
	uint64_t time;
	uint32_t name;		/* name id, ITT_END for task end */
	uint32_t pad;
};

/* One execution of a oneDNN primitive (ITT_BLOCK_EXECS) */
struct itt_exec {
	uint64_t start, end;
	uint32_t prim;		/* the ITT_BLOCK_PRIM id */
	uint32_t pad;
};

#endif
