#!/usr/bin/python3
"""py_loop.py - a pure-Python hot loop: two functions of plain bytecode (integer
arithmetic, no native library), heavy_a twice as long as heavy_b, each timed with the
thread's CPU clock.  Every CPU sample of the interpreter's threads runs the interpreter.

usage: py_loop.py SECONDS [THREADS]
THREADS > 1 runs the loop in that many threads at once (they contend for the GIL).
Prints "cpu_ns heavy_a N" and "cpu_ns heavy_b N", summed over the threads."""
import sys
import threading
import time

cpu = {"heavy_a": 0, "heavy_b": 0}
lock = threading.Lock()


def heavy_a(n):
    x = 0
    for i in range(n):
        x = (x + i * i) % 1000003
    return x


def heavy_b(n):
    y = 1
    for i in range(n):
        y = (y * 3 + i) % 999983
    return y


def run(seconds):
    mine = {"heavy_a": 0, "heavy_b": 0}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for f, n in ((heavy_a, 20000), (heavy_b, 10000)):
            t = time.thread_time_ns()
            f(n)
            mine[f.__name__] += time.thread_time_ns() - t
    with lock:
        for k in mine:
            cpu[k] += mine[k]


def main():
    seconds = float(sys.argv[1])
    nthreads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    if nthreads > 1:
        ts = [threading.Thread(target=run, args=(seconds,)) for _ in range(nthreads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    else:
        run(seconds)
    for k in sorted(cpu):
        print("cpu_ns", k, cpu[k])


if __name__ == "__main__":
    main()
