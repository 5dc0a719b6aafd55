"""gil_contend.py - Python threads with a known split of their time on the GIL.

usage: gil_contend.py [--seconds S] [--spinners N] [--nap-ms MS] [--native]

N spinner threads run spin() (pure Python: the GIL held while on the CPU) for S seconds
of wall time; one napper thread runs a millisecond of spin() between naps of MS ms in
time.sleep() (which releases the GIL: it waits for it each time it wakes); with
--native, one thread compresses a megabyte with zlib again and again (zlib releases the
GIL while it deflates: on the CPU with Python frames, not holding the GIL; it waits for
the GIL after each call), counting the CPU time inside the calls (native_ms); one idle
thread sleeps in one time.sleep() until 0.3 s after the others are done, when the main
thread waits in join() without the GIL (it never contends); the main thread joins them.
At the end one line per thread:

  TRUTH {"name", "tid", "wall_ms", "cpu_ms", "slept_ms", "gil_wait_ms", "line",
         "native_ms"}

wall_ms: from just before the main thread started it to its end (a new thread takes the
GIL before it runs its first line: the main thread may hold it then); cpu_ms: its CPU
time (time.thread_time, from its creation); slept_ms: the naps it asked for; gil_wait_ms:
wall - cpu - slept, the time it was ready to run Python and did not (on 2 cores with no
other load the GIL is the only thing it waits for: N spinners and the napper share one
GIL, so at most one runs at a time; time.sleep's deadline is set before it gives the GIL
up); line: the function whose code it runs.  A timer's
slack (50 us a nap by default) counts into the napper's gil_wait_ms: --nap-ms 5 keeps
it at 1%.
"""
import argparse
import json
import os
import sys
import threading
import time
import zlib

results = []
lock = threading.Lock()


def spin(n):
    x = 0
    for i in range(n):  # SPIN_LINE
        x += i * i
    return x


spawned = {}     # thread name -> time.monotonic() just before start()


def report(name, slept, line, native=0.0):
    wall = (time.monotonic() - spawned[name]) * 1e3
    cpu = time.thread_time() * 1e3
    with lock:
        results.append({"name": name, "tid": threading.get_native_id(), "wall_ms": wall,
                        "cpu_ms": cpu, "slept_ms": slept * 1e3,
                        "gil_wait_ms": max(0.0, wall - cpu - slept * 1e3), "line": line,
                        "native_ms": native * 1e3})


def spinner(seconds, name):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        spin(2000)
    report(name, 0.0, "spin")


def napper(seconds, nap):
    t0 = time.monotonic()
    slept = 0.0
    while time.monotonic() - t0 < seconds:
        time.sleep(nap)  # NAP_LINE
        slept += nap
        c = time.thread_time()
        while time.thread_time() - c < 0.001:
            spin(200)
    report("napper", slept, "napper")


def native(seconds):
    data = b"".join(b"%08d dlprof " % i for i in range(70000))  # a megabyte: DATA_LINE
    t0 = time.monotonic()
    inside = 0.0
    while time.monotonic() - t0 < seconds:
        c = time.thread_time()
        zlib.compress(data, 6)  # NATIVE_LINE
        inside += time.thread_time() - c
    report("native", 0.0, "native", inside)


def idle(seconds):
    time.sleep(seconds)  # IDLE_LINE
    report("idle", seconds, "idle")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--spinners", type=int, default=2)
    ap.add_argument("--nap-ms", type=float, default=5.0)
    ap.add_argument("--native", action="store_true")
    args = ap.parse_args()
    quiet = threading.Thread(target=idle, args=(args.seconds + 0.3,), name="idle")
    spawned["idle"] = time.monotonic()
    quiet.start()
    ts = [threading.Thread(target=spinner, args=(args.seconds, "spinner-%d" % i),
                           name="spinner-%d" % i) for i in range(args.spinners)]
    ts.append(threading.Thread(target=napper, args=(args.seconds, args.nap_ms / 1e3),
                               name="napper"))
    if args.native:
        ts.append(threading.Thread(target=native, args=(args.seconds,), name="native"))
    for t in ts:
        spawned[t.name] = time.monotonic()
        t.start()
    for t in ts:
        t.join()
    quiet.join()
    print_truth(results)


def print_truth(rows):
    """a TRUTH line a thread, then whether the GIL is on as the run ends"""
    for r in rows:
        print("TRUTH " + json.dumps(r, sort_keys=True))
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print("GIL %s %s" % ("enabled" if gil else "disabled", sys.version.split()[0]))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
