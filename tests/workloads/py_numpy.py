#!/usr/bin/python3
"""py_numpy.py - NumPy work of known length beside pure-Python work: each round shuffles
and sorts an array in place (NumPy's compiled modules: numpy.random and _multiarray_umath,
no BLAS, no allocation) and runs a plain bytecode loop, each timed with the thread's CPU
clock.

usage: py_numpy.py SECONDS
Prints "cpu_ns numpy N" and "cpu_ns python N"."""
import sys
import time

import numpy as np


def py_loop(n):
    x = 0
    for i in range(n):
        x = (x + i * i) % 1000003
    return x


def main():
    seconds = float(sys.argv[1])
    rng = np.random.default_rng(1)
    a = np.arange(300000, dtype=np.int64)
    cpu = {"numpy": 0, "python": 0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.thread_time_ns()
        rng.shuffle(a)
        a.sort()
        cpu["numpy"] += time.thread_time_ns() - t
        t = time.thread_time_ns()
        py_loop(30000)
        cpu["python"] += time.thread_time_ns() - t
    for k in sorted(cpu):
        print("cpu_ns", k, cpu[k])


if __name__ == "__main__":
    main()
