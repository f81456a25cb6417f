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
