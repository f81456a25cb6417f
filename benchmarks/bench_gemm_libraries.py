"""The convolutions' float32 GEMM shapes in three libraries, 1 thread: the project's
AVX-512 kernel, numpy's BLAS (with whatever core type ``OPENBLAS_CORETYPE`` gives it)
and BLIS through cython-blis (``pip install blis``; skipped when absent).

The question it answers is the developers' guide's: where a maintained library is as
fast as the hand-written kernel on the CPUs measured, prefer the library.  GFLOP/s of
the fastest of ``--repeat`` interleaved calls (CPU time of the calling thread).

    python benchmarks/bench_gemm_libraries.py
    OPENBLAS_CORETYPE=SkylakeX python benchmarks/bench_gemm_libraries.py
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

#: (M, K, N) of im2col and Winograd products in the classic UNet (batch 8)
SHAPES = [(16, 144, 32768), (32, 288, 8192), (64, 576, 2048), (128, 1152, 512),
          (64, 64, 1152), (16, 16, 2048), (256, 2304, 128)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.cli.info import blas_info
    from sandbox.runtime import simd

    sandbox.set_num_threads(1)
    try:
        import blis.py as blis_py
    except ImportError:
        blis_py = None
    blas = ", ".join(f"{b['internal_api']} {b['version']} {b['architecture']}" for b in blas_info())
    print(f"cpu: {simd.cpu().describe()}; numpy BLAS: {blas}; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE')}; cython-blis: "
          f"{'yes' if blis_py else 'not installed'}")
    rng = np.random.default_rng(0)
    for m, k, n in SHAPES:
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        calls = _calls(a, b, np.empty((m, n), np.float32), blis_py)
        for f in calls.values():
            f()
        best = {name: float("inf") for name in calls}
        for _ in range(args.repeat):
            for name, f in calls.items():
                t = time.thread_time()
                f()
                best[name] = min(best[name], time.thread_time() - t)
        flops = 2 * m * k * n
        print(f"{m}x{k}x{n}: " + "  ".join(f"{name} {flops / t / 1e9:6.1f}"
                                           for name, t in best.items()))


def _calls(a, b, out, blis_py) -> dict:
    """``out = a @ b`` by each library this machine has."""
    from sandbox.array import _gemm
    from sandbox.runtime import simd

    def ours():
        with simd.using(isa="avx512", gemm="avx512"):
            _gemm.matmul(a, b, out)

    calls = {"numpy-blas": lambda: np.matmul(a, b, out=out)}
    if "avx512" in simd.supported_paths():
        calls["sandbox-avx512"] = ours
    if blis_py is not None:
        calls["blis"] = lambda: blis_py.gemm(a, b, out=out)
    return calls


if __name__ == "__main__":
    main()
