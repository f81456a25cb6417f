"""Calls into the kernels (``sandbox._C._grid_sample``), with the numpy reference as
the fallback when the extension is not built."""

from __future__ import annotations

from . import reference
from ._checks import MODES, PADDINGS


def push_buffers(input, grid) -> int:
    """Extra input-sized buffers the push allocates (see :func:`backward`)."""
    return 0


def forward(input, grid, mode, padding, align_corners):
    return reference.grid_sample(input, grid, MODES[mode], PADDINGS[padding], align_corners)


def backward(grad_output, input, grid, mode, padding, align_corners, input_grad, grid_grad):
    return reference.grid_sample_backward(grad_output, input, grid, MODES[mode],
                                          PADDINGS[padding], align_corners, input_grad,
                                          grid_grad)
