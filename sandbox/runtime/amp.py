"""Mixed-precision entry points as PyTorch has them on a machine without CUDA.

The sandbox computes in float32 or float64 only.  Scripts written for mixed
precision usually switch it with a flag (``enabled=amp``); with the flag off, both
objects here do exactly what PyTorch's do: nothing.

- :class:`autocast` with ``enabled=False`` runs the block unchanged; with
  ``enabled=True`` it raises a ``ValueError`` (no float16/bfloat16 kernels here).
- :class:`GradScaler` is disabled, as PyTorch disables ``torch.cuda.amp.GradScaler``
  when CUDA is missing (one warning if ``enabled=True`` was asked for):
  ``scale(loss)`` returns ``loss``, ``step(optimizer)`` calls ``optimizer.step()``.
"""

from __future__ import annotations

import functools
import warnings

__all__ = ["GradScaler", "autocast"]


class autocast:  # noqa: N801 - torch's spelling
    """``with autocast(device_type, enabled=False):`` — a no-op block; enabled raises."""

    def __init__(self, device_type="cpu", dtype=None, enabled=True, cache_enabled=None):
        if enabled:
            raise ValueError(
                "autocast (mixed precision) is not supported: the sandbox computes in float32 "
                "or float64; pass enabled=False (e.g. run without --amp)"
            )
        self.device_type = device_type

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return wrapper


class GradScaler:
    """A disabled gradient scaler (PyTorch's behaviour without CUDA)."""

    def __init__(self, device="cuda", init_scale=2.0**16, growth_factor=2.0,
                 backoff_factor=0.5, growth_interval=2000, enabled=True):
        if enabled:
            warnings.warn(
                "GradScaler is enabled, but the sandbox has no CUDA (and no float16 "
                "training): disabling it, as PyTorch does without CUDA",
                stacklevel=2,
            )

    def is_enabled(self) -> bool:
        return False

    def scale(self, outputs):
        """``outputs`` unchanged."""
        return outputs

    def unscale_(self, optimizer) -> None:
        """Nothing to unscale."""

    def step(self, optimizer, *args, **kwargs):
        """``optimizer.step(*args, **kwargs)``."""
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Nothing to update."""

    def get_scale(self) -> float:
        return 1.0

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state_dict) -> None:
        """Nothing to restore (a disabled scaler has no state)."""
