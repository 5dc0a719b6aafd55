#!/usr/bin/python3
"""cnn_train.py - a small PyTorch CNN training run on random data (dlprof's reference workload).

conv2d + batchnorm + relu + maxpool blocks, then a linear classifier, trained with SGD on
random tensors: no dataset, no download.  Runs on the CPU with 2 intra-op threads unless
told otherwise, and prints the training speed on the last line:

    cnn_train: 60 steps in 6.012 s, 9.98 steps/s (2 threads, batch 32)

usage: cnn_train.py [--threads N] [--steps N] [--seconds S] [--batch N] [--size HW]
With --seconds, training stops at whichever limit comes first (steps or seconds).
"""
import argparse
import sys
import time

import torch
import torch.nn as nn


def build_model(classes):
    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                nn.BatchNorm2d(cout),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(2)]

    return nn.Sequential(*block(3, 32), *block(32, 64), *block(64, 128),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(128, 256), nn.ReLU(inplace=True),
                         nn.Linear(256, classes))


def main(argv):
    ap = argparse.ArgumentParser(description="small PyTorch CNN training run on random data")
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    ap.add_argument("--steps", type=int, default=60, help="training steps (default 60)")
    ap.add_argument("--seconds", type=float, default=0.0,
                    help="stop after this many seconds of training (default: no limit)")
    ap.add_argument("--batch", type=int, default=32, help="batch size (default 32)")
    ap.add_argument("--size", type=int, default=64, help="image height and width (default 64)")
    ap.add_argument("--warmup", type=int, default=2, help="untimed warm-up steps (default 2)")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.steps < 1 or args.batch < 1 or args.size < 8:
        ap.error("--threads, --steps and --batch must be positive, --size at least 8")

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    classes = 10
    model = build_model(classes)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(args.batch, 3, args.size, args.size)
    y = torch.randint(0, classes, (args.batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(args.warmup):
        step()

    done = 0
    loss = 0.0
    t0 = time.monotonic()
    c0 = time.process_time()
    while done < args.steps:
        loss = step()
        done += 1
        if args.seconds and time.monotonic() - t0 >= args.seconds:
            break
    t = time.monotonic() - t0
    cpu = time.process_time() - c0
    print("cnn_train: loss %.4f" % loss)
    print("cnn_train: %.3f s of CPU in the steps" % cpu)
    print("cnn_train: %d steps in %.3f s, %.2f steps/s (%d threads, batch %d)"
          % (done, t, done / t, torch.get_num_threads(), args.batch))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
