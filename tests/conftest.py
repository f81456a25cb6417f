"""Shared test fixtures.

PyTorch parity tests use the ``torch`` fixture (or ``require_torch()``): without
torch they skip, unless ``SANDBOX_REQUIRE_TORCH=1`` (set by CI), in which case a
missing torch is a failure.
"""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", deadline=None, max_examples=25)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def require_torch():
    """Import torch, or skip (fail when SANDBOX_REQUIRE_TORCH=1)."""
    try:
        import torch
    except ImportError:
        if os.environ.get("SANDBOX_REQUIRE_TORCH", "0") not in ("", "0"):
            pytest.fail("torch is required (SANDBOX_REQUIRE_TORCH=1) but cannot be imported")
        pytest.skip("torch is not installed")
    torch.set_num_threads(2)
    return torch


@pytest.fixture(scope="session")
def torch():
    return require_torch()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
