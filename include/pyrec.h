/* pyrec.h - the Python records of a recording (DLP_REC_PYCODE, _PYSTACK, _PYCHAIN and
 * their packed forms): what record writes of the Python frames it reads (pyread.h) and
 * report merges into the native stacks (pystack.h).  docs/python.md tells the whole. */
#ifndef DLPROF_PYREC_H
#define DLPROF_PYREC_H

#include <stddef.h>
#include <stdint.h>

/* DLP_REC_PYCODE payload: this struct, then qualname and file name (no NUL), then
 * linetable_len bytes: with DLP_PYCODE_LINES (what record writes), pairs of int32 (code
 * unit index, line: -1 when the instruction has no line) giving the line of each
 * instruction the samples ran, from the code object's location table (co_linetable)
 * at record time; a code object's first record has its names, later ones (names of
 * length 0) the lines of instructions met since.  Without the flag (recordings made
 * before it): the location table itself, CPython 3.11's format (as 3.12's and 3.13's),
 * or the part of it that covers the instructions run so far, continued at
 * linetable_off by later records of the same id. */
struct dlp_pycode_rec {
	uint32_t id;		/* the recording's number for the code object, 1.. */
	int32_t pid;
	uint64_t addr;		/* before format 4: where it was (for the curious); 0 */
	uint32_t firstlineno;
	uint16_t qualname_len, file_len;
	uint32_t linetable_len;
	uint32_t pyversion;	/* PY_VERSION_HEX of the interpreter */
	uint32_t linetable_off;	/* without DLP_PYCODE_LINES: where these bytes go in the
				   table: 0, or the end of what earlier records gave */
	uint32_t flags;		/* DLP_PYCODE_* */
};

#define DLP_PYCODE_LINES 1u	/* the bytes after the names are (code unit, line) pairs */

/* DLP_REC_PYSTACK states */
enum {
	DLP_PY_TRUSTED = 1,	/* checked against the sample's stack copy */
	DLP_PY_UNCHECKED = 2,	/* no stack copy to check it against (fp, none) */
	DLP_PY_MOVED = 3,	/* the sample's frame was gone when read: no frames */
	DLP_PY_FAILED = 4,	/* a memory read failed (the thread was exiting, ...) */
};

/* DLP_REC_PYSTACK flags */
#define DLP_PYSTACK_OWN	1u	/* read by the thread itself at the sample (an allocation of
				   record --memory, memevent.h): exact, delay 0 */
#define DLP_PYSTACK_KERNEL 2u	/* read in the kernel at the sample (pybpf.h): exact */
#define DLP_PYSTACK_CHAIN 4u	/* the frames are a DLP_REC_PYCHAIN's: a u32 chain id
				   follows the struct (nr, same 0) */
#define DLP_PYSTACK_GIL	8u	/* read in the kernel: the thread held the GIL (its state the
				   GIL's last holder, the GIL locked) */

#define DLP_PY_ENTRY	0x80000000u	/* pyframe.instr: the frame an eval loop entered at */
#define DLP_PY_NO_INSTR	0x7fffffffu	/* no instruction yet: the first line */

struct dlp_pyframe {
	uint32_t code;		/* dlp_pycode_rec.id */
	uint32_t instr;		/* code unit index of the instruction running | DLP_PY_ENTRY */
};

/* DLP_REC_PYSTACK payload: this struct, then nr - same struct dlp_pyframe, leaf first:
 * the frames that differ from the previous PYSTACK record of the same thread (in file
 * order), whose last `same` frames (the root side) complete the stack. */
struct dlp_pystack_rec {
	uint32_t pid, tid;
	uint64_t time;		/* the sample's time */
	uint32_t delay_ns;	/* from the sample to the read (capped) */
	uint8_t state;
	uint8_t flags;		/* DLP_PYSTACK_* */
	uint16_t nr;		/* frames of the stack */
	uint16_t same;		/* of them, root-side frames as in the thread's previous record */
	uint16_t pad2[3];
};

/* DLP_REC_PYCHAIN payload: this struct, then nr - same struct dlp_pyframe, leaf first,
 * whose last `same` frames (the root side) are those of chain `base` (written earlier).
 * A stack read as the sample was taken is written once as a chain, ids from 1 in file
 * order; the DLP_REC_STACK of its sample's native stack names it (DLP_STACK_PY), or a
 * DLP_REC_PYSTACK with
 * DLP_PYSTACK_CHAIN when its sample is kept as it came (raw). */
struct dlp_pychain_rec {
	uint32_t id;
	uint32_t base;		/* 0: none (same is 0) */
	uint16_t nr, same;
	uint32_t pad;
};

/* Packed forms (lib/file/pyrec.c), what record writes since format 6: DLP_REC_PYCODE_PACKED
 * holds varints id, flags (DLP_PYCODE_LINES | 2: names follow), [pid, firstlineno,
 * pyversion, qualname_len, file_len, the names], then with DLP_PYCODE_LINES the number
 * of pairs and each pair as zigzag differences from the one before (the first from
 * (0, firstlineno)), else linetable_off, linetable_len and the bytes;
 * DLP_REC_PYCHAIN_PACKED holds varints id, base, nr, same, then per frame code and
 * instr << 1 | (DLP_PY_ENTRY set).  Fields not written are 0.  The Python records took
 * ~9.5% of a 3 s CNN recording written plain; packed, deflate keeps ~30% fewer bytes of
 * them. */
struct strbuf;
/* A DLP_REC_PYCODE or DLP_REC_PYCHAIN (a: its struct, b: the rest) packed into out, its
 * type in *packed_type; -1: it has no packed form (write it plain). */
int pyrec_pack(uint32_t type, const void *a, size_t alen, const void *b, size_t blen,
	       struct strbuf *out, uint32_t *packed_type);
/* A packed record as the plain one (struct and body) in out, its type in *plain_type;
 * -1: malformed. */
int pyrec_unpack(uint32_t type, const void *data, size_t len, struct strbuf *out,
		 uint32_t *plain_type);

/* The line of code unit index instr in a CPython 3.11 line table, firstlineno-based;
 * -1 when the table says no line. */
int pyrec_py311_line(const unsigned char *tab, size_t len, int firstlineno, uint32_t instr);

#endif
