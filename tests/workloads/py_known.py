#!/usr/bin/python3
"""py_known.py - Python functions whose CPU time is known: each runs a native loop (the
builtin sum over a range, C code under the function's frame) and times it with the
thread's CPU clock.  Plain calls, a generator, recursion and a coroutine.

usage: py_known.py SECONDS OUT.json
OUT.json: {"cpu_ns": {function: ns}, "pid": ..., "lines": {function: line of its hot call}}
Each hot call is on a line marked "# HOT <function>"."""
import asyncio
import json
import os
import re
import sys
import time

cpu = {}
N = 200000


def work_a():
    t = time.thread_time_ns()
    r = sum(range(4 * N))  # HOT work_a
    cpu["work_a"] = cpu.get("work_a", 0) + time.thread_time_ns() - t
    return r


def work_b():
    t = time.thread_time_ns()
    r = sum(range(2 * N))  # HOT work_b
    cpu["work_b"] = cpu.get("work_b", 0) + time.thread_time_ns() - t
    return r


def chunks(k):
    for _ in range(k):
        t = time.thread_time_ns()
        r = sum(range(N // 2))  # HOT chunks
        cpu["chunks"] = cpu.get("chunks", 0) + time.thread_time_ns() - t
        yield r


def work_gen():
    return sum(chunks(3))


def rec(d):
    if d == 0:
        t = time.thread_time_ns()
        r = sum(range(N))  # HOT rec
        cpu["rec"] = cpu.get("rec", 0) + time.thread_time_ns() - t
        return r
    return rec(d - 1) + 1


async def coro():
    await asyncio.sleep(0)
    t = time.thread_time_ns()
    r = sum(range(N))  # HOT coro
    cpu["coro"] = cpu.get("coro", 0) + time.thread_time_ns() - t
    return r


def main(argv):
    secs, out = float(argv[1]), argv[2]
    loop = asyncio.new_event_loop()
    end = time.monotonic() + secs
    while time.monotonic() < end:
        work_a()
        work_b()
        work_gen()
        rec(4)
        loop.run_until_complete(coro())
    loop.close()
    lines = {}
    for i, text in enumerate(open(__file__), 1):
        m = re.search(r"# HOT (\w+)$", text)
        if m:
            lines[m.group(1)] = i
    with open(out, "w") as f:
        json.dump({"cpu_ns": cpu, "pid": os.getpid(), "lines": lines}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
