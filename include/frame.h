/* frame.h - a resolved stack frame: what the symbolizer hands to the classifier and outputs. */
#ifndef DLPROF_FRAME_H
#define DLPROF_FRAME_H

#include <stddef.h>
#include <stdint.h>

/* frame.flags */
#define FRAME_KERNEL	(1u << 0)	/* kernel address */
#define FRAME_JIT	(1u << 1)	/* JIT code named by a perf map / jitdump ("[jit]" DSO) */
#define FRAME_FDE	(1u << 2)	/* no symbol: bounds from the .eh_frame FDE (name is dso!func@0x..) */
#define FRAME_UNKNOWN	(1u << 3)	/* nothing known: name is "[unknown]" or a hex address */
#define FRAME_RECOVERED (1u << 4)	/* unwinder stepped over a frame without CFI (stack scan) */
#define FRAME_INLINE	(1u << 5)	/* inlined into the next (outer) frame */
#define FRAME_ANON	(1u << 6)	/* in anonymous executable memory (JIT without a name) */
#define FRAME_PYTHON	(1u << 8)	/* a Python function (pystack.h): sym "name (file.py:LINE)",
					   dso the interpreter's that ran it ("python3.11",
					   "libpython3.12.so.1.0"; "[python]" where unknown),
					   dso_path the file, srcline file:line */
#define FRAME_IRQS_OFF	(1u << 7)	/* leaf standing for the irq-enable frames above it
					   (profile.h, profile_irq_enabler): sym ends in " (irqs off)" */

/* frame.traits: facts about the function's code, computed once per symbol by the symbolizer */
#define TRAIT_PAUSE_LOOP (1u << 0)	/* contains a short backward loop around PAUSE: a spin-wait */

struct frame {
	uint64_t ip;		/* address in the process (return addresses already adjusted) */
	uint64_t sym_start;	/* process address of the function start, 0 when unknown */
	const char *sym;	/* demangled name; never NULL ("[unknown]" when nothing is known) */
	const char *dso;	/* short DSO name: "libdnnl.so.3", "[kernel.kallsyms]", "[jit]", "[unknown]" */
	const char *dso_path;	/* full path as mapped, or NULL */
	const char *srcline;	/* "file.c:123" when known and asked for, else NULL */
	unsigned flags;
	unsigned traits;
};

#endif
