"""How much of a training step runs outside the compiled kernels, and where.

Every function of the kernel modules (``sandbox._C.*``) is wrapped with a wall-clock
timer, the user-written UNet (``sandbox.bench._cases_user.user_unet``: ``nn.Conv2d``,
``nn.BatchNorm2d``, ``nn.ReLU``, ``nn.Upsample``, ``cat``, Adam) takes its steps, and
the script prints the step's time inside the kernels (per module), the time outside
them, and the largest gaps between one kernel call's return and the next call: the
Python of the ops between (autograd, module and wrapper code), numpy calls that are not
ours (the 1x1 head's BLAS product, small reductions), allocation and the garbage
collector.  Outside the kernels the calling thread works alone, so that time is the
step's serial part at any thread count: with 2 threads the other thread waits for it.

A kernel that calls back into Python (none does) would have its time counted twice;
nested wrapped calls count once, at the outer one.  The wrappers cost about 0.2 us a
call (about 140 calls a step).

    python benchmarks/profile_step_gaps.py --threads 1 2 --size 64
    python benchmarks/profile_step_gaps.py --threads 1 2 --functions   # kernel by kernel
    python benchmarks/profile_step_gaps.py --threads 1 2 --shapes --rows 30   # and by shape
    python benchmarks/profile_step_gaps.py --threads 1 2 --volume nearest   # the 3-D step

``--shapes`` times each kernel function apart for each shape of the first array it is
given (a layer's input, say), so that one layer's calls can be told from another's.
The backward pass runs in turn (``sandbox.runtime.overlap`` mode ``off``, unless
``--overlap`` says otherwise): the timers assume one calling thread, and weight gradients
computed on the side worker would be timed as if they ran between the calling thread's
kernels.

``--volume MODE`` takes the bench's 3-D UNet step instead (``unet3d-step/MODE``: 32³, batch
2, ``sandbox.bench._cases_3d``); ``--size``, ``--batch`` and ``--mode`` are then ignored.
"""

from __future__ import annotations

import argparse
import collections
import importlib
import pkgutil
import sys
import time

import numpy as np

_KERNEL_TYPES = ("fused_cython_function", "builtin_function_or_method",
                 "cython_function_or_method")


class _KernelClock:
    """Wall time inside the kernel modules' functions, and between their calls."""

    def __init__(self, by_shape: bool = False):
        self.by_shape = by_shape              # functions keyed by their first array's shape
        self.inside = collections.Counter()   # module -> seconds
        self.calls = collections.Counter()    # module -> calls
        self.functions = collections.Counter()  # module.function -> seconds
        self.function_calls = collections.Counter()
        self.gaps = collections.Counter()     # (previous, next) function -> seconds
        self.gap_calls = collections.Counter()
        self._last = None                     # (function, time of its return)
        self._depth = 0
        self._originals = []                  # (module, name, function) to restore

    def reset(self) -> None:
        for c in (self.inside, self.calls, self.functions, self.function_calls, self.gaps,
                  self.gap_calls):
            c.clear()
        self._last = None

    def wrap(self, module: str, name: str, fn):
        key = f"{module}.{name}"
        clock = time.perf_counter

        def timed(*args, **kwargs):
            if self._depth:  # a wrapped function called by another: timed there
                return fn(*args, **kwargs)
            self._depth = 1
            start = clock()
            if self._last is not None:
                pair = (self._last[0], key)
                self.gaps[pair] += start - self._last[1]
                self.gap_calls[pair] += 1
            try:
                return fn(*args, **kwargs)
            finally:
                end = clock()
                self.inside[module] += end - start
                self.calls[module] += 1
                timed_as = key
                if self.by_shape:
                    shape = next((a.shape for a in args if isinstance(a, np.ndarray)), None)
                    timed_as = f"{key} {shape}"
                self.functions[timed_as] += end - start
                self.function_calls[timed_as] += 1
                self._depth = 0
                self._last = (key, end)

        return timed

    def install(self) -> None:
        """Wrap every kernel function where its module keeps it (most wrappers of
        ``sandbox.array`` look them up as module attributes at each call), and where a
        ``sandbox`` module holds it by reference: a module attribute, or a value of a
        module-level dict, bare or in a tuple (the GEMM's kernel table); then the
        modules' caches are emptied, so that plans made again hold the wrappers."""
        import sandbox._C as kernels

        wrapped = {}  # id(original) -> wrapper
        for info in pkgutil.iter_modules(kernels.__path__):
            module = importlib.import_module(f"sandbox._C.{info.name}")
            for name in dir(module):
                fn = getattr(module, name)
                if not name.startswith("__") and type(fn).__name__ in _KERNEL_TYPES:
                    self._originals.append((module, name, fn))
                    wrapped[id(fn)] = self.wrap(info.name, name, fn)
                    setattr(module, name, wrapped[id(fn)])
        for modname, module in list(sys.modules.items()):
            if not modname.startswith("sandbox.") or modname.startswith("sandbox._C"):
                continue
            for name, value in list(vars(module).items()):
                if id(value) in wrapped:
                    self._originals.append((module, name, value))
                    setattr(module, name, wrapped[id(value)])
                elif isinstance(value, dict):
                    self._rewrap_table(value, wrapped)
        _clear_caches()  # cached plans (the resize's routes) hold the kernels themselves

    def _rewrap_table(self, table: dict, wrapped: dict) -> None:
        for key, value in list(table.items()):
            if id(value) in wrapped:
                new = wrapped[id(value)]
            elif isinstance(value, tuple) and any(id(v) in wrapped for v in value):
                new = tuple(wrapped.get(id(v), v) for v in value)
            else:
                continue
            self._originals.append((table, key, value))
            table[key] = new

    def uninstall(self) -> None:
        for owner, name, fn in reversed(self._originals):
            if isinstance(owner, dict):
                owner[name] = fn
            else:
                setattr(owner, name, fn)
        self._originals.clear()
        _clear_caches()


def _clear_caches() -> None:
    """Empty every ``functools`` cache of the ``sandbox`` modules: a plan cached before
    the kernels were wrapped (or unwrapped) would call them directly."""
    for modname, module in list(sys.modules.items()):
        if modname.startswith("sandbox."):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def _report(clock: _KernelClock, step_s: float, steps: int, rows: int,
            functions: bool = False) -> None:
    inside = sum(clock.inside.values()) / steps
    print(f"  step {step_s * 1e3:.1f} ms: in kernels {inside * 1e3:.1f} ms, outside "
          f"{(step_s - inside) * 1e3:.1f} ms ({100 * (1 - inside / step_s):.0f} %), "
          f"{sum(clock.calls.values()) / steps:.0f} kernel calls")
    times, calls = ((clock.functions, clock.function_calls) if functions
                    else (clock.inside, clock.calls))
    for key, s in times.most_common(rows if functions else None):
        print(f"    {key:32s} {s / steps * 1e3:7.2f} ms  {calls[key] / steps:5.0f} calls"
              + (f"  {s / calls[key] * 1e6:8.1f} us each" if functions else ""))
    print("  largest gaps between kernel calls (ms a step, times a step, us each):")
    for (before, after), s in clock.gaps.most_common(rows):
        n = clock.gap_calls[(before, after)] / steps
        print(f"    {s / steps * 1e3:6.2f} ms {n:5.1f}x {s / steps / n * 1e6:6.0f} us  "
              f"{before} -> {after}")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--mode", default="bilinear")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--rows", type=int, default=12)
    p.add_argument("--volume", metavar="MODE", default=None,
                   help="profile the 3-D UNet step of the bench with this upsampling mode")
    p.add_argument("--functions", action="store_true",
                   help="time inside each kernel function (the --rows largest), not each module")
    p.add_argument("--shapes", action="store_true",
                   help="as --functions, each function apart for each shape of its first array")
    p.add_argument("--overlap", choices=["off", "auto", "always"], default="off",
                   help="the backward's work beside the walk (default off: see above)")
    args = p.parse_args(argv)
    args.functions = args.functions or args.shapes

    from sandbox.runtime import overlap

    before = overlap.mode()
    overlap.set_mode(args.overlap)
    clock = _KernelClock(by_shape=args.shapes)
    clock.install()
    try:
        _run(args, clock)
    finally:
        clock.uninstall()
        overlap.set_mode(before)


def _run(args, clock: _KernelClock) -> None:
    import sandbox
    from sandbox.bench._cases_user import profiled_step
    from sandbox.runtime import simd

    cpu = simd.cpu()
    step = profiled_step(args.volume, args.size, args.batch, args.mode)
    what = (f"3-D UNet step, {args.volume}" if args.volume
            else f"{args.size}^2, batch {args.batch}, {args.mode}")
    print(f"cpu: {cpu.describe()}; path {simd.current().isa}; {what}; {args.steps} steps")
    threads_before = sandbox.get_num_threads()
    try:
        for threads in args.threads:
            sandbox.set_num_threads(threads)
            for _ in range(3):
                step()
            clock.reset()
            start = time.perf_counter()
            for _ in range(args.steps):
                step()
            elapsed = (time.perf_counter() - start) / args.steps
            print(f"{threads} thread(s)")
            _report(clock, elapsed, args.steps, args.rows, args.functions)
    finally:
        sandbox.set_num_threads(threads_before)


if __name__ == "__main__":
    main()
