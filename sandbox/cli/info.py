"""``sandbox info``: what this build and machine are."""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

from .._version import __version__
from ..runtime import threads as _config
from ..runtime.allocator import is_tuned


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas_info() -> list[dict]:
    """The BLAS libraries numpy uses, as reported by threadpoolctl."""
    from threadpoolctl import threadpool_info

    return [
        {
            "internal_api": d.get("internal_api"),
            "version": d.get("version"),
            "num_threads": d.get("num_threads"),
            "threading_layer": d.get("threading_layer"),
            "architecture": d.get("architecture"),
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
        "gemm": _config.gemm_backend(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "malloc_tuned": is_tuned(),
    }


def info(file=None) -> dict:
    """Print version, OpenMP status, thread counts and BLAS; return them as a dict."""
    d = info_dict()
    lines = [
        f"sandbox {d['version']}  (python {d['python']}, numpy {d['numpy']})",
        f"platform:        {d['platform']}",
        f"cpu:             {d['cpu']} ({d['available_cores']} cores available)",
        f"openmp:          {'on' if d['openmp'] else 'OFF (serial build)'}"
        + (f" (_OPENMP={d['openmp_version']})" if d["openmp"] else ""),
        f"threads:         {d['num_threads']} (set_num_threads / ${_config.ENV_VAR}); "
        f"a prange loop ran on {d['threads_seen_in_prange']}",
    ]
    lines.append(
        f"runtime:         OMP_WAIT_POLICY={d['omp_wait_policy']}, "
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
        + ("avx512 (the project's float32 kernel; float64 uses blas)" if d["gemm"] == "avx512"
           else f"blas (${_config.GEMM_ENV_VAR} or no AVX-512)")
    )
    print("\n".join(lines), file=file or sys.stdout)
    return d
