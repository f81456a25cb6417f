"""Warping by dense displacement fields, and velocity-field integration.

:class:`Warp` (VoxelMorph's ``SpatialTransformer``) resamples an image at
``identity + flow``, the flow in voxel units; :class:`VecInt` integrates a
stationary velocity field into a displacement by scaling and squaring. Both are
built on :func:`sandbox.functional.grid_sample`, so the displacement receives a
gradient (the grid gradient) and training a network that predicts it works.

Channel order: the flow's channel ``k`` is the displacement along spatial axis
``k`` in tensor order, ``(dy, dx)`` for ``(N, 2, H, W)`` and ``(dz, dy, dx)`` for
``(N, 3, D, H, W)``, as in VoxelMorph and MONAI (grid_sample's own grid runs the
other way, ``x, y, z``; the layer reverses it).
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..array.warp import check_flow, identity_displacement, normaliser
from ..autograd import Tensor
from ._module import Module

MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


def _check_options(mode, padding_mode, align_corners):
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if padding_mode not in PADDING_MODES:
        raise ValueError(f"padding_mode must be one of {PADDING_MODES}, got {padding_mode!r}")
    if not isinstance(align_corners, bool):
        raise TypeError(f"align_corners must be True or False, got {align_corners!r}")


def displacement_grid(flow, align_corners: bool = True):
    """grid_sample's normalised grid ``(N, *spatial, nd)`` for a voxel flow (a Tensor).

    Differentiable in ``flow``: ``grid = flow * scale + (identity * scale + offset)``
    per axis, moved to the last axis and reversed to ``x, y(, z)``.
    """
    nd = check_flow(flow.shape)
    spatial = tuple(flow.shape[2:])
    dtype = flow.dtype
    scale, offset = normaliser(spatial, align_corners, dtype)
    shape = (1, nd) + (1,) * nd
    base = identity_displacement(spatial, dtype) * scale.reshape(shape[1:]) + offset.reshape(
        shape[1:]
    )
    grid = flow * Tensor(scale.reshape(shape)) + Tensor(base[None])
    grid = grid[:, ::-1]  # tensor-axis order -> x, y(, z)
    return grid.permute(0, *range(2, nd + 2), 1)


def warp(image, flow, mode: str = "bilinear", padding_mode: str = "zeros",
         align_corners: bool = True):
    """Sample ``image`` at ``identity + flow`` (voxel units): :class:`Warp` as a function.

    Parameters
    ----------
    image : Tensor
        ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
    flow : Tensor
        ``(N, 2, H, W)`` or ``(N, 3, D, H, W)``: displacement along each spatial axis in
        tensor order, in voxels.
    mode : {"bilinear", "nearest", "bicubic"}
        As :func:`sandbox.functional.grid_sample` (bilinear is trilinear on volumes).
    padding_mode : {"zeros", "border", "reflection"}
        What a location outside the image reads.
    align_corners : bool, default True
        Only changes the padding bounds (and nothing else: the flow is in voxels
        either way). True reflects about the edge voxels' centres, False about the
        image edges.

    Returns
    -------
    Tensor
        ``(N, C, *spatial)``, the warped image.
    """
    _check_options(mode, padding_mode, align_corners)
    check_flow(flow.shape, image.shape)
    grid = displacement_grid(flow, align_corners)
    return F.grid_sample(image, grid, mode=mode, padding_mode=padding_mode,
                         align_corners=align_corners)


class Warp(Module):
    """Warp an image by a dense displacement field in voxel units (VoxelMorph's convention).

    ``Warp()(image, flow)`` returns ``image`` sampled at ``p + flow[:, :, p]`` for every
    output voxel ``p``; see :func:`warp` for shapes and options. Gradients flow to both
    the image and the flow. ``SpatialTransformer`` is the same class under
    VoxelMorph's name.

    Parameters
    ----------
    mode : {"bilinear", "nearest", "bicubic"}, default "bilinear"
    padding_mode : {"zeros", "border", "reflection"}, default "zeros"
    align_corners : bool, default True
    """

    def __init__(self, mode: str = "bilinear", padding_mode: str = "zeros",
                 align_corners: bool = True):
        super().__init__()
        _check_options(mode, padding_mode, align_corners)
        self.mode = mode
        self.padding_mode = padding_mode
        self.align_corners = align_corners

    def forward(self, image, flow):
        return warp(image, flow, self.mode, self.padding_mode, self.align_corners)

    def extra_repr(self) -> str:
        return (f"mode={self.mode!r}, padding_mode={self.padding_mode!r}, "
                f"align_corners={self.align_corners}")


SpatialTransformer = Warp


class VecInt(Module):
    """Integrate a stationary velocity field by scaling and squaring.

    ``u = v / 2**steps``, then ``steps`` times ``u = u + warp(u, u)``: each squaring
    composes the current deformation with itself, so the result approximates the
    flow of ``v`` over unit time, ``exp(v)``, a diffeomorphism for smooth enough ``v``.
    Every squaring samples ``u`` at locations given by ``u``, so its backward uses both
    the input and the grid gradient of grid_sample.

    Parameters
    ----------
    steps : int, default 7
        Number of squarings (VoxelMorph uses 7). ``0`` returns ``v`` itself.
    mode, padding_mode, align_corners
        As :class:`Warp` (the defaults are VoxelMorph's: bilinear, zeros, True).

    Input ``(N, 2, H, W)`` or ``(N, 3, D, H, W)`` in voxels; output the same shape,
    a displacement field for :class:`Warp`.
    """

    def __init__(self, steps: int = 7, mode: str = "bilinear", padding_mode: str = "zeros",
                 align_corners: bool = True):
        super().__init__()
        if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 0:
            raise ValueError(f"steps must be a non-negative integer, got {steps!r}")
        _check_options(mode, padding_mode, align_corners)
        self.steps = int(steps)
        self.mode = mode
        self.padding_mode = padding_mode
        self.align_corners = align_corners

    def forward(self, velocity):
        check_flow(velocity.shape, name="velocity")
        u = velocity * (1.0 / 2**self.steps)  # a power of two: exact
        for _ in range(self.steps):
            u = u + warp(u, u, self.mode, self.padding_mode, self.align_corners)
        return u

    def extra_repr(self) -> str:
        return (f"steps={self.steps}, mode={self.mode!r}, padding_mode={self.padding_mode!r}, "
                f"align_corners={self.align_corners}")
