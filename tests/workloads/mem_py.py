"""mem_py.py - Python calling mem-known's functions (libmemknown.so, through ctypes) from
known lines, for record --memory's Python attribution: the bytes of each C function
belong to the line that called it.  alternate() allocates on one line and spins on the
next, not allocating: a Python stack read any later than the allocation names the spin.

    mem_py.py LIB [BATCH]
"""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
batch = int(sys.argv[2]) if len(sys.argv) > 2 else 524288


def small_objects():
    lib.batch_small(ctypes.c_long(batch))          # LINE:batch


def big_blocks():
    lib.keep_cache()                                # LINE:cache
    lib.leak_blocks()                               # LINE:leak


def alternate():
    for i in range(300):
        lib.one_block(ctypes.c_long(1 << 20))       # LINE:one
        lib.spin_us(ctypes.c_long(1000))            # LINE:spin


small_objects()
big_blocks()
alternate()
lib.drop_cache(0)
lib.print_accounting()
