"""Differentiable grid sampling: ``grid_sample`` and ``affine_grid`` (PyTorch's signatures).

``GridSample`` pairs :func:`sandbox.array.grid_sample.grid_sample` with its backward
(the push to the input and the grid gradient, each only when needed).  Under
``create_graph=True`` the two gradients are Functions again: ``GridSamplePush``
(linear in the output gradient, so its backward is sampling again plus a grid
gradient) and ``GridSampleGridGrad`` (see its docstring for what its own backward
covers).  ``affine_grid`` is made of Tensor ops (a constant base grid times theta),
so its gradient to theta, of any order, comes from them.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..array import grid_sample as _gs
from ..autograd import Function, Tensor, is_grad_enabled
from ..ops import matmul

__all__ = ["affine_grid", "grid_sample"]

_DEFAULT_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


class GridSample(Function):
    """y = grid_sample(x, grid); backward: the push and the grid gradient."""

    @staticmethod
    def forward(ctx, x, grid, opts):
        ctx.save_for_backward(x, grid)
        ctx.opts = opts
        return _gs.grid_sample(x, grid, **opts)

    @staticmethod
    def backward(ctx, grad):
        want_x, want_g = ctx.needs_input_grad[:2]
        if not is_grad_enabled():  # plain backward: one kernel pass
            x, grid = ctx.saved_arrays
            gx, gg = _gs.grid_sample_backward(np.ascontiguousarray(grad.numpy()), x, grid,
                                              input_grad=want_x, grid_grad=want_g, **ctx.opts)
            return gx, gg, None
        x, grid = ctx.saved_tensors  # create_graph: differentiable gradients
        gx = GridSamplePush.apply(grad, grid, x.shape, ctx.opts) if want_x else None
        gg = GridSampleGridGrad.apply(grad, x, grid, ctx.opts) if want_g else None
        return gx, gg, None


class GridSamplePush(Function):
    """gx = S(grid)^T gy (the input gradient), linear in gy.

    Backward: to gy, sampling again; to the grid, the grid gradient of
    ``<gy, S(grid) ggx>`` (a GridSampleGridGrad, so differentiable again).
    """

    @staticmethod
    def forward(ctx, gy, grid, input_shape, opts):
        ctx.save_for_backward(gy, grid)
        ctx.opts = opts
        zeros = np.zeros(input_shape, gy.dtype)  # only its shape is read
        return _gs.grid_sample_backward(gy, zeros, grid, grid_grad=False, **opts)[0]

    @staticmethod
    def backward(ctx, ggx):
        gy, grid = ctx.saved_tensors
        want_gy, want_g = ctx.needs_input_grad[:2]
        d_gy = GridSample.apply(ggx, grid, ctx.opts) if want_gy else None
        d_g = GridSampleGridGrad.apply(gy, ggx, grid, ctx.opts) if want_g else None
        return d_gy, d_g, None, None


class GridSampleGridGrad(Function):
    """gg = d/dgrid <gy, S(grid) x> (the grid gradient), bilinear in (gy, x).

    Backward (exact, numpy): to gy, sampling with the weights' derivatives; to x, the
    matching push; to the grid, the weights' second derivatives (mixed terms for
    bilinear, whose per-axis second derivative is zero away from the kinks).
    """

    @staticmethod
    def forward(ctx, gy, x, grid, opts):
        ctx.save_for_backward(gy, x, grid)
        ctx.opts = opts
        return _gs.grid_sample_backward(gy, x, grid, input_grad=False, **opts)[1]

    @staticmethod
    def backward(ctx, ggg):
        gy, x, grid = ctx.saved_tensors
        if is_grad_enabled():
            raise RuntimeError("grid_sample: a third derivative through the grid gradient is "
                               "not implemented (create_graph=True in a double backward)")
        from ..array.grid_sample import reference

        needs = ctx.needs_input_grad[:3]
        d = reference.grid_grad_backward(np.ascontiguousarray(ggg.numpy()), gy.numpy(), x.numpy(),
                                         grid.numpy(), needs=needs, **ctx.opts)
        return (*d, None)


def _check_align(align_corners):
    if align_corners is None:
        warnings.warn(_DEFAULT_WARNING, UserWarning, stacklevel=3)
        return False
    if not isinstance(align_corners, (bool, np.bool_)):
        raise TypeError(f"align_corners must be True, False or None, got {align_corners!r}")
    return bool(align_corners)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` at the normalised locations ``grid`` (differentiable).

    Same signature, defaults, warning and semantics as
    ``torch.nn.functional.grid_sample`` (PyTorch 2.13 CPU), plus ``bicubic`` on 5-D
    input (tricubic).  Gradients to ``input`` and ``grid``; see
    :mod:`sandbox.array.grid_sample` and docs/design.md ("Grid sampling").

    Parameters
    ----------
    input : Tensor or numpy.ndarray
        (N, C, H_in, W_in) or (N, C, D_in, H_in, W_in), float32 or float64.
    grid : Tensor or numpy.ndarray
        (N, H_out, W_out, 2) or (N, D_out, H_out, W_out, 3) in x, y(, z) order.
    mode : {"bilinear", "nearest", "bicubic"}
    padding_mode : {"zeros", "border", "reflection"}
    align_corners : bool or None
        None warns (as PyTorch does) and means False.

    Returns
    -------
    Tensor
        (N, C, H_out, W_out) or (N, C, D_out, H_out, W_out).
    """
    _gs.check_options(mode, padding_mode, False)
    align_corners = _check_align(align_corners)
    input = input if isinstance(input, Tensor) else Tensor(np.asarray(input))
    grid = grid if isinstance(grid, Tensor) else Tensor(np.asarray(grid))
    _gs.plan(input.numpy(), grid.numpy(), mode, padding_mode, align_corners)  # validates
    opts = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    return GridSample.apply(input, grid, opts)


class _SizeRankError(NotImplementedError, ValueError):
    """affine_grid with a size of other than 4 or 5 entries (PyTorch raises
    NotImplementedError; this is also a ValueError)."""


def _base_axis(s: int, align_corners: bool, dtype) -> np.ndarray:
    if s == 1:
        return np.zeros(1, dtype)
    base = np.linspace(-1, 1, s, dtype=dtype)
    return base if align_corners else (base * (s - 1) / s).astype(dtype)


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of an affine map, for :func:`grid_sample` (differentiable in theta).

    Same signature, defaults, warnings and results as ``torch.nn.functional.affine_grid``.

    Parameters
    ----------
    theta : Tensor or numpy.ndarray
        (N, 2, 3) for a 4-D ``size``, (N, 3, 4) for a 5-D one; float32 or float64.
    size : sequence of int
        The output size (N, C, H, W) or (N, C, D, H, W).
    align_corners : bool or None
        None warns and means False; use the same value in :func:`grid_sample`.

    Returns
    -------
    Tensor
        (N, H, W, 2) or (N, D, H, W, 3): ``theta @ [x, y(, z), 1]`` at each output
        pixel's normalised centre.
    """
    align_corners = _check_align(align_corners)
    theta = theta if isinstance(theta, Tensor) else Tensor(np.asarray(theta))
    if theta.dtype not in (np.float32, np.float64):
        raise TypeError(f"theta must have dtype float32 or float64, got {theta.dtype}")
    try:
        size = tuple(int(s) for s in size)
    except (TypeError, ValueError):
        raise TypeError(f"size must be a sequence of ints (N, C, H, W) or (N, C, D, H, W), "
                        f"got {size!r}") from None
    if len(size) not in (4, 5):
        raise _SizeRankError(f"affine_grid supports 4-D (N, C, H, W) and 5-D (N, C, D, H, W) "
                             f"sizes, for 2-D and 3-D affine maps, got size {size}")
    nd = len(size) - 2
    if theta.ndim != 3 or theta.shape[1:] != (nd, nd + 1):
        raise ValueError(f"theta must be a batch of {nd}-D affine matrices of shape "
                         f"(N, {nd}, {nd + 1}) for size {size}, got shape {theta.shape}")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      UserWarning, stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"size must be positive, got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"theta batch size {theta.shape[0]} does not match size[0] = {size[0]}")
    axes = [_base_axis(s, align_corners, theta.dtype) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    # homogeneous base points in x, y(, z) order: the tensor axes reversed, then 1
    base = np.stack([*mesh[::-1], np.ones(spatial, theta.dtype)], axis=-1).reshape(-1, nd + 1)
    out = matmul(Tensor(base), theta.transpose(1, 2))  # (N, P, nd)
    return out.reshape(size[0], *spatial, nd)
