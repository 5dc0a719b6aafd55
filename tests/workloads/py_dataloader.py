#!/usr/bin/python3
"""py_dataloader.py - a torch DataLoader with 2 worker processes (forked by the loader)
whose work is Python: each item sums a range in a Python loop in load_item(), the main
process sums another in consume().  Writes {"pid", "workers": [pid, ...]} to OUT.

usage: py_dataloader.py OUT.json"""
import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset, get_worker_info


def load_item(i):
    s = 0
    for k in range(30000):  # HOT load_item
        s += k * i
    return s % 1000


class Items(Dataset):
    def __len__(self):
        return 240

    def __getitem__(self, i):
        return torch.tensor([float(load_item(i)), float(get_worker_info().id),
                             float(os.getpid())])


def consume(batch):
    s = 0
    for k in range(20000):  # HOT consume
        s += k
    return s + float(batch[:, 0].sum())


def main(out):
    torch.set_num_threads(1)
    workers = set()
    total = 0.0
    for batch in DataLoader(Items(), batch_size=4, num_workers=2):
        total += consume(batch)
        workers.update(int(p) for p in batch[:, 2].tolist())
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "workers": sorted(workers)}, f)


if __name__ == "__main__":
    main(sys.argv[1])
