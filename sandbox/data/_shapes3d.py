"""Synthetic volumetric segmentation: overlapping 3-D shapes in a noisy, blurred volume.

The 3-D sibling of :class:`~sandbox.data.Shapes`, built on the same rules:

- sample ``i`` is drawn from ``np.random.default_rng([seed, i])`` alone, so it depends
  only on ``(seed, i)``; two seeds give independent train/validation sets;
- the classes differ in *shape* only: every instance gets an intensity from the same
  range whatever its class, and a random 3-D orientation;
- instances are large (radius 7-9.5 voxels at 32³, scaled with the volume);
- a new instance is placed only where it leaves every earlier one at least
  ``1 - max_occlusion`` of its volume visible, and overlapping instances get
  intensities at least ``0.15`` apart;
- the background (a smooth 3-D gradient plus a low-frequency wave) stays below the
  darkest instance. A light Gaussian blur (a fraction of a voxel to one voxel) and
  then Gaussian noise are applied to the image only; the mask keeps hard edges.
"""

from __future__ import annotations

import math

import numpy as np

from ._synthetic import _background_range, _ShapeSet

# Class 0 is the background; shape classes follow in this order.
# The order puts the most distinct shapes first: with the default 4 classes the set is
# ball, rod, shell (a ball and a cube differ only at their faces and corners).
SHAPE_NAMES_3D = ("ball", "rod", "shell", "cube", "cross")


# Each raster takes the coordinates (u, v, w) of voxel centres in the shape's own
# rotated frame (arrays that broadcast to the bounding box) and the radius r.
def _ball(u, v, w, r):
    return u * u + v * v + w * w <= r * r


def _cube(u, v, w, r):
    # Half side (pi / 6)^(1/3) r = 0.806 r: the same volume as a ball of radius r.
    a = 0.806 * r
    return (np.abs(u) <= a) & (np.abs(v) <= a) & (np.abs(w) <= a)


def _rod(u, v, w, r):
    # A cylinder along w: radius 0.6 r, half length 1.2 r (0.65 of the ball's volume).
    return (u * u + v * v <= (0.6 * r) ** 2) & (np.abs(w) <= 1.2 * r)


def _shell(u, v, w, r):
    # A hollow ball: wall from 0.55 r to r; the cavity shows the background.
    d2 = u * u + v * v + w * w
    return (d2 <= r * r) & (d2 >= (0.55 * r) ** 2)


def _cross(u, v, w, r):
    # Three orthogonal rods (a "jack"): radius 0.35 r, half length 1.25 r.
    au, av, aw = np.abs(u), np.abs(v), np.abs(w)
    rr, half = (0.35 * r) ** 2, 1.25 * r
    return (
        ((v * v + w * w <= rr) & (au <= half))
        | ((u * u + w * w <= rr) & (av <= half))
        | ((u * u + v * v <= rr) & (aw <= half))
    )


_RASTERS = (_ball, _rod, _shell, _cube, _cross)
# Bounding radius / r for each shape (end of a rod, half diagonal of the cube...).
_EXTENT = (1.0, 1.35, 1.0, 1.40, 1.30)


def _random_rotation(rng):
    """A uniformly random 3-D rotation matrix (from a uniform unit quaternion)."""
    u1, u2, u3 = rng.random(3)
    a, b = math.sqrt(1.0 - u1), math.sqrt(u1)
    x, y = a * math.sin(2 * math.pi * u2), a * math.cos(2 * math.pi * u2)
    z, w = b * math.sin(2 * math.pi * u3), b * math.cos(2 * math.pi * u3)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _background(rng, size):
    """Smooth background in [0, 0.35]: a random linear ramp plus a low-frequency wave."""
    t = np.linspace(-1.0, 1.0, size)
    zz, yy, xx = t[:, None, None], t[None, :, None], t[None, None, :]
    g = rng.uniform(-1.0, 1.0, 3)
    direction = rng.standard_normal(3)
    direction /= max(np.linalg.norm(direction), 1e-12)
    freq = rng.uniform(0.5, 2.0)
    phase = rng.uniform(0.0, 2.0 * math.pi)
    along = direction[0] * zz + direction[1] * yy + direction[2] * xx
    bg = 0.5 * (g[0] * zz + g[1] * yy + g[2] * xx) + 0.3 * np.sin(freq * math.pi * along + phase)
    return _background_range(rng, bg)


def gaussian_blur3d(volume, sigma):
    """Separable Gaussian blur of a ``(D, H, W)`` array (edges replicated).

    Parameters
    ----------
    volume : ndarray, shape (D, H, W)
    sigma : float
        Standard deviation in voxels; 0 returns the input unchanged.
    """
    if sigma <= 0:
        return volume
    radius = max(1, math.ceil(3.0 * sigma))
    taps = np.arange(-radius, radius + 1, dtype=np.float64)
    kernel = np.exp(-0.5 * (taps / sigma) ** 2)
    kernel /= kernel.sum()
    out = np.asarray(volume, dtype=np.float64)
    for axis in range(3):
        moved = np.moveaxis(out, axis, 0)
        n = moved.shape[0]
        padded = np.concatenate([moved[:1].repeat(radius, 0), moved, moved[-1:].repeat(radius, 0)])
        acc = kernel[0] * padded[:n]
        for i in range(1, kernel.size):
            acc += kernel[i] * padded[i:i + n]
        out = np.moveaxis(acc, 0, axis)
    return np.ascontiguousarray(out)


class Shapes3D(_ShapeSet):
    """Seeded synthetic volume segmentation set: balls, rods, shells, cubes, crosses.

    Parameters
    ----------
    num_samples : int
        Length of the dataset.
    volume_size : int, default 32
        Depth, height and width (at least 16; 16-64 is the intended range). Shape sizes
        scale with it.
    num_classes : int, default 4
        Background plus ``num_classes - 1`` shape classes, taken in the order ball,
        rod, shell, cube, cross (so 2 to 6).
    seed : int, default 0
        Sample ``i`` is generated from ``np.random.default_rng([seed, i])``.
    shapes_per_volume : (int, int), default (2, 4)
        Inclusive range of instances attempted per volume (an instance that cannot be
        placed without hiding too much of the earlier ones is skipped).
    radius : (float, float), optional
        Range of the shape radius in voxels; default ``(7, 9.5) * volume_size / 32``
        (at least 3.5 voxels). The range is narrow so that a rod (radius 0.6 r) is
        always thinner than a ball; a wider range makes the task harder.
    noise : (float, float), default (0.02, 0.06)
        Range of the standard deviation of the additive Gaussian noise.
    blur : (float, float), default (0.3, 0.7)
        Range of the Gaussian blur's standard deviation in voxels (applied before the
        noise; ``(0, 0)`` for hard edges).
    max_occlusion : float, default 0.25
        Largest fraction of an instance that later instances may cover.
    cache : bool, default False
        Keep every sample in memory once generated (:meth:`cache_bytes` says how
        much that takes), so that later epochs read instead of drawing it again;
        reads hand out copies.

    Notes
    -----
    ``dataset[i]`` returns ``(image, mask)``: ``image`` float32 ``(1, D, H, W)`` with
    values roughly in ``[0, 1]`` (background below 0.35, shapes 0.45-1.0, softened at
    their edges by the blur, plus noise), ``mask`` int64 ``(D, H, W)`` with labels in
    ``[0, num_classes)``. ``spatial_dims`` is 3.
    """

    spatial_dims = 3
    _NDIM, _SIZE, _COUNT = 3, "volume_size", "shapes_per_volume"
    _NAMES, _EXTENT = SHAPE_NAMES_3D, _EXTENT
    _DEFAULT_RADIUS = (32, 7.0, 9.5, 3.5)
    _REACH_OF_USED = True

    def __init__(
        self,
        num_samples,
        volume_size=32,
        num_classes=4,
        seed=0,
        shapes_per_volume=(2, 4),
        radius=None,
        noise=(0.02, 0.06),
        blur=(0.3, 0.7),
        max_occlusion=0.25,
        cache=False,
    ):
        self._setup(num_samples, volume_size, num_classes, seed, shapes_per_volume, radius,
                    (("noise", noise), ("blur", blur)), max_occlusion, cache)

    _background = staticmethod(_background)
    _pose = staticmethod(_random_rotation)

    @staticmethod
    def _inside(kind, offsets, r, rot):
        dz, dy, dx = offsets
        # Coordinates in the shape's frame: rot^T (p - centre).
        u = rot[0, 0] * dz + rot[1, 0] * dy + rot[2, 0] * dx
        v = rot[0, 1] * dz + rot[1, 1] * dy + rot[2, 1] * dx
        w = rot[0, 2] * dz + rot[1, 2] * dy + rot[2, 2] * dx
        return _RASTERS[kind](u, v, w, r)

    def _finish(self, rng, image):
        return gaussian_blur3d(image, rng.uniform(*self.blur))
