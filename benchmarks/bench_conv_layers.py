"""Every 3×3 convolution of the classic UNet, ours vs PyTorch, at 1 and 2 threads.

For each layer shape of ``sandbox.nn.ClassicUNet`` at 64×64 input (batch 8,
padding 1, no bias): forward + input gradient + weight gradient in one timed
call (the ``conv-layer/*`` cases of ``sandbox bench``), timed interleaved with
PyTorch (``F.conv2d`` + ``aten.convolution_backward``).  Prints ms, speed
(PyTorch ms / ours), GFLOP/s with direct-convolution FLOPs
(``3 · 2·N·Cout·Cin·9·H·W``) and the fraction of this machine's numpy float32
SGEMM peak measured at the same thread count.

    python benchmarks/bench_conv_layers.py [--threads 1 2] [--repeat 7] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os

from sandbox.bench import select
from sandbox.bench._cases_classic import classic_cases
from sandbox.bench._report import flops_table
from sandbox.bench._runner import run_case


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--filter", action="append", help="only these conv-layer cases")
    parser.add_argument("--sgemm-size", type=int, default=2048)
    parser.add_argument("--json", help="write the results of every thread count here")
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # as `sandbox bench` (see _env)
    from sandbox.bench import _env
    from sandbox.runtime.allocator import keep_freed_memory

    keep_freed_memory()
    torch = _env.optional_torch()
    cases = select([c for c in classic_cases() if c.group == "conv-layer"], args.filter)
    runs = []
    for threads in args.threads:
        _env.set_threads(threads, torch)
        env = _env.environment(threads, torch)
        env["sgemm_size"] = args.sgemm_size
        env["sgemm_gflops"] = _env.sgemm_peak(threads, args.sgemm_size)
        results = [run_case(c, quick=False, torch=torch, repeat=args.repeat,
                            warmup=args.warmup, bandwidth=None, memory=False,
                            sgemm_gflops=env["sgemm_gflops"]) for c in cases]
        print(f"\n{threads} thread(s), batch 8, float32, medians of {args.repeat}")
        print(flops_table(results, env), flush=True)
        for r in results:
            if r["error"]:
                print(f"{r['name']}: {r['error']}")
        runs.append({"threads": threads, "environment": env, "results": results})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
