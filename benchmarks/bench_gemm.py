"""The convolutions' float32 GEMM against numpy's BLAS, on the shapes the layers use.

For each shape ``P x (M x K) @ (K x N)`` (P batched products): numpy's ``matmul``
(whatever BLAS and core type the machine gives it), the project's AVX-512 kernel
with A packed, with A read in place (its rows adjacent in memory, as the
convolutions lay out their weights), and the dot-product form where it applies
(B given transposed, K contiguous on both sides).  GFLOP/s of the best of
``--repeat`` calls, BLAS limited to one thread.  The numbers quoted in
docs/convolution.md come from this script.

    python benchmarks/bench_gemm.py [--repeat 200]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from sandbox._C import _gemm

#: (P, M, K, N, where it occurs)
SHAPES = [
    (1, 2048, 2048, 2048, "square"),
    (1, 256, 2304, 64, "im2col, 256 ch @4x4"),
    (16, 128, 384, 128, "F(2x2) points, 384->128 @8"),
    (16, 256, 256, 32, "F(2x2) points, 256 ch @4x4"),
    (36, 16, 16, 512, "F(4x4) points, 16 ch"),
    (16, 64, 64, 128, "F(2x2) points, 64 ch @16"),
]
#: weight-gradient shapes (P, M, K, N): B comes transposed
DOT_SHAPES = [(36, 16, 256, 16), (36, 32, 128, 32), (4, 64, 128, 64), (4, 64, 128, 192)]


def best(fn, repeat):
    fn()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def rates(a, a_in_place, b, bt, repeat):
    """GFLOP/s of BLAS, the kernel with A packed, with A in place, and (``bt`` given) the
    dot-product form."""
    p, m, k = a.shape
    out = np.empty((p, m, b.shape[2]), dtype=np.float32)
    flops = 2.0 * p * m * b.shape[2] * k / 1e9
    return [flops / best(lambda: np.matmul(a, b, out=out), repeat),
            flops / best(lambda: _gemm.matmul(a, b, out), repeat),
            flops / best(lambda: _gemm.matmul(a_in_place, b, out), repeat),
            flops / best(lambda: _gemm.matmul_dot(a, bt, out), repeat) if bt is not None
            else None]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args(argv)
    if not _gemm.available():
        raise SystemExit("this CPU has no AVX-512: the project's kernel does not run here")
    rng = np.random.default_rng(0)
    threadpool_limits(1, user_api="blas")
    print(f"{'P, M, K, N':>22}  {'BLAS':>6}  {'packed':>6}  {'A in place':>10}  {'dot':>5}  where")
    for p, m, k, n, where in SHAPES + [(*s, "weight gradient") for s in DOT_SHAPES]:
        reps = max(3, args.repeat // 40) if m * n * k > 1e8 else args.repeat
        a = rng.standard_normal((p, m, k), dtype=np.float32)
        a_in_place = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
        dot = (p, m, k, n) in DOT_SHAPES
        bt = rng.standard_normal((p, n, k), dtype=np.float32)
        b = bt.transpose(0, 2, 1) if dot else np.ascontiguousarray(bt.transpose(0, 2, 1))
        row = rates(a, a_in_place, b, bt if dot else None, reps)
        cells = [f"{v:6.0f}" if v is not None else f"{'—':>6}" for v in row]
        print(f"{str((p, m, k, n)):>22}  {cells[0]}  {cells[1]}  {cells[2]:>10}  {cells[3]:>5}"
              f"  {where}")


if __name__ == "__main__":
    main()
