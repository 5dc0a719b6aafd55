#!/usr/bin/python3
"""dl_torch_memprof.py - a CNN training run under torch.profiler.profile(profile_memory=True),
for comparing dlprof's heap view by operator with the PyTorch profiler's on the same process.

usage: dl_torch_memprof.py OUT.json [STEPS]
One step runs before profiling starts (the model's first allocations); the profiled window
is measured on CLOCK_MONOTONIC (dlprof's sample clock).  OUT.json gets, for each key of
key_averages(): the calls, "CPU Mem" (cpu_memory_usage: the net bytes, allocations minus
frees, of the op and the ops it called) and "Self CPU Mem"; and "alloc_bytes", the
allocations alone of the op and its callees: the positive memory records of the
profiler's own trace that fall inside each of the op's calls on its thread (what a
sampling heap profiler counts).  Totals: every positive memory record in the window."""
import collections
import json
import sys
import threading
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
torch.set_num_threads(1)
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


step()
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
    for _ in range(steps):
        step()
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)

events = prof.profiler.kineto_results.events()
mem = collections.defaultdict(list)     # thread -> [(start_us, bytes)] of allocations
alloc_total = freed_total = 0
for e in events:
    if e.name() == "[memory]":
        if e.nbytes() > 0:
            mem[e.start_thread_id()].append((e.start_us(), e.nbytes()))
            alloc_total += e.nbytes()
        else:
            freed_total -= e.nbytes()
for v in mem.values():
    v.sort()
incl = collections.Counter()
for e in events:
    if e.name() == "[memory]" or e.device_type() != torch.autograd.DeviceType.CPU:
        continue
    s, d = e.start_us(), e.start_us() + e.duration_us()
    incl[e.name()] += sum(b for t, b in mem.get(e.start_thread_id(), ()) if s <= t <= d)
rows = [{"key": a.key, "count": a.count, "cpu_mem": a.cpu_memory_usage,
         "self_cpu_mem": a.self_cpu_memory_usage, "alloc_bytes": incl.get(a.key, 0)}
        for a in prof.key_averages()]
with open(out, "w") as f:
    json.dump({"start_ns": t0, "end_ns": t1, "steps": steps, "tid": threading.get_native_id(),
               "alloc_bytes": alloc_total, "freed_bytes": freed_total, "rows": rows}, f)
print("dl_torch_memprof: %d steps in %.3f s, %d bytes allocated" % (steps, (t1 - t0) / 1e9, alloc_total))
