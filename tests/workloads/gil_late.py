"""gil_late.py - a free-threaded CPython whose GIL goes on as it runs.
usage: gil_late.py MODULE_DIR [--seconds S] [--at A]
Two spinner threads run spin() (pure Python, from gil_contend.py) for S seconds of wall
time. A seconds in, the main thread imports gil_on from MODULE_DIR
(tests/workloads/gil_on.c: an extension module that does not declare that it runs
without the GIL), which turns the GIL on: from then on a spinner holds it whenever it
runs. Each spinner notes its CPU time (time.thread_time) when it first sees the GIL on,
and again 0.3 s after. At the end one line per spinner:
  TRUTH {"name", "tid", "cpu_ms", "cpu_after_ms", "cpu_late_ms"}
cpu_after_ms: its CPU time from the GIL's turning on to its end; cpu_late_ms: from 0.3 s
after it.  Then "GIL enabled" or "GIL disabled", as it ends.
"""
import argparse
import sys
import threading
import time

from gil_contend import print_truth, spin

on_at = None        # time.monotonic() as the GIL went on
results = []
lock = threading.Lock()


def spinner(seconds, name):
    t0 = time.monotonic()
    after = late = None
    while time.monotonic() - t0 < seconds:
        spin(2000)
        if on_at is not None:
            if after is None:
                after = time.thread_time()
            if late is None and time.monotonic() - on_at >= 0.3:
                late = time.thread_time()
    cpu = time.thread_time()
    with lock:
        results.append({"name": name, "tid": threading.get_native_id(), "cpu_ms": cpu * 1e3,
                        "cpu_after_ms": (cpu - after) * 1e3 if after is not None else 0.0,
                        "cpu_late_ms": (cpu - late) * 1e3 if late is not None else 0.0})


def main():
    global on_at
    ap = argparse.ArgumentParser()
    ap.add_argument("module_dir")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--at", type=float, default=0.5)
    args = ap.parse_args()
    ts = [threading.Thread(target=spinner, args=(args.seconds, "spinner-%d" % i),
                           name="spinner-%d" % i) for i in range(2)]
    for t in ts:
        t.start()
    time.sleep(args.at)
    sys.path.insert(0, args.module_dir)
    import gil_on  # noqa: F401  (the GIL goes on here)
    on_at = time.monotonic()
    for t in ts:
        t.join()
    print_truth(results)


if __name__ == "__main__":
    main()
