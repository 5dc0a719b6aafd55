"""py_lines.py - a loop that alternates two C calls on two lines: 20 us of CPU on the
first, 800-1800 us (drawn each time) on the second (spin_us of libmemknown.so, through
ctypes), for SECONDS.  The drawn length keeps the loop out of step with the sampling
period: with a fixed one the samples' phase in the loop drifts too slowly to cover it
(1.38 ms against 999 Hz gave the short line a seventh of its share).  A sample's Python line is right only when the stack is read as the sample was
taken: read any later, a sample of the short call mostly finds the thread on the long
one.  Prints the time measured inside each call, by line.

    py_lines.py LIB SECONDS
"""
import ctypes
import random
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
spin = lib.spin_us
spin.argtypes = [ctypes.c_long]
short, long_ = 0.0, 0.0
draw = random.Random(1).randint
clock = time.perf_counter
end = clock() + float(sys.argv[2])
while clock() < end:
    t0 = clock()
    spin(20)                                        # LINE:short
    t1 = clock()
    spin(draw(800, 1800))                           # LINE:long
    t2 = clock()
    short += t1 - t0
    long_ += t2 - t1
print("short %.6f long %.6f" % (short, long_))
