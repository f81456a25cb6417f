"""Validation for :mod:`sandbox.array.grid_sample`: every check in one place.

The kernels never validate (PyTorch's raw op returns uninitialised memory for a
bad mode code); these run first and raise ``TypeError``/``ValueError`` naming the
argument and the valid choices, or refuse a request over the memory limit.
"""

from __future__ import annotations

import math

import numpy as np

from ...runtime.memory import ResampleSizeError, format_bytes, memory_limit

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


def check_grad_output(grad_output, input, grid) -> None:
    """``grad_output`` must have the forward output's shape and dtype."""
    _check_float(grad_output, "grad_output")
    expected = (input.shape[0], input.shape[1], *grid.shape[1:-1])
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have the output's shape {expected}, "
                         f"got {grad_output.shape}")
    if grad_output.dtype != input.dtype:
        raise TypeError(f"grad_output dtype {grad_output.dtype} does not match input dtype "
                        f"{input.dtype}")


def check_memory(input, grid, arrays: int, extra_bytes: int = 0) -> None:
    """Refuse a request whose output(s) would need more than the memory limit.

    ``arrays`` counts the input-sized arrays the call allocates besides the output
    (the backward's input gradient), ``extra_bytes`` its scratch.
    """
    n, c = input.shape[:2]
    out_points = math.prod(grid.shape[1:-1])
    needed = extra_bytes + input.itemsize * (n * c * out_points + grid.size
                                             + arrays * n * c * math.prod(input.shape[2:]))
    limit = memory_limit()
    if needed > limit:
        raise ResampleSizeError(
            f"grid sampling {input.shape} at grid {grid.shape} would need at least "
            f"{format_bytes(needed)}, more than the memory limit of {format_bytes(limit)}; "
            "check the shapes, or raise the limit with sandbox.set_memory_limit('64G') or "
            "SANDBOX_MAX_MEMORY=64G"
        )
