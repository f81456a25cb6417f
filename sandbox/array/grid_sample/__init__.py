"""Sampling at arbitrary locations: grid sampling and its two gradients, on ndarrays.

``grid_sample(input, grid)`` reads ``input`` (N, C, H, W) or (N, C, D, H, W) at the
normalised locations ``grid`` (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3),
whose last axis holds x, y(, z): x addresses the last input axis.  The semantics
are PyTorch 2.13's ``torch.nn.functional.grid_sample`` (docs/design.md, "Grid
sampling"), plus ``bicubic`` on 5-D input (tricubic, the same per-tap rules).

:func:`grid_sample_backward` gives the gradient with respect to the input (the
adjoint of the gather: a push) and with respect to the grid, each only when asked
for.  Both run the Cython kernels of ``sandbox._C._grid_sample`` (parallel over
output points and the batch, bitwise identical for any thread count);
:mod:`.reference` is the plain numpy version the tests compare them with.
"""

from __future__ import annotations

import numpy as np

from . import _dispatch
from ._checks import MODES, PADDINGS, check_grad_output, check_memory, check_options, plan

__all__ = ["MODES", "PADDINGS", "check_options", "grid_sample", "grid_sample_backward", "plan"]


def grid_sample(input, grid, *, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Sample ``input`` at the normalised locations ``grid``.

    Parameters
    ----------
    input : numpy.ndarray
        (N, C, H_in, W_in) or (N, C, D_in, H_in, W_in), float32 or float64.
    grid : numpy.ndarray
        (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3), the dtype of ``input``;
        ``grid[..., 0]`` is x (the W axis), ``[..., 1]`` y, ``[..., 2]`` z, with -1 and
        +1 the edges (``align_corners=False``) or the outer pixel centres (True).
    mode : {"bilinear", "nearest", "bicubic"}
        Bilinear is trilinear on 5-D input; bicubic is tricubic there (an extension).
    padding_mode : {"zeros", "border", "reflection"}
        What locations outside the input read.
    align_corners : bool

    Returns
    -------
    numpy.ndarray
        (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out).
    """
    request = plan(input, grid, mode, padding_mode, align_corners)
    check_memory(input, grid, request, 0)
    return _dispatch.forward(input, grid, request)


def grid_sample_backward(grad_output, input, grid, *, mode="bilinear", padding_mode="zeros",
                         align_corners=False, input_grad=True, grid_grad=True):
    """Gradients of :func:`grid_sample` with respect to ``input`` and ``grid``.

    Parameters
    ----------
    grad_output : numpy.ndarray
        The gradient of the output (its shape and dtype).
    input, grid, mode, padding_mode, align_corners
        As for :func:`grid_sample`.
    input_grad, grid_grad : bool
        Which gradients to compute; the other comes back as None and costs nothing.

    Returns
    -------
    (numpy.ndarray or None, numpy.ndarray or None)
        ``grad_input`` (the adjoint of sampling applied to ``grad_output``) and
        ``grad_grid`` (zero for ``nearest``, as in PyTorch).
    """
    request = plan(input, grid, mode, padding_mode, align_corners)
    check_grad_output(grad_output, input, request)
    if not (input_grad or grid_grad):
        return None, None
    check_memory(input, grid, request, 1 if input_grad else 0,
                 _dispatch.push_bytes(grid, request.mode) if input_grad else 0)
    if not input_grad and request.mode == 0:  # nearest: the grid gradient is zero
        return None, np.zeros_like(grid)
    return _dispatch.backward(grad_output, input, grid, request, bool(input_grad),
                              bool(grid_grad))
