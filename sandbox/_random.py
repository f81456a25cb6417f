"""The sandbox's global random generator (parameter initialisation, dropout).

``sandbox.manual_seed(s)`` makes model initialisation and dropout reproducible;
``get_rng_state``/``set_rng_state`` let checkpoints resume exactly.
"""

from __future__ import annotations

import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the global generator and return it."""
    global _generator
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    _generator = np.random.default_rng(int(seed))
    return _generator


def default_generator() -> np.random.Generator:
    """The global generator used when no ``rng`` is passed."""
    return _generator


def get_rng_state() -> dict:
    """A picklable snapshot of the global generator's state."""
    return _generator.bit_generator.state


def set_rng_state(state: dict) -> None:
    """Restore a snapshot taken by :func:`get_rng_state`."""
    _generator.bit_generator.state = state
