"""Joint augmentations: the same geometric change applied to an image and its mask.

Every transform is a callable ``t(image, mask, rng) -> (image, mask)`` with ``image``
of shape ``(C, H, W)``, ``mask`` of shape ``(H, W)`` and ``rng`` a
``np.random.Generator``. All randomness comes from ``rng``, which
:class:`~sandbox.data.DataLoader` derives from its seed, the epoch and the sample's
position, so an augmented epoch is reproducible. Geometric transforms only permute
or select pixels: no interpolation, so labels stay exact.
"""

from __future__ import annotations

import numpy as np

from ._checks import _check_pair, _check_prob


class RandomFlip:
    """Flip left-right and/or up-down, each with probability ``p``.

    Parameters
    ----------
    horizontal : bool, default True
        Allow flips along the width axis.
    vertical : bool, default True
        Allow flips along the height axis.
    p : float, default 0.5
        Probability of each allowed flip (decided independently).
    """

    def __init__(self, horizontal=True, vertical=True, p=0.5):
        self.horizontal = bool(horizontal)
        self.vertical = bool(vertical)
        self.p = _check_prob(p)

    def __call__(self, image, mask, rng):
        _check_pair(image, mask)
        # Draw both decisions every call so the stream of random numbers does not
        # depend on the options.
        flip_h, flip_v = rng.random(2) < self.p
        if self.horizontal and flip_h:
            image, mask = image[:, :, ::-1], mask[:, ::-1]
        if self.vertical and flip_v:
            image, mask = image[:, ::-1, :], mask[::-1, :]
        return np.ascontiguousarray(image), np.ascontiguousarray(mask)

    def __repr__(self):
        return f"RandomFlip(horizontal={self.horizontal}, vertical={self.vertical}, p={self.p})"


class RandomRotate90:
    """Rotate by a uniformly random multiple of 90 degrees (counter-clockwise).

    Non-square inputs are rotated only by 0 or 180 degrees so that the shape, and
    therefore batching, is preserved.
    """

    def __call__(self, image, mask, rng):
        _check_pair(image, mask)
        k = int(rng.integers(0, 4))
        if image.shape[1] != image.shape[2]:
            k = 2 * (k % 2)
        if k:
            image = np.rot90(image, k, axes=(1, 2))
            mask = np.rot90(mask, k, axes=(0, 1))
        return np.ascontiguousarray(image), np.ascontiguousarray(mask)

    def __repr__(self):
        return "RandomRotate90()"


class RandomCrop:
    """Cut a random ``size`` window (same place in image and mask).

    Parameters
    ----------
    size : int or (int, int)
        Output ``(height, width)``; an int means a square. Must not exceed the input.
    """

    def __init__(self, size):
        if isinstance(size, int | np.integer) and not isinstance(size, bool):
            size = (int(size), int(size))
        try:
            h, w = (int(s) for s in size)
        except (TypeError, ValueError):
            raise TypeError(f"size must be an int or a pair of ints, got {size!r}") from None
        if h < 1 or w < 1:
            raise ValueError(f"size must be positive, got {size!r}")
        self.size = (h, w)

    def __call__(self, image, mask, rng):
        _check_pair(image, mask)
        h, w = self.size
        H, W = mask.shape
        if h > H or w > W:
            raise ValueError(f"RandomCrop size {self.size} is larger than the input ({H}, {W})")
        top = int(rng.integers(0, H - h + 1))
        left = int(rng.integers(0, W - w + 1))
        return (np.ascontiguousarray(image[:, top:top + h, left:left + w]),
                np.ascontiguousarray(mask[top:top + h, left:left + w]))

    def __repr__(self):
        return f"RandomCrop(size={self.size})"


class CenterCrop(RandomCrop):
    """Cut the central ``size`` window (same place in image and mask); not random.

    Parameters
    ----------
    size : int or (int, int)
        Output ``(height, width)``; an int means a square. Must not exceed the input.
    """

    def __call__(self, image, mask, rng=None):
        _check_pair(image, mask)
        h, w = self.size
        H, W = mask.shape
        if h > H or w > W:
            raise ValueError(f"CenterCrop size {self.size} is larger than the input ({H}, {W})")
        top, left = (H - h) // 2, (W - w) // 2
        return (np.ascontiguousarray(image[:, top:top + h, left:left + w]),
                np.ascontiguousarray(mask[top:top + h, left:left + w]))

    def __repr__(self):
        return f"CenterCrop(size={self.size})"


class RandomIntensity:
    """Image-only jitter: ``image * gain + bias`` (mask unchanged).

    Parameters
    ----------
    gain : (float, float), default (0.8, 1.2)
        Range of the multiplicative factor.
    bias : (float, float), default (-0.1, 0.1)
        Range of the additive offset (in the image's units).
    """

    def __init__(self, gain=(0.8, 1.2), bias=(-0.1, 0.1)):
        self.gain = tuple(float(g) for g in gain)
        self.bias = tuple(float(b) for b in bias)
        if len(self.gain) != 2 or len(self.bias) != 2:
            raise ValueError("gain and bias must be pairs (low, high)")

    def __call__(self, image, mask, rng):
        _check_pair(image, mask)
        g = rng.uniform(*self.gain)
        b = rng.uniform(*self.bias)
        return (image * g + b).astype(image.dtype, copy=False), mask

    def __repr__(self):
        return f"RandomIntensity(gain={self.gain}, bias={self.bias})"


class Compose:
    """Apply transforms in order, sharing one ``rng``.

    Parameters
    ----------
    transforms : sequence of callables ``(image, mask, rng) -> (image, mask)``
    """

    def __init__(self, transforms):
        self.transforms = list(transforms)
        for t in self.transforms:
            if not callable(t):
                raise TypeError(f"every transform must be callable, got {t!r}")

    def __call__(self, image, mask, rng):
        for t in self.transforms:
            image, mask = t(image, mask, rng)
        return image, mask

    def __repr__(self):
        return "Compose([" + ", ".join(repr(t) for t in self.transforms) + "])"
