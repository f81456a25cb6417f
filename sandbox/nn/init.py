"""Parameter initialisation, with PyTorch's formulas and defaults.

All functions fill ``tensor`` in place (through its array) from the global generator
(:func:`sandbox.manual_seed`) unless an ``rng`` is given, and return the tensor.
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime.rng import default_generator


def _fill(tensor, values):
    tensor.numpy()[...] = values.astype(tensor.dtype, copy=False)
    tensor._bump_version()
    return tensor


def calculate_fan_in_and_fan_out(shape) -> tuple[int, int]:
    """Fan-in and fan-out of a weight of ``shape``, as PyTorch computes them.

    For a conv weight ``(out, in/groups, kh, kw)``: fan_in = in/groups·kh·kw,
    fan_out = out·kh·kw.  (For a transposed conv weight ``(in, out/groups, kh, kw)``
    this gives fan_in = out/groups·kh·kw, as in PyTorch.)
    """
    if len(shape) < 2:
        raise ValueError(f"fan in/out needs a weight with at least 2 dimensions, got shape {shape}")
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """Recommended gain for ``nonlinearity`` (``linear``, ``relu``, ``leaky_relu``, ``tanh``...)."""
    linear = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d", "sigmoid"}
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope**2))
    raise ValueError(
        f"unsupported nonlinearity {nonlinearity!r}; choose one of "
        f"{sorted(linear | {'tanh', 'relu', 'leaky_relu'})}"
    )


def uniform_(tensor, a: float = 0.0, b: float = 1.0, rng=None):
    """Fill with U(a, b)."""
    rng = rng or default_generator()
    return _fill(tensor, rng.uniform(a, b, size=tensor.shape))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, rng=None):
    """Fill with N(mean, std²)."""
    rng = rng or default_generator()
    return _fill(tensor, rng.normal(mean, std, size=tensor.shape))


def constant_(tensor, value: float):
    tensor.numpy()[...] = value
    tensor._bump_version()
    return tensor


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def kaiming_uniform_(
    tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity="leaky_relu", rng=None
):
    """He initialisation: U(-b, b) with ``b = gain·sqrt(3 / fan)``.

    PyTorch's layers use ``a = sqrt(5)``, which gives ``b = 1/sqrt(fan_in)``.
    """
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor.shape)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound, rng=rng)


def kaiming_normal_(
    tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity="leaky_relu", rng=None
):
    """He initialisation: N(0, std²) with ``std = gain / sqrt(fan)``."""
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor.shape)
    fan = fan_in if mode == "fan_in" else fan_out
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(fan), rng=rng)


def xavier_uniform_(tensor, gain: float = 1.0, rng=None):
    """Glorot initialisation: U(-b, b) with ``b = gain·sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor.shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, rng=rng)
