"""What :class:`~sandbox.data.Shapes` and :class:`~sandbox.data.Shapes3D` share.

Both draw sample ``i`` from ``np.random.default_rng([seed, i])`` alone, in the same
order, whatever the spatial rank: the background, the number of instances and a
balanced cycle of their classes, then per instance its radius, its orientation and
up to 20 placements, then the image's own finishing (a blur in 3-D) and the noise.
:class:`_ShapeSet` runs that loop once for any rank; a subclass supplies the rank's
rasters, background and orientations (``_background``, ``_pose``, ``_inside``).
"""

from __future__ import annotations

import numpy as np

from ._cache import CachedSamples, SampleCache
from ._checks import (
    _check_count_range,
    _check_index,
    _check_int,
    _check_num_classes,
    _check_range,
)

_BG_MAX = 0.35  # background intensities lie in [0, _BG_MAX]
_FG_RANGE = (0.45, 1.0)  # instance intensities (any class)
_MIN_CONTRAST = 0.15  # between overlapping instances


def _background_range(rng, bg):
    """``bg`` (any smooth field) mapped affinely to a random span inside [0, _BG_MAX]."""
    lo, hi = bg.min(), bg.max()
    level = rng.uniform(0.0, 0.15)
    span = rng.uniform(0.05, _BG_MAX - level)
    return level + span * (bg - lo) / max(hi - lo, 1e-12)


class _ShapeSet(CachedSamples):
    """The validation, the dataset protocol and the generator of a synthetic set.

    A subclass sets the class attributes below and the hooks ``_background(rng,
    size)``, ``_pose(rng)`` (an orientation) and ``_inside(kind, offsets, r, pose)``
    (the boolean raster of one instance, ``offsets`` the per-axis distances of the
    cell centres of its bounding box to its centre, broadcasting to the box).
    """

    in_channels = 1
    _NDIM = 2  # spatial rank
    _SIZE = "image_size"  # the attribute holding the side length
    _COUNT = "shapes_per_image"  # the attribute holding the instance count range
    _NAMES = ()  # shape class names, in class order
    _EXTENT = ()  # bounding radius / r for each shape
    _DEFAULT_RADIUS = (64, 6.0, 16.0, 3.0)  # at side: low, high; at least
    _REACH_OF_USED = False  # radius limit from the used classes only (else all)

    def _setup(self, num_samples, size, num_classes, seed, count, radius, ranges,
               max_occlusion, cache):
        """Check and store the arguments, in this order; ``ranges`` (``noise``, ...)
        are ``(name, value)`` pairs checked as :func:`_check_range`."""
        self.num_samples = _check_int("num_samples", num_samples, 0)
        size = _check_int(self._SIZE, size, 16)
        setattr(self, self._SIZE, size)
        self.num_classes = _check_num_classes(num_classes, self._NAMES)
        self.seed = _check_int("seed", seed, 0)
        setattr(self, self._COUNT, _check_count_range(self._COUNT, count))
        if radius is None:
            side, low, high, least = self._DEFAULT_RADIUS
            scale = size / float(side)
            lo = max(low * scale, least)
            radius = (lo, max(high * scale, lo))
        self.radius = _check_range("radius", radius)
        used = self._EXTENT[: self.num_classes - 1] if self._REACH_OF_USED else self._EXTENT
        reach = max(used)
        limit = size / (2.0 * reach)
        if self.radius[0] < 1.0 or self.radius[1] >= limit:
            which = " for these classes" if self._REACH_OF_USED else ""
            raise ValueError(
                f"radius must lie in [1, {self._SIZE} / {2.0 * reach:.2f}) = "
                f"[1, {limit:.1f}){which}, got {radius}"
            )
        for name, value in ranges:
            setattr(self, name, _check_range(name, value))
        if not 0.0 <= max_occlusion < 1.0:
            raise ValueError(f"max_occlusion must be in [0, 1), got {max_occlusion}")
        self.max_occlusion = float(max_occlusion)
        self.class_names = ("background",) + self._NAMES[: self.num_classes - 1]
        self._cache = SampleCache(cache)

    def __len__(self):
        return self.num_samples

    def __repr__(self):
        return (
            f"{type(self).__name__}(num_samples={self.num_samples}, "
            f"{self._SIZE}={getattr(self, self._SIZE)}, "
            f"num_classes={self.num_classes}, seed={self.seed})"
        )

    def __getitem__(self, index):
        index = _check_index(index, self.num_samples)
        return self._cache.get(index, lambda: self.generate(index))

    def cache_bytes(self) -> int:
        """Bytes that caching every sample takes (``cache=True``): float32 images and
        int64 masks."""
        points = getattr(self, self._SIZE) ** self._NDIM
        return self.num_samples * points * (self.in_channels * 4 + 8)

    def _finish(self, rng, image):
        """The image once every instance is drawn, before the noise (3-D: blurred)."""
        return image

    def generate(self, index):
        """Generate sample ``index`` (any non-negative integer, also beyond ``len``).

        Parameters
        ----------
        index : int
            The sample; it depends only on ``(seed, index)``.

        Returns
        -------
        image : ndarray, float32, shape (1, *spatial)
        mask : ndarray, int64, shape spatial
        """
        rng = np.random.default_rng([self.seed, int(index)])
        size, nd = getattr(self, self._SIZE), self._NDIM
        image = self._background(rng, size)
        mask = np.zeros((size,) * nd, dtype=np.int64)
        owner = np.full((size,) * nd, -1, dtype=np.int64)  # instance id per cell
        sizes, levels = [], []  # drawn size and intensity of each placed instance

        low, high = getattr(self, self._COUNT)
        n_shapes = int(rng.integers(low, high + 1))
        # Cycle through a random order of the classes so each sample is balanced.
        kinds = np.resize(rng.permutation(self.num_classes - 1), n_shapes)
        grid = np.arange(size, dtype=np.float64) + 0.5  # cell centres
        for kind in kinds:
            r = rng.uniform(*self.radius)
            pose = self._pose(rng)
            reach = self._EXTENT[kind] * r
            for _ in range(20):  # placement attempts
                centre = rng.uniform(reach, size - reach, nd)
                box = tuple(
                    slice(max(int(c - reach) - 1, 0), min(int(c + reach) + 2, size))
                    for c in centre
                )
                offsets = [
                    (grid[box[axis]] - centre[axis]).reshape(
                        [-1 if a == axis else 1 for a in range(nd)]
                    )
                    for axis in range(nd)
                ]
                inside = self._inside(kind, offsets, r, pose)
                if _place(rng, (image, mask, owner), box, inside, kind, sizes, levels,
                          self.max_occlusion):
                    break
        image = self._finish(rng, image)
        sigma = rng.uniform(*self.noise)
        image = image + sigma * rng.standard_normal(image.shape)
        return image.astype(np.float32)[None], mask


def _place(rng, canvas, region, inside, kind, sizes, levels, max_occlusion) -> bool:
    """Paint one instance of class ``kind`` (the cells ``inside`` of ``region``) onto
    ``canvas = (image, mask, owner)``, unless it would hide more than ``max_occlusion``
    of an earlier instance or no intensity contrasts with the ones it overlaps; True
    when painted.  ``sizes`` and ``levels`` (per earlier instance) grow by one then."""
    image, mask, owner = canvas
    covered = owner[region][inside]
    covered = covered[covered >= 0]
    if covered.size:
        hidden = np.bincount(covered, minlength=len(sizes))
        visible = np.bincount(owner[owner >= 0], minlength=len(sizes)) - hidden
        if np.any(visible < (1.0 - max_occlusion) * np.asarray(sizes)):
            return False
        neighbours = [levels[j] for j in np.flatnonzero(hidden)]
    else:
        neighbours = []
    level = _pick_level(rng, neighbours)
    if level is None:
        return False
    # Later instances occlude earlier ones.
    image[region][inside] = level
    mask[region][inside] = kind + 1
    owner[region][inside] = len(sizes)
    sizes.append(int(inside.sum()))
    levels.append(level)
    return True


def _pick_level(rng, neighbours, tries=10):
    """An instance intensity at least _MIN_CONTRAST from every overlapped instance."""
    for _ in range(tries):
        level = float(rng.uniform(*_FG_RANGE))
        if all(abs(level - other) >= _MIN_CONTRAST for other in neighbours):
            return level
    return None
