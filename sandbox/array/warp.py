"""Dense displacement fields in voxel units and grid_sample's normalised grids.

A *displacement field* (VoxelMorph's convention) has shape ``(N, nd, *spatial)``
with ``nd = len(spatial)``: channel ``k`` moves along spatial axis ``k`` in tensor
order (2-D: ``(dy, dx)``, 3-D: ``(dz, dy, dx)``), in voxels. Output voxel ``p``
samples the input at ``p + flow[:, :, p]``. ``grid_sample`` wants the opposite
axis order in its last axis (``x, y, z``) and normalised coordinates; the helpers
here do that conversion so that a voxel index means the same for either
``align_corners`` (pixel ``j``'s centre is ``j``; only the padding bounds differ).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "check_flow",
    "grid_from_displacement",
    "grid_from_positions",
    "identity_displacement",
    "normaliser",
]


def check_flow(flow_shape, image_shape=None, name: str = "flow") -> int:
    """Validate a displacement field's shape; return its spatial rank (2 or 3).

    ``flow_shape`` must be ``(N, 2, H, W)`` or ``(N, 3, D, H, W)``; with
    ``image_shape`` the image must be ``(N, C, *spatial)`` with the same N and
    spatial sizes.
    """
    shape = tuple(flow_shape)
    if len(shape) not in (4, 5) or shape[1] != len(shape) - 2:
        raise ValueError(
            f"{name} must be (N, 2, H, W) or (N, 3, D, H, W) (one channel per spatial axis, "
            f"in tensor-axis order), got shape {shape}"
        )
    if image_shape is not None:
        image = tuple(image_shape)
        if len(image) != len(shape) or image[0] != shape[0] or image[2:] != shape[2:]:
            raise ValueError(
                f"image {image} and {name} {shape} must share N and the spatial sizes "
                f"(image (N, C, *spatial), {name} (N, {len(shape) - 2}, *spatial))"
            )
    return len(shape) - 2


def normaliser(spatial, align_corners: bool, dtype=np.float64):
    """``(scale, offset)``, each of shape ``(nd,)`` in tensor-axis order, with
    ``g = p * scale + offset`` the normalised coordinate of voxel position ``p``.

    ``align_corners=True``: ``g = 2p/(s-1) - 1``; ``False``: ``g = (2p+1)/s - 1``.
    An axis of size 1 with ``align_corners=True`` maps every position to 0 (grid_sample
    reads the single voxel there whatever the grid says).
    """
    s = np.asarray(spatial, np.float64)
    if align_corners:
        scale = np.where(s > 1, 2.0 / np.maximum(s - 1, 1), 0.0)
        offset = np.where(s > 1, -1.0, 0.0)
    else:
        scale = 2.0 / s
        offset = 1.0 / s - 1.0
    return scale.astype(dtype), offset.astype(dtype)


def identity_displacement(spatial, dtype=np.float64) -> np.ndarray:
    """The voxel positions themselves: shape ``(nd, *spatial)``, channel k = index on axis k."""
    axes = [np.arange(n, dtype=dtype) for n in spatial]
    return np.stack(np.meshgrid(*axes, indexing="ij"))


def grid_from_positions(positions: np.ndarray, align_corners: bool = True) -> np.ndarray:
    """grid_sample's grid ``(N, *spatial, nd)`` (last axis x, y, z) for voxel positions.

    ``positions`` is ``(N, nd, *spatial)``, channel k the position along tensor axis k.
    """
    nd = check_flow(np.shape(positions), name="positions")
    positions = np.asarray(positions)
    dtype = positions.dtype if positions.dtype in (np.float32, np.float64) else np.float64
    scale, offset = normaliser(positions.shape[2:], align_corners, dtype)
    shape = (1, nd) + (1,) * nd
    grid = positions * scale.reshape(shape) + offset.reshape(shape)
    # channels (tensor order) -> last axis, reversed to x, y(, z)
    return np.ascontiguousarray(np.moveaxis(grid[:, ::-1], 1, -1), dtype=dtype)


def grid_from_displacement(flow: np.ndarray, align_corners: bool = True) -> np.ndarray:
    """grid_sample's grid ``(N, *spatial, nd)`` (last axis x, y, z) for a voxel flow."""
    check_flow(np.shape(flow))
    flow = np.asarray(flow)
    dtype = flow.dtype if flow.dtype in (np.float32, np.float64) else np.float64
    return grid_from_positions(identity_displacement(flow.shape[2:], dtype)[None] + flow,
                               align_corners)
