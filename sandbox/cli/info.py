"""``sandbox info``: what this build and machine are."""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

from .._version import __version__
from ..runtime import compiled as _compiled
from ..runtime import overlap, simd
from ..runtime import threads as _config
from ..runtime.allocator import is_tuned


def _cpu_model() -> str:
    return simd.cpu().model


def _or_dash(value) -> str:
    return "-" if value is None else str(value)


def blas_info() -> list[dict]:
    """The BLAS libraries numpy uses, as reported by threadpoolctl."""
    from threadpoolctl import threadpool_info

    return [
        {
            "internal_api": d.get("internal_api"),
            "version": d.get("version"),
            "num_threads": d.get("num_threads"),
            "threading_layer": d.get("threading_layer"),
            "architecture": d.get("architecture"),  # OpenBLAS's core name, e.g. Haswell
        }
        for d in threadpool_info()
        if d.get("user_api") == "blas"
    ]


def info_dict() -> dict:
    """Everything ``sandbox info`` prints, as a dictionary."""
    from .._C import _openmp

    n = _config.get_num_threads()
    return {
        "version": __version__,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "available_cores": _config.available_cores(),
        "openmp": _openmp.have_openmp(),
        "openmp_version": _openmp.openmp_version(),
        "num_threads": n,
        "threads_seen_in_prange": _openmp.threads_used(n),
        "blas": blas_info(),
        "cpu_vendor": simd.cpu().vendor,
        "cpu_family": simd.cpu().family,
        "cpu_model_number": simd.cpu().model_number,
        "cpu_isa": simd.cpu().isa,
        "simd_paths": list(simd.supported_paths()),
        "simd_path": simd.current().isa,
        "gemm": simd.current().gemm,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "gomp_spincount": os.environ.get("GOMP_SPINCOUNT"),
        "malloc_tuned": is_tuned(),
        "overlap": overlap.mode(),
        "calibration": _calibration(),
        "python_layer": _compiled.status(),
    }


def _calibration() -> dict:
    from ..runtime import calibration

    cal = calibration.load()
    return {"file": str(calibration.cache_file()), "when": cal.when if cal else None,
            "choices": dict(cal.choices) if cal else {}, "timings": cal.timings if cal else {},
            "grid_gathers": calibration.preferred("grid_gathers"),
            "gemm_avx2": calibration.preferred("gemm_avx2")}


def _ratio(medians: dict, winner: str) -> str:
    """``1.26x the speed of blas``: the winner against the best other candidate."""
    others = {k: v for k, v in medians.items() if k != winner}
    if not others or not medians.get(winner):
        return "measured"
    name = min(others, key=others.get)
    return f"{others[name] / medians[winner]:.2f}x the speed of {name}"


def _python_layer(layer: dict) -> str:
    """How the package's Python modules run: compiled (:mod:`sandbox.runtime.compiled`) or not."""
    if layer["all_source_because"]:
        return f"from source: {layer['all_source_because']}"
    text = (f"compiled ({layer['built']} modules built; of those imported, "
            f"{len(layer['compiled'])} run compiled")
    if not layer["source"]:
        return text + ")"
    reasons = ", ".join(f"{m} ({why})" for m, why in list(layer["source"].items())[:3])
    more = len(layer["source"]) - 3
    return (text + f", {len(layer['source'])} from source: {reasons}"
            + (f" and {more} more" if more > 0 else "") + "; 'pip install -e .' compiles them)")


def info(file=None) -> dict:
    """Print version, OpenMP status, thread counts and BLAS; return them as a dict."""
    d = info_dict()
    lines = [
        f"sandbox {d['version']}  (python {d['python']}, numpy {d['numpy']})",
        f"platform:        {d['platform']}",
        f"cpu:             {d['cpu']} ({d['available_cores']} cores available)",
        f"cpu id:          {d['cpu_vendor'] or platform.machine()}, family "
        f"{_or_dash(d['cpu_family'])}, model {_or_dash(d['cpu_model_number'])}; ISA {d['cpu_isa']} "
        f"({', '.join(simd.cpu().simd_sets) or 'no wide SIMD'})",
        f"simd path:       {d['simd_path']} (${simd.ISA_ENV_VAR} or simd.using; this CPU runs "
        f"{', '.join(d['simd_paths'])})",
        f"openmp:          {'on' if d['openmp'] else 'OFF (serial build)'}"
        + (f" (_OPENMP={d['openmp_version']})" if d["openmp"] else ""),
        f"threads:         {d['num_threads']} (set_num_threads / ${_config.ENV_VAR}); "
        f"a prange loop ran on {d['threads_seen_in_prange']}",
        f"backward:        weight gradients beside the walk: {d['overlap']} "
        f"(${overlap.ENV_VAR}: off, auto = where faster lately, always)",
    ]
    lines.append(
        f"runtime:         OMP_WAIT_POLICY={d['omp_wait_policy']}, "
        f"GOMP_SPINCOUNT={d['gomp_spincount']}, "
        f"malloc keeps freed memory: {'yes' if d['malloc_tuned'] else 'no'}"
    )
    if d["blas"]:
        for b in d["blas"]:
            lines.append(
                f"blas:            {b['internal_api']} {b['version']} "
                f"({b['num_threads']} threads, {b['threading_layer']}, {b['architecture']})"
            )
    else:
        lines.append("blas:            none found by threadpoolctl")
    lines.append(
        "conv gemm:       "
        + (f"{d['gemm']} (the project's float32 kernel; float64 uses blas)"
           if d["gemm"] in ("avx512", "avx2")
           else f"blas (${simd.GEMM_ENV_VAR}, the {d['simd_path']} path, or no AVX2/AVX-512)")
    )
    lines.append(f"python layer:    {_python_layer(d['python_layer'])}")
    cal = d["calibration"]
    if cal["when"]:
        picks = ", ".join(f"{k} {v} ({_ratio(cal['timings'].get(k, {}), v)})"
                          for k, v in cal["choices"].items())
        lines.append(f"calibration:     {picks or 'nothing to choose'}; measured {cal['when']} "
                     f"({cal['file']})")
    else:
        lines.append("calibration:     none for this machine: AVX-512 kernels where the CPU has "
                     "them (run 'sandbox calibrate' to measure)")
    print("\n".join(lines), file=file or sys.stdout)
    return d
