#!/usr/bin/python3
"""py_procs.py - Python work in threads and in child processes, each in a function of its
own: two threading.Threads (thread_x, thread_y), a multiprocessing child made by fork
(child_fork) and one made by spawn (child_spawn).  Each spins a native loop for a given
CPU time.  Writes {"pid", "tids": {name: native id}, "fork": pid, "spawn": pid} to OUT.

usage: py_procs.py OUT.json"""
import json
import multiprocessing as mp
import os
import sys
import threading
import time


def spin(sec):
    t0 = time.thread_time()
    while time.thread_time() - t0 < sec:
        sum(range(100000))  # HOT spin


def thread_x(tids):
    tids["thread_x"] = threading.get_native_id()
    spin(0.8)


def thread_y(tids):
    tids["thread_y"] = threading.get_native_id()
    spin(0.8)


def child_fork():
    spin(0.6)


def child_spawn():
    spin(0.6)


def main(out):
    info = {"pid": os.getpid(), "tids": {}}
    ths = [threading.Thread(target=f, args=(info["tids"],)) for f in (thread_x, thread_y)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    for method, fn in (("fork", child_fork), ("spawn", child_spawn)):
        p = mp.get_context(method).Process(target=fn)
        p.start()
        info[method] = p.pid
        p.join()
        if p.exitcode:
            return 1
    with open(out, "w") as f:
        json.dump(info, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
