"""A/B of the user-written UNet step under several configurations, interleaved in one process.

Each round takes one Adam step (the bench's ``unet-user`` step) under every
configuration in turn, after two untimed steps each; the medians are printed.  A
configuration is an ``isa:gemm`` pair (``sandbox.runtime.simd.using``), optionally
followed by ``+KNOB=VALUE`` convolution settings (``sandbox.array.conv.tuned``), e.g.
the AVX2 path with its AVX2 GEMM against the same path with numpy's BLAS, or the
Winograd passes with and without their chunks on one thread each:

    python benchmarks/ab_simd_step.py --threads 2 --size 64 avx2:avx2 avx2:blas
    python benchmarks/ab_simd_step.py --threads 2 avx512:avx512 avx512:avx512+winograd_fused=0
    python benchmarks/ab_simd_step.py --threads 1 --volume nearest --rounds 8 \
        avx512:avx512 avx512:avx512+winograd_one_region=0

``--volume MODE`` steps the bench's 3-D UNet instead (``unet3d-step/MODE``: 32³, batch 2;
``--size`` and ``--mode`` ignored).  The order of the configurations rotates from round to
round; besides each one's median, its paired ratio to the first configuration (the median
over rounds of the two steps' ratio) is printed.

``--phases`` probes the VM's phase before every round (``sandbox.bench._env.cross_core_cost``
in a subprocess, so that its pinned threads leave this process's alone) and gives the
quiet rounds (ratio below 1.15) and the slow ones (1.3 and more) apart as well; with
``--seconds`` the rounds go on for that long:

    python benchmarks/ab_simd_step.py --threads 2 --phases --seconds 300 \
        avx512:avx512 avx512:avx512+winograd_fused_pieces=2
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

#: the VM's phase: how much longer two pinned threads take to read each other's data
_PROBE = ("from sandbox.bench._env import cross_core_cost as c; r = c(0.2); "
          "print(r['ratio'] if r else 'nan')")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("selections", nargs="+",
                        help="isa:gemm[+KNOB=VALUE...], e.g. avx2:blas or "
                             "avx512:avx512+winograd_fused=0")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--volume", metavar="MODE", default=None,
                        help="step the bench's 3-D UNet with this upsampling mode")
    parser.add_argument("--phases", action="store_true",
                        help="probe the VM's phase before every round; quiet and slow "
                             "rounds apart")
    parser.add_argument("--seconds", type=float, default=None,
                        help="rounds for this long instead of --rounds")
    args = parser.parse_args(argv)

    import contextlib

    import sandbox
    from sandbox.array import conv
    from sandbox.bench._cases_3d import UNET3D_BATCH
    from sandbox.bench._cases_user import profiled_step
    from sandbox.runtime import simd

    sandbox.set_num_threads(args.threads)
    batch = 4 if args.size >= 256 else 8
    step = profiled_step(args.volume, args.size, batch, args.mode)
    what = (f"3-D UNet step, batch {UNET3D_BATCH}, {args.volume}" if args.volume
            else f"{args.size}^2, batch {batch}, {args.mode}")

    def parse(text):
        pair, *knobs = text.split("+")
        settings = {}
        for item in knobs:
            key, value = item.split("=", 1)
            default = getattr(conv.TUNING, key)
            kind = int if default is None else type(default)  # None: an optional count
            settings[key] = (value.lower() in ("1", "true", "on") if kind is bool
                             else kind(value))
        return dict(zip(("isa", "gemm"), pair.split(":"), strict=True)), settings

    @contextlib.contextmanager
    def configured(sel):
        with simd.using(**sel[0]), conv.tuned(**sel[1]):
            yield

    selections = {s: parse(s) for s in args.selections}
    for sel in selections.values():
        with configured(sel):
            step()
            step()
    names = list(selections)
    times = {name: [] for name in names}
    phases = []
    end = None if args.seconds is None else time.perf_counter() + args.seconds
    r = 0
    while r < args.rounds if end is None else (time.perf_counter() < end or r < 2):
        if args.phases:
            probe = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True,
                                   text=True, check=True)
            phases.append(float(probe.stdout))
        for name in names[r % len(names):] + names[:r % len(names)]:  # rotating order
            with configured(selections[name]):
                start = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - start)
        r += 1
    print(f"cpu: {simd.cpu().describe()}; {args.threads} thread(s), {what}; median ms per "
          f"step of {r} interleaved rounds; paired: over the first configuration")
    _report(times, names, range(r))
    if args.phases:
        for label, keep in (("quiet (cross < 1.15)", lambda x: x < 1.15),
                            ("slow (cross >= 1.3)", lambda x: x >= 1.3)):
            rounds = [i for i, x in enumerate(phases) if keep(x)]
            print(f"{label}: {len(rounds)} rounds")
            if rounds:
                _report(times, names, rounds)


def _report(times, names, rounds) -> None:
    """Each configuration's median and paired ratio over ``rounds``."""
    first = [times[names[0]][i] for i in rounds]
    for name in names:
        t = [times[name][i] for i in rounds]
        paired = statistics.median(a / b for a, b in zip(t, first, strict=True))
        print(f"  {name:36s} {1e3 * statistics.median(t):8.1f}   paired {paired:.3f}")


if __name__ == "__main__":
    main()
