"""Data-parallel step of the classic UNet: compute, packing and communication (issue 24).

Run as 1 process or under MPI, e.g. on one 2-core machine::

    python benchmarks/bench_distributed.py --threads 2             # 1 process x 2 threads
    python benchmarks/bench_distributed.py --threads 1             # 1 process x 1 thread
    mpiexec -n 2 -launcher fork -hosts 127.0.0.1 \\
        python benchmarks/bench_distributed.py --threads 1         # 2 ranks x 1 thread

``sandbox.nn.ClassicUNet()`` (widths 16-256, batch norm, bilinear), AdamW, random
data; ``--batch`` is the global batch (each rank computes ``batch / N`` images).  The
gradient is summed by :func:`sandbox.distributed.fixed_order_sum`, as in ``sandbox
train``.  Prints, from rank 0, the median step and the mean split per step of the
steps after the first, the CPU time per step, the bytes each rank sends per step
and a projection for 4-16 nodes over 10 GbE (``--gbit``, ``--latency-us``).
Timings on a shared machine vary: state the load with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--batch", type=int, default=8, help="global batch (default 8)")
    p.add_argument("--size", type=int, default=64, help="image side (default 64)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--gbit", type=float, default=10.0, help="network for the projection")
    p.add_argument("--latency-us", type=float, default=50.0, help="per message, projection")
    p.add_argument("--compute-ms", type=float, help="per-node compute for the projection "
                   "(default: as measured; on a loaded machine give an idle figure)")
    args = p.parse_args(argv)

    import sandbox
    from sandbox.distributed import VirtualRanks, launched_world_size

    sandbox.set_num_threads(args.threads)
    if launched_world_size() > 1:
        from sandbox.distributed import MPIComm

        measure(args, MPIComm())
    else:
        VirtualRanks(1).run(lambda comm: measure(args, comm))


def measure(args, comm) -> None:
    import sandbox
    from sandbox import nn, optim
    from sandbox.autograd import Tensor
    from sandbox.distributed import DataParallel
    from sandbox.functional import cross_entropy

    n = comm.size
    sandbox.manual_seed(0)
    model = nn.ClassicUNet()
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    images = rng.standard_normal((args.batch, 1, args.size, args.size)).astype(np.float32)
    masks = rng.integers(0, 2, (args.batch, args.size, args.size))
    per = args.batch // n
    mine = slice(comm.rank * per, (comm.rank + 1) * per)
    dp = DataParallel(comm, model)
    dp.broadcast_state()

    def loss_fn(logits, m):
        return cross_entropy(logits, Tensor(m))

    steps, cpu, split = [], [], []
    for _ in range(args.steps):
        before = dict(dp.timings)
        comm.barrier()
        t0, c0 = time.perf_counter(), time.process_time()
        dp.step(images[mine], masks[mine], loss_fn, False)
        t1 = time.perf_counter()
        opt.step()
        t2 = time.perf_counter()
        steps.append(t2 - t0)
        cpu.append(time.process_time() - c0)
        split.append({k: dp.timings[k] - before[k]
                      for k in ("compute", "compute_cpu", "pack", "communicate")}
                     | {"update": t2 - t1})
    # The slowest rank sets the pace: report the maximum over ranks of each median.
    med = statistics.median(steps[1:])
    mean = {k: statistics.fmean(s[k] for s in split[1:]) for k in split[0]}
    gathered = comm.allgather_object((med, mean, statistics.fmean(cpu[1:])))
    if not comm.is_root:
        return
    med = max(g[0] for g in gathered)
    mean = {k: max(g[1][k] for g in gathered) for k in mean}
    cpu_step = max(g[2] for g in gathered)
    load = os.getloadavg()[0]
    grad_mb = dp.numel * 4 / 1e6
    print(f"ClassicUNet: {dp.numel:,} parameters ({grad_mb:.2f} MB float32 gradient); "
          f"{n} rank(s) x {args.threads} thread(s), global batch {args.batch} at "
          f"{args.size}^2, load average {load:.2f}")
    print(f"step median {med * 1e3:.1f} ms ({1 / med:.2f} steps/s); per step: compute "
          f"{mean['compute'] * 1e3:.1f} ms, pack {mean['pack'] * 1e3:.1f} ms, communicate "
          f"{mean['communicate'] * 1e3:.1f} ms, optimiser {mean['update'] * 1e3:.1f} ms; "
          f"CPU time {cpu_step * 1e3:.1f} ms per step and rank, of which compute "
          f"{mean['compute_cpu'] * 1e3:.1f} ms ({mean['compute_cpu'] * 1e3 / per:.1f} ms per "
          "image)")
    print(f"bytes sent per rank per step: {dp.bytes_per_step:,} (2 (N-1)/N of the gradient)")
    # Projection (weak scaling: every node computes `per` images as measured here).
    bandwidth = args.gbit * 1e9 / 8
    compute = mean["compute"] + mean["pack"] + mean["update"]
    if args.compute_ms is not None:
        compute = args.compute_ms / 1e3
    source = "given" if args.compute_ms is not None else f"measured, {per} image(s) per rank"
    print(f"projection over {args.gbit:g} Gbit/s, {args.latency_us:g} us per message, "
          f"compute {compute * 1e3:.1f} ms per step and node ({source}):")
    for nodes in (2, 4, 8, 16):
        sent = 2 * (nodes - 1) * -(-dp.numel // nodes) * 4
        comm_s = sent / bandwidth + 2 * (nodes - 1) * args.latency_us * 1e-6
        print(f"  {nodes:2d} nodes: {sent / 1e6:6.2f} MB per rank, communication "
              f"{comm_s * 1e3:5.1f} ms = {comm_s / compute:5.1%} of compute, weak-scaling "
              f"efficiency {compute / (compute + comm_s):5.1%}")


if __name__ == "__main__":
    main()
