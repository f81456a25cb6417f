"""``sandbox calibrate``: time the kernel choices that depend on the microarchitecture.

The choices, their defaults and the file that keeps the winners per machine are
:mod:`sandbox.runtime.calibration`; this module holds the workloads that measure them
(the products of a classic UNet step's convolutions, some of its convolution layers on
the avx2 path, and a 2-D grid sampling forward and backward), interleaved, by medians.
"""

from __future__ import annotations

import datetime
import statistics
import time

from ..runtime import calibration

__all__ = ["CONV_LAYERS", "GEMM_SHAPES", "MARGIN", "calibrate"]

#: a candidate replaces the default only when it is at least this much faster
MARGIN = 1.10


def _median_ms(calls: dict, repeat: int, timer) -> dict:
    """Interleaved medians (ms) of each call, after one untimed call each."""
    for f in calls.values():
        f()
    times = {name: [] for name in calls}
    for _ in range(repeat):
        for name, f in calls.items():
            t = timer()
            f()
            times[name].append(timer() - t)
    return {name: 1e3 * statistics.median(v) for name, v in times.items()}


# The convolutions' products of a classic UNet step (batch 8, 64x64): im2col GEMMs
# (out channels x in channels * 9 x pixels) and Winograd point products.
GEMM_SHAPES = ((16, 27, 32768), (32, 144, 8192), (64, 288, 2048), (128, 576, 512),
               (64, 64, 1152))


def _gemm_calls():
    import numpy as np

    from ..array import _gemm
    from ..runtime.simd import using

    rng = np.random.default_rng(0)
    ops = [(rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((k, n), dtype=np.float32), np.empty((m, n), np.float32))
           for m, k, n in GEMM_SHAPES]

    def run(gemm):
        def call():
            with using(gemm=gemm):
                for a, b, out in ops:
                    _gemm.matmul(a, b, out)
        return call

    return {"avx512": run("avx512"), "blas": run("blas")}


# Convolution layers of a classic UNet step (batch 8; in, out channels, pixels): the
# first layer, a Winograd layer at each of three levels and the 1x1 head.
CONV_LAYERS = ((1, 16, 64, 3), (16, 16, 64, 3), (64, 64, 16, 3), (128, 128, 8, 3),
               (16, 2, 64, 1))


def _conv_calls():
    """Forward and both gradients of CONV_LAYERS on the avx2 path, by its AVX2 kernel or
    by BLAS: the GEMMs as a step runs them, with the step's threads."""
    import numpy as np

    from ..array import conv
    from ..runtime.simd import using

    rng = np.random.default_rng(2)
    layers = []
    for cin, cout, px, k in CONV_LAYERS:
        x = rng.standard_normal((8, cin, px, px), dtype=np.float32)
        w = rng.standard_normal((cout, cin, k, k), dtype=np.float32)
        layers.append((x, w, rng.standard_normal((8, cout, px, px), dtype=np.float32), k // 2))

    def run(gemm):
        def call():
            with using(isa="avx2", gemm=gemm):
                for x, w, g, pad in layers:
                    conv.conv2d(x, w, None, 1, pad)
                    conv.conv2d_backward(g, x, w, 1, pad)
        return call

    return {"avx2": run("avx2"), "blas": run("blas")}


def _grid_calls():
    import numpy as np

    from ..array.grid_sample import _checks, _dispatch

    rng = np.random.default_rng(1)
    n, c, h, w = 2, 4, 64, 64
    x = rng.standard_normal((n, c, h, w), dtype=np.float32)
    axes = [((2 * np.arange(s) + 1) / s - 1) for s in (h, w)]
    gy_, gx_ = np.meshgrid(*axes, indexing="ij")
    grid = np.stack([gx_ + 0.05 * np.sin(3 * gy_), gy_ + 0.05 * np.cos(3 * gx_)], -1)
    grid = np.ascontiguousarray(np.broadcast_to(grid, (n, h, w, 2)), dtype=np.float32)
    gyo = rng.standard_normal((n, c, h, w), dtype=np.float32)

    plan = _checks.plan(x, grid, "bilinear", "zeros", False)

    def run(isa):  # bilinear, zeros padding, align_corners=False: forward and both gradients
        def call():
            _dispatch.forward(x, grid, plan, isa=isa)
            _dispatch.backward(gyo, x, grid, plan, True, True, isa=isa)
        return call

    # "portable": the loops the avx2 path runs (their coordinate pass in AVX2 where the
    # CPU has it)
    return {"avx512": run(2), "portable": run(1 if _dispatch._AVX2 else 0)}


def _winner(medians: dict, default: str) -> str:
    best = min(medians, key=medians.get)
    return best if medians[default] > MARGIN * medians[best] else default


def calibrate(repeat: int = 25, timer=time.perf_counter,
              write: bool = True) -> calibration.Calibration:
    """Time the candidates of every choice this machine has, pick the winners, and (with
    ``write``) store them as this machine's entry of the calibration file
    (:func:`sandbox.runtime.calibration.cache_file`).

    A choice whose candidates the CPU cannot run keeps its default and is not timed.
    A candidate replaces the default only when it is at least ``MARGIN`` times faster.
    The products and gathers run on 1 thread, the avx2 path's convolutions on the
    process's threads; a few seconds in all.  The choice takes effect in processes
    started afterwards (a running one keeps what it read first).
    """
    from .._C import _gemm, _grid_sample
    from ..runtime.simd import cpu, supported_paths
    from ..runtime.threads import get_num_threads, set_num_threads

    choices, timings = {}, {}
    if "avx2" in supported_paths() and _gemm.avx2_available():
        timings["gemm_avx2"] = _median_ms(_conv_calls(), max(3, repeat // 5), timer)
        choices["gemm_avx2"] = _winner(timings["gemm_avx2"], "avx2")
    previous = get_num_threads()
    set_num_threads(1)
    try:
        if "avx512" in supported_paths() and _gemm.available():
            timings["gemm"] = _median_ms(_gemm_calls(), repeat, timer)
            choices["gemm"] = _winner(timings["gemm"], "avx512")
        if "avx512" in supported_paths() and _grid_sample.isa_available() == 2:
            timings["grid_gathers"] = _median_ms(_grid_calls(), repeat, timer)
            choices["grid_gathers"] = _winner(timings["grid_gathers"], "avx512")
    finally:
        set_num_threads(previous)
    when = datetime.datetime.now().isoformat(timespec="seconds")
    cal = calibration.Calibration(key=calibration.machine_key(), choices=choices,
                                  timings=timings, when=when, cpu=cpu().describe())
    if write:
        calibration.save(cal)
    return cal
