#!/usr/bin/python3
"""py_torch_train.py - a small CNN training loop whose window is known: writes
{"tid": main thread, "start_ns", "end_ns" (CLOCK_MONOTONIC, the samples' clock), "steps"}
to OUT.json.  usage: py_torch_train.py OUT.json [SECONDS]"""
import json
import sys
import threading
import time

import torch
import torch.nn as nn

torch.set_num_threads(2)
torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
    nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
    nn.AdaptiveAvgPool2d(8), nn.Flatten(), nn.Linear(64 * 64, 512), nn.ReLU(inplace=True),
    nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(32, 3, 48, 48)
y = torch.randint(0, 10, (32,))


def train_step():
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss


secs = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
train_step()
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
steps = 0
while time.clock_gettime_ns(time.CLOCK_MONOTONIC) - t0 < secs * 1e9:
    train_step()
    steps += 1
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
with open(sys.argv[1], "w") as f:
    json.dump({"tid": threading.get_native_id(), "start_ns": t0, "end_ns": t1,
               "steps": steps}, f)
