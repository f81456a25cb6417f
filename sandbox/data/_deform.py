"""Joint random deformations: affine and elastic, by grid sampling (2-D and 3-D).

Unlike the flips and crops of :mod:`sandbox.data.augment` these interpolate: the
image is sampled bilinearly (trilinear on volumes) or bicubically, the mask with
``nearest`` at the *same* locations, so labels stay in the mask's label set and the
two stay aligned. Every transform is a callable ``t(image, mask, rng)`` with
``image (C, *spatial)`` and ``mask (*spatial)``, the rank (2 or 3) taken from the
mask; all randomness comes from ``rng`` (the :class:`~sandbox.data.DataLoader`'s
per-sample generator), so a run is reproducible.

Each transform maps output voxel positions to the positions they read
(:meth:`RandomAffine.positions`), so :class:`RandomDeform` can chain several and
resample once.
"""

from __future__ import annotations

import math

import numpy as np

from ..array.grid_sample import grid_sample
from ..array.warp import grid_from_positions, identity_displacement
from ._checks import _check_prob

IMAGE_MODES = ("bilinear", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")


def _check_pair(image, mask):
    image, mask = np.asarray(image), np.asarray(mask)
    if mask.ndim not in (2, 3) or image.ndim != mask.ndim + 1 or image.shape[1:] != mask.shape:
        raise ValueError(
            "expected image (C, H, W) with mask (H, W), or image (C, D, H, W) with mask "
            f"(D, H, W), of the same spatial sizes; got image {image.shape} and mask {mask.shape}"
        )
    return image, mask


def _range(name, value, symmetric: bool, low=None):
    """``value`` as ``(lo, hi)``; a number ``v`` means ``(-v, v)`` when ``symmetric``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        lo, hi = (-abs(value), abs(value)) if symmetric else (value, value)
    else:
        try:
            lo, hi = (float(v) for v in value)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name} must be a number or a pair (low, high), got {value!r}"
            ) from None
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ValueError(f"{name} must be finite with low <= high, got {value!r}")
    if low is not None and lo < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    return lo, hi


def _rotation(angles):
    """Rotation matrix in tensor-axis order: 2-D one angle, 3-D three (about axes 0, 1, 2)."""
    if len(angles) == 1:
        c, s = math.cos(angles[0]), math.sin(angles[0])
        return np.array([[c, -s], [s, c]])
    out = np.eye(3)
    for axis, a in enumerate(angles):
        i, j = [k for k in range(3) if k != axis]
        r = np.eye(3)
        c, s = math.cos(a), math.sin(a)
        r[i, i], r[i, j], r[j, i], r[j, j] = c, -s, s, c
        out = r @ out
    return out


def warp_pair(image, mask, positions, mode="bilinear", padding_mode="zeros"):
    """Sample ``image`` (``mode``) and ``mask`` (nearest) at voxel ``positions (nd, *spatial)``.

    Under ``zeros`` padding the mask reads label 0 outside the input. Returns
    ``(image, mask)`` with the input dtypes.
    """
    image, mask = _check_pair(image, mask)
    dtype = image.dtype if image.dtype in (np.float32, np.float64) else np.float32
    grid = grid_from_positions(np.asarray(positions, dtype)[None], align_corners=False)
    opts = dict(padding_mode=padding_mode, align_corners=False)
    out = grid_sample(np.ascontiguousarray(image[None], dtype=dtype), grid, mode=mode, **opts)[0]
    labels = grid_sample(np.ascontiguousarray(mask[None, None], dtype=dtype), grid,
                         mode="nearest", **opts)[0, 0]
    return out.astype(image.dtype, copy=False), np.rint(labels).astype(mask.dtype)


class _Deformation:
    """Shared call: draw ``positions`` (or skip with probability 1 - p), then resample."""

    def __init__(self, p, mode, padding_mode):
        self.p = _check_prob(p)
        if mode not in IMAGE_MODES:
            raise ValueError(f"mode must be one of {IMAGE_MODES} (the mask is always nearest), "
                             f"got {mode!r}")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {PADDING_MODES}, got {padding_mode!r}")
        self.mode = mode
        self.padding_mode = padding_mode

    def positions(self, rng, spatial, positions=None):
        """Where each output voxel reads, ``(nd, *spatial)``; ``None`` when not applied."""
        apply = rng.random() < self.p  # drawn every call: the stream does not depend on p
        params = self._draw(rng, len(spatial))
        if not apply:
            return positions
        if positions is None:
            positions = identity_displacement(spatial, np.float64)
        return self._map(params, positions, spatial)

    def __call__(self, image, mask, rng):
        image, mask = _check_pair(image, mask)
        pos = self.positions(rng, mask.shape)
        if pos is None:
            return image, mask
        return warp_pair(image, mask, pos, self.mode, self.padding_mode)


class RandomAffine(_Deformation):
    """Random rotation, scale, shear and translation about the image centre.

    A parameter given as one number ``v`` draws uniformly from ``(-v, v)``
    (``scale``: exactly ``v``); a pair ``(low, high)`` draws from that range.

    Parameters
    ----------
    degrees : float or (float, float), default 15
        Rotation angle; on volumes one angle per spatial axis, each drawn from the range.
    scale : float or (float, float), default (0.9, 1.1)
        Zoom factor (the same on every axis; > 1 enlarges the content).
    shear : float or (float, float), default 0
        Each off-diagonal shear coefficient (one in 2-D, three in 3-D).
    translate : float or (float, float), default 0
        Shift per axis as a fraction of that axis's size.
    p : float, default 1
        Probability of applying the transform.
    mode : {"bilinear", "bicubic"}, default "bilinear"
        Image interpolation (bilinear is trilinear on volumes; the mask uses nearest).
    padding_mode : {"zeros", "border", "reflection"}, default "zeros"
        What locations outside the input read (the mask reads 0 under zeros).
    """

    def __init__(self, degrees=15.0, scale=(0.9, 1.1), shear=0.0, translate=0.0, p=1.0,
                 mode="bilinear", padding_mode="zeros"):
        super().__init__(p, mode, padding_mode)
        self.degrees = _range("degrees", degrees, True)
        self.scale = _range("scale", scale, False, low=1e-3)
        self.shear = _range("shear", shear, True)
        self.translate = _range("translate", translate, True)

    def _draw(self, rng, nd):
        n_angles = 1 if nd == 2 else 3
        n_shear = nd * (nd - 1) // 2
        angles = np.deg2rad(rng.uniform(*self.degrees, size=n_angles))
        zoom = rng.uniform(*self.scale)
        shear = rng.uniform(*self.shear, size=n_shear)
        shift = rng.uniform(*self.translate, size=nd)
        return angles, zoom, shear, shift

    def matrix(self, params, nd):
        """The forward map ``A`` (output = A (input - c) + c + t): rotation · shear · zoom."""
        angles, zoom, shear, _ = params
        sh = np.eye(nd)
        sh[np.triu_indices(nd, 1)] = shear
        return _rotation(angles) @ sh * zoom

    def _map(self, params, positions, spatial):
        nd = len(spatial)
        centre = (np.asarray(spatial, np.float64) - 1) / 2
        shift = params[3] * np.asarray(spatial, np.float64)
        inverse = np.linalg.inv(self.matrix(params, nd))
        # Output voxel p shows the input at A^-1 (p - c - t) + c.
        flat = positions.reshape(nd, -1) - (centre + shift)[:, None]
        return (inverse @ flat + centre[:, None]).reshape(positions.shape)

    def __repr__(self):
        return (f"RandomAffine(degrees={self.degrees}, scale={self.scale}, shear={self.shear}, "
                f"translate={self.translate}, p={self.p}, mode={self.mode!r}, "
                f"padding_mode={self.padding_mode!r})")


def _gaussian_smooth(field, sigma):
    """Separable Gaussian filter over the spatial axes of ``field (nd, *spatial)``, reflected."""
    radius = max(1, int(math.ceil(3 * sigma)))
    taps = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    taps /= taps.sum()
    for axis in range(1, field.ndim):
        n = field.shape[axis]
        pad = [(0, 0)] * field.ndim
        pad[axis] = (radius, radius)
        padded = np.pad(field, pad, mode="symmetric" if radius <= n else "edge")
        out = np.zeros_like(field)
        for k, w in enumerate(taps):  # sum of shifted copies: vectorised over the other axes
            out += w * np.take(padded, np.arange(k, k + n), axis=axis)
        field = out
    return field


class RandomElastic(_Deformation):
    """Random smooth (elastic) deformation: Gaussian-smoothed noise as a displacement field.

    Uniform noise in [-1, 1] per voxel and axis is smoothed by a Gaussian of ``sigma``
    voxels, then scaled so its largest component is ``magnitude`` voxels.

    Parameters
    ----------
    sigma : float or (float, float), default (6, 8)
        Smoothness (Gaussian standard deviation, voxels); larger is smoother.
    magnitude : float or (float, float), default (0, 4)
        The largest displacement of any voxel along any axis, in voxels.
    p : float, default 1
    mode, padding_mode
        As :class:`RandomAffine`.
    """

    def __init__(self, sigma=(6.0, 8.0), magnitude=(0.0, 4.0), p=1.0, mode="bilinear",
                 padding_mode="zeros"):
        super().__init__(p, mode, padding_mode)
        self.sigma = _range("sigma", sigma, False, low=1e-3)
        self.magnitude = _range("magnitude", magnitude, False, low=0.0)

    def _draw(self, rng, nd):
        return rng.uniform(*self.sigma), rng.uniform(*self.magnitude), rng

    def _map(self, params, positions, spatial):
        sigma, magnitude, rng = params
        # The noise is drawn only when applied; it is the last draw of the call.
        noise = rng.uniform(-1.0, 1.0, size=(len(spatial), *spatial))
        field = _gaussian_smooth(noise, sigma)
        peak = np.abs(field).max()
        if peak > 0:
            field *= magnitude / peak
        return positions + field

    def __repr__(self):
        return (f"RandomElastic(sigma={self.sigma}, magnitude={self.magnitude}, p={self.p}, "
                f"mode={self.mode!r}, padding_mode={self.padding_mode!r})")


class RandomDeform:
    """Chain deformations (e.g. elastic, then affine) and resample image and mask once.

    Parameters
    ----------
    transforms : sequence of :class:`RandomAffine` / :class:`RandomElastic`
        Applied in order to the output positions; image mode and padding are taken from
        the first.
    """

    def __init__(self, transforms):
        self.transforms = list(transforms)
        if not self.transforms or not all(isinstance(t, _Deformation) for t in self.transforms):
            raise TypeError("transforms must be a non-empty sequence of RandomAffine or "
                            f"RandomElastic, got {transforms!r}")

    def __call__(self, image, mask, rng):
        image, mask = _check_pair(image, mask)
        pos = None
        for t in self.transforms:
            pos = t.positions(rng, mask.shape, pos)
        if pos is None:
            return image, mask
        first = self.transforms[0]
        return warp_pair(image, mask, pos, first.mode, first.padding_mode)

    def __repr__(self):
        return "RandomDeform([" + ", ".join(repr(t) for t in self.transforms) + "])"
