"""One UNet training step (forward, cross-entropy, backward, Adam): time and peak memory.

The sandbox model and its PyTorch twin (same weights) run in one process for
timing — steps alternate so both see the same machine noise — and each in a
fresh subprocess for peak memory: the peak resident set size (VmHWM, reset
after building the model and data) minus the resident size at that point,
across three steps.  Both use the allocator settings of ``sandbox train``.

    python benchmarks/bench_unet_step.py [--sizes 64 128] [--modes bilinear nearest bicubic]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np


def build(lib, mode, size, batch=8, depth=4, width=16):
    import sandbox
    import sandbox.functional as F
    from sandbox import nn, optim

    sandbox.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, 3, size, size), dtype=np.float32)
    y = rng.integers(0, 3, (batch, size, size))
    model = nn.UNet(3, 3, depth=depth, base_width=width, upsample=mode)
    if lib == "sandbox":
        opt = optim.Adam(model.parameters(), lr=1e-3)
        tx, ty = sandbox.tensor(x), sandbox.tensor(y)

        def step():
            opt.zero_grad()
            F.cross_entropy(model(tx), ty).backward()
            opt.step()

        return step
    import torch

    from sandbox.interop import to_torch

    twin = to_torch(model)  # the same architecture and weights in PyTorch
    topt = torch.optim.Adam(twin.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        topt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(twin(tx), ty).backward()
        topt.step()

    return step


def _setup(threads):
    from sandbox import set_num_threads
    from sandbox.runtime.allocator import keep_freed_memory

    keep_freed_memory()
    set_num_threads(threads)
    import torch

    torch.set_num_threads(threads)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def measure_peak(lib, mode, size, threads) -> float:
    """In this process: peak RSS above the resident size before three steps, in MB."""
    _setup(threads)
    step = build(lib, mode, size)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset the peak (VmHWM) to the current resident size
    base = _status_kb("VmRSS")
    for _ in range(3):
        step()
    return (_status_kb("VmHWM") - base) / 1024


def peak_memory(lib, mode, size, threads) -> float:
    """Peak RSS growth (MB) of three steps, measured in a fresh process (Linux)."""
    code = (
        "import sys; sys.path.insert(0, 'benchmarks'); import bench_unet_step as b;"
        f"print(b.measure_peak({lib!r}, {mode!r}, {size}, {threads}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1])


def time_pair(mode, size, repeat) -> tuple[float, float]:
    ours, theirs = build("sandbox", mode, size), build("torch", mode, size)
    t_ours, t_theirs = [], []
    for i in range(repeat + 2):
        pair = ((ours, t_ours), (theirs, t_theirs))
        for fn, acc in pair if i % 2 == 0 else pair[::-1]:
            t0 = time.perf_counter()
            fn()
            acc.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(t_ours[2:])), 1e3 * float(np.median(t_theirs[2:]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--modes", nargs="+", default=["bilinear", "nearest", "bicubic"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    _setup(args.threads)
    rows = []
    print(f"UNet depth 4, width 16, batch 8, float32, {args.threads} threads; medians of "
          f"{args.repeat} steps")
    print(f"{'size':>4} {'upsample':9} {'ours ms':>8} {'torch ms':>8} {'ratio':>6} "
          f"{'ours MB':>8} {'torch MB':>8} {'ratio':>6}")
    for size in args.sizes:
        for mode in args.modes:
            t_ours, t_theirs = time_pair(mode, size, args.repeat)
            m_ours = peak_memory("sandbox", mode, size, args.threads)
            m_theirs = peak_memory("torch", mode, size, args.threads)
            rows.append(dict(size=size, mode=mode, ours_ms=t_ours, torch_ms=t_theirs,
                             ours_mb=m_ours, torch_mb=m_theirs))
            print(f"{size:4d} {mode:9} {t_ours:8.1f} {t_theirs:8.1f} {t_ours / t_theirs:6.2f} "
                  f"{m_ours:8.0f} {m_theirs:8.0f} {m_ours / max(m_theirs, 1e-9):6.2f}",
                  flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
