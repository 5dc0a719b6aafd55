"""metrics_ops.py - operators whose faults and context switches are known by construction,
for record --metrics (t1018).

A forked child and two threads of the parent, each pinned to a cpu of its own (as far as
there are cpus), run ROUNDS rounds of three operators:
  fault_small  touches SMALL fresh pages of an anonymous mapping (huge pages off), then
               runs SPIN_MS of CPU time
  fault_large  the same with LARGE pages
  sleepy       sleeps SLEEPS times for 1 ms, then runs SPIN_MS of CPU time
Each operator ends with several sampling periods of CPU time, so that what it caused is
read by a sample taken inside it (or by the switch-out that ends its thread's stint on
the cpu).  The workload measures each operator itself, around
each call, with getrusage(RUSAGE_THREAD): minor + major faults, voluntary + involuntary
context switches.  It prints one JSON line per worker:
  {"pid": P, "tid": T, "ops": {"fault_small": {"faults": F, "switches": S, "calls": C}, ...}}
"""
import json
import mmap
import os
import resource
import sys
import threading
import time

ROUNDS = int(os.environ.get("ROUNDS", "12"))
SMALL, LARGE, SLEEPS = 500, 2000, 10
SPIN_MS = float(os.environ.get("SPIN_MS", "15"))
PAGE = mmap.PAGESIZE


# (each operator's loops are its own: its samples' innermost Python frame is the operator)
def fault_small():
    m = mmap.mmap(-1, SMALL * PAGE)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range(0, SMALL * PAGE, PAGE):
        m[i] = 1
    m.close()
    end = time.thread_time() + SPIN_MS / 1000.0
    while time.thread_time() < end:
        pass


def fault_large():
    m = mmap.mmap(-1, LARGE * PAGE)
    m.madvise(mmap.MADV_NOHUGEPAGE)
    for i in range(0, LARGE * PAGE, PAGE):
        m[i] = 1
    m.close()
    end = time.thread_time() + SPIN_MS / 1000.0
    while time.thread_time() < end:
        pass


def sleepy():
    for _ in range(SLEEPS):
        time.sleep(0.001)
    end = time.thread_time() + SPIN_MS / 1000.0
    while time.thread_time() < end:
        pass


def usage():
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_minflt + r.ru_majflt, r.ru_nvcsw + r.ru_nivcsw


def worker(cpu, out):
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[cpu % len(cpus)]})
    # a new thread's first milliseconds have no Python frames (the profiler lists a
    # process's threads now and then): not measured
    end = time.thread_time() + 0.03
    while time.thread_time() < end:
        pass
    ops = {f.__name__: {"faults": 0, "switches": 0, "calls": 0}
           for f in (fault_small, fault_large, sleepy)}
    for _ in range(ROUNDS):
        for f in (fault_small, fault_large, sleepy):
            f0, s0 = usage()
            f()
            f1, s1 = usage()
            ops[f.__name__]["faults"] += f1 - f0
            ops[f.__name__]["switches"] += s1 - s0
            ops[f.__name__]["calls"] += 1
    out.append({"pid": os.getpid(), "tid": threading.get_native_id(), "ops": ops})


def main():
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        res = []
        worker(0, res)
        print(json.dumps(res[0]), flush=True)
        os._exit(0)
    res = []
    threads = [threading.Thread(target=worker, args=(i + 1, res)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    os.waitpid(child, 0)
    for r in res:
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
