"""Grid values for the grid-sampling tests: away from the kinks of the sampling.

Bilinear and nearest sampling are not differentiable where the unnormalised
coordinate is in ½ℤ (pixel centres, clip bounds, reflection lines, rounding ties);
reflection maps ½ℤ onto itself.  Points at least 0.1 pixel away from ½ℤ keep finite
differences and PyTorch's one-sided conventions out of the comparisons.
"""

import numpy as np


def safe_grid(rng, n, out, spatial, align_corners, lo=-2.0, hi=1.0, dtype=np.float64):
    """(n, *out, nd) normalised grid values whose pixel coordinates u lie in
    [lo, s + hi] per axis and at least 0.1 from ½ℤ (x first: the last spatial axis)."""
    nd = len(spatial)
    comps = []
    for k in range(nd):
        s = spatial[nd - 1 - k]
        halves = rng.integers(int(2 * lo), int(2 * (s + hi)), size=(n, *out))
        u = halves / 2 + 0.1 + 0.3 * rng.random((n, *out))
        g = 2 * u / (s - 1) - 1 if align_corners and s > 1 else (2 * u + 1) / s - 1
        comps.append(g)
    return np.stack(comps, axis=-1).astype(dtype)
