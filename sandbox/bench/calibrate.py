"""``sandbox calibrate``: time the kernel choices that depend on the microarchitecture.

The choices, their defaults and the file that keeps the winners per machine are
:mod:`sandbox.runtime.calibration`; this module holds the workloads that measure them
(some convolution layers of a classic UNet step, on the avx512 and the avx2 path, and a
2-D grid sampling forward and backward), interleaved, by medians.
"""

from __future__ import annotations

import datetime
import statistics
import time

from ..runtime import calibration

__all__ = ["CONV_LAYERS", "MARGIN", "calibrate"]

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


# Convolution layers of a classic UNet step (batch 8; in, out channels, pixels): the
# first layer, a Winograd layer at each of three levels and the 1x1 head.
CONV_LAYERS = ((1, 16, 64, 3), (16, 16, 64, 3), (64, 64, 16, 3), (128, 128, 8, 3),
               (16, 2, 64, 1))


def _conv_calls(isa: str, kernel: str):
    """Forward and both gradients of CONV_LAYERS on the ``isa`` path, by the project's
    ``kernel`` GEMM or by BLAS: the products as a step runs them, with the step's threads
    (the project's kernels share a batch's products inside one parallel region, BLAS
    runs one product a chunk, so a 1-thread product says little about a 2-thread step:
    on the AMD EPYC family 25 VM, OpenBLAS's SkylakeX kernels were 2 % slower on these
    layers at 1 thread and 35 % slower at 2)."""
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
            with using(isa=isa, gemm=gemm):
                for x, w, g, pad in layers:
                    conv.conv2d(x, w, None, 1, pad)
                    conv.conv2d_backward(g, x, w, 1, pad)
        return call

    return {kernel: run(kernel), "blas": run("blas")}


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
    The convolutions run on the process's threads, the gathers on 1 thread; a few
    seconds in all.  The choice takes effect in processes started afterwards (a running
    one keeps what it read first).
    """
    from .._C import _gemm, _grid_sample
    from ..runtime.simd import cpu, supported_paths
    from ..runtime.threads import get_num_threads, set_num_threads

    choices, timings = {}, {}
    layer_repeat = max(3, repeat // 5)
    if "avx2" in supported_paths() and _gemm.avx2_available():
        timings["gemm_avx2"] = _median_ms(_conv_calls("avx2", "avx2"), layer_repeat, timer)
        choices["gemm_avx2"] = _winner(timings["gemm_avx2"], "avx2")
    if "avx512" in supported_paths() and _gemm.available():
        timings["gemm"] = _median_ms(_conv_calls("avx512", "avx512"), layer_repeat, timer)
        choices["gemm"] = _winner(timings["gemm"], "avx512")
    previous = get_num_threads()
    set_num_threads(1)
    try:
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
