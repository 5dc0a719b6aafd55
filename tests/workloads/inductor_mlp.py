"""inductor_mlp.py - a torch.compile'd MLP (Linear, GELU, LayerNorm: Inductor fuses the
last two into one C++ kernel), run for a fixed time after compiling.

    python3 inductor_mlp.py [SECONDS]

Prints the truth a profile is checked against: the ATen operators the model runs
eagerly (each one torch dispatches, seen by a TorchDispatchMode), each C++ kernel the
generated modules define, as Inductor names it, and the calls made:

    inductor: eager ops addmm gelu native_layer_norm t
    inductor: kernel cpp_fused_gelu_native_layer_norm_0
    inductor: calls N seconds S
"""
import glob
import os
import re
import sys
import tempfile
import time

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class OpLog(TorchDispatchMode):
    """the ATen operators dispatched below autograd, by their names"""
    def __init__(self):
        super().__init__()
        self.ops = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def main():
    secs = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    torch.set_num_threads(1)
    m = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.LayerNorm(256))
    cm = torch.compile(m)
    x = torch.randn(512, 256)
    with torch.no_grad():
        log = OpLog()
        with log:
            m(x)
        print("inductor: eager ops", " ".join(sorted(log.ops)), flush=True)
        cm(x)
        t0, n = time.time(), 0
        while time.time() - t0 < secs:
            cm(x)
            n += 1
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "torchinductor_" + os.environ.get("USER", "root"))
    names = set()
    for py in glob.glob(os.path.join(cache, "*", "*.py")):
        with open(py, errors="replace") as f:
            names.update(re.findall(r"^(\w+) = async_compile\.cpp_pybinding\(", f.read(), re.M))
    for name in sorted(names):
        print("inductor: kernel", name)
    print("inductor: calls %d seconds %.2f" % (n, time.time() - t0))


if __name__ == "__main__":
    main()
