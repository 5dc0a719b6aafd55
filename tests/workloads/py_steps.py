#!/usr/bin/python3
"""py_steps.py - a training loop of known steps: train_step() loads, computes and loads
again (native loops: the builtin sum over a range), every 7th step computes three times
as long.  The loop times each step with the monotonic clock.

usage: py_steps.py STEPS OUT.json
OUT.json: {"steps_ns": [ns of each step], "slow": [indexes of the long steps]}"""
import json
import sys
import time

N = 1800000


def load(n):
    return sum(range(n))


def compute(n):
    return sum(range(n))


def train_step(i):
    a = load(N)
    b = compute(6 * N if i % 7 == 6 else 2 * N)
    c = load(N // 2)
    return a + b + c


def main(argv):
    steps, out = int(argv[1]), argv[2]
    times = []
    for i in range(steps):
        t = time.monotonic_ns()
        train_step(i)
        times.append(time.monotonic_ns() - t)
    with open(out, "w") as f:
        json.dump({"steps_ns": times, "slow": [i for i in range(steps) if i % 7 == 6]}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
