"""Shared test fixtures.

PyTorch parity tests use the ``torch`` fixture (or ``require_torch()``): without
torch they skip, unless ``SANDBOX_REQUIRE_TORCH=1`` (set by CI), in which case a
missing torch is a failure.  The interop tests' optional packages (the
``interop`` extra: ``safetensors``, ``onnx``, ``onnxruntime``) follow the same
rule through ``require_module()`` and the fixtures of the same names.
"""

import importlib
import os
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# A calibration of the developer's machine (~/.cache/sandbox) must not change what the
# tests run: every test process reads an empty cache folder of its own.
os.environ["SANDBOX_CACHE_DIR"] = tempfile.mkdtemp(prefix="sandbox-test-cache-")

settings.register_profile(
    "ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, max_examples=25)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def require_module(name: str):
    """Import an optional test dependency, or skip (fail when SANDBOX_REQUIRE_TORCH=1)."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if os.environ.get("SANDBOX_REQUIRE_TORCH", "0") not in ("", "0"):
            pytest.fail(f"{name} is required (SANDBOX_REQUIRE_TORCH=1) but cannot be imported")
        pytest.skip(f"{name} is not installed")


def require_torch():
    """Import torch, or skip (fail when SANDBOX_REQUIRE_TORCH=1)."""
    torch = require_module("torch")
    torch.set_num_threads(2)
    return torch


@pytest.fixture(scope="session")
def torch():
    return require_torch()


@pytest.fixture(scope="session")
def safetensors():
    return require_module("safetensors")


@pytest.fixture(scope="session")
def onnx():
    return require_module("onnx")


@pytest.fixture(scope="session")
def onnxruntime():
    return require_module("onnxruntime")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(params=["simd", "portable"])
def transforms(request):
    """Run a test with the float32 AVX-512 Winograd transforms (where the CPU has them)
    and again with the portable loops, so both float32 paths stay covered on any machine."""
    from sandbox.runtime import simd

    with simd.using(isa="auto" if request.param == "simd" else "portable"):
        yield request.param


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory):
    """A finished tiny shapes run (2 epochs of 2 steps): its folder holds last/best.ckpt.

    Shared by the CLI, data and trainer tests; a test that changes the run works on a
    copy (``tests.support.cli_helpers.copy_run``)."""
    from sandbox.cli.commands import main
    from tests.support.cli_helpers import TINY

    out = tmp_path_factory.mktemp("trained") / "run"
    assert main(["train", "--epochs", "2", "--out", str(out), *TINY]) == 0
    return out
