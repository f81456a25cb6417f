"""Sliding-window prediction: a large image (or volume) in overlapping tiles.

A UNet's output at a pixel depends only on the input within its receptive field,
so a tile whose border of ``margin`` pixels is thrown away gives, inside, the same
logits as the whole image (within float rounding: the convolutions sum in another
order for another size) when

- ``margin`` covers the receptive radius (:func:`receptive_radius`), and
- every tile starts at a multiple of ``2**depth``, so the max-pooling grids of the
  tile and of the whole image coincide.

The normalisation must be per pixel too: batch norm in evaluation mode is; group
norm, whose statistics cover the whole map, is not (tiles then differ from the
whole image by the statistics, a small change of the logits, not of their layout).
The same holds for ``align_corners=True``, whose resampling scale ``(2n - 1) / (n - 1)``
depends on the map's size ``n``.
Only the class label of every pixel is kept, so the memory is one tile's forward
plus the image and the label map.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

# Support radius, in input pixels of the coarse map, of each upsampling mode.
_UPSAMPLE_RADIUS = {"nearest": 1, "nearest-exact": 1, "area": 1, "bilinear": 1, "linear": 1,
                    "trilinear": 1, "bicubic": 2, "cubic": 2, "lanczos3": 3, "lanczos5": 5,
                    "transposed": 1}


def receptive_radius(depth: int, upsample: str = "bilinear") -> int:
    """Pixels on each side that influence one output pixel of a ``depth``-level UNet.

    Every 3x3 convolution at level ``l`` adds ``2**l``, every pooling ``2**l``, the
    decoder's upsampling from level ``l + 1`` its kernel radius times ``2**(l + 1)``.
    """
    up = _UPSAMPLE_RADIUS.get(upsample, 5)
    radius = 2  # the two convolutions of the first block
    for level in range(1, depth + 1):
        radius += 2**level + 2 * 2**level  # pooling, two convolutions
    for level in range(depth):
        radius += up * 2 ** (level + 1) + 2 * 2**level  # upsampling, two convolutions
    return radius


def tile_margin(depth: int, upsample: str = "bilinear") -> int:
    """:func:`receptive_radius` rounded up to a multiple of ``2**depth``."""
    align = 2**depth
    return math.ceil(receptive_radius(depth, upsample) / align) * align


def _windows(n: int, core: int, margin: int):
    """``(start, stop, keep_start, keep_stop)`` per tile along an axis of length ``n``."""
    for c0 in range(0, n, core):
        c1 = min(c0 + core, n)
        start, stop = max(0, c0 - margin), min(n, c1 + margin)
        yield start, stop, c0 - start, c1 - start


def predict_tiled(forward, image: np.ndarray, tile: int, margin: int, align: int,
                  out_dtype=np.int64, reduce=None) -> np.ndarray:
    """Run ``forward`` (a ``(1, C, *window) -> (1, K, *window)`` array function) tile by tile.

    Parameters
    ----------
    forward : callable
        The model on one window, returning logits as an ndarray.
    image : ndarray
        ``(C, *spatial)``.
    tile : int
        Side of a tile, margins included; a multiple of ``align`` larger than
        ``2 * margin``.
    margin : int
        The border dropped from each tile (a multiple of ``align``).
    align : int
        Tiles start at multiples of this (``2**depth``).
    reduce : callable, optional
        Applied to each tile's logits ``(K, *window)`` before it is stored (default:
        ``argmax`` over classes, so only labels are kept); with ``reduce`` the result
        has the reduced shape ``(..., *spatial)``.
    """
    if tile % align or margin % align or tile <= 2 * margin:
        raise ValueError(f"tile {tile} must be a multiple of {align} larger than twice the "
                         f"margin {margin}")
    core = tile - 2 * margin
    reduce = reduce or (lambda logits: logits.argmax(axis=0))
    spatial = image.shape[1:]
    result = None
    axes = [list(_windows(n, core, margin)) for n in spatial]
    for windows in itertools.product(*axes):
        window = tuple(slice(a, b) for a, b, _, _ in windows)
        keep = tuple(slice(k0, k1) for _, _, k0, k1 in windows)
        target = tuple(slice(a + k0, a + k1) for a, _, k0, k1 in windows)
        x = np.ascontiguousarray(image[(slice(None), *window)][None], dtype=np.float32)
        part = reduce(forward(x)[0])
        if result is None:
            lead = part.shape[: part.ndim - len(spatial)]
            result = np.empty(lead + tuple(spatial), dtype=out_dtype if reduce is None
                              or part.dtype.kind in "iu" else part.dtype)
        result[(Ellipsis, *target)] = part[(Ellipsis, *keep)]
    return result
