"""Reports: the results table, the comparison table, JSON files and the ratio plot."""

from __future__ import annotations

import json
import os
import re

from ._compare import Delta, rel_noise

DASH = "—"
FORMAT_VERSION = 1
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def fmt_ms(seconds: float | None) -> str:
    """Milliseconds with three to four significant digits, or a dash."""
    if seconds is None:
        return DASH
    ms = seconds * 1e3
    for limit, digits in ((100, 0), (10, 1), (1, 2)):
        if ms >= limit:
            return f"{ms:.{digits}f}"
    return f"{ms:.3f}"


def _fmt(value, spec: str, scale: float = 1.0) -> str:
    return DASH if value is None else format(value * scale, spec)


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to width; the first and last (names, notes) left-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]

    def line(cells):
        last = len(cells) - 1
        return "  ".join(c.ljust(w) if i in (0, last) else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def _several_counts(results: list[dict]) -> bool:
    return len({r.get("threads") for r in results}) > 1


def _label(r: dict, several: bool) -> str:
    return f"{r['name']} @{r['threads']}t" if several and r.get("threads") else r["name"]


def _cores(stats: dict | None) -> str:
    cores = (stats or {}).get("cores")
    return DASH if cores is None else f"{cores:.2f}"


def results_table(results: list[dict]) -> str:
    """Plain-text table: one row per case (times in ms, ratio = ours / PyTorch; cores =
    process CPU time / wall time of the timed calls, ours and PyTorch's)."""
    header = ["case", "ours ms", "±noise", "torch ms", "ratio", "cores", "torch cores", "GB/s",
              "%copy", "peak MB", "torch MB", "note"]
    several = _several_counts(results)
    rows = []
    for r in results:
        if r.get("error"):
            rows.append([_label(r, several), DASH, "", DASH, DASH, DASH, DASH, DASH, DASH, DASH,
                         DASH, r["error"][:60]])
            continue
        ours, theirs = r.get("ours"), r.get("torch")
        note = "" if theirs else (r.get("torch_note") or "")
        agree = r.get("torch_agreement")
        if agree is not None and agree > 1e-3:
            note = (note + f" differs from torch by {agree:.1g}").strip()
        stolen = r.get("host_steal")
        if stolen is not None and stolen >= STEAL_NOTE:
            note = (note + f" host took {100 * stolen:.0f}% of the CPU").strip()
        rows.append([
            _label(r, several),
            fmt_ms(ours["median"]),
            f"{100 * rel_noise(ours):.0f}%",
            fmt_ms(theirs["median"]) if theirs else DASH,
            _fmt(r.get("ratio"), ".2f"),
            _cores(ours),
            _cores(theirs),
            _fmt(r.get("gbs"), ".1f"),
            _fmt(r.get("bw_frac"), ".0f", 100),
            _fmt(r.get("peak_bytes"), ".1f", 2.0**-20),
            _fmt(r.get("torch_peak_bytes"), ".1f", 2.0**-20),
            note,
        ])
    return _table(header, rows)


def scaling_table(results: list[dict]) -> str:
    """Per case, the run at each thread count: ms, the speed-up from the fewest threads to
    the most (the rounds' median of time at the fewest / time at the most, as
    :func:`~._runner.run_case_threads` records it; the ratio of the medians for a result
    file without it), and the cores busy at the most."""
    counts = sorted({r["threads"] for r in results if r.get("threads")})
    by_case: dict = {}
    for r in results:
        by_case.setdefault(r["name"], {})[r.get("threads")] = r
    lo, hi = counts[0], counts[-1]
    header = ["case", *(f"ours {n}t ms" for n in counts), f"speed-up {lo}->{hi}",
              f"cores {hi}t", *(f"torch {n}t ms" for n in counts), "torch speed-up",
              f"torch cores {hi}t", *(f"vs torch {n}t" for n in counts)]
    def median(runs, n, side):
        stats = (runs.get(n) or {}).get(side)
        return stats["median"] if stats and not runs[n].get("error") else None

    def speedup(runs, side):
        paired = (runs.get(hi) or {}).get("speedup" if side == "ours" else "torch_speedup")
        if paired is not None:  # the rounds' ratios (run_case_threads)
            return f"{paired:.2f}x"
        a, b = median(runs, lo, side), median(runs, hi, side)  # a result file without them
        return DASH if a is None or b is None else f"{a / b:.2f}x"

    rows = []
    for name, runs in by_case.items():
        hi_run = runs.get(hi) or {}
        rows.append([
            name, *(fmt_ms(median(runs, n, "ours")) for n in counts), speedup(runs, "ours"),
            _cores(hi_run.get("ours")), *(fmt_ms(median(runs, n, "torch")) for n in counts),
            speedup(runs, "torch"), _cores(hi_run.get("torch")),
            *(DASH if not (runs.get(n) or {}).get("ratio") else f"{1 / runs[n]['ratio']:.2f}x"
              for n in counts),
        ])
    footer = (f"speed-up = time at {lo} thread(s) / time at {hi}, the median over the rounds "
              "(each round times every count; a change of the machine's speed between rounds "
              "cancels); cores = process CPU time / "
              "wall time of the timed calls (2.0 = two cores busy); vs torch = PyTorch ms / "
              "ours ms (> 1: sandbox faster)")
    return _table(header, rows) + "\n" + footer


def api_table(results: list[dict]) -> str:
    """The conv layers through the autograd API (``conv-autograd``) beside the same work
    through the array API, timed in the same rounds (the case's baseline): ms of both,
    the median of their rounds' ratios, and PyTorch's speed."""
    several = _several_counts(results)
    header = ["layer", "F.conv2d ms", "array ms", "autograd/array", "torch ms", "speed"]
    rows = []
    for r in results:
        if not r["name"].startswith("conv-autograd/") or r.get("error"):
            continue
        layer = r["name"].split("/", 1)[1]
        ours, base, theirs = r["ours"]["median"], r.get("baseline"), r.get("torch")
        rows.append([
            f"{layer} @{r['threads']}t" if several else layer, fmt_ms(ours),
            fmt_ms(base["median"]) if base else DASH,
            f"{r['overhead']:.3f}" if base else DASH,
            fmt_ms(theirs["median"]) if theirs else DASH,
            f"{theirs['median'] / ours:.2f}x" if theirs else DASH,
        ])
    footer = ("forward + input and weight gradients of each 3x3 layer: F.conv2d + backward (the "
              "public autograd API) against the same calls of the array API (conv-layer's), "
              "timed in the same rounds (autograd/array: the median of the rounds' ratios); "
              "speed = PyTorch ms / F.conv2d ms")
    return _table(header, rows) + "\n" + footer


def env_header(env: dict) -> str:
    """The lines that say which code ran: CPU (model, family, model number, ISA), the
    sandbox's SIMD path and GEMM, the BLAS kernels and PyTorch's CPU capability."""
    fam, num = env.get("cpu_family"), env.get("cpu_model_number")
    blas = "; ".join(f"{b.get('internal_api')} {b.get('architecture') or '?'} "
                     f"({b.get('threads')} thr)" for b in env.get("blas_kernels") or []) or "none"
    limits = env.get("isa_limits") or {}
    unmet = limits.get("unmet") or {}
    torch_line = f"torch {env.get('torch') or DASH}"
    if env.get("torch"):
        torch_line += f": CPU capability {env.get('torch_cpu_capability') or '?'}"
    if limits:
        torch_line += ", limited by " + " ".join(f"{k}={v}" for k, v in limits.items()
                                                  if k != "unmet")
        if unmet:
            torch_line += f" (NOT in effect: {', '.join(unmet)})"
    return "\n".join([
        f"cpu: {env.get('cpu')} ({env.get('cpu_vendor') or env.get('cpu_machine')}, family "
        f"{fam if fam is not None else DASH}, model {num if num is not None else DASH}); ISA "
        f"{env.get('cpu_isa')} ({', '.join(env.get('cpu_simd') or []) or 'no wide SIMD'})",
        f"sandbox path: {env.get('simd_path')} (conv GEMM {env.get('conv_gemm')}; this CPU "
        f"runs {', '.join(env.get('simd_paths') or [])}); BLAS kernels: {blas}",
        torch_line,
    ])


def flops_table(results: list[dict], env: dict) -> str:
    """Plain-text table of the cases with FLOPs: ms, speed, GFLOP/s and % of the SGEMM peak.

    ``speed`` is PyTorch's time / ours (> 1: sandbox faster), as in the issue tables.
    """
    header = ["case", "ours ms", "torch ms", "speed", "ours GFLOP/s", "torch GFLOP/s",
              "ours %sgemm", "torch %sgemm"]
    rows = []
    several = _several_counts(results)
    for r in results:
        if not r.get("flops") or r.get("error"):
            continue
        theirs = r.get("torch")
        ratio = r.get("ratio")
        rows.append([
            _label(r, several),
            fmt_ms(r["ours"]["median"]),
            fmt_ms(theirs["median"]) if theirs else DASH,
            DASH if not ratio else f"{1 / ratio:.2f}x",
            _fmt(r.get("gflops"), ".1f"),
            _fmt(r.get("torch_gflops"), ".1f"),
            _fmt(r.get("sgemm_frac"), ".0f", 100),
            _fmt(r.get("torch_sgemm_frac"), ".0f", 100),
        ])
    peak = env.get("sgemm_gflops")
    by_threads = env.get("sgemm_gflops_by_threads")
    roofline = f"{peak:.1f} GFLOP/s (n={env.get('sgemm_size')})" if peak else DASH
    if by_threads:
        roofline = ", ".join(f"{v:.1f} GFLOP/s at {n}" for n, v in by_threads.items()) + \
            f" (n={env.get('sgemm_size')})"
    footer = ("speed = PyTorch ms / ours ms (> 1: sandbox faster); GFLOP/s: direct-convolution "
              "FLOPs (2*N*Cout*Cin*9*H*W per pass, 27*D*H*W in 3-D; 3 passes) / median time; "
              f"%sgemm: of this machine's best float32 SGEMM (numpy's BLAS or the project's "
              f"AVX-512 kernel) {roofline}" + ("" if by_threads else
                                               f" at {env.get('threads')} thread(s)"))
    return _table(header, rows) + "\n" + footer


#: a case during which the hypervisor took at least this share of the CPU time says so
STEAL_NOTE = 0.03


def steal_summary(results: list[dict]) -> str | None:
    """One line on the CPU time the hypervisor took during the cases (``/proc/stat``'s
    steal), or None where the kernel does not report it."""
    shares = [r["host_steal"] for r in results if r.get("host_steal") is not None]
    if not shares:
        return None
    worst = max(shares)
    return (f"host steal (CPU time the hypervisor took, /proc/stat): {100 * worst:.1f}% in "
            f"the worst case, {100 * sum(shares) / len(shares):.1f}% on average; where it "
            f"is high the milliseconds drift (the interleaved ratios hold better)")


def env_summary(env: dict) -> str:
    """Two lines describing the machine and the settings of a run."""
    blas = ", ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('num_threads')} thr)"
                     for b in env.get("blas") or []) or "none"
    bw = env.get("copy_bandwidth_gbs")
    sgemm = env.get("sgemm_gflops")
    return (f"{env.get('cpu')} ({env.get('cores_available')} cores); threads {env.get('threads')}"
            f"; OpenMP {'on' if env.get('openmp') else 'off'}; BLAS {blas}; copy bandwidth "
            f"{f'{bw:.1f} GB/s' if bw else DASH}{_bandwidth_by_threads(env)}"
            f"{f'; SGEMM {sgemm:.1f} GFLOP/s' if sgemm else ''}\n"
            f"python {env.get('python')}, numpy {env.get('numpy')}, torch "
            f"{env.get('torch') or DASH}, sandbox {env.get('sandbox')}, git "
            f"{env.get('git_commit') or DASH}")


def _bandwidth_by_threads(env: dict) -> str:
    """`` (threaded: 1 thread 44.6, 2 threads 52.4 GB/s, x1.17)`` from the run's
    ``copy_bandwidth_by_threads``, or an empty string where it was not measured."""
    by = env.get("copy_bandwidth_by_threads")
    if not by or len(by) < 2:
        return ""
    counts = sorted(by, key=int)
    parts = ", ".join(f"{n} thread{'s' if int(n) > 1 else ''} {by[n]:.1f}" for n in counts)
    return f" (threaded: {parts} GB/s, x{by[counts[-1]] / by[counts[0]]:.2f})"


def balance_summary(env: dict) -> str | None:
    """One line on how evenly fast the CPUs were before and after the run
    (:func:`sandbox.bench._env.cpu_balance`), or None where it was not measured."""
    parts = []
    for when in ("before", "after"):
        b = env.get(f"cpu_balance_{when}")
        if b:
            parts.append(f"{when}: {100 * b['uneven_share']:.0f}% of {b['rounds']} rounds "
                         f"uneven (slowest/fastest median {b['median']:.2f}, p90 "
                         f"{b['p90']:.2f})")
    if not parts:
        return None
    cpus = (env.get("cpu_balance_before") or env.get("cpu_balance_after"))["cpus"]
    return (f"CPU balance (a fixed loop on each of CPUs {', '.join(map(str, cpus))} in turn; "
            f"uneven: one >1.25x slower than another, which a 2-thread figure feels) "
            + "; ".join(parts))


def region_summary(env: dict) -> str | None:
    """One line on what an OpenMP parallel region cost before and after the run
    (:func:`sandbox.bench._env.region_cost`), or None where it was not measured."""
    parts = [f"{when}: {r['spinning_us']:.1f} us back to back, {r['waking_us']:.1f} us "
             f"after 2 ms idle"
             for when in ("before", "after") if (r := env.get(f"region_cost_{when}"))]
    if not parts:
        return None
    threads = (env.get("region_cost_before") or env.get("region_cost_after"))["threads"]
    return (f"OpenMP region at {threads} threads (an empty one: a slower figure back to "
            f"back means cores farther apart at the moment, which every 2-thread figure "
            f"feels) " + "; ".join(parts))


def comparison_table(deltas: list[Delta]) -> str:
    """Plain-text table of per-case changes against a baseline."""
    header = ["case", "base ms", "now ms", "change", "allowed", "status"]
    rows = []
    for d in deltas:
        status = d.status
        if d.drift:
            status += ": " + d.drift[0]
        if d.error:
            status += ": " + d.error[:60]
        rows.append([d.name, fmt_ms(d.base), fmt_ms(d.now), _fmt(d.change, "+.1%"),
                     _fmt(d.allowed, ".0%"), status])
    return _table(header, rows)


# --------------------------------------------------------------------------- files

def document(results: list[dict], env: dict, options: dict) -> dict:
    """The JSON document of a run (what ``--json`` and ``--save`` write)."""
    return {"format": FORMAT_VERSION, "environment": env, "options": options,
            "results": results}


def write_json(path: str, doc: dict) -> None:
    """Write ``doc`` atomically (temporary file, then rename)."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=True)
        f.write("\n")
    os.replace(tmp, path)


def read_json(path: str) -> dict:
    """Read a run document; ValueError names the file when it is not one."""
    with open(path, "rb") as f:
        try:
            doc = json.loads(f.read().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} is not a 'sandbox bench' result file (not valid JSON: "
                             f"{exc})") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not all(map(_valid_result, results)):
        raise ValueError(f"{path} is not a 'sandbox bench' result file (no list of 'results' "
                         "with case names and timings), or a damaged one")
    return doc


def _valid_result(r) -> bool:
    """A result entry: a case name and, unless it failed, a positive median time."""
    if not isinstance(r, dict) or not isinstance(r.get("name"), str):
        return False
    ours = r.get("ours")
    if ours is None:
        return True
    median = ours.get("median") if isinstance(ours, dict) else None
    return isinstance(median, int | float) and median > 0 and all(
        isinstance(ours.get(k, 0.0), int | float) for k in ("mad", "iqr")
    ) and isinstance(r.get("checksum") or [], list)


def baseline_path(name: str, storage: str) -> str:
    """Path of baseline ``name`` in ``storage``; an existing ``.json`` path is used as is."""
    if name.endswith(".json") and os.path.exists(name):
        return name
    if not _NAME_RE.match(name):
        raise ValueError(f"baseline name must be letters, digits, '.', '_' or '-' (or an "
                         f"existing .json file), got {name!r}")
    return os.path.join(storage, name + ".json")


def plot_ratios(results: list[dict], path: str) -> bool:
    """Save a horizontal bar chart of ours / PyTorch time per case as PNG.

    Returns
    -------
    bool
        False (and nothing written) when matplotlib is not installed or no case
        has a PyTorch time.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [(r["name"], r["ratio"]) for r in results if r.get("ratio")]
    if not rows:
        return False
    names, ratios = zip(*rows, strict=True)
    fig, ax = plt.subplots(figsize=(8, 1.5 + 0.18 * len(rows)))
    colors = ["tab:red" if v > 1 else "tab:green" for v in ratios]
    ax.barh(range(len(rows)), ratios, color=colors)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), names, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("time ours / time PyTorch (log scale; < 1 = sandbox faster)")
    ax.set_title("sandbox bench: ratio against PyTorch")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True
