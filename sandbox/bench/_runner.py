"""Run cases: build, checksum the first call, time against PyTorch, measure memory."""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from ..runtime.threads import get_num_threads
from ._cases import Case
from ._compare import _as_arrays, checksum
from ._timing import MIN_SAMPLE, paired_ratio, peak_memory, time_pairs


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def agreement(ours, theirs) -> float:
    """Largest ``max|ours - theirs| / max|theirs|`` over the outputs (inf on shape mismatch)."""
    a_list, b_list = _as_arrays(ours), _as_arrays(theirs)
    if len(a_list) != len(b_list):
        return float("inf")
    worst = 0.0
    for a, b in zip(a_list, b_list, strict=True):
        if a.shape != b.shape:
            return float("inf")
        if a.size == 0:
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        scale = max(float(np.abs(b64).max()), 1e-30)
        worst = max(worst, float(np.abs(a64 - b64).max()) / scale)
    return worst


def _empty_result(case: Case) -> dict:
    return {"name": case.name, "group": case.group, "shape": None, "nbytes": None,
            "rtol": case.rtol, "ours": None, "torch": None, "ratio": None, "gbs": None,
            "bw_frac": None, "peak_bytes": None, "torch_peak_bytes": None, "peak_method": None,
            "flops": None, "gflops": None, "torch_gflops": None, "sgemm_frac": None,
            "torch_sgemm_frac": None, "checksum": None, "torch_agreement": None,
            "torch_note": None, "baseline": None, "overhead": None, "min_sample_ms": None,
            "error": None}


def _prepare(case: Case, quick: bool, torch, result: dict):
    """Build the case's work and check its first call (checksum, agreement with PyTorch)
    into ``result``.  Returns ``(work, theirs)`` (``theirs`` None when PyTorch is absent
    or failed), or None when the case failed (the error is in ``result``)."""
    try:
        work = case.build(quick, torch)
        result["shape"], result["nbytes"], result["flops"] = work.shape, work.nbytes, work.flops
        first = work.ours()
        result["checksum"] = checksum(first)
    except Exception as exc:  # a broken or missing op must not stop the suite
        result["error"] = _describe(exc)
        return None
    theirs = work.theirs
    result["torch_note"] = work.torch_note if torch is not None else "PyTorch not installed"
    if theirs is not None:
        try:
            result["torch_agreement"] = agreement(first, theirs())
        except Exception as exc:
            result["torch_note"] = "PyTorch failed: " + _describe(exc)
            theirs = None
    return work, theirs


def _measure_memory(work, result: dict) -> None:
    """Peak memory: the case's own measurement of both libraries when it has one, else
    tracemalloc over one extra call of ours."""
    if work.peak is not None:
        result["peak_bytes"], result["torch_peak_bytes"] = work.peak()
        result["peak_method"] = "rss" if result["peak_bytes"] is not None else None
    else:
        result["peak_bytes"] = peak_memory(work.ours)
        result["peak_method"] = "tracemalloc"


def _record(result: dict, work, mine, other, bandwidth, sgemm_gflops, base=None) -> dict:
    """The timings and the figures derived from them, into ``result`` (``base``: the
    baseline's timings, paired with ``mine``; ``overhead`` is the median of their ratios
    round by round, :func:`~._timing.paired_ratio`)."""
    result["ours"] = mine.as_dict()
    if other is not None:
        result["torch"] = other.as_dict()
        result["ratio"] = mine.median / other.median
    if base is not None:
        result["baseline"] = base.as_dict()
        result["overhead"] = paired_ratio(mine, base)
    if work.flops:
        result["gflops"] = work.flops / mine.median / 1e9
        if other is not None:
            result["torch_gflops"] = work.flops / other.median / 1e9
        if sgemm_gflops:
            result["sgemm_frac"] = result["gflops"] / sgemm_gflops
            if result["torch_gflops"] is not None:
                result["torch_sgemm_frac"] = result["torch_gflops"] / sgemm_gflops
    if work.nbytes:
        result["gbs"] = work.nbytes / mine.median / 1e9
        if bandwidth:
            result["bw_frac"] = result["gbs"] / bandwidth
    return result


def run_case(case: Case, *, quick: bool, torch, repeat: int, warmup: int,
             bandwidth: float | None, memory: bool = True,
             sgemm_gflops: float | None = None, min_sample: float = MIN_SAMPLE,
             lead_in: bool = True) -> dict:
    """Measure one case; never raises for a failing case (the error is recorded).

    Parameters
    ----------
    case : Case
    quick : bool
        Build the small ``--quick`` shapes.
    torch : module or None
        PyTorch for the side-by-side timing.
    repeat, warmup : int
        Timed and untimed calls (``repeat`` is capped by ``case.max_repeat``).
        The first call (for the checksum) counts as a warm-up call.
    bandwidth : float or None
        Copy bandwidth in GB/s, for the fraction column.
    memory : bool
        Measure peak memory: the case's own measurement of both libraries when it
        has one (``Work.peak``), else tracemalloc over one extra call of ours.
    sgemm_gflops : float or None
        Measured SGEMM peak in GFLOP/s, for the fraction of cases with FLOPs.
    min_sample : float
        Seconds a timed sample lasts at least (shorter calls are repeated back to
        back within it; see :func:`._timing.time_pair`), or the case's own
        ``min_sample`` where that is longer (recorded as ``min_sample_ms``).
    lead_in : bool
        Start every timed sample with an untimed call (see :func:`._timing.time_pair`).

    Returns
    -------
    dict
        JSON-ready result (see ``docs/benchmarks.md`` for the fields), at the thread count
        in force (``threads``).
    """
    return run_case_threads(case, [get_num_threads()], lambda n: None, quick=quick,
                            torch=torch, repeat=repeat, warmup=warmup, bandwidth=bandwidth,
                            memory=memory, sgemm_gflops=sgemm_gflops,
                            min_sample=min_sample, lead_in=lead_in)[0]


def run_case_threads(case: Case, counts, switch, *, quick: bool, torch, repeat: int,
                     warmup: int, bandwidth: float | None, memory: bool = True,
                     sgemm_gflops=None, min_sample: float = MIN_SAMPLE,
                     lead_in: bool = True) -> list[dict]:
    """:func:`run_case` at every thread count of ``counts``, the counts interleaved
    round by round (:func:`._timing.time_pairs`; ``switch(n)`` sets ``n`` threads):
    one result per count, each with its ``threads``, and every count but the smallest its
    ``speedup`` (and ``torch_speedup``) from the smallest: the median over the rounds of
    the time at the smallest count over the time at this one in the same round
    (:func:`~._timing.paired_ratio`).  The case is built and checked at
    each count (a training step changes its model, so each count times its own), peak
    memory once, at the first count, after the timing.  ``sgemm_gflops``: a number, or
    a dict by count."""
    counts = list(counts)
    results = [_empty_result(case) for _ in counts]
    works = {}
    for n, result in zip(counts, results, strict=True):
        result["threads"] = n
        switch(n)
        prepared = _prepare(case, quick, torch, result)
        if prepared is None:
            return results
        works[n] = prepared
    k = min(repeat, case.max_repeat or repeat)
    min_sample = max(min_sample, case.min_sample or 0.0)
    for result in results:
        result["min_sample_ms"] = min_sample * 1e3
    try:
        timed = time_pairs({n: (work.ours, theirs, work.baseline)
                            for n, (work, theirs) in works.items()},
                           switch, repeat=k, warmup=max(warmup - 1, 0), min_sample=min_sample,
                           lead_in=lead_in)
        if memory:
            switch(counts[0])
            _measure_memory(works[counts[0]][0], results[0])
    except Exception as exc:
        for result in results:
            result["error"] = _describe(exc)
        return results
    fewest = min(counts)
    first = timed[fewest]
    for n, result in zip(counts, results, strict=True):
        peak = sgemm_gflops.get(n) if isinstance(sgemm_gflops, dict) else sgemm_gflops
        mine, other, base = timed[n]
        _record(result, works[n][0], mine, other, bandwidth, peak, base)
        if n != fewest:  # each round timed every count: its samples pair up
            result["speedup"] = paired_ratio(first[0], mine)
            if other is not None and first[1] is not None:
                result["torch_speedup"] = paired_ratio(first[1], other)
    return results


def _stolen_share(before, after, wall) -> float | None:
    """The share of the machine's CPU time the hypervisor took in ``wall`` seconds, from
    two readings of ``host_steal_seconds`` (None where it is not reported)."""
    if before is None or after is None or wall <= 0:
        return None
    return max(after - before, 0.0) / (wall * (os.cpu_count() or 1))


def run_suite(cases, *, quick: bool, torch, repeat: int, warmup: int, bandwidth, memory=True,
              progress: bool = True, sgemm_gflops=None, threads=None,
              min_sample: float = MIN_SAMPLE, lead_in: bool = True) -> list[dict]:
    """Run :func:`run_case` over ``cases`` with a tqdm progress bar on stderr.

    ``threads`` (a list of counts) runs each case at every count, the counts'
    samples interleaved round by round (:func:`run_case_threads`), so that the counts
    of one case see the same background load; each result records its ``threads``.
    Peak memory is measured at the first count only.  ``sgemm_gflops`` may be a number
    or a dict of numbers by thread count.  Without ``threads``, the cases run at the
    thread count in force.  ``lead_in``: every timed sample starts with an untimed call.
    """
    from tqdm import tqdm

    from ._env import host_steal_seconds, set_threads

    counts = list(threads) if threads else []
    results = []
    bar = tqdm(cases, desc="bench", unit="case", disable=not progress, file=sys.stderr,
               dynamic_ncols=True)
    for case in bar:
        bar.set_postfix_str(case.name, refresh=True)
        stolen, start = host_steal_seconds(), time.perf_counter()
        if threads:
            done = run_case_threads(case, counts, lambda n: set_threads(n, torch), quick=quick,
                                    torch=torch, repeat=repeat, warmup=warmup,
                                    bandwidth=bandwidth, memory=memory,
                                    sgemm_gflops=sgemm_gflops, min_sample=min_sample,
                                    lead_in=lead_in)
        else:
            peak = (sgemm_gflops.get(get_num_threads()) if isinstance(sgemm_gflops, dict)
                    else sgemm_gflops)
            done = [run_case(case, quick=quick, torch=torch, repeat=repeat, warmup=warmup,
                             bandwidth=bandwidth, memory=memory, sgemm_gflops=peak,
                             min_sample=min_sample, lead_in=lead_in)]
        share = _stolen_share(stolen, host_steal_seconds(), time.perf_counter() - start)
        for result in done:
            result["host_steal"] = share
        results.extend(done)
    bar.close()
    return results
