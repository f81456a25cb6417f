"""What waking the OpenMP team costs after the calling thread was busy elsewhere.

Between two kernels of a training step the main thread runs Python (the engine, the
modules, a serial numpy op); meanwhile libgomp's other threads spin for
``GOMP_SPINCOUNT`` rounds and then sleep in the kernel.  A kernel called after a longer
gap waits for them to wake: on a VM, a halted virtual CPU is woken through the host.
This times a small parallel kernel (ReLU of 1 MB at 2 threads, 15-20 µs back to back)
after the calling thread spent ``gap`` busy in Python, for each spin count, each in its
own process (libgomp reads the setting once):

    python benchmarks/bench_thread_wake.py --spins 10000 100000 --gaps 0 0.3 1 2 5
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from sandbox.runtime import simd

_CHILD = """
import sys, time
import numpy as np
import sandbox
from sandbox.array.activation import relu
sandbox.set_num_threads(2)
x = np.random.default_rng(0).random((8, 32, 32, 32), dtype=np.float32)
for gap_ms in (float(g) for g in sys.argv[1:]):
    times = []
    for _ in range(300):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < gap_ms / 1e3:  # busy in Python, the team idles
            pass
        t = time.perf_counter()
        relu(x)
        times.append(time.perf_counter() - t)
    print(f"{np.median(times) * 1e6:.1f}", end=" ")
"""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spins", type=int, nargs="+", default=[10000, 100000])
    parser.add_argument("--gaps", type=float, nargs="+", default=[0, 0.1, 0.3, 0.5, 1, 2, 5],
                        help="ms the caller is busy before each call")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    print(f"cpu: {simd.cpu().describe()}; ReLU of 8x32x32x32 float32 at 2 threads, median "
          f"µs of 300 calls after a busy gap; OMP_WAIT_POLICY=PASSIVE")
    print(f"{'GOMP_SPINCOUNT':>14s}  " + "  ".join(f"{g:>6g} ms" for g in args.gaps))
    for _ in range(args.rounds):
        for spins in args.spins:
            env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE", GOMP_SPINCOUNT=str(spins))
            out = subprocess.run([sys.executable, "-c", _CHILD, *map(str, args.gaps)],
                                 env=env, capture_output=True, text=True, check=True).stdout
            print(f"{spins:>14d}  " + "  ".join(f"{v:>9s}" for v in out.split()))


if __name__ == "__main__":
    main()
