"""``sandbox bench``: regression benchmarks, side by side with PyTorch.

Times resampling (every mode and option family, forward and backward, 2-D and 3-D), the
UNet's layer ops and a full UNet training step; reports medians, noise,
effective bandwidth, peak memory and the ratio to PyTorch measured in the same
run; saves baselines and compares against them (slowdowns beyond the measured
noise, numerical drift of the outputs).  See ``docs/benchmarks.md``.

Exit status: 0 all good; 1 ``--compare`` found a slower or drifted case, or a
case failed with an error; 2 bad arguments, nothing matched ``--filter``, or a
baseline that cannot be used.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..cli.errors import ArgumentParser, debug_requested, run_command
from ._cases import Case, all_cases, select
from ._compare import DEFAULT_NOISE_K, DEFAULT_THRESHOLD, checksum, compare, drift

__all__ = ["Case", "all_cases", "checksum", "compare", "drift", "main", "run", "select"]

DEFAULT_STORAGE = ".benchmarks"


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {n}")
    return n


def _thread_counts(text: str) -> list[int]:
    """``2`` or ``1,2``: one thread count or several (each case runs at every count)."""
    counts = [_positive_int(part.strip()) for part in text.split(",") if part.strip()]
    if not counts:
        raise argparse.ArgumentTypeError(f"expected positive integers such as 2 or 1,2, got "
                                         f"{text!r}")
    return list(dict.fromkeys(counts))


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``sandbox bench``."""
    p = ArgumentParser(
        prog="sandbox bench",
        description="Regression benchmarks of the sandbox kernels and a UNet training step, "
                    "timed side by side with PyTorch (when installed).",
        epilog="Exit status: 0 ok; 1 slower/drifted/failed case; 2 usage error. "
               "See docs/benchmarks.md.")
    g = p.add_argument_group("what to run")
    g.add_argument("--filter", action="append", metavar="PATTERN",
                   help="only cases whose name contains PATTERN, or matches it as a glob "
                        "(*?[); repeat or comma-separate for several")
    g.add_argument("--list", action="store_true", help="list the selected cases and exit")
    g.add_argument("--quick", action="store_true",
                   help="smoke run: small shapes, 3 repeats, 1 warm-up (about a minute)")
    g.add_argument("--no-torch", action="store_true", help="do not time PyTorch")
    g = p.add_argument_group("how to measure")
    g.add_argument("--threads", type=_thread_counts, default=[2], metavar="N[,N...]",
                   help="threads for the sandbox kernels and PyTorch (default: 2); several "
                        "counts (e.g. 1,2) run every case at each and report the speed-up "
                        "and the cores busy")
    g.add_argument("--isa", choices=["auto", "avx512", "avx2", "portable"],
                   help="the sandbox's SIMD path (sandbox.runtime.simd; default: $SANDBOX_ISA "
                        "or auto). avx2 is what a CPU without AVX-512 runs; PyTorch is limited "
                        "the same way (ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 "
                        "MKL_ENABLE_INSTRUCTIONS=AVX2, before torch is imported; the bench "
                        "re-executes itself when they were not set in time)")
    g.add_argument("--no-reexec", dest="reexec", action="store_false",
                   help="with --isa: print the command that limits PyTorch and OpenBLAS "
                        "instead of re-executing the benchmark with it")
    g.add_argument("--repeat", type=_positive_int,
                   help="timed calls per case (default: 7, or 3 with --quick)")
    g.add_argument("--warmup", type=int, help="untimed calls first (default: 2, or 1 with "
                                              "--quick)")
    g.add_argument("--min-sample-ms", type=float, default=1.0, metavar="MS",
                   help="a timed sample lasts at least this long: shorter calls run back to "
                        "back within it, as a training step calls them, and count per call "
                        "(default: 1; 0 times single calls, each after the other library's)")
    g.add_argument("--no-lead-in", dest="lead_in", action="store_false",
                   help="start a timed sample with the timed calls themselves, not with an "
                        "untimed call first (the default: each sample then measures calls "
                        "made after the library's own, as in a training loop, not after "
                        "the other library's or another thread count's)")
    g.add_argument("--omp-wait-policy", choices=["passive", "active"],
                   help="OMP_WAIT_POLICY for the OpenMP runtimes (default: $OMP_WAIT_POLICY if "
                        "set, else passive: two spinning thread pools on 2 cores distort "
                        "the side-by-side timings)")
    g.add_argument("--no-memory", dest="memory", action="store_false",
                   help="skip the tracemalloc peak-memory call")
    g.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar")
    g = p.add_argument_group("output and baselines")
    g.add_argument("--json", metavar="FILE", help="write results and environment as JSON")
    g.add_argument("--plot", metavar="FILE", help="PNG of the ratio to PyTorch (matplotlib)")
    g.add_argument("--save", metavar="NAME", help="store the results as baseline NAME")
    g.add_argument("--compare", metavar="NAME",
                   help="compare against baseline NAME (or a .json file); exit 1 on a "
                        "slowdown beyond noise or numerical drift")
    g.add_argument("--storage", default=DEFAULT_STORAGE, metavar="DIR",
                   help=f"baseline folder (default: ./{DEFAULT_STORAGE})")
    g.add_argument("--threshold", type=_fraction, default=DEFAULT_THRESHOLD,
                   help=f"relative slowdown that counts (default: {DEFAULT_THRESHOLD})")
    g.add_argument("--noise-k", type=_fraction, default=DEFAULT_NOISE_K,
                   help="a slowdown must also exceed this many combined relative standard "
                        f"deviations (default: {DEFAULT_NOISE_K})")
    return p


def _load_baseline(args):
    from ._report import baseline_path, read_json

    path = baseline_path(args.compare, args.storage)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no baseline {args.compare!r}: {path} does not exist "
                                f"(create it with --save {args.compare})")
    doc = read_json(path)
    quick = bool((doc.get("options") or {}).get("quick"))
    if quick != bool(args.quick):
        raise ValueError(f"baseline {args.compare!r} was measured "
                         f"{'with' if quick else 'without'} --quick; "
                         "compare runs of the same kind")
    return path, doc


def _check_outputs(args) -> None:
    """Refuse output names and folders that cannot be written, before anything runs."""
    from ..train._outputs import check_writable_folder
    from ._report import baseline_path

    targets = [("--json", args.json), ("--plot", args.plot)]
    if args.save:
        targets.append(("--save", baseline_path(args.save, args.storage)))
    for flag, target in targets:
        if not target:
            continue
        if os.path.isdir(target):
            raise ValueError(f"{flag} {target} is a directory; give a file name")
        folder = os.path.dirname(os.path.abspath(target))
        # A real write test (permission bits do not stop root; a read-only mount does);
        # --save makes its storage folder, so its nearest existing parent is tried.
        check_writable_folder(folder, flag, create=flag == "--save")


def _check_memory(cases, quick: bool) -> None:
    """Estimate the suite's largest allocations (the bandwidth probe, the GEMM roofline
    and the UNet training steps, ours and PyTorch's at once) against the memory limit."""
    from ..train._memory_plan import check, train_step_bytes, unet_forward_count
    from ._cases_3d import UNET3D, UNET3D_BATCH, UNET3D_QUICK, UNET3D_SIZE
    from ._cases_classic import CLASSIC_SIZES, classic_shape

    probe = 2 * (32 if quick else 256) * 2**20
    gemm = 3 * 4 * (512 if quick else 2048) ** 2
    steps = [0]
    groups = {c.group for c in cases}
    if "unet-step" in groups:
        depth, width, n, side = (2, 4, 2, 16) if quick else (4, 16, 8, 64)
        widths = [width * 2**level for level in range(depth + 1)]
        steps.append(train_step_bytes(unet_forward_count(3, 3, widths, (side, side)), n))
    if "unet-classic" in groups:
        widths, n, side = classic_shape(max(CLASSIC_SIZES), quick)
        steps.append(train_step_bytes(unet_forward_count(1, 2, widths, (side, side)), n))
    if "unet3d-step" in groups:
        arch = UNET3D_QUICK if quick else UNET3D
        n, side = (2, 8) if quick else (UNET3D_BATCH, UNET3D_SIZE)
        widths = [arch["base_width"] * 2**level for level in range(arch["depth"] + 1)]
        steps.append(train_step_bytes(unet_forward_count(1, 4, widths, (side,) * 3), n))
    check(probe + gemm + 2 * max(steps), f"the benchmark suite ({len(cases)} case(s)"
          f"{', quick' if quick else ''})", "select fewer cases with --filter, or --quick")


def _isa_limits(args) -> dict:
    """Limit PyTorch (and OpenBLAS) to the ``--isa`` path; re-execute when too late.

    Returns the limits asked for, with the ones that could not take effect under
    ``"unmet"``.
    """
    from ..runtime import simd
    from . import _env

    isa = args.isa or simd.current().requested_isa  # --isa, else $SANDBOX_ISA
    limits = _env.isa_limits(isa)
    unmet = _env.apply_isa_limits(limits) if not args.no_torch else {
        k: v for k, v in limits.items() if k == "OPENBLAS_CORETYPE"
        and os.environ.get(k) != v}
    if unmet and args.reexec and _env.started_as_bench(args.argv):
        settings = " ".join(f"{k}={v}" for k, v in unmet.items())
        print(f"--isa {isa}: re-executing with {settings} (they must be set before "
              "torch / numpy load)", file=sys.stderr)
        _env.reexec(unmet, args.argv)
    if unmet:
        print(f"warning: --isa {isa}: {', '.join(unmet)} can no longer take effect in this "
              "process (torch or numpy already loaded); for the same limits run:\n  "
              + _env.isa_command(limits, args.argv), file=sys.stderr)
    return {**limits, "unmet": unmet} if limits else {}


def _run(args) -> int:
    from ..runtime import simd

    if args.isa:
        simd.resolve(args.isa, isa_name="--isa")  # a path this CPU lacks: usage error, early
    with simd.using(isa=args.isa):
        return _run_selected(args)


def _run_selected(args) -> int:
    from . import _env, _report
    from ._runner import run_suite

    cases = select(all_cases(), args.filter)
    if not cases:
        raise ValueError(f"no case matches --filter {', '.join(args.filter)}; see --list")
    if args.list:
        for case in cases:
            print(case.name)
        return 0
    baseline = _load_baseline(args) if args.compare else None
    _check_outputs(args)  # before the run, not after minutes of timing
    _check_memory(cases, args.quick)
    if args.min_sample_ms < 0:
        raise ValueError(f"--min-sample-ms must be >= 0, got {args.min_sample_ms}")
    repeat = args.repeat or (3 if args.quick else 7)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    if warmup < 0:
        raise ValueError(f"--warmup must be >= 0, got {warmup}")
    loaded = _env.openmp_runtimes_loaded()  # before the policy can take effect
    policy = _env.set_wait_policy(args.omp_wait_policy)
    if loaded and args.omp_wait_policy:
        print(f"warning: --omp-wait-policy has no effect on the already loaded "
              f"{', '.join(loaded)}", file=sys.stderr)
    limits = _isa_limits(args)
    torch = None if args.no_torch else _env.optional_torch()
    counts = args.threads
    threads = counts[0] if len(counts) == 1 else counts  # as recorded (an int when one)
    _env.set_threads(counts[-1], torch)
    copy_bytes = 32 * 2**20 if args.quick else 256 * 2**20
    bandwidth = _env.copy_bandwidth(copy_bytes)
    env = _env.environment(threads, torch, bandwidth)
    if len(counts) > 1:  # what the second core adds to memory-bound work
        env["copy_bandwidth_by_threads"] = {
            str(n): v for n, v in _env.copy_bandwidth_by_threads(counts, copy_bytes).items()}
    balance_seconds = 0.25 if args.quick else 1.0
    env["cpu_balance_before"] = _env.cpu_balance(balance_seconds)
    env["region_cost_before"] = _env.region_cost(max(counts))
    env["isa_limits"] = limits
    peaks = None
    if any(c.group in ("conv-layer", "conv3d-layer", "conv-autograd") for c in cases):
        env["sgemm_size"] = 512 if args.quick else 2048  # the GFLOP/s roofline
        peaks = {n: _env.sgemm_peak(n, env["sgemm_size"]) for n in counts}
        env["sgemm_gflops"] = peaks[counts[-1]]
        if len(counts) > 1:
            env["sgemm_gflops_by_threads"] = {str(n): v for n, v in peaks.items()}
    env["omp_wait_policy"] = policy
    env["openmp_loaded_before_policy"] = loaded
    print(_report.env_header(env))  # what ran, before minutes of timing
    results = run_suite(cases, quick=args.quick, torch=torch, repeat=repeat, warmup=warmup,
                        bandwidth=bandwidth, memory=args.memory, progress=args.progress,
                        sgemm_gflops=peaks, threads=counts,
                        min_sample=args.min_sample_ms / 1e3, lead_in=args.lead_in)
    env["cpu_balance_after"] = _env.cpu_balance(balance_seconds)
    env["region_cost_after"] = _env.region_cost(max(counts))
    options = {"quick": args.quick, "threads": threads, "repeat": repeat, "warmup": warmup,
               "min_sample_ms": args.min_sample_ms, "lead_in": args.lead_in,
               "filter": args.filter, "argv": args.argv, "isa": env["simd_path"]}
    doc = _report.document(results, env, options)

    print(_report.results_table(results))
    if len(counts) > 1:
        print()
        print(_report.scaling_table(results))
    if any(r.get("flops") for r in results):
        print()
        print(_report.flops_table(results, env))
    if any(r["name"].startswith("conv-autograd/") for r in results):
        print()
        print(_report.api_table(results))
    print()
    print(_report.env_summary(env))
    steal = _report.steal_summary(results)
    if steal:
        print(steal)
    for line in (_report.balance_summary(env), _report.region_summary(env)):
        if line:
            print(line)
    print("ratio = ours / PyTorch (< 1: sandbox faster); ±noise = 1.4826*MAD/median; "
          "peak MB = tracemalloc peak of one call (numpy arrays only), or for unet-classic "
          "and unet3d-step the resident-set growth of 3 steps in a fresh process (torch MB: "
          "the same for PyTorch)")
    status = 1 if any(r.get("error") for r in results) else 0
    if baseline is not None:
        path, base_doc = baseline
        base_threads = base_doc.get("options", {}).get("threads")
        if base_threads != threads:
            print(f"warning: baseline used {base_threads} threads, this run {threads}")
        selected = {c.name for c in cases}  # with --filter, compare only what was run
        base_results = []
        for r in base_doc["results"]:
            if "threads" not in r and isinstance(base_threads, int):
                r = dict(r, threads=base_threads)  # a file from before per-result counts
            if r["name"] in selected and (len(counts) == 1 or r.get("threads") in counts):
                base_results.append(r)
        if len(counts) == 1:  # one count now: the baseline's at that count (else as it is)
            same = [r for r in base_results if r.get("threads") == counts[0]]
            base_results = [dict(r, threads=None) for r in same or base_results]
            results_now = [dict(r, threads=None) for r in results]
        else:
            results_now = results
        deltas = compare(base_results, results_now, args.threshold, args.noise_k)
        flagged = [d for d in deltas if d.flagged]
        print()
        print(f"comparison against {path} (threshold {args.threshold:.0%}, noise x"
              f"{args.noise_k:g}):")
        print(_report.comparison_table(deltas))
        print(f"{len(flagged)} of {len(deltas)} cases flagged"
              + (": " + ", ".join(d.name for d in flagged[:10]) if flagged else ""))
        status = 1 if flagged else 0
    elif status:
        print(f"{sum(bool(r.get('error')) for r in results)} case(s) failed with an error")
    if args.json:
        _report.write_json(args.json, doc)
        print(f"results: {args.json}")
    if args.save:
        path = _report.baseline_path(args.save, args.storage)
        _report.write_json(path, doc)
        print(f"baseline saved: {path}")
    if args.plot:
        if _report.plot_ratios(results, args.plot):
            print(f"plot: {args.plot}")
        else:
            print("plot skipped: needs matplotlib (pip install matplotlib) and at least one "
                  "case timed with PyTorch", file=sys.stderr)
    return status


def run(argv) -> int:
    """Parse ``argv`` and run the suite; errors propagate (see :func:`main`)."""
    argv = list(argv)
    if argv[:1] == ["--"]:  # ``sandbox bench -- --quick`` passes the separator through
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    args.argv = argv
    from ..runtime.allocator import keep_freed_memory

    keep_freed_memory()  # same allocator settings as `sandbox train` (SANDBOX_TUNE_MALLOC=0: off)
    return _run(args)


def main(argv=None) -> int:
    """Run ``sandbox bench`` with the argument list ``argv``; return the exit status.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after ``sandbox bench`` (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 ok; 1 regression, drift or a failing case; 2 usage error (one line on
        stderr; ``--debug`` or ``SANDBOX_DEBUG=1`` adds the traceback).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    return run_command("sandbox bench", lambda: run(argv), debug=debug)
