"""The user-written UNet step with the weight gradients beside the walk or in turn
(``sandbox.runtime.overlap``: ``off``, ``always``, ``auto``), in one process, round by
round, medians; each round is labelled by the cross-core probe taken just before it
(``sandbox.bench._env.cross_core_cost``: about 1.0 while a 2-thread region costs what it
should, 1.5 or more while a core is slowed), so the two kinds of minutes are told apart.

``--backward`` times the backward pass alone (``loss.backward()``), where the schedule
acts; the default times whole steps (forward, backward, Adam).

    python benchmarks/ab_overlap.py --size 64 --rounds 20
    python benchmarks/ab_overlap.py --size 128 --mode nearest --modes off auto
"""

from __future__ import annotations

import argparse
import statistics
import time


def _timed_backward(size, batch, mode):
    """A step whose backward alone is timed: returns (step, seconds of the last backward)."""
    import numpy as np

    import sandbox
    import sandbox.functional as F
    from sandbox.bench._cases_user import NUM_CLASSES, user_unet

    sandbox.manual_seed(0)
    model = user_unet(sandbox, mode=mode)
    opt = sandbox.optim.Adam(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = sandbox.from_numpy(rng.standard_normal((batch, 1, size, size), dtype=np.float32))
    y = sandbox.from_numpy(rng.integers(0, NUM_CLASSES, (batch, size, size)))
    took = [0.0]

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        start = time.perf_counter()
        loss.backward()
        took[0] = time.perf_counter() - start
        opt.step()

    return step, took


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=None, help="default: 8, 4 at 256²")
    parser.add_argument("--mode", default="bilinear", help="the UNet's upsampling mode")
    parser.add_argument("--modes", nargs="+", default=["off", "always", "auto"],
                        choices=["off", "always", "auto"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--steps", type=int, default=3, help="steps a timed sample")
    parser.add_argument("--backward", action="store_true",
                        help="time the backward pass alone")
    parser.add_argument("--volume", metavar="MODE", default=None,
                        help="the bench's 3-D UNet step (unet3d-step/MODE) instead; whole "
                             "steps only")
    parser.add_argument("--slow", type=float, default=1.2,
                        help="probe ratio from which a round counts as slowed")
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.bench._env import cross_core_cost
    from sandbox.runtime import overlap, simd

    batch = args.batch or (4 if args.size >= 256 else 8)
    threads_before = sandbox.get_num_threads()
    sandbox.set_num_threads(args.threads)
    if args.volume:
        from sandbox.bench._cases_user import profiled_step

        if args.backward:
            parser.error("--backward times the 2-D UNet only")
        step, took = profiled_step(args.volume), [0.0]
        model = f"3-D UNet step (unet3d-step/{args.volume})"
    else:
        step, took = _timed_backward(args.size, batch, args.mode)
        model = f"user UNet {args.size}², batch {batch}, {args.mode}"
    what = "backward pass" if args.backward else "step"
    print(f"cpu: {simd.cpu().describe()}; path {simd.current().isa}; {args.threads} threads; "
          f"{model}; ms a {what}, medians of {args.rounds} rounds")
    before = overlap.mode()
    rows = []
    try:
        for m in args.modes:  # warm every way (and auto's first passes)
            overlap.set_mode(m)
            for _ in range(4):
                step()
        for r in range(args.rounds):
            probe = cross_core_cost(0.1)  # None where two CPUs cannot be pinned
            row = {"probe": probe["ratio"] if probe else float("nan")}
            order = args.modes if r % 2 == 0 else args.modes[::-1]
            for m in order:
                overlap.set_mode(m)
                start, spent = time.perf_counter(), 0.0
                for _ in range(args.steps):
                    step()
                    spent += took[0]
                total = spent if args.backward else time.perf_counter() - start
                row[m] = total / args.steps * 1e3
            rows.append(row)
    finally:
        overlap.set_mode(before)
        sandbox.set_num_threads(threads_before)
    base = args.modes[0]
    groups = [("all", rows), ("quiet", [r for r in rows if r["probe"] < args.slow]),
              (f"slowed (probe >= {args.slow})", [r for r in rows if r["probe"] >= args.slow])]
    for name, rs in groups:
        if not rs:
            continue
        cells = []
        for m in args.modes:
            cell = f"{m} {statistics.median(r[m] for r in rs):7.2f}"
            if m != base:
                cell += f" (x{statistics.median(r[m] / r[base] for r in rs):.3f} of {base})"
            cells.append(cell)
        print(f"{name:24s} {len(rs):3d} rounds: " + "; ".join(cells))
    print("x = the median over rounds of the ratio within a round (< 1: faster than "
          f"{base}); the same bits in every mode")


if __name__ == "__main__":
    main()
