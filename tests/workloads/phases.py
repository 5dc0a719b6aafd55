"""phases.py - a library constructor, a module's import and an exit handler of known CPU
time, for the phases "(library init)", "(import)" and "(exit)" of the operator view
(t1015, t8000).

Builds tests/workloads/phase-burn.c with g++ into a temporary folder, loads it with
ctypes (its constructor spins 0.5 s of the thread's CPU time inside dlopen); writes a
module there whose body calls import_spin(), which spins 0.5 s, and imports it; and
registers an atexit handler, exit_spin, that spins 0.5 s (it runs in the interpreter's
teardown, Py_FinalizeEx).  Prints the CPU time each took, measured around it.
"""
import atexit
import ctypes
import os
import subprocess
import sys
import tempfile
import time


def exit_spin():
    t = time.thread_time()
    x = 0
    while time.thread_time() - t < 0.5:
        x += 1
    print(f"phases: exit handler {time.thread_time() - t:.3f} s", flush=True)


def main():
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "phase-burn.c")
    out = tempfile.mkdtemp()
    lib = os.path.join(out, "libphase-burn.so")
    subprocess.run(["g++", "-x", "c", "-O1", "-shared", "-fPIC", "-o", lib, src], check=True)
    t = time.thread_time()
    ctypes.CDLL(lib)
    print(f"phases: constructor {time.thread_time() - t:.3f} s", flush=True)
    with open(os.path.join(out, "phase_import_mod.py"), "w") as f:
        f.write("import time\n\n\n"
                "def import_spin():\n"
                "    t = time.thread_time()\n"
                "    x = 0\n"
                "    while time.thread_time() - t < 0.5:\n"
                "        x += 1\n\n\n"
                "import_spin()\n")
    sys.path.insert(0, out)
    t = time.thread_time()
    import phase_import_mod  # noqa: F401
    print(f"phases: import {time.thread_time() - t:.3f} s", flush=True)
    atexit.register(exit_spin)


if __name__ == "__main__":
    main()
    sys.exit(0)
