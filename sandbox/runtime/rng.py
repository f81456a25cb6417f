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


class Generator:
    """A random generator object, as ``torch.Generator`` (CPU only).

    ``Generator().manual_seed(42)`` returns the generator, so it can be passed
    straight to ``random_split(..., generator=...)``, ``DataLoader(generator=...)``
    or ``sandbox.randn(..., generator=...)``.  The numbers come from numpy's PCG64,
    so the *sequence* differs from PyTorch's for the same seed.
    """

    def __init__(self, device="cpu"):
        if str(device) != "cpu":
            from .device import device as _device

            _device(device)  # raises the CPU-only error
        self._seed = int(np.random.SeedSequence().entropy % 2**63)
        self.rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed) -> Generator:
        """Reseed and return self."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        self._seed = int(seed)
        self.rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        """Reseed from fresh entropy and return the new seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy % 2**63))
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> Generator:
        self.rng.bit_generator.state = state
        return self

    @property
    def device(self):
        from .device import device

        return device("cpu")


def numpy_rng(generator=None) -> np.random.Generator:
    """The numpy generator behind ``generator`` (a :class:`Generator`, a numpy one or None)."""
    if generator is None:
        return _generator
    if isinstance(generator, Generator):
        return generator.rng
    if isinstance(generator, np.random.Generator):
        return generator
    kind = type(generator).__name__
    raise TypeError(f"generator must be a sandbox.Generator or None, got {kind}")
