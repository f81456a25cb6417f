"""Joint 3-D augmentations: the same geometric change applied to a volume and its mask.

Every transform is a callable ``t(image, mask, rng) -> (image, mask)`` with ``image``
of shape ``(C, D, H, W)``, ``mask`` of shape ``(D, H, W)`` and ``rng`` a
``np.random.Generator`` (as in :mod:`sandbox.data.augment`, whose
:class:`~sandbox.data.Compose` chains these too). Flips and rotations only permute
voxels, crops only select them: labels stay exact.

Flips and 90-degree rotations are *axis maps*: a permutation of the three spatial
axes followed by a reversal of some of them. :meth:`RandomFlip3D.draw` and
:meth:`RandomRotate3D.draw` return the map a call would use, and :func:`apply_axis_map`
/ :func:`invert_axis_map` apply it or undo it, e.g. to map a prediction made on a
flipped volume back (test-time augmentation).
"""

from __future__ import annotations

import itertools

import numpy as np

from ._checks import _check_pair, _check_prob


def _check_size3(name, size):
    if isinstance(size, int | np.integer) and not isinstance(size, bool):
        size = (int(size),) * 3
    try:
        size = tuple(int(s) for s in size)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an int or three ints (D, H, W), got {size!r}") from None
    if len(size) != 3 or min(size) < 1:
        raise ValueError(f"{name} must be an int or three positive ints (D, H, W), got {size!r}")
    return size


def apply_axis_map(array, axis_map):
    """Apply ``axis_map = (perm, flips)`` to the last three axes of ``array``.

    Output spatial axis ``j`` is input axis ``perm[j]``, reversed when ``flips[j]``.
    Leading axes (channels) are untouched. Returns a C-contiguous copy.
    """
    perm, flips = axis_map
    lead = array.ndim - 3
    out = array.transpose(tuple(range(lead)) + tuple(lead + p for p in perm))
    reversed_axes = tuple(lead + j for j in range(3) if flips[j])
    if reversed_axes:
        out = np.flip(out, reversed_axes)
    return np.ascontiguousarray(out)


def invert_axis_map(axis_map):
    """The map that undoes ``axis_map``: ``apply(apply(x, m), invert(m)) == x``."""
    perm, flips = axis_map
    inverse = tuple(int(i) for i in np.argsort(perm))
    # Undo the flips (they act on output axes), then the permutation.
    return inverse, tuple(bool(flips[inverse[k]]) for k in range(3))


def _det(perm, flips):
    sign = 1
    for i, j in itertools.combinations(range(3), 2):
        if perm[i] > perm[j]:
            sign = -sign
    return sign * (-1) ** sum(flips)


# The 24 rotations of a cube: signed permutations with determinant +1.
ROTATIONS = tuple(
    (perm, flips)
    for perm in itertools.permutations(range(3))
    for flips in itertools.product((False, True), repeat=3)
    if _det(perm, flips) == 1
)


class RandomFlip3D:
    """Reverse each spatial axis (depth, height, width) independently with probability ``p``.

    Parameters
    ----------
    axes : sequence of int, default (0, 1, 2)
        Spatial axes that may be flipped (0 depth, 1 height, 2 width).
    p : float, default 0.5
        Probability of each allowed flip.
    """

    def __init__(self, axes=(0, 1, 2), p=0.5):
        axes = tuple(int(a) for a in axes)
        if any(a not in (0, 1, 2) for a in axes):
            raise ValueError(f"axes must be spatial axes among 0, 1, 2, got {axes!r}")
        self.axes = axes
        self.p = _check_prob(p)

    def draw(self, rng, shape=None):
        """The axis map of one call (``shape`` is ignored; flips keep any shape)."""
        # Draw all three decisions every call so the stream of random numbers does not
        # depend on the options.
        decisions = rng.random(3) < self.p
        return (0, 1, 2), tuple(bool(decisions[a]) and a in self.axes for a in range(3))

    def __call__(self, image, mask, rng):
        _check_pair(image, mask, 3)
        m = self.draw(rng, mask.shape)
        return apply_axis_map(image, m), apply_axis_map(mask, m)

    def __repr__(self):
        return f"RandomFlip3D(axes={self.axes}, p={self.p})"


class RandomRotate3D:
    """Rotate by a uniformly random one of the 24 right-angle rotations of a cube.

    Every plane (depth-height, depth-width, height-width) and every multiple of 90
    degrees occurs. For a volume whose sides differ, only the rotations that keep its
    shape are drawn (so batching still works), e.g. 180 degrees in any plane and 90
    degrees in a plane of two equal sides.
    """

    def draw(self, rng, shape):
        """The axis map of one call for a volume of spatial ``shape`` (D, H, W)."""
        allowed = [m for m in ROTATIONS if all(shape[m[0][j]] == shape[j] for j in range(3))]
        return allowed[int(rng.integers(0, len(allowed)))]

    def __call__(self, image, mask, rng):
        _check_pair(image, mask, 3)
        m = self.draw(rng, mask.shape)
        return apply_axis_map(image, m), apply_axis_map(mask, m)

    def __repr__(self):
        return "RandomRotate3D()"


class RandomCrop3D:
    """Cut a random ``size`` box (the same place in image and mask).

    Parameters
    ----------
    size : int or (int, int, int)
        Output ``(depth, height, width)``; an int means a cube. Must not exceed the input.
    """

    def __init__(self, size):
        self.size = _check_size3("size", size)

    def _check_fits(self, shape):
        if any(s > n for s, n in zip(self.size, shape, strict=True)):
            raise ValueError(
                f"{type(self).__name__} size {self.size} is larger than the input {tuple(shape)}"
            )

    def corner(self, rng, shape):
        """The first voxel ``(z, y, x)`` of the box a call would cut from ``shape``."""
        self._check_fits(shape)
        return tuple(int(rng.integers(0, n - s + 1)) for s, n in zip(self.size, shape, strict=True))

    def __call__(self, image, mask, rng):
        _check_pair(image, mask, 3)
        box = tuple(
            slice(c, c + s) for c, s in zip(self.corner(rng, mask.shape), self.size, strict=True)
        )
        return np.ascontiguousarray(image[(slice(None),) + box]), np.ascontiguousarray(mask[box])

    def __repr__(self):
        return f"RandomCrop3D(size={self.size})"


class CenterCrop3D(RandomCrop3D):
    """Cut the central ``size`` box (the same place in image and mask); not random.

    Parameters
    ----------
    size : int or (int, int, int)
        Output ``(depth, height, width)``; an int means a cube. Must not exceed the input.
    """

    def corner(self, rng, shape):
        self._check_fits(shape)
        return tuple((n - s) // 2 for s, n in zip(self.size, shape, strict=True))

    def __call__(self, image, mask, rng=None):
        return super().__call__(image, mask, rng)

    def __repr__(self):
        return f"CenterCrop3D(size={self.size})"
