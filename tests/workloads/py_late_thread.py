"""py_late_thread.py OUT.json NATIVE_S PYTHON_S - a native thread ($PY_LATE_THREAD_LIB)
spins in C for NATIVE_S seconds of its CPU time, then calls back into Python and spins
in late_py for PYTHON_S seconds of its CPU time, while the main thread sleeps.  OUT.json:
the thread's id and the monotonic times (ns) of its entry into Python and of its end."""
import ctypes
import json
import os
import sys
import time

out, native_s, python_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
lib = ctypes.CDLL(os.environ["PY_LATE_THREAD_LIB"])  # build/tests/workloads/libpy-late-thread.so
lib.late_thread_start.restype = ctypes.c_long
lib.late_thread_start.argtypes = [ctypes.c_double, ctypes.c_void_p]
marks = {}


def late_py():
    marks["entered"] = time.monotonic_ns()
    t0 = time.thread_time()
    x = 0
    while time.thread_time() - t0 < python_s:
        x += sum(range(200))
    marks["left"] = time.monotonic_ns()


CB = ctypes.CFUNCTYPE(None)
cb = CB(late_py)
tid = lib.late_thread_start(native_s, ctypes.cast(cb, ctypes.c_void_p))
lib.late_thread_join()
marks["tid"] = tid
with open(out, "w") as f:
    json.dump(marks, f)
