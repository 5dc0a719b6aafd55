#!/usr/bin/python3
"""dl_torch_profiled.py - a CNN training run under torch.profiler, for comparing dlprof's
operator table with the PyTorch profiler's on the same process.

usage: dl_torch_profiled.py OUT.json [STEPS] [THREADS]
Writes the profiler's key_averages() (aten::* and others: key, count, self CPU time in
microseconds) and the profiled window (CLOCK_MONOTONIC ns) to OUT.json.  The model is
built and the first step run before profiling starts, so that nearly all of the aten work
of the process is inside the profiled window."""
import json
import sys
import time

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

out = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 1
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


step()
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for _ in range(steps):
        step()
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
rows = [{"key": e.key, "count": e.count, "self_cpu_us": e.self_cpu_time_total}
        for e in prof.key_averages()]
with open(out, "w") as f:
    json.dump({"start_ns": t0, "end_ns": t1, "steps": steps, "threads": threads,
               "rows": rows}, f)
print("dl_torch_profiled: %d steps in %.3f s (%d threads)" % (steps, (t1 - t0) / 1e9, threads))
