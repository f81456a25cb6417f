"""Output checksums and the baseline comparison (slowdowns beyond noise, numerical drift).

Slowdown rule
-------------
For each case present in both runs, ``change = now / base - 1`` of the median
times.  Each run's robust relative noise is ``r = max(1.4826 * MAD, IQR / 1.349) / median``; the
two combine as ``sqrt(r_base**2 + r_now**2)``.  A case is flagged **slower**
only when ::

    change > max(threshold, noise_k * combined_noise)

so a noisy case needs a larger slowdown before it counts.  Defaults:
``threshold = 0.15``, ``noise_k = 3``.

Drift rule
----------
Every case records, per output array, float64 moments of the float32 output:
``sum``, ``abs_sum`` (sum of ``|x|``), ``sumsq``, ``max_abs``, eight values at
fixed flat positions, and the sum and absolute sum of each of 32 contiguous
blocks of the flattened output (so a change confined to a small region, e.g.
a border, is judged against that block's magnitude, not the whole array's).
Reordering a float32 accumulation changes each element by a few units in the
last place (``eps32 = 1.2e-7``) relative to the magnitude of its terms, so with
a case's relative tolerance ``rtol`` the moments may move by at most ::

    |Δsum|          <= rtol * abs_sum   (cancellation: bound by the terms' size)
    |Δblock_sum[i]| <= rtol * block_abs_sum[i]
    |Δsumsq|        <= 2 * rtol * sumsq
    |Δmax_abs|      <= rtol * max_abs
    |Δsample|       <= rtol * (|sample| + rms)   (rms = sqrt(sumsq / size))

``rtol`` is 1e-5 (about 80 float32 ulps) for single ops and 1e-4 for a UNet
training step (the rounding passes through ~20 GEMMs and batch norms).  A
changed shape or dtype, or NaN/Inf appearing, is always drift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

N_SAMPLES = 8
N_BLOCKS = 32
DEFAULT_THRESHOLD = 0.15
DEFAULT_NOISE_K = 3.0
MAD_TO_SIGMA = 1.4826
IQR_TO_SIGMA = 1.349


def _as_arrays(outputs) -> list[np.ndarray]:
    if isinstance(outputs, (tuple, list)):
        items = outputs
    else:
        items = [outputs]
    arrays = []
    for item in items:
        if item is None:
            continue
        if hasattr(item, "detach"):  # a torch tensor
            item = item.detach().cpu().numpy()
        elif hasattr(item, "data") and not isinstance(item, np.ndarray):  # a sandbox Tensor
            item = item.numpy()
        arrays.append(np.asarray(item))
    return arrays


def checksum(outputs) -> list[dict]:
    """Float64 summary of each output array (see the module docstring).

    Parameters
    ----------
    outputs : ndarray, tensor, or a tuple/list of them (None entries are skipped)

    Returns
    -------
    list of dict
        One JSON-ready summary per array.
    """
    summaries = []
    for a in _as_arrays(outputs):
        flat = a.astype(np.float64, copy=False).ravel()
        pos = np.linspace(0, flat.size - 1, N_SAMPLES).astype(np.int64) if flat.size else []
        starts = np.linspace(0, flat.size, min(N_BLOCKS, flat.size) + 1).astype(np.int64)[:-1]
        blocks = np.add.reduceat(flat, starts) if flat.size else flat
        abs_blocks = np.add.reduceat(np.abs(flat), starts) if flat.size else flat
        summaries.append({
            "shape": list(a.shape),
            "dtype": str(a.dtype),
            "sum": float(flat.sum()),
            "abs_sum": float(np.abs(flat).sum()),
            "sumsq": float(np.dot(flat, flat)),
            "max_abs": float(np.abs(flat).max()) if flat.size else 0.0,
            "samples": [float(flat[i]) for i in pos],
            "block_sums": blocks.tolist(),
            "block_abs_sums": abs_blocks.tolist(),
        })
    return summaries


def _close(base: float, now: float, tol: float) -> bool:
    if math.isnan(base) or math.isnan(now):
        return math.isnan(base) and math.isnan(now)
    if math.isinf(base) or math.isinf(now):
        return base == now
    return abs(now - base) <= tol


def drift(base: list[dict], now: list[dict], rtol: float) -> list[str]:
    """Differences between two :func:`checksum` results beyond ``rtol``; empty when none.

    Parameters
    ----------
    base, now : list of dict
        Checksums of the baseline and the current run.
    rtol : float
        Relative tolerance (see the module docstring for how each moment uses it).

    Returns
    -------
    list of str
        Human-readable findings (at most one per output array).
    """
    if len(base) != len(now):
        return [f"{len(base)} outputs before, {len(now)} now"]
    found = []
    for k, (b, n) in enumerate(zip(base, now, strict=True)):
        where = f"output {k}"
        if b["shape"] != n["shape"] or b["dtype"] != n["dtype"]:
            found.append(f"{where}: {b['dtype']}{b['shape']} before, {n['dtype']}{n['shape']} now")
            continue
        size = max(int(np.prod(b["shape"])), 1)
        rms = math.sqrt(b["sumsq"] / size) if math.isfinite(b["sumsq"]) else 0.0
        checks = [("sum", b["sum"], n["sum"], rtol * b["abs_sum"]),
                  ("sumsq", b["sumsq"], n["sumsq"], 2 * rtol * b["sumsq"]),
                  ("max_abs", b["max_abs"], n["max_abs"], rtol * b["max_abs"])]
        checks += [(f"sample[{i}]", bs, ns, rtol * (abs(bs) + rms))
                   for i, (bs, ns) in enumerate(zip(b["samples"], n["samples"], strict=False))]
        checks += [(f"block_sum[{i}]", bs, ns, rtol * ba)
                   for i, (bs, ns, ba) in enumerate(zip(b.get("block_sums", []),
                                                         n.get("block_sums", []),
                                                         b.get("block_abs_sums", []),
                                                         strict=False))]
        for what, bv, nv, tol in checks:
            if not _close(bv, nv, tol):
                rel = abs(nv - bv) / max(abs(bv), 1e-300) if math.isfinite(nv - bv) else math.inf
                found.append(f"{where} {what}: {bv:.9g} -> {nv:.9g} (rel {rel:.2g}, "
                             f"allowed {tol:.2g})")
                break
    return found


def rel_noise(stats: dict | None) -> float:
    """Robust relative noise of a stats dict (0 if absent).

    The larger of ``1.4826 * MAD / median`` and ``IQR / 1.349 / median``: both
    estimate the standard deviation for normal noise, but with the 3 repeats of
    ``--quick`` the MAD alone can come out near zero (two of three times agreeing
    by chance), which made a baseline case look noise-free and flagged normal
    jitter of the next run as a slowdown.
    """
    if not stats or not stats.get("median"):
        return 0.0
    sigma = max(MAD_TO_SIGMA * stats.get("mad", 0.0), stats.get("iqr", 0.0) / IQR_TO_SIGMA)
    return sigma / stats["median"]


@dataclass
class Delta:
    """Comparison of one case between a baseline and the current run."""

    name: str
    base: float | None = None  # median seconds
    now: float | None = None
    change: float | None = None  # now / base - 1
    allowed: float | None = None  # slowdown tolerated for this case
    slower: bool = False
    drift: list[str] = field(default_factory=list)
    error: str | None = None
    note: str = ""

    @property
    def flagged(self) -> bool:
        """True when this case makes ``--compare`` fail."""
        return self.slower or bool(self.drift) or self.error is not None

    @property
    def status(self) -> str:
        """One word: ``SLOWER``, ``DRIFT``, ``ERROR``, ``faster``, ``ok``, ``noise``, ``new``..."""
        words = []
        if self.error is not None:
            words.append("ERROR")
        if self.slower:
            words.append("SLOWER")
        if self.drift:
            words.append("DRIFT")
        if words:
            return "+".join(words)
        return self.note or "ok"


def compare(base: list[dict], now: list[dict], threshold: float = DEFAULT_THRESHOLD,
            noise_k: float = DEFAULT_NOISE_K) -> list[Delta]:
    """Compare current results against a baseline, case by case.

    Parameters
    ----------
    base, now : list of dict
        The ``results`` lists of two runs (as written by ``--json`` / ``--save``).
    threshold : float
        Smallest relative slowdown that counts (0.15 = 15 %).
    noise_k : float
        Multiple of the combined relative noise a slowdown must also exceed.

    Returns
    -------
    list of Delta
        One per case of ``now`` (in its order), then cases only in the baseline
        (``missing``, not flagged).  Results carrying a ``threads`` count are matched
        by name and thread count (named ``case @Nt`` when the run has several counts).
    """
    if threshold < 0 or noise_k < 0:
        raise ValueError(f"threshold and noise_k must be >= 0, got {threshold}, {noise_k}")
    several = len({r.get("threads") for r in [*base, *now]}) > 1

    def key(r):
        return r["name"], r.get("threads")

    def label(k):
        return f"{k[0]} @{k[1]}t" if several and k[1] is not None else k[0]

    by_name = {key(r): r for r in base}
    deltas = []
    for r in now:
        d = Delta(label(key(r)))
        b = by_name.get(key(r))
        if r.get("error"):
            d.error = r["error"]
            if b is None or b.get("error"):
                d.error, d.note = None, "unavailable"
            deltas.append(d)
            continue
        if b is None or b.get("error") or not b.get("ours"):
            d.note = "new"
            d.now = r["ours"]["median"] if r.get("ours") else None
            deltas.append(d)
            continue
        d.base, d.now = b["ours"]["median"], r["ours"]["median"]
        d.change = d.now / d.base - 1
        noise = math.hypot(rel_noise(b["ours"]), rel_noise(r["ours"]))
        d.allowed = max(threshold, noise_k * noise)
        d.slower = d.change > d.allowed
        if not d.slower:
            d.note = "faster" if d.change < -d.allowed else ("noise" if d.change > threshold
                                                              else "ok")
        rtol = max(b.get("rtol", 1e-5), r.get("rtol", 1e-5))
        d.drift = drift(b.get("checksum") or [], r.get("checksum") or [], rtol)
        deltas.append(d)
    seen = {key(r) for r in now}
    deltas += [Delta(label(k), note="missing") for k in by_name if k not in seen]
    return deltas
