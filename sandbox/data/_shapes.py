"""Synthetic multi-class segmentation: overlapping shapes on a noisy background.

Every sample is drawn from its own generator, ``np.random.default_rng([seed, index])``,
so sample ``i`` depends only on ``(seed, i)``: two datasets with different seeds are
independent train/validation sets, and any sample can be regenerated in isolation.

The classes differ in *shape* only. Every instance gets an intensity drawn from the
same range whatever its class, so a model has to learn the outline (corners, curvature,
a hole, arms), not a grey level. To keep the task well posed:

- instances are large relative to the image (radius 6-16 px at 64x64, scaled with the
  image size), drawn with hard edges so the label of each pixel is visible in the image;
- a new instance is placed only where it leaves every earlier instance at least
  ``1 - max_occlusion`` of its area visible (later instances occlude earlier ones);
- overlapping instances get intensities at least ``0.15`` apart, so occluding
  boundaries stay visible;
- the background (a smooth gradient plus a low-frequency wave) stays below the
  darkest instance, and Gaussian noise is small next to the contrast.
"""

from __future__ import annotations

import math

import numpy as np

from ._synthetic import _background_range, _ShapeSet

# Class 0 is the background; shape classes follow in this order.
SHAPE_NAMES = ("disc", "square", "triangle", "ring", "cross")

def _rotated(dy, dx, theta):
    """Coordinates in a frame rotated by ``theta`` (radians)."""
    c, s = math.cos(theta), math.sin(theta)
    return c * dx + s * dy, -s * dx + c * dy


def _disc(dy, dx, r, theta):
    return dy * dy + dx * dx <= r * r


def _square(dy, dx, r, theta):
    # Half side 0.886 r: the same area as a disc of radius r.
    u, v = _rotated(dy, dx, theta)
    a = 0.886 * r
    return (np.abs(u) <= a) & (np.abs(v) <= a)


def _triangle(dy, dx, r, theta):
    # Equilateral, circumradius 1.4 r (area about 0.81 of the disc's); a point is
    # inside when it is on the inner side of the three edges, whose outward normals
    # are at theta, theta + 120 deg, theta + 240 deg with apothem R / 2.
    apothem = 0.5 * 1.4 * r
    inside = np.ones(np.broadcast_shapes(dy.shape, dx.shape), dtype=bool)
    for k in range(3):
        phi = theta + k * 2.0 * math.pi / 3.0
        inside &= math.cos(phi) * dx + math.sin(phi) * dy <= apothem
    return inside


def _ring(dy, dx, r, theta):
    d2 = dy * dy + dx * dx
    return (d2 <= r * r) & (d2 >= (0.55 * r) ** 2)


def _cross(dy, dx, r, theta):
    u, v = _rotated(dy, dx, theta)
    au, av = np.abs(u), np.abs(v)
    w = 0.32 * r  # arm half-width
    return ((au <= r) & (av <= w)) | ((av <= r) & (au <= w))


_RASTERS = (_disc, _square, _triangle, _ring, _cross)
_EXTENT = (1.0, 1.26, 1.4, 1.0, 1.42)  # bounding radius / r for each shape


def _background(rng, size):
    """Smooth background in [0, 0.35]: a random plane plus a low-frequency wave."""
    t = np.linspace(-1.0, 1.0, size)
    yy, xx = t[:, None], t[None, :]
    gy, gx = rng.uniform(-1.0, 1.0, 2)
    freq = rng.uniform(0.5, 2.0)
    phase = rng.uniform(0.0, 2.0 * math.pi)
    angle = rng.uniform(0.0, 2.0 * math.pi)
    wave = np.sin(freq * math.pi * (math.cos(angle) * xx + math.sin(angle) * yy) + phase)
    return _background_range(rng, 0.5 * (gy * yy + gx * xx) + 0.3 * wave)


class Shapes(_ShapeSet):
    """Seeded synthetic segmentation set: discs, squares, triangles, rings, crosses.

    Parameters
    ----------
    num_samples : int
        Length of the dataset.
    image_size : int, default 64
        Height and width (at least 16). Shape sizes scale with it.
    num_classes : int, default 4
        Background plus ``num_classes - 1`` shape classes, taken in the order
        disc, square, triangle, ring, cross (so 2 to 6).
    seed : int, default 0
        Sample ``i`` is generated from ``np.random.default_rng([seed, i])``.
    shapes_per_image : (int, int), default (2, 4)
        Inclusive range of instances attempted per image (an instance that cannot be
        placed without hiding too much of the earlier ones is skipped).
    radius : (float, float), optional
        Range of the shape radius in pixels; default ``(6, 16) * image_size / 64``
        (at least 3 px).
    noise : (float, float), default (0.02, 0.06)
        Range of the standard deviation of the additive Gaussian noise.
    max_occlusion : float, default 0.25
        Largest fraction of an instance that later instances may cover.
    cache : bool, default False
        Keep every sample in memory once generated (:meth:`cache_bytes` says how
        much that takes), so that later epochs read instead of drawing it again;
        reads hand out copies.

    Notes
    -----
    ``dataset[i]`` returns ``(image, mask)``: ``image`` float32 ``(1, H, W)`` with
    values roughly in ``[0, 1]`` (background below 0.35, shapes 0.45-1.0, plus noise),
    ``mask`` int64 ``(H, W)`` with labels in ``[0, num_classes)``.

    Difficulty (64x64, 4 classes, defaults; mean IoU with background included, on
    ``Shapes(..., seed=1)``): ``sandbox train --steps 800 --depth 3 --width 16
    --batch-size 16`` reached 0.90 after about 275 steps, 0.94 after 400 and 0.98
    after 800 (155 s on the shared 2-core machine); the triangle class is learnt last.
    More shapes per image and a larger ``max_occlusion`` make the task harder;
    ``shapes_per_image=(1, 3)`` easier.
    """

    _NAMES, _EXTENT = SHAPE_NAMES, _EXTENT

    def __init__(
        self,
        num_samples,
        image_size=64,
        num_classes=4,
        seed=0,
        shapes_per_image=(2, 4),
        radius=None,
        noise=(0.02, 0.06),
        max_occlusion=0.25,
        cache=False,
    ):
        self._setup(num_samples, image_size, num_classes, seed, shapes_per_image, radius,
                    (("noise", noise),), max_occlusion, cache)

    _background = staticmethod(_background)

    @staticmethod
    def _pose(rng):
        return rng.uniform(0.0, 2.0 * math.pi)

    @staticmethod
    def _inside(kind, offsets, r, theta):
        dy, dx = offsets
        return _RASTERS[kind](dy, dx, r, theta)
