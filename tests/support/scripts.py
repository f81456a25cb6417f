"""Load a script of ``benchmarks/`` as a module, for the tests that run it."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_benchmark(name: str):
    """The module of ``benchmarks/<name>.py``, executed (its ``main`` not yet run)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _half_unit(text: str) -> float:
    """Half a unit of the last printed digit of ``text``: how far rounding may have moved it."""
    return 0.5 * 10.0 ** -len(text.partition(".")[2])


def printed_ratio_agrees(old: str, new: str, ratio: str) -> bool:
    """Whether a printed ``new/old`` ratio agrees with the printed times it came from.

    The scripts take the ratio before rounding the times for printing, so it lies between
    the ratios of the rounding intervals' ends (widened by the ratio's own rounding).  An
    absolute tolerance fails on rounding alone where one cold round makes the ratio large
    (old 67.5, new 3670.7: 54.42 printed, 54.38 from the printed times)."""
    e_old, e_new, e_ratio = _half_unit(old), _half_unit(new), _half_unit(ratio)
    low = (float(new) - e_new) / (float(old) + e_old)
    high = (float(new) + e_new) / max(float(old) - e_old, 1e-12)
    return low - e_ratio - 1e-9 <= float(ratio) <= high + e_ratio + 1e-9
