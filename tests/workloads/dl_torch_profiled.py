#!/usr/bin/python3
"""dl_torch_profiled.py - a CNN training run under torch.profiler, for comparing dlprof's
operator tables with the PyTorch profiler's on the same process.

usage: dl_torch_profiled.py [--memory] OUT.json [STEPS] [THREADS]
Writes the profiler's key_averages() (aten::* and others: key, count, self CPU time in
microseconds) and the profiled window (CLOCK_MONOTONIC ns, dlprof's sample clock) to
OUT.json.  The model is built and the first step run before profiling starts, so that
nearly all of the aten work of the process is inside the profiled window.

With --memory the profiler runs with profile_memory=True, and each row also gets "CPU
Mem" (cpu_memory_usage: the net bytes, allocations minus frees, of the op and the ops it
called), "Self CPU Mem", and "alloc_bytes": the allocations alone of the op and its
callees, from the positive memory records of the profiler's own trace that fall inside
each of the op's calls on its thread (what a sampling heap profiler counts); OUT.json's
"alloc_bytes" and "freed_bytes" are every memory record in the window.  The trace's
times are whole microseconds, the start and the duration each cut down: a call ends up
to a microsecond past start + duration, and aten::empty allocates in its last one
(without that microsecond, 1.063 to 1.172 GB of its 1.181 GB were found inside, a
different share each run, the profiler's own CPU Mem likewise)."""
import collections
import json
import sys
import threading
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

args = sys.argv[1:]
memory = "--memory" in args
args = [a for a in args if a != "--memory"]
out = args[0]
steps = int(args[1]) if len(args) > 1 else 20
threads = int(args[2]) if len(args) > 2 else 1
torch.set_num_threads(threads)
torch.manual_seed(0)


def block(cin, cout):
    return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
            nn.ReLU(inplace=True), nn.MaxPool2d(2)]


model = nn.Sequential(*block(3, 32), *block(32, 64), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(32, 3, 48, 48)
y = torch.randint(0, 10, (32,))


def step():
    opt.zero_grad(set_to_none=False)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()


def allocations(prof):
    """Per event name: the bytes of the positive memory records inside its calls, on
    its thread; and the totals of all memory records."""
    events = prof.profiler.kineto_results.events()
    mem = collections.defaultdict(list)     # thread -> [(start_us, bytes)]
    alloc = freed = 0
    for e in events:
        if e.name() == "[memory]":
            if e.nbytes() > 0:
                mem[e.start_thread_id()].append((e.start_us(), e.nbytes()))
                alloc += e.nbytes()
            else:
                freed -= e.nbytes()
    incl = collections.Counter()
    for e in events:
        if e.name() == "[memory]" or e.device_type() != torch.autograd.DeviceType.CPU:
            continue
        s, d = e.start_us(), e.start_us() + e.duration_us() + 1    # (cut down: above)
        incl[e.name()] += sum(b for t, b in mem.get(e.start_thread_id(), ()) if s <= t <= d)
    return incl, alloc, freed


step()
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
with profile(activities=[ProfilerActivity.CPU], profile_memory=memory) as prof:
    for _ in range(steps):
        step()
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
res = {"start_ns": t0, "end_ns": t1, "steps": steps, "threads": threads,
       "tid": threading.get_native_id()}
rows = [{"key": e.key, "count": e.count, "self_cpu_us": e.self_cpu_time_total}
        for e in prof.key_averages()]
if memory:
    incl, res["alloc_bytes"], res["freed_bytes"] = allocations(prof)
    for r, e in zip(rows, prof.key_averages()):
        r.update(cpu_mem=e.cpu_memory_usage, self_cpu_mem=e.self_cpu_memory_usage,
                 alloc_bytes=incl.get(e.key, 0))
res["rows"] = rows
with open(out, "w") as f:
    json.dump(res, f)
print("dl_torch_profiled: %d steps in %.3f s (%d threads)%s" % (
    steps, (t1 - t0) / 1e9, threads,
    ", %d bytes allocated" % res["alloc_bytes"] if memory else ""))
