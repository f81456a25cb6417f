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

# Class 0 is the background; shape classes follow in this order.
SHAPE_NAMES = ("disc", "square", "triangle", "ring", "cross")

_BG_MAX = 0.35  # background intensities lie in [0, _BG_MAX]
_FG_RANGE = (0.45, 1.0)  # instance intensities (any class)
_MIN_CONTRAST = 0.15  # between overlapping instances


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
    """Smooth background in [0, _BG_MAX]: a random plane plus a low-frequency wave."""
    t = np.linspace(-1.0, 1.0, size)
    yy, xx = t[:, None], t[None, :]
    gy, gx = rng.uniform(-1.0, 1.0, 2)
    freq = rng.uniform(0.5, 2.0)
    phase = rng.uniform(0.0, 2.0 * math.pi)
    angle = rng.uniform(0.0, 2.0 * math.pi)
    wave = np.sin(freq * math.pi * (math.cos(angle) * xx + math.sin(angle) * yy) + phase)
    bg = 0.5 * (gy * yy + gx * xx) + 0.3 * wave
    lo, hi = bg.min(), bg.max()
    level = rng.uniform(0.0, 0.15)
    span = rng.uniform(0.05, _BG_MAX - level)
    return level + span * (bg - lo) / max(hi - lo, 1e-12)


class Shapes:
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

    in_channels = 1

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
    ):
        self.num_samples = _check_int("num_samples", num_samples, 0)
        self.image_size = _check_int("image_size", image_size, 16)
        self.num_classes = _check_num_classes(num_classes, SHAPE_NAMES)
        self.seed = _check_int("seed", seed, 0)
        self.shapes_per_image = _check_count_range("shapes_per_image", shapes_per_image)
        if radius is None:
            scale = self.image_size / 64.0
            lo = max(6.0 * scale, 3.0)
            radius = (lo, max(16.0 * scale, lo))
        self.radius = _check_range("radius", radius)
        limit = self.image_size / (2.0 * max(_EXTENT))
        if self.radius[0] < 1.0 or self.radius[1] >= limit:
            raise ValueError(
                f"radius must lie in [1, image_size / {2.0 * max(_EXTENT):.2f}) = "
                f"[1, {limit:.1f}), got {radius}"
            )
        self.noise = _check_range("noise", noise)
        if not 0.0 <= max_occlusion < 1.0:
            raise ValueError(f"max_occlusion must be in [0, 1), got {max_occlusion}")
        self.max_occlusion = float(max_occlusion)
        self.class_names = ("background",) + SHAPE_NAMES[: self.num_classes - 1]

    def __len__(self):
        return self.num_samples

    def __repr__(self):
        return (
            f"Shapes(num_samples={self.num_samples}, image_size={self.image_size}, "
            f"num_classes={self.num_classes}, seed={self.seed})"
        )

    def __getitem__(self, index):
        index = _check_index(index, self.num_samples)
        return self.generate(index)

    def generate(self, index):
        """Generate sample ``index`` (any non-negative integer, also beyond ``len``)."""
        rng = np.random.default_rng([self.seed, int(index)])
        size = self.image_size
        image = _background(rng, size)
        mask = np.zeros((size, size), dtype=np.int64)
        owner = np.full((size, size), -1, dtype=np.int64)  # instance id per pixel
        areas, levels = [], []  # drawn area and intensity of each placed instance

        n_shapes = int(rng.integers(self.shapes_per_image[0], self.shapes_per_image[1] + 1))
        n_kinds = self.num_classes - 1
        # Cycle through a random order of the classes so each image is balanced.
        kinds = np.resize(rng.permutation(n_kinds), n_shapes)
        grid = np.arange(size, dtype=np.float64) + 0.5  # pixel centres
        for kind in kinds:
            r = rng.uniform(*self.radius)
            theta = rng.uniform(0.0, 2.0 * math.pi)
            reach = _EXTENT[kind] * r
            for _ in range(20):  # placement attempts
                cy, cx = rng.uniform(reach, size - reach, 2)
                y0, y1 = max(int(cy - reach) - 1, 0), min(int(cy + reach) + 2, size)
                x0, x1 = max(int(cx - reach) - 1, 0), min(int(cx + reach) + 2, size)
                dy = grid[y0:y1, None] - cy
                dx = grid[None, x0:x1] - cx
                inside = _RASTERS[kind](dy, dx, r, theta)
                region = (slice(y0, y1), slice(x0, x1))
                if _place(rng, (image, mask, owner), region, inside, kind, areas, levels,
                          self.max_occlusion):
                    break
        sigma = rng.uniform(*self.noise)
        image = image + sigma * rng.standard_normal((size, size))
        return image.astype(np.float32)[None], mask


def _place(rng, canvas, region, inside, kind, sizes, levels, max_occlusion) -> bool:
    """Paint one instance of class ``kind`` (the cells ``inside`` of ``region``) onto
    ``canvas = (image, mask, owner)``, unless it would hide more than ``max_occlusion``
    of an earlier instance or no intensity contrasts with the ones it overlaps; True
    when painted.  ``sizes`` and ``levels`` (per earlier instance) grow by one then.
    Shared by the 2-D and 3-D generators."""
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


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)



def _check_num_classes(num_classes, shape_names) -> int:
    """``num_classes`` of a synthetic dataset: background plus 1 .. all of ``shape_names``."""
    n = _check_int("num_classes", num_classes, 2)
    if n > len(shape_names) + 1:
        raise ValueError(
            f"num_classes must be between 2 and {len(shape_names) + 1} "
            f"(background + {', '.join(shape_names)}), got {num_classes}"
        )
    return n


def _check_count_range(name, value) -> tuple[int, int]:
    """A ``(low, high)`` pair of integers ``1 <= low <= high`` (shapes per sample)."""
    lo, hi = _check_range(name, value)
    if lo < 1 or lo != int(lo) or hi != int(hi):
        raise ValueError(f"{name} must be a pair of integers 1 <= low <= high, got {value!r}")
    return int(lo), int(hi)


def _check_range(name, value):
    try:
        lo, hi = (float(v) for v in value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a pair (low, high) of numbers, got {value!r}") from None
    if not (0.0 <= lo <= hi):
        raise ValueError(f"{name} must satisfy 0 <= low <= high, got {value!r}")
    return lo, hi


def _check_index(index, length):
    if isinstance(index, bool) or not isinstance(index, int | np.integer):
        raise TypeError(f"index must be an integer, got {type(index).__name__}")
    index = int(index)
    if index < 0:
        index += length
    if not 0 <= index < length:
        raise IndexError(f"index {index} out of range for a dataset of length {length}")
    return index
