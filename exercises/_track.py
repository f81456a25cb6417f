"""Which implementation the tests see: the student's stubs or the reference solutions.

``exercises/conftest.py`` sets :data:`use_student` from the ``--student`` option;
each test module calls :func:`load` once at import.
"""

from __future__ import annotations

import importlib

use_student = False

NOT_IMPLEMENTED = "not implemented yet"


def load(name: str):
    """The module ``name`` (e.g. ``"ex01_central_differences"``) of the chosen side."""
    side = "student" if use_student else "solutions"
    return importlib.import_module(f"exercises.{side}.{name}")


def todo(what: str):
    """Raise the error every stub raises until the student writes it."""
    raise NotImplementedError(
        f"{NOT_IMPLEMENTED}: {what} (write it in your exercise file, then rerun the test)"
    )
