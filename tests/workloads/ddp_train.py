#!/usr/bin/python3
"""ddp_train.py - a distributed CPU training job whose straggler is known: a small CNN
trained with DistributedDataParallel over gloo, one thread per rank, and rank R (--extra-ms
R:MS) runs extra_work() (torch.mm for about MS ms) every step, so the other ranks wait
for it in the gradient all-reduce.  Each rank prints one line at the end:

  TRUTH {"rank", "world_size", "local_rank", "host", "pid", "tid", "steps", "step_ms",
         "extra_ms", "wait_ms", "backward_ms", "nosync_backward_ms", "sync", ...}

step_ms: median wall time of a step; extra_ms: median measured time of extra_work() per
step (0 on the ranks without it); wait_ms: median time per step the rank waits for the
others in the gradient all-reduce (below); tid: the thread that runs the steps.  Those
are over the --steps measured steps, run in train_step() ("step_function"); before them
--calib steps (calib_step(), no all-reduce, extra_work still runs; two more first, not
counted) then --warmup steps (default 1: warmup_step(), all-reduced) make "steps_all".  For a per-step figure over a
count other than --steps: wait_total_ms, extra_total_ms (the measured steps' sums),
wait_all_total_ms and extra_all_total_ms (every step's; a calibration step waits 0).
extra_cpu_total_ms: the measured steps' extra_work() in the thread's CPU time (torch runs
one thread here): what a sampling profiler counts, less than extra_total_ms when the
rank was off the CPU during it (a busy machine).

usage: ddp_train.py [--steps N] [--warmup N] [--extra-ms R:MS[,R:MS...]]
                    [--extra-where mid|before] [--sync ddp|hook|allreduce] [--calib N]
                    [--batch N] [--malloc pinned|glibc]

--malloc pinned (default) fixes glibc malloc's thresholds (mmap at 32 MiB, trim at 1 GiB)
before the model is made: with glibc's own (--malloc glibc), whose mmap threshold moves
with what is freed first, now and then one rank of two identical ones took its page
faults again every step (the relu's output, the max-pool gradient's zeroing): 170-200 ms
of aten::fill_ and as much of clamp_min over 30 steps where the other rank had 4-40 ms,
6 to 17 ms a step of real extra work, steps of 40-52 ms for 28-31 pinned.  A rank
"balanced" by its --extra-ms was then a straggler in fact.

Rendezvous by env:// (MASTER_ADDR, default 127.0.0.1; MASTER_PORT, default 29500); the
rank and world size from RANK/WORLD_SIZE (torchrun, tests/tools/launch-ranks.sh), else
OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE (mpirun), SLURM_PROCID/SLURM_NTASKS (srun),
PMI_RANK/PMI_SIZE.  GLOO_SOCKET_IFNAME picks the interface where the host name does not
resolve (the network namespaces of t9600).

How wait_ms is measured
-----------------------
--sync ddp (default): the real thing, DDP's Reducer all-reduces the one gradient bucket
at the end of loss.backward() and c10d::Reducer::finalize_backward waits for it.  The
wait is loss.backward()'s time minus the same backward without the all-reduce: --calib
(default 5) steps before the warm-up run under model.no_sync() and their median backward
time is subtracted from each synchronised step's backward time (clamped at 0); wait_ms is
the median over the steps.  It counts the all-reduce's own time (what the
straggler itself "waits": 1-8 ms here for ~90 KB of gradients) as waiting, as a profiler
sees it too.
--sync allreduce: a plain model; after backward the workload all-reduces the flattened
gradients itself with dist.all_reduce in allreduce_grads() and times that call (the
waits are then in c10d/gloo all_reduce, not in finalize_backward): a direct measure.

Accuracy (2-core KVM guest, 2 ranks through tests/tools/launch-ranks.sh, --extra-ms 1:60
--steps 30, 3 runs of each mode; rank 1's extra_ms was 60.1 ms every time):
  mode        rank 0 wait_ms      the same steps' calibrated wait   rank 1 wait_ms
  ddp         61.6, 62.4, 68.2    (is the calibrated one)           5.4, 5.4, 8.5
  hook        60.4, 60.5, 61.6    62.0, 60.2, 59.4                  1.8, 5.6, 4.3
  allreduce   62.9, 59.8, 62.6    63.6, 60.8, 64.4                  2.1, 4.8, 3.9
(--sync hook: DDP with a comm hook that notes when the gradients are handed to the
all-reduce; wait = end of backward - that time, a direct measure on DDP's own path.)
The calibrated wait is within 2.2 ms of the direct ones (calib_wait_ms in the TRUTH line
for every mode).  Rank 0's wait is not rank 1's extra_ms exactly: it is the extra time
plus the difference of the two ranks' own forward and backward (they share 2 cores with
the profiler) plus the all-reduce; over 11 runs under dlprof record it was 55.0-67.0 ms
for 60.1 ms.  A profiler's figures are to be compared with each rank's own wait_ms.
"""
import argparse
import ctypes
import json
import os
import socket
import statistics
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn


def env_rank():
    """rank and world size from torchrun's variables, else mpirun's, Slurm's, PMI's"""
    for r, w in (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                 ("SLURM_PROCID", "SLURM_NTASKS"), ("PMI_RANK", "PMI_SIZE")):
        if os.environ.get(r) is not None and os.environ.get(w) is not None:
            return int(os.environ[r]), int(os.environ[w])
    return 0, 1


def local_rank():
    for v in ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"):
        if os.environ.get(v) is not None:
            return int(os.environ[v])
    return 0


def now_ms():
    return time.perf_counter_ns() / 1e6


class Net(nn.Module):
    """a small CNN, no buffers (no BatchNorm): the only collective is the gradients'"""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
            nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))

    def forward(self, x):
        return self.body(x)


EXTRA_A = torch.randn(192, 192)
EXTRA_B = torch.randn(192, 192)


def extra_work(ms):
    """the straggler's own work: matrix products for about ms milliseconds"""
    end = time.perf_counter_ns() + ms * 1e6
    c = EXTRA_A
    n = 0
    while time.perf_counter_ns() < end:
        c = torch.mm(EXTRA_A, EXTRA_B)
        n += 1
    return c, n


def timed_allreduce_hook(hook_at, bucket):
    """--sync hook: DDP's all-reduce, the time it is handed the gradients noted"""
    hook_at.append(now_ms())
    fut = dist.all_reduce(bucket.buffer(), async_op=True).get_future()
    world = dist.get_world_size()
    return fut.then(lambda f: f.value()[0].div_(world))


def allreduce_grads(params, world):
    """--sync allreduce: one all-reduce of all the gradients, averaged"""
    grads = [p.grad for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for g in grads:
        g.copy_(flat[off:off + g.numel()].view_as(g))
        off += g.numel()


def pin_malloc():
    """--malloc pinned: glibc's mmap and trim thresholds fixed (mallopt), so that the
    same step reuses the same heap memory on every rank"""
    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_threshold = -1, -3
    if not (libc.mallopt(m_mmap_threshold, 32 << 20) and libc.mallopt(m_trim_threshold, 1 << 30)):
        sys.exit("ddp_train.py: mallopt refused the thresholds (not glibc?)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--calib", type=int, default=5)
    ap.add_argument("--extra-ms", default="")
    ap.add_argument("--extra-where", choices=("mid", "before"), default="mid")
    ap.add_argument("--sync", choices=("ddp", "hook", "allreduce"), default="ddp")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--malloc", choices=("pinned", "glibc"), default="pinned")
    args = ap.parse_args()
    if args.malloc == "pinned":
        pin_malloc()

    rank, world = env_rank()
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(world)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    extra = {}
    for spec in filter(None, args.extra_ms.split(",")):
        r, ms = spec.split(":")
        extra[int(r)] = float(ms)
    my_extra = extra.get(rank, 0.0)

    torch.set_num_threads(1)
    torch.manual_seed(1234 + rank)
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    torch.manual_seed(0)
    model = Net()
    hook_at = []
    if args.sync in ("ddp", "hook"):
        net = nn.parallel.DistributedDataParallel(model, broadcast_buffers=False)
        if args.sync == "hook":
            net.register_comm_hook(hook_at, timed_allreduce_hook)
    else:
        net = model
        for p in model.parameters():
            dist.broadcast(p.data, 0)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    torch.manual_seed(100 + rank)
    x = torch.randn(args.batch, 3, 32, 32)
    y = torch.randint(0, 10, (args.batch,))

    # The measured steps run in train_step() (report --steps train_step counts them); the
    # warm-up and calibration steps in warmup_step() and calib_step(), so a step count
    # from the stacks can tell them apart.  All three run the same run_step().
    def train_step(record):
        run_step(True, record)

    def warmup_step(record):
        run_step(True, record)

    def calib_step(record):
        # no_sync must cover the forward: that is where DDP arms the all-reduce
        with net.no_sync() if args.sync != "allreduce" else nullctx():
            run_step(False, record)

    def run_step(sync, record):
        t0 = now_ms()
        opt.zero_grad(set_to_none=False)
        ex = ex_cpu = 0.0
        if my_extra and args.extra_where == "before":
            e0, c0 = now_ms(), time.thread_time_ns()
            extra_work(my_extra)
            ex, ex_cpu = now_ms() - e0, (time.thread_time_ns() - c0) / 1e6
        out = net(x)
        loss = loss_fn(out, y)
        if my_extra and args.extra_where == "mid":
            e0, c0 = now_ms(), time.thread_time_ns()
            extra_work(my_extra)
            ex, ex_cpu = now_ms() - e0, (time.thread_time_ns() - c0) / 1e6
        b0 = now_ms()
        wait = None
        if sync and args.sync == "ddp":
            loss.backward()
        elif sync and args.sync == "hook":
            hook_at.clear()
            loss.backward()
            wait = now_ms() - hook_at[0]
        elif sync:
            loss.backward()
            a0 = now_ms()
            allreduce_grads(params, world)
            wait = now_ms() - a0
        else:
            loss.backward()
        b1 = now_ms()
        opt.step()
        t1 = now_ms()
        if record is not None:
            record.append({"step": t1 - t0, "extra": ex, "extra_cpu": ex_cpu,
                           "backward": b1 - b0, "wait": wait, "synced_at": b1})

    # calibration first (its first two steps warm up and are not counted), then the
    # ranks lined up, then the all-reduced warm-up: a profiler that counts steps by the
    # waits in the all-reduce finds the measured ones between the end of the warm-up's
    # last wait and the end of the last step's
    calib = []
    for _ in range(args.calib + 2):
        calib_step(calib)
    calib = calib[2:]
    dist.barrier()
    warm = []
    for _ in range(args.warmup):
        warmup_step(warm)
    steps = []
    for _ in range(args.steps):
        train_step(steps)
    dist.barrier()

    nosync = statistics.median(s["backward"] for s in calib) if calib else 0.0
    if args.sync == "ddp":
        waits = [max(0.0, s["backward"] - nosync) for s in steps]
    else:
        waits = [s["wait"] for s in steps]
    calib_waits = [max(0.0, s["backward"] - nosync) for s in steps]
    # every step of the process, for a per-step figure over all of them: the warm-up's
    # waits measured as the mode measures them, the calibration steps' as 0
    warm_waits = [max(0.0, s["backward"] - nosync) if s["wait"] is None else s["wait"]
                  for s in warm]
    all_steps = warm + calib + steps
    truth = {
        "rank": rank, "world_size": world, "local_rank": local_rank(),
        "host": socket.gethostname(), "pid": os.getpid(), "tid": threading.get_native_id(),
        "steps": len(steps), "sync": args.sync, "extra_where": args.extra_where,
        "malloc": args.malloc,
        "step_ms": round(statistics.median(s["step"] for s in steps), 3),
        "extra_ms": round(statistics.median(s["extra"] for s in steps), 3),
        "wait_ms": round(statistics.median(waits), 3),
        "wait_mean_ms": round(statistics.mean(waits), 3),
        "backward_ms": round(statistics.median(s["backward"] for s in steps), 3),
        "nosync_backward_ms": round(nosync, 3),
        "calib_wait_ms": round(statistics.median(calib_waits), 3),
        "step_function": "train_step", "warmup_steps": len(warm), "calib_steps": len(calib),
        "steps_all": len(all_steps),
        "wait_total_ms": round(sum(waits), 3),
        "extra_total_ms": round(sum(s["extra"] for s in steps), 3),
        "extra_cpu_total_ms": round(sum(s["extra_cpu"] for s in steps), 3),
        "synced_ns": [round(s["synced_at"] * 1e6) for s in steps],
        "wait_all_total_ms": round(sum(warm_waits) + sum(waits), 3),
        "extra_all_total_ms": round(sum(s["extra"] for s in all_steps), 3),
    }
    dist.destroy_process_group()
    sys.stdout.write("TRUTH " + json.dumps(truth, sort_keys=True) + "\n")
    sys.stdout.flush()
    # Out here, main()'s locals still held: with --sync hook, torch 1.13's
    # ~ProcessGroupGloo (the last reference, dropped by ~Reducer as the locals went)
    # joined a gloo worker that waited for the GIL to free a tensor of the hook's,
    # while the thread that joined held it: a rank hung there, its TRUTH line written,
    # in 1 of 4 runs of t9600, and once in a CI run when this exit came after main()
    # returned.  The process group is destroyed above; nothing else is owed.
    sys.stderr.flush()
    os._exit(0)


class nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


if __name__ == "__main__":
    main()
