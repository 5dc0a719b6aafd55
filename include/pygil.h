/* pygil.h - the GIL's hand-off functions of a CPython interpreter, found from its code.
 *
 * CPython 3.11 to 3.13 take and give up the GIL in two static functions of
 * Python/ceval_gil.c: take_gil() waits on the GIL's condition (a timed wait, 5 ms by
 * default, after which it asks the holder to drop it) and signals the holder's switch
 * condition; drop_gil() signals the GIL's condition and, when a switch was forced, waits
 * on the switch condition until another thread took the GIL.  A thread off the CPU in
 * either is waiting for the GIL (family wait-gil, share/families.rules).  Stripped
 * interpreters (Debian's, every distribution's) keep only exported symbols, so the two
 * are found from the exported functions that call them:
 *
 *   take_gil: the first function reached by direct calls (at most 3 deep) from
 *             PyEval_RestoreThread or PyEval_AcquireThread that calls both
 *             pthread_cond_timedwait and pthread_cond_signal;
 *   drop_gil: the same from PyEval_SaveThread, PyEval_ReleaseThread and
 *             _PyThreadState_DeleteCurrent, calling pthread_cond_signal,
 *             pthread_cond_wait and pthread_mutex_unlock and not
 *             pthread_cond_timedwait.
 *
 * The calls are read with capstone from each function's FDE range; the imported
 * functions through the PLT (.plt and .plt.sec stubs, .rela.plt).  Where a function was
 * inlined into the exported one, that one is what waits (the rules name it too).
 */
#ifndef DLPROF_PYGIL_H
#define DLPROF_PYGIL_H

#include <libelf.h>
#include <stdint.h>

enum pygil_fn { PYGIL_TAKE, PYGIL_DROP, PYGIL_NR };

struct pygil_func {
	uint64_t start, len;	/* its FDE's range (file virtual addresses); len 0: not found */
};

/* Whether path's file name is a CPython interpreter's (python3.X, libpython3.X.so...),
 * and (*free_threaded) whether a free-threaded one (python3.13t: no GIL) */
int pygil_interpreter(const char *path, int *free_threaded);

/* Finds take_gil and drop_gil in e from its code, as above (its symbol table is not
 * read for them: a file with symbols names them already).  Returns how many were found. */
int pygil_find(Elf *e, struct pygil_func out[PYGIL_NR]);

/* The functions' names, "take_gil" and "drop_gil" */
const char *pygil_name(enum pygil_fn f);

#endif
