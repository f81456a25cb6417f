"""How much a second core can give a training step on this machine: one-thread steps in
one process alone, then in two processes at once.

A 2-thread step can at best do the work of two independent 1-thread steps in the time
of one.  If two processes, each running the user-written UNet step on one thread, each
take longer than one process alone (shared caches, memory bandwidth, a host that gives
the two vCPUs less than two cores, lower clocks with both busy), the 2-thread speed-up
of ``sandbox bench --threads 1,2`` cannot reach 2 either: ``ceiling`` is two steps'
throughput over one's, ``2 * alone / together``, per round (alone, then together) and
its median over the rounds: the VM's speed drifts from minute to minute, so many short
rounds hold better than a few long ones.  Medians of the steps of each process.

    python benchmarks/bench_step_ceiling.py --size 64 --mode bilinear --seconds 5 --rounds 8
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

# one process: the user UNet's Adam step on one thread for SECONDS (at least 3 steps);
# prints the median ms per step
_CHILD = """
import statistics, sys, time
import numpy as np
import sandbox
from sandbox.bench._cases_user import user_step, user_unet
size, batch, mode, seconds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
widths = [int(w) for w in sys.argv[5].split("-")] if sys.argv[5] else None
sandbox.set_num_threads(1)
rng = np.random.default_rng(0)
x = rng.standard_normal((batch, 1, size, size)).astype(np.float32)
y = rng.integers(0, 2, size=(batch, size, size))
sandbox.manual_seed(0)
model = user_unet(sandbox, mode=mode) if widths is None else user_unet(sandbox, mode=mode,
                                                                        widths=widths)
step = user_step(sandbox, model, x, y)
for _ in range(2):
    step()
times = []
start = time.perf_counter()
while time.perf_counter() - start < seconds or len(times) < 3:
    t = time.perf_counter()
    step()
    times.append(time.perf_counter() - t)
print(1e3 * statistics.median(times))
"""


def _run(processes: int, args) -> list[float]:
    """Median ms per step of each of ``processes`` processes started together."""
    widths = "-".join(map(str, args.widths)) if args.widths else ""
    argv = [sys.executable, "-c", _CHILD, str(args.size), str(args.batch), args.mode,
            str(args.seconds), widths]
    env = {**os.environ, "SANDBOX_NUM_THREADS": "1"}
    workers = [subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
               for _ in range(processes)]
    out = [w.communicate()[0] for w in workers]
    for w in workers:
        if w.returncode:
            raise SystemExit(f"a step process failed (exit {w.returncode})")
    return [float(o.split()[-1]) for o in out]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--widths", type=int, nargs="+", default=None,
                        help="UNet channels per level (default: the bench's)")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="time each process steps for (at least 3 steps)")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)

    from sandbox.runtime import simd

    print(f"cpu: {simd.cpu().describe()}; sandbox path {simd.current().isa}; "
          f"user UNet step {args.mode} {args.size}^2 batch {args.batch}, 1 thread a process; "
          "ms per step, medians")
    ceilings = []
    for r in range(args.rounds):
        alone = _run(1, args)[0]
        together = _run(2, args)
        ceilings.append(2 * alone / statistics.mean(together))
        print(f"round {r + 1}: alone {alone:.1f}  together "
              f"{' / '.join(f'{t:.1f}' for t in together)}  ceiling {ceilings[-1]:.2f}x",
              flush=True)
    # the machine's speed drifts between minutes: a round's ratio holds better than its ms
    print(f"median ceiling {statistics.median(ceilings):.2f}x over {args.rounds} rounds "
          f"({min(ceilings):.2f}-{max(ceilings):.2f}x)")


if __name__ == "__main__":
    main()
