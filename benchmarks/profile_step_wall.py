"""Where a training step's wall time goes at 1 and at 2 threads, op by op.

The UNet as users write it (``sandbox.bench._cases_user.user_unet``) takes Adam steps at
1 thread and then at 2 in one process; every op's forward (``Function.apply``) and
backward (the engine's visit of its node) is timed with ``time.perf_counter``, as are the
forward pass, the backward pass and the optimiser step.  For each op the table gives its
time at both counts, the speed-up, and ``lost``: its 2-thread time minus half its
1-thread time, what it keeps the step from a perfect 2x.  ``outside ops`` is the Python
between the ops (modules, the engine's bookkeeping, the loss), which runs on one thread.

Wall times: run it on a quiet machine (``profile_step_threads.py`` measures CPU time per
thread instead, which holds on a loaded one).

    python benchmarks/profile_step_wall.py --size 64 --mode bilinear
    python benchmarks/profile_step_wall.py --size 32 --batch 2 --widths 2-2-2-2-2  # fixed costs
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np


def _hook_ops(wall: dict, depth: list) -> None:
    """Time every op's forward and backward into ``wall`` (nested ops count in their parent)."""
    from sandbox.autograd import _engine, _function

    apply = _function.Function.apply.__func__
    visit = _engine._Walk.visit

    def timed_apply(cls, *args, **kwargs):
        if depth[0]:
            return apply(cls, *args, **kwargs)
        depth[0] += 1
        t = time.perf_counter()
        try:
            return apply(cls, *args, **kwargs)
        finally:
            wall[f"{cls.__name__} fwd"] += time.perf_counter() - t
            depth[0] -= 1

    def timed_visit(self, node):
        depth[0] += 1
        t = time.perf_counter()
        try:
            return visit(self, node)
        finally:
            wall[f"{node._fn.__name__} bwd"] += time.perf_counter() - t
            depth[0] -= 1

    _function.Function.apply = classmethod(timed_apply)
    _engine._Walk.visit = timed_visit


def _measure(sandbox, threads: int, size: int, batch: int, mode: str, steps: int, wall: dict,
             widths=None):
    from sandbox.bench._cases_user import user_unet

    sandbox.set_num_threads(threads)
    sandbox.manual_seed(0)
    model = user_unet(sandbox, mode=mode) if widths is None else user_unet(
        sandbox, mode=mode, widths=widths)
    rng = np.random.default_rng(0)
    x = sandbox.from_numpy(rng.standard_normal((batch, 1, size, size), dtype=np.float32))
    y = sandbox.from_numpy(rng.integers(0, 2, (batch, size, size)))
    opt = sandbox.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = sandbox.nn.CrossEntropyLoss()
    parts = collections.defaultdict(float)

    def step():
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        parts["forward"] += t1 - t0
        parts["backward"] += t2 - t1
        parts["optimizer"] += t3 - t2
        parts["step"] += t3 - t0

    for _ in range(3):
        step()
    wall.clear()
    parts.clear()
    for _ in range(steps):
        step()
    ops = {k: v / steps * 1e3 for k, v in wall.items()}
    whole = {k: v / steps * 1e3 for k, v in parts.items()}
    whole["outside ops"] = whole["step"] - sum(ops.values())
    return ops, whole


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--rows", type=int, default=14)
    parser.add_argument("--widths", type=lambda v: tuple(map(int, v.split("-"))), default=None,
                        help="channels per level, e.g. 2-2-2-2-2: with tiny widths the "
                             "times are the fixed costs of each op (Python, dispatch)")
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.runtime import simd

    wall, depth = collections.defaultdict(float), [0]
    _hook_ops(wall, depth)
    runs = {t: _measure(sandbox, t, args.size, args.batch, args.mode, args.steps, wall,
                         args.widths)
            for t in (1, 2)}
    (ops1, whole1), (ops2, whole2) = runs[1], runs[2]
    cpu = simd.cpu()
    print(f"cpu: {cpu.describe()}; {args.size}^2, batch {args.batch}, {args.mode}, "
          f"{args.steps} steps; ms per step")
    print(f"{'part':22s} {'1 thread':>9s} {'2 threads':>10s} {'speed-up':>9s} {'lost':>6s}")
    for key in ("step", "forward", "backward", "optimizer", "outside ops"):
        a, b = whole1[key], whole2[key]
        print(f"{key:22s} {a:9.2f} {b:10.2f} {a / b:8.2f}x {b - a / 2:6.2f}")
    for key in sorted(ops1, key=lambda k: -(ops2.get(k, 0.0) - ops1[k] / 2))[:args.rows]:
        a, b = ops1[key], ops2.get(key, 0.0)
        print(f"{key:22s} {a:9.2f} {b:10.2f} {a / max(b, 1e-9):8.2f}x {b - a / 2:6.2f}")


if __name__ == "__main__":
    main()
