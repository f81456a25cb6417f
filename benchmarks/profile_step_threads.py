"""Where a training step's time goes, per op and per thread: which parts run serially.

For the UNet as users write it (``sandbox.bench._cases_user.user_unet``: ``nn.Conv2d``,
``nn.BatchNorm2d``, ``nn.ReLU``, ``nn.Upsample``, ``cat``, Adam), every op's forward
and backward is timed on every thread of the process with the threads' own CPU clocks
(Linux: ``clock_gettime`` of each thread id).  ``total`` is the CPU time of all threads
in the op, ``span`` the largest single thread's share: an op whose span equals its total
ran on one thread, one whose span is half its total kept two threads busy.  The
critical-path estimate adds the spans and the calling thread's time outside ops; the
ideal speed-up is the step's CPU time over it.  CPU clocks count only while a thread
runs, so the figures hold on a loaded machine too (wall times do not).

OpenMP threads that spin while they wait (``GOMP_SPINCOUNT``, which ``import sandbox``
sets to 10,000) burn CPU time too, so a serial op then looks shared.  To see which
ops run on one thread, run with ``GOMP_SPINCOUNT=0`` (the threads then sleep while
they wait); the wall time of that run is not what users get.

    python benchmarks/profile_step_threads.py --threads 2 --size 64 --mode bilinear
"""

from __future__ import annotations

import argparse
import collections
import os
import threading
import time

import numpy as np


def _thread_clocks(task_dir: str, cache: dict) -> dict:
    """CPU nanoseconds of every thread of this process (clock id ``(~tid << 3) | 6``)."""
    out = {}
    for tid in os.listdir(task_dir):
        cid = cache.get(tid)
        if cid is None:
            cid = cache[tid] = (~int(tid) << 3) | 6
        try:
            out[tid] = time.clock_gettime_ns(cid)
        except OSError:  # the thread ended
            pass
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--mode", default="bilinear")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--rows", type=int, default=20)
    p.add_argument("--by-shape", action="store_true",
                   help="one row per op and output shape (which layers share badly)")
    args = p.parse_args(argv)

    import sandbox
    from sandbox.autograd import _engine, _function
    from sandbox.bench._cases_user import user_unet

    sandbox.set_num_threads(args.threads)
    task_dir, cache = f"/proc/{os.getpid()}/task", {}
    main_tid = str(threading.get_native_id())
    total, span, main_share = (collections.defaultdict(float) for _ in range(3))
    count = collections.Counter()
    depth = [0]

    def record(key, before):
        after = _thread_clocks(task_dir, cache)
        d = {t: after[t] - before.get(t, 0) for t in after}
        total[key] += sum(d.values())
        span[key] += max(d.values())
        main_share[key] += d.get(main_tid, 0)
        count[key] += 1

    apply = _function.Function.apply.__func__

    def timed_apply(cls, *a, **k):
        if depth[0]:  # an op inside another op's forward or backward: counted there
            return apply(cls, *a, **k)
        depth[0] += 1
        before = _thread_clocks(task_dir, cache)
        out = None
        try:
            out = apply(cls, *a, **k)
            return out
        finally:
            shape = f" {tuple(out.shape)}" if args.by_shape and hasattr(out, "shape") else ""
            record(f"{cls.__name__}{shape} fwd", before)
            depth[0] -= 1

    visit = _engine._Walk.visit

    def timed_visit(self, node):
        depth[0] += 1
        shape = f" {tuple(node._out_meta[0][0])}" if args.by_shape else ""
        before = _thread_clocks(task_dir, cache)
        try:
            return visit(self, node)
        finally:
            record(f"{node._fn.__name__}{shape} bwd", before)
            depth[0] -= 1

    _function.Function.apply = classmethod(timed_apply)
    _engine._Walk.visit = timed_visit

    sandbox.manual_seed(0)
    model = user_unet(sandbox, mode=args.mode)
    rng = np.random.default_rng(0)
    x = sandbox.from_numpy(rng.standard_normal((args.batch, 1, args.size, args.size),
                                               dtype=np.float32))
    y = sandbox.from_numpy(rng.integers(0, 2, (args.batch, args.size, args.size)))
    opt = sandbox.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = sandbox.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(2):
        step()
    for d in (total, span, main_share, count):
        d.clear()
    before = _thread_clocks(task_dir, cache)
    for _ in range(args.steps):
        step()
    after = _thread_clocks(task_dir, cache)
    n = args.steps
    whole = sum(after[t] - before.get(t, 0) for t in after) / n / 1e6
    whole_main = (after[main_tid] - before[main_tid]) / n / 1e6
    in_ops, spans = sum(total.values()) / n / 1e6, sum(span.values()) / n / 1e6
    critical = spans + whole_main - sum(main_share.values()) / n / 1e6
    from sandbox.runtime import simd

    cpu = simd.cpu()
    print(f"cpu: {cpu.model} ({cpu.vendor}, family {cpu.family}, model {cpu.model_number}), "
          f"{os.cpu_count()} cores, path {simd.current().isa}; threads={args.threads}, "
          f"{args.size}^2, batch {args.batch}, {args.mode}; load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"step CPU {whole:.1f} ms (calling thread {whole_main:.1f}); in ops {in_ops:.1f} ms, "
          f"their span {spans:.1f} ms; outside ops {whole - in_ops:.1f} ms")
    print(f"critical-path estimate {critical:.1f} ms: ideal speed-up {whole / critical:.2f}")
    print(f"{'op':44s} {'n':>4s} {'total ms':>9s} {'span ms':>8s} {'span/total':>10s}")
    for key in sorted(total, key=lambda k: -total[k])[:args.rows]:
        print(f"{key:44s} {count[key] // n:4d} {total[key] / n / 1e6:9.2f} "
              f"{span[key] / n / 1e6:8.2f} {span[key] / max(total[key], 1):10.2f}")


if __name__ == "__main__":
    main()
