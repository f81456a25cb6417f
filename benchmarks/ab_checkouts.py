"""A/B of the user-written UNet step between two checkouts, in alternating processes.

For changes that no setting switches (Python paths, rebuilt kernels), the two versions
cannot share a process: each round runs one short process per checkout, in turn, each
timing a few Adam steps of the bench's ``unet-user`` model after warm-up steps, and the
medians over rounds are printed with the loss each checkout reached (the same value when
the change keeps the bits).  A checkout is a source tree with its extensions built in
place, e.g. a worktree of the older commit, built (its kernels and its compiled Python
layer), or with the current build's kernels copied in when no ``.pyx`` changed; its Python
then runs from source unless it is built too, which the ``python`` column shows
(``compiled/from source`` module counts, or ``source``): compare like with like.

    git worktree add /tmp/before HEAD~3
    (cd /tmp/before && python setup.py build_ext --inplace)   # or copy sandbox/_C/*.so
    python benchmarks/ab_checkouts.py /tmp/before . --threads 2 --rounds 10
    python benchmarks/ab_checkouts.py /tmp/before . --threads 2 --volume nearest   # 3-D
    python benchmarks/ab_checkouts.py . . --threads 2   # A/A: the noise of the comparison

A checkout may carry environment settings for its processes, ``TREE+VAR=VALUE[+...]``,
to compare settings read at start-up (the OpenMP runtime's, for instance):

    python benchmarks/ab_checkouts.py .+GOMP_SPINCOUNT=10000 .+GOMP_SPINCOUNT=100000

Alternate rounds, not blocks of runs: the VM this project is measured on has slow and
fast phases of minutes.  The order of the two sides alternates from round to round.
Besides each side's medians, the paired ratio (second over first, per round) gives its
median and how many rounds the second side won; at 2 threads, the rounds are also told
apart by the VM's phase (the cost of an empty OpenMP region each process measures after
its steps, above ``SLOW_REGION_US`` in either process of a round: a slow phase) and the
ratios of each kind given apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

#: the child: times ``steps`` steps after ``warmup`` and prints "forward backward
#: optimiser" medians in ms and the final loss
_CHILD = """
import statistics, sys, time
import numpy as np
import sandbox
from sandbox.bench._cases_user import user_unet
threads, size, batch, warmup, steps = (int(v) for v in sys.argv[1:6])
mode, volume = sys.argv[6], sys.argv[7] == "1"
sandbox.set_num_threads(threads)
sandbox.manual_seed(0)
rng = np.random.default_rng(0)
if volume:  # the bench's 3-D UNet (unet3d-step/MODE): its widths, batch and volume
    from sandbox.bench._cases_3d import UNET3D, UNET3D_BATCH, UNET3D_SIZE
    model = sandbox.nn.UNet(**UNET3D, upsample=mode, spatial_dims=3)
    shape = (UNET3D_BATCH, UNET3D["in_channels"]) + (UNET3D_SIZE,) * 3
    labels = (UNET3D_BATCH,) + (UNET3D_SIZE,) * 3
    classes = UNET3D["num_classes"]
else:
    model = user_unet(sandbox, mode=mode)
    shape, labels, classes = (batch, 1, size, size), (batch, size, size), 2
x = sandbox.from_numpy(rng.standard_normal(shape).astype(np.float32))
y = sandbox.from_numpy(rng.integers(0, classes, size=labels))
opt = sandbox.optim.Adam(model.parameters(), lr=1e-3)
F = sandbox.nn.functional
times = [[], [], []]
for r in range(warmup + steps):
    t0 = time.perf_counter()
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    t1 = time.perf_counter()
    loss.backward()
    t2 = time.perf_counter()
    opt.step()
    t3 = time.perf_counter()
    if r >= warmup:
        for acc, dt in zip(times, (t1 - t0, t2 - t1, t3 - t2)):
            acc.append(dt * 1e3)
try:  # the VM's phase right after the timed steps (a checkout without it: nan)
    from sandbox.bench._env import region_cost
    region = (region_cost(threads, calls=500) or {}).get("spinning_us", float("nan"))
except ImportError:
    region = float("nan")
try:  # how its Python ran: compiled modules / modules from source (sandbox info's line)
    from sandbox.runtime import compiled as _layer
    _s = _layer.status()
    layer = "source" if _s["all_source_because"] else f"{len(_s['compiled'])}/{len(_s['source'])}"
except ImportError:  # a checkout from before the compiled layer: all source
    layer = "source"
print(*(f"{statistics.median(t):.3f}" for t in times), f"{float(loss.item()):.9g}",
      f"{region:.3f}", layer)
"""


def _split(spec: str) -> tuple[str, dict]:
    """``TREE+VAR=VALUE+...`` -> (TREE, {VAR: VALUE})."""
    tree, *settings = spec.split("+")
    env = {}
    for item in settings:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SystemExit(f"ab_checkouts: {item!r} in {spec!r} is not VAR=VALUE")
        env[name] = value
    return tree, env


def _run(spec: str, args) -> list[str]:
    tree, settings = _split(spec)
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), **settings)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(args.threads), str(args.size), str(args.batch),
         str(args.warmup), str(args.steps), args.volume or args.mode,
         "1" if args.volume else "0"],
        env=env, cwd=os.path.abspath(tree), capture_output=True, text=True, check=True)
    return out.stdout.split()


#: an empty 2-thread OpenMP region back to back above this many microseconds marks a slow
#: phase of the VM: its two vCPUs on different caches (1.6 us quiet, 2.5 us slow on the
#: Zen 5 VM of December 2026; see benchmarks/cross_core.py)
SLOW_REGION_US = 2.0


def _region(row: list) -> float:
    """A child's empty-region cost in microseconds (nan where it could not measure it)."""
    return float(row[4]) if len(row) > 4 else float("nan")


def _by_phase(ratios: list, regions: list) -> None:
    """The paired ratios of the quiet and of the slow rounds apart (by the region's cost
    measured before each round), when both kinds occurred."""
    marked = [(r, g) for r, g in zip(ratios, regions, strict=True) if g == g]  # not nan
    slow = [r for r, g in marked if g > SLOW_REGION_US]
    quiet = [r for r, g in marked if g <= SLOW_REGION_US]
    for name, group in (("quiet", quiet), ("slow", slow)):
        if group and len(group) < len(marked):
            print(f"  {name} rounds (empty region {'above' if name == 'slow' else 'at most'} "
                  f"{SLOW_REGION_US} us): {len(group)}, paired median "
                  f"{statistics.median(group):.3f} (range {min(group):.3f}-{max(group):.3f})")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs=2,
                        help="two source trees with built extensions (TREE[+VAR=VALUE...])")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--volume", metavar="MODE", default=None,
                        help="the bench's 3-D UNet step (unet3d-step/MODE: its volume and "
                             "batch; --size, --batch and --mode are then ignored)")
    args = parser.parse_args(argv)

    from sandbox.runtime import simd

    what = (f"3-D UNet step, {args.volume}" if args.volume
            else f"{args.size}^2, batch {args.batch}, {args.mode}")
    print(f"cpu: {simd.cpu().describe()}; {args.threads} thread(s), {what}; medians of "
          f"{args.rounds} alternating rounds of {args.steps} steps each, ms")
    results = ([], [])  # by side: the same checkout may be given twice (an A/A run)
    start = time.perf_counter()
    for r in range(args.rounds):
        for side in ((0, 1) if r % 2 == 0 else (1, 0)):  # the order alternates
            results[side].append(_run(args.checkouts[side], args))
    for tree, rows in zip(args.checkouts, results, strict=True):
        step = statistics.median(sum(float(v) for v in r[:3]) for r in rows)
        fwd, bwd, opt = (statistics.median(float(r[i]) for r in rows) for i in range(3))
        losses = sorted({r[3] for r in rows})
        layers = sorted({r[5] if len(r) > 5 else "source" for r in rows})
        print(f"  {tree:30s} step {step:7.1f}  (forward {fwd:.1f}, backward {bwd:.1f}, "
              f"optimiser {opt:.2f})  loss {', '.join(losses)}  python {', '.join(layers)}")
    first, second = results
    ratios = [sum(float(v) for v in b[:3]) / sum(float(v) for v in a[:3])
              for a, b in zip(first, second, strict=True)]
    wins = sum(r < 1 for r in ratios)
    print(f"  paired: second / first per round, median {statistics.median(ratios):.3f} "
          f"(range {min(ratios):.3f}-{max(ratios):.3f}); second faster in {wins} of "
          f"{len(ratios)} rounds")
    # the VM's phase of a round: the larger of its two processes' empty-region costs
    regions = [max(_region(a), _region(b)) for a, b in zip(first, second, strict=True)]
    _by_phase(ratios, regions)
    print(f"({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
