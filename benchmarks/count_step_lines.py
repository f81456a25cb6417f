"""Lines of Python one training step of the user-written UNet executes (no timings).

``sys.settrace`` counts every line run in one Adam step (forward, backward, optimiser)
of the bench's ``unet-user`` model, after two warm-up steps, in total and by file.
Like ``engine_call_counts.py`` the count does not depend on the machine's load, so it
compares versions (``PYTHONPATH`` at another checkout) where timings cannot; the
Python it counts runs on one thread whatever the thread count.

    python benchmarks/count_step_lines.py [--size 64] [--batch 8] [--top 15]
"""

from __future__ import annotations

import argparse
import collections
import sys

import numpy as np


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)

    import sandbox
    from sandbox.bench._cases_user import user_step, user_unet

    sandbox.manual_seed(0)
    model = user_unet(sandbox, mode=args.mode)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((args.batch, 1, args.size, args.size)).astype(np.float32)
    y = rng.integers(0, 2, size=(args.batch, args.size, args.size))
    step = user_step(sandbox, model, x, y)
    step()
    step()
    lines = collections.Counter()

    def trace(frame, event, arg):
        if event == "line":
            lines[frame.f_code.co_filename] += 1
        return trace

    sys.settrace(trace)
    try:
        step()
    finally:
        sys.settrace(None)
    root = sandbox.__file__.rsplit("sandbox", 1)[0]
    print(f"{sum(lines.values())} lines of Python in one step ({args.size}^2, batch "
          f"{args.batch}, {args.mode})")
    for name, n in lines.most_common(args.top):
        print(f"{n:8d}  {name.removeprefix(root)}")


if __name__ == "__main__":
    main()
