"""Count the engine's Python-level work per graph node on one UNet step (no timings).

    PYTHONPATH=. python benchmarks/engine_call_counts.py [--depth 2] [--width 4]

cProfile's call counts for one ``loss.backward()`` and for the recording forward of
a small ``sandbox.nn.UNet`` (cross-entropy loss), divided by the number of graph
nodes: the calls made inside ``sandbox/autograd`` and all calls.  Counts do not
depend on the machine's load, so they compare engine versions where timings on a
shared machine cannot.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

import numpy as np

import sandbox
from sandbox import nn
from sandbox.autograd._engine import _toposort
from sandbox.functional import cross_entropy


def _counts(profile):
    stats = pstats.Stats(profile).stats
    total = sum(v[1] for v in stats.values())
    engine = {k: v[1] for k, v in stats.items() if "sandbox/autograd/" in k[0]}
    return total, engine


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--width", type=int, default=4)
    parser.add_argument("--top", type=int, default=12, help="engine functions to list")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    model = nn.UNet(1, 3, depth=args.depth, base_width=args.width)
    x = sandbox.tensor(rng.standard_normal((2, 1, 16, 16)).astype(np.float32))
    target = sandbox.tensor(rng.integers(0, 3, (2, 16, 16)))

    def step():
        return cross_entropy(model(x), target)

    step().backward()  # warm-up: kernel choices and caches settle
    loss = step()
    nodes = len(_toposort([loss.grad_fn]))
    for what, run in [("backward", lambda: loss.backward()), ("forward", step)]:
        profile = cProfile.Profile()
        profile.enable()
        run()
        profile.disable()
        total, engine = _counts(profile)
        n_engine = sum(engine.values())
        print(f"{what}: {nodes} nodes; engine calls {n_engine} ({n_engine / nodes:.1f} per "
              f"node), all calls {total} ({total / nodes:.1f} per node)")
        for (path, line, name), n in sorted(engine.items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"  {n:6d}  {path.split('sandbox/')[-1]}:{line} {name}")


if __name__ == "__main__":
    main()
