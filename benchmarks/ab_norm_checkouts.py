"""A/B of the normalisation kernels between two checkouts, in alternating processes.

Array-level forward + backward (``sandbox.array.norm``) of batch norm + ReLU in
training on the classic UNet's feature maps (batch 8, 16-256 channels, 64² to 4²), of
group norm (4 groups) and of layer norm over rows of 64 and of 4096, float32.  A rebuilt
kernel cannot share a process with the old one, so each round runs one process per
checkout, in turn (the VM this is measured on has slow and fast phases of minutes), and
the medians over rounds are printed with the new/old ratio.  A checkout is a source tree
with its extensions built in place (see ``benchmarks/ab_checkouts.py``):

    git worktree add /tmp/before HEAD~3 && (cd /tmp/before && python setup.py build_ext --inplace)
    python benchmarks/ab_norm_checkouts.py /tmp/before . --threads 1 2
"""

from __future__ import annotations

import argparse
import ast
import statistics
import subprocess
import sys

#: the child: prints {case: median microseconds} for the tree on sys.argv[1]
_CHILD = """
import statistics, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
import sandbox
from sandbox.array import norm
import inspect
OUTPUT_ARG = "output" in inspect.signature(norm.batch_norm_relu_backward).parameters
sandbox.set_num_threads(int(sys.argv[2]))
rng = np.random.default_rng(0)
cases = {}
for shape in [(8, 16, 64, 64), (8, 32, 32, 32), (8, 64, 16, 16), (8, 128, 8, 8), (8, 256, 4, 4)]:
    x = rng.standard_normal(shape, dtype=np.float32)
    g = rng.standard_normal(shape, dtype=np.float32)
    c = shape[1]
    w, b = np.ones(c, np.float32), np.zeros(c, np.float32)
    rm, rv = np.zeros(c, np.float32), np.ones(c, np.float32)

    def bn_relu(x=x, g=g, w=w, b=b, rm=rm, rv=rv):
        out, mean, inv = norm.batch_norm_relu(x, rm, rv, w, b, True, 0.1, 1e-5)
        if OUTPUT_ARG:  # before the backward recomputed ReLU's mask from x
            norm.batch_norm_relu_backward(g, x, out, mean, inv, w, True)
        else:
            norm.batch_norm_relu_backward(g, x, mean, inv, w, b, True)

    cases[f"batch norm + ReLU {shape}"] = bn_relu
x = rng.standard_normal((8, 16, 64, 64), dtype=np.float32)
g = rng.standard_normal(x.shape, dtype=np.float32)


def gn():
    out, mean, inv = norm.group_norm(x, 4)
    norm.group_norm_backward(g, x, mean, inv, 4)


cases["group norm (8, 16, 64, 64), 4 groups"] = gn
for length in (64, 4096):
    w, b = np.ones(length, np.float32), np.zeros(length, np.float32)

    def ln(length=length, w=w, b=b):
        out, mean, rstd = norm.layer_norm(x, length, w, b)
        norm.layer_norm_backward(g, x, mean, rstd, w)

    cases[f"layer norm (8, 16, 64, 64), rows of {length}"] = ln
res = {}
for name, fn in cases.items():
    for _ in range(5):
        fn()
    t = []
    for _ in range(int(sys.argv[3])):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    res[name] = statistics.median(t) * 1e6
print(repr(res))
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs=2, help="the old and the new source tree")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=40, help="timed calls per process")
    args = parser.parse_args(argv)
    from sandbox.runtime import simd

    print(f"cpu: {simd.cpu().describe()}; microseconds, medians over {args.rounds} rounds")
    for threads in args.threads:
        rows: dict = {}
        for _ in range(args.rounds):
            for side, tree in zip(("old", "new"), args.checkouts, strict=True):
                run = subprocess.run([sys.executable, "-c", _CHILD, tree, str(threads),
                                      str(args.calls)], capture_output=True, text=True,
                                     check=True, cwd="/")
                for name, us in ast.literal_eval(run.stdout.strip()).items():
                    rows.setdefault(name, {}).setdefault(side, []).append(us)
        for name, sides in rows.items():
            old, new = statistics.median(sides["old"]), statistics.median(sides["new"])
            print(f"{threads} thread(s) {name:44s} old {old:8.1f} new {new:8.1f} "
                  f"new/old {new / old:.2f}")


if __name__ == "__main__":
    main()
