"""Tests of distributed training.  The launches need the ``mpi`` extra (mpi4py and an
``mpiexec``): without it they skip, except under ``SANDBOX_REQUIRE_TORCH=1`` (CI installs
``.[mpi]``), where they fail.
"""

import os

import pytest

from tests.conftest import require_module


def required() -> bool:
    return os.environ.get("SANDBOX_REQUIRE_TORCH", "0") not in ("", "0")


@pytest.fixture(scope="session")
def mpiexec():
    """The mpiexec of the mpi extra (skips without it, fails when required)."""
    require_module("mpi4py")
    from sandbox.distributed import find_mpiexec

    found = find_mpiexec()
    if found is None:
        if required():
            pytest.fail("mpiexec is required (SANDBOX_REQUIRE_TORCH=1) but not found")
        pytest.skip("no mpiexec beside the interpreter or on PATH")
    return found
