"""Writing volume predictions: the label volume as ``.npy`` and a PNG montage of slices.

The montage needs Pillow, an optional extra (``pip install 'cpu-train-sandbox[images]'``);
without it the mask volume is still written and the montage is skipped with a message
saying what to install, as the training plots do without matplotlib.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ._plots import overlay

MISSING_PIL = (
    "Pillow is not installed: skipping the slice montage "
    "(pip install 'cpu-train-sandbox[images]' to get it)"
)


def _pil():
    try:
        from PIL import Image, ImageDraw
    except ImportError:
        return None
    return Image, ImageDraw


def save_mask_volume(labels, path) -> Path:
    """Write a ``(D, H, W)`` label volume to ``path`` (``.npy``).

    Stored as ``uint8`` when every label fits (fewer than 256 classes), else ``int32``,
    so ``np.load(path)`` gives the class ids back exactly.
    """
    labels = np.asarray(labels)
    path = Path(path)
    if labels.ndim != 3:
        raise ValueError(f"labels must be a (D, H, W) volume, got shape {labels.shape}")
    if not (np.issubdtype(labels.dtype, np.integer) or labels.dtype == np.bool_):
        raise TypeError(f"labels must hold integer class ids, got dtype {labels.dtype}")
    if path.suffix.lower() != ".npy":
        raise ValueError(f"mask volume file {path}: use the .npy extension")
    fits = labels.size == 0 or (labels.min() >= 0 and labels.max() < 256)
    np.save(path, labels.astype(np.uint8 if fits else np.int32))
    return path


def _pick_slices(depth: int, count: int | None) -> np.ndarray:
    count = min(depth, 16) if count is None else count
    if not 1 <= count <= depth:
        raise ValueError(f"slices must be between 1 and the {depth} slices of the volume, "
                         f"got {count}")
    return np.unique(np.linspace(0, depth - 1, count).round().astype(int))


def montage(image, labels=None, axis=0, slices=None, columns=None, tile=96):
    """An RGB grid of slices, with the class colours of ``labels`` over the image.

    Parameters
    ----------
    image : ndarray, shape (C, D, H, W) or (D, H, W)
        The volume (grey levels are stretched between its 1st and 99th percentile).
    labels : ndarray of int, shape (D, H, W), optional
        Classes shown in colour (background uncoloured); ``None`` shows the image only.
    axis : {0, 1, 2}, default 0
        Spatial axis to slice along (0: depth).
    slices : int, optional
        How many evenly spaced slices to show (default all, at most 16).
    columns : int, optional
        Tiles per row (default about the square root of the number of slices).
    tile : int, default 96
        Small slices are enlarged (nearest neighbour) by an integer factor to at least
        this many pixels a side.

    Returns
    -------
    rgb : ndarray of float32, shape (rows * h, columns * w, 3), values in [0, 1]
        Tiles in row-major order of increasing slice index, separated by 2-pixel
        white lines.
    index : ndarray of int
        The slice indices shown.
    """
    image = np.asarray(image, dtype=np.float32)
    if image.ndim == 3:
        image = image[None]
    if image.ndim != 4:
        raise ValueError(f"image must be (C, D, H, W) or (D, H, W), got shape {image.shape}")
    if labels is None:
        labels = np.zeros(image.shape[1:], dtype=np.int64)
    labels = np.asarray(labels)
    if labels.shape != image.shape[1:]:
        raise ValueError(
            f"labels {labels.shape} must have the image's spatial shape {image.shape[1:]}"
        )
    if axis not in (0, 1, 2):
        raise ValueError(f"axis must be 0, 1 or 2 (a spatial axis), got {axis!r}")
    image = np.moveaxis(image, axis + 1, 1)
    labels = np.moveaxis(labels, axis, 0)
    index = _pick_slices(labels.shape[0], slices)
    cols = columns or math.ceil(math.sqrt(index.size))
    if not isinstance(cols, int) or cols < 1:
        raise ValueError(f"columns must be a positive integer, got {columns!r}")
    rows = math.ceil(index.size / cols)
    h, w = labels.shape[1:]
    zoom = max(1, math.ceil(tile / max(h, w)))
    gap = 2
    th, tw = h * zoom, w * zoom
    out = np.ones((rows * th + (rows - 1) * gap, cols * tw + (cols - 1) * gap, 3), np.float32)
    # One contrast stretch for the whole volume, so slices are comparable.
    lo, hi = np.percentile(image, [1, 99])
    scaled = np.clip((image - lo) / max(hi - lo, 1e-6), 0.0, 1.0)
    for n, z in enumerate(index):
        rgb = overlay(scaled[:, z], labels[z])
        rgb = rgb.repeat(zoom, axis=0).repeat(zoom, axis=1)
        r, c = divmod(n, cols)
        out[r * (th + gap): r * (th + gap) + th, c * (tw + gap): c * (tw + gap) + tw] = rgb
    return out, index


def save_montage(image, labels, path, axis=0, slices=None, columns=None) -> Path:
    """Write :func:`montage` as a PNG, each tile marked with its slice index.

    Raises ``ImportError`` naming the extra to install when Pillow is missing.
    """
    pil = _pil()
    if pil is None:
        raise ImportError(MISSING_PIL.replace("skipping", "cannot write"))
    Image, ImageDraw = pil
    rgb, index = montage(image, labels, axis=axis, slices=slices, columns=columns)
    picture = Image.fromarray((rgb * 255).round().astype(np.uint8))
    draw = ImageDraw.Draw(picture)
    cols = columns or math.ceil(math.sqrt(index.size))
    th = (rgb.shape[0] + 2) // math.ceil(index.size / cols)
    tw = (rgb.shape[1] + 2) // cols
    name = "zyx"[axis]
    for n, z in enumerate(index):
        r, c = divmod(n, cols)
        draw.text((c * tw + 3, r * th + 2), f"{name}={z}", fill=(255, 255, 0))
    path = Path(path)
    picture.save(path)
    return path


def write_volume_prediction(image, labels, mask_out, montage_out=None) -> dict:
    """Write the label volume (``.npy``) and, when Pillow is there, a PNG montage.

    Returns ``{"mask": path, "montage": path or None}`` and,
    when the montage had to be skipped, ``"warnings"``.
    """
    result = {"mask": str(save_mask_volume(labels, mask_out)), "montage": None}
    if montage_out is not None:
        try:
            result["montage"] = str(save_montage(image, labels, montage_out))
        except ImportError:
            result["warnings"] = [MISSING_PIL]
    return result
