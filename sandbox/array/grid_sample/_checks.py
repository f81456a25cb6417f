"""Validation for :mod:`sandbox.array.grid_sample`: every check in one place.

The kernels never validate (PyTorch's raw op returns uninitialised memory for a
bad mode code); these run first and raise ``TypeError``/``ValueError`` naming the
argument and the valid choices, or refuse a request over the memory limit.

:func:`plan` validates a request once per shapes, dtypes and options and returns its
:class:`Plan` (a layer repeats the same request at every call; the checks had cost
about as much as a small kernel).  The memory check runs at every call, since the
limit may change.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...runtime.memory import ResampleSizeError, format_bytes, memory_limit
from .._validate import PlanCache

MODES = ("nearest", "bilinear", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
# integer codes the kernels take
MODE_CODES = {m: i for i, m in enumerate(MODES)}
PADDING_CODES = {p: i for i, p in enumerate(PADDINGS)}

_LAYOUTS = {4: ("(N, C, H_in, W_in)", "(N, H_out, W_out, 2)"),
            5: ("(N, C, D_in, H_in, W_in)", "(N, D_out, H_out, W_out, 3)")}


def check_options(mode, padding_mode, align_corners) -> tuple[int, int, bool]:
    """``(mode code, padding code, align_corners)`` or a ValueError/TypeError."""
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"mode must be one of 'nearest', 'bilinear' or 'bicubic' "
                         f"(bicubic also for 5-D input), got {mode!r}")
    if not isinstance(padding_mode, str) or padding_mode not in PADDINGS:
        raise ValueError(f"padding_mode must be one of 'zeros', 'border' or 'reflection', "
                         f"got {padding_mode!r}")
    if not isinstance(align_corners, (bool, np.bool_)):
        raise TypeError(f"align_corners must be True or False, got {align_corners!r}")
    return MODE_CODES[mode], PADDING_CODES[padding_mode], bool(align_corners)


def _check_float(arr, name: str) -> None:
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(arr).__name__}")
    if arr.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name} must have dtype float32 or float64, got {arr.dtype} "
                        "(cast it with .astype(np.float32) first)")


def check_input_grid(input, grid) -> None:
    """Types, dtypes, ranks and shapes of ``input`` and ``grid``."""
    _check_float(input, "input")
    if input.ndim not in _LAYOUTS:
        raise ValueError(f"input must be 4-D (N, C, H_in, W_in) or 5-D (N, C, D_in, H_in, W_in), "
                         f"got shape {input.shape}")
    _check_float(grid, "grid")
    if grid.dtype != input.dtype:
        raise TypeError(f"grid dtype {grid.dtype} does not match input dtype {input.dtype} "
                        f"(cast one of them, e.g. grid.astype(np.{input.dtype}))")
    in_layout, grid_layout = _LAYOUTS[input.ndim]
    nd = input.ndim - 2
    if grid.ndim != input.ndim or grid.shape[-1] != nd:
        raise ValueError(f"grid must be {grid_layout} for a {input.ndim}-D input {in_layout} "
                         f"(its last axis holds x, y{', z' if nd == 3 else ''}), "
                         f"got shape {grid.shape}")
    if grid.shape[0] != input.shape[0]:
        raise ValueError(f"grid batch size {grid.shape[0]} does not match input batch size "
                         f"{input.shape[0]}")
    if min(input.shape[2:]) < 1:
        raise ValueError(f"input must have non-empty spatial axes, got shape {input.shape}")


class Plan(NamedTuple):
    """A validated request: the kernels' option codes, sizes and output shape."""

    mode: int
    padding: int
    align_corners: bool
    sizes: tuple  # (N, C, D_in, H_in, W_in, output points per sample, spatial rank)
    out_shape: tuple
    out_bytes: int  # the output and a grid-sized array (the grid gradient)
    input_bytes: int  # one input-sized array (the input gradient)


# Plans by (array types, shapes, dtypes, options, the options' types): the key holds
# each option's type, so ``align_corners=1`` never finds the plan of True.
_PLANS = PlanCache(256)


def plan(input, grid, mode, padding_mode, align_corners) -> Plan:
    """Validate ``input``, ``grid`` and the options, and return the request's :class:`Plan`."""
    try:
        key = (type(input), type(grid), input.shape, input.dtype, grid.shape, grid.dtype,
               mode, padding_mode, align_corners, type(mode), type(padding_mode),
               type(align_corners))
    except AttributeError:  # not arrays: the checks below say what is wrong
        key = None
    found = None if key is None else _PLANS.get(key)
    if found is not None:
        return found
    codes = check_options(mode, padding_mode, align_corners)
    check_input_grid(input, grid)
    n, c = input.shape[:2]
    nd = input.ndim - 2
    d, h, w = (1, *input.shape[2:]) if nd == 2 else input.shape[2:]
    points = math.prod(grid.shape[1:-1])
    found = Plan(*codes, (n, c, d, h, w, points, nd), (n, c, *grid.shape[1:-1]),
                 input.itemsize * (n * c * points + grid.size),
                 input.itemsize * n * c * d * h * w)
    if key is not None:
        _PLANS.put(key, found)
    return found


def check_grad_output(grad_output, input, plan: Plan) -> None:
    """``grad_output`` must have the forward output's shape and dtype."""
    if type(grad_output) is np.ndarray and grad_output.dtype == input.dtype \
            and grad_output.shape == plan.out_shape:
        return
    _check_float(grad_output, "grad_output")
    expected = plan.out_shape
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have the output's shape {expected}, "
                         f"got {grad_output.shape}")
    if grad_output.dtype != input.dtype:
        raise TypeError(f"grad_output dtype {grad_output.dtype} does not match input dtype "
                        f"{input.dtype}")


def check_memory(input, grid, plan: Plan, arrays: int, extra_bytes: int = 0) -> None:
    """Refuse a request whose output(s) would need more than the memory limit.

    ``arrays`` counts the input-sized arrays the call allocates besides the output
    (the backward's input gradient), ``extra_bytes`` its scratch.
    """
    needed = extra_bytes + plan.out_bytes + arrays * plan.input_bytes
    limit = memory_limit()
    if needed > limit:
        raise ResampleSizeError(
            f"grid sampling {input.shape} at grid {grid.shape} would need at least "
            f"{format_bytes(needed)}, more than the memory limit of {format_bytes(limit)}; "
            "check the shapes, or raise the limit with sandbox.set_memory_limit('64G') or "
            "SANDBOX_MAX_MEMORY=64G"
        )
