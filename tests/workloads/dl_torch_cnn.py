#!/usr/bin/python3
"""dl_torch_cnn.py - a small CNN training loop on random data (2 threads), for the
DL-view integration tests.  Usage: dl_torch_cnn.py [SECONDS]"""
import sys
import time

import torch
import torch.nn as nn

torch.set_num_threads(2)
torch.manual_seed(0)

model = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(32, 3, 32, 32)
y = torch.randint(0, 10, (32,))

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
end = time.monotonic() + secs
steps = 0
while time.monotonic() < end:
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    steps += 1
print("steps", steps, "loss", float(loss))
