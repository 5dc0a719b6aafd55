"""py_codes.py - code objects that live a fraction of a millisecond: for SECONDS, a
function is compiled from fresh source (its own name f_K and file gen_K.py), called once
(SPIN_US of CPU in spin_us of libmemknown.so, through ctypes, on its line 2) and dropped,
so its code object is freed right after and the next one is most often made at the same
address.  A sample in f_K must name f_K in gen_K.py: read after the function is gone,
its code object is either freed (unnamed) or another function's.  Prints how many
functions ran and the time inside them and in all.

    py_codes.py LIB SECONDS [SPIN_US]
"""
import ctypes
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
spin = lib.spin_us
spin.argtypes = [ctypes.c_long]
spin_us = int(sys.argv[3]) if len(sys.argv) > 3 else 300
clock = time.perf_counter
start = clock()
end = start + float(sys.argv[2])
inside = 0.0
k = 0
while clock() < end:
    src = "def f_%d():\n    spin(%d)\n" % (k, spin_us)
    ns = {"spin": spin}
    exec(compile(src, "gen_%d.py" % k, "exec"), ns)
    t0 = clock()
    ns["f_%d" % k]()
    inside += clock() - t0
    ns.clear()  # (the function and its globals make a cycle: cleared, it goes now)
    k += 1
print("functions %d inside %.6f total %.6f" % (k, inside, clock() - start))
