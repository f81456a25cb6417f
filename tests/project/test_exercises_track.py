"""The exercise track stays coherent: stubs and solutions agree, pointers resolve,
and ``--student`` runs the tests against the stubs with a clear message.

(The exercise tests themselves run against the solutions as part of the default
``python -m pytest``: ``exercises`` is in ``testpaths``.)
"""

import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACK = ROOT / "exercises"
NAMES = sorted(p.stem for p in (TRACK / "solutions").glob("ex*.py"))


def test_every_exercise_has_stub_solution_and_tests():
    assert len(NAMES) == 8
    for name in NAMES:
        assert (TRACK / "student" / f"{name}.py").exists(), name
        assert (TRACK / f"test_{name}.py").exists(), name


def _public(module):
    out = {}
    for key, obj in vars(module).items():
        if key.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        out[key] = obj
    return out


def _params(fn):
    return [
        (p.name, p.kind, "<callable>" if callable(p.default) else p.default)
        for p in inspect.signature(fn).parameters.values()
    ]


@pytest.mark.parametrize("name", NAMES)
def test_stub_has_the_solutions_api_and_every_todo_raises(name):
    stub = importlib.import_module(f"exercises.student.{name}")
    sol = importlib.import_module(f"exercises.solutions.{name}")
    for key, obj in _public(sol).items():
        assert key in vars(stub), f"{name}: the stub lacks {key}"
        if inspect.isfunction(obj):
            assert _params(obj) == _params(getattr(stub, key)), key
    # the docstring says what it teaches and what to compare with, as in the solution
    assert "What it teaches" in stub.__doc__ and "Compare with" in stub.__doc__
    text = (TRACK / "student" / f"{name}.py").read_text()
    assert "todo(" in text


@pytest.mark.parametrize("name", NAMES)
def test_compare_with_pointers_resolve(name):
    doc = importlib.import_module(f"exercises.solutions.{name}").__doc__
    pointers = re.findall(r"``(sandbox(?:\.\w+)+)``", doc.split("Compare with:")[1])
    assert pointers, f"{name}: no sandbox.* pointer after 'Compare with:'"
    for dotted in pointers:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)  # AttributeError: the pointer went stale
            break
        else:  # pragma: no cover
            pytest.fail(f"{name}: cannot import {dotted}")


def test_student_switch_runs_the_stubs():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--student",
         "exercises/test_ex03_toposort.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout[-2000:]
    assert "student/ex03_toposort.py:" in result.stdout
    assert "not implemented yet: topological_order" in result.stdout
    assert " passed" not in result.stdout
