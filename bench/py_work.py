#!/usr/bin/python3
"""py_work.py - a fixed amount of Python-heavy work with deep and changing stacks (the
worst case for reading Python frames: the running frame changes all the time), timed by
itself.  usage: py_work.py [ITERATIONS]; prints "py_work: N iterations in X s"."""
import sys
import time


class Node:
    def __init__(self, v):
        self.v = v

    def score(self, k):
        return helper(self.v, k) + self.v % 7


def helper(v, k):
    return sum(i * v for i in range(k)) if k else v


def walk(nodes, depth):
    if depth:
        return walk(nodes, depth - 1) + 1
    return sum(n.score(20) for n in nodes)


def main(n):
    nodes = [Node(i) for i in range(200)]
    t = time.monotonic()
    total = 0
    for _ in range(n):
        total += walk(nodes, 10)
    print("py_work: %d iterations in %.3f s (%d)" % (n, time.monotonic() - t, total % 1000))


main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
