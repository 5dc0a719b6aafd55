# op_calls.py - PyTorch operators called a known number of times, in the main thread, a
# thread of its own and a forked child (tests/t5024-op-calls.sh): each call below is one
# call of one operator's entry (at::_ops::NAME::call), so record --op-calls must count
# exactly these, and torch.profiler, run over the main thread's part, its own count.
# Prints "calls OP N" for each operator, summed over the processes and threads.
import os
import sys
import threading

import torch

torch.set_num_threads(1)
x = torch.randn(128, 128)
a = torch.randn(64, 64)
b = torch.randn(64, 64)
RELU, MM, SIGMOID, TANH, CHILD_RELU = 300, 120, 40, 25, 50


def thread_part():
    for _ in range(SIGMOID):
        torch.sigmoid(x)


with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
    for _ in range(RELU):
        torch.relu(x)
    for _ in range(MM):
        torch.mm(a, b)
t = threading.Thread(target=thread_part)
t.start()
t.join()
pid = os.fork()
if pid == 0:
    for _ in range(CHILD_RELU):
        torch.relu(x)
    for _ in range(TANH):
        torch.tanh(x)
    os._exit(0)
os.waitpid(pid, 0)
for e in prof.key_averages():
    if e.key in ("aten::relu", "aten::mm"):
        print("profiler", e.key, e.count)
print("calls aten::relu", RELU + CHILD_RELU)
print("calls aten::mm", MM)
print("calls aten::sigmoid", SIGMOID)
print("calls aten::tanh", TANH)
sys.stdout.flush()
