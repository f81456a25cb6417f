"""A view of some samples of a dataset."""

from __future__ import annotations

import numpy as np


class Subset:
    """The samples ``indices`` of ``dataset``, in that order.

    Keeps the dataset's ``num_classes``, ``in_channels``, ``class_names`` and
    ``spatial_dims`` (when it has them), and ``sizes``, when the dataset lists its
    samples' sizes.
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = [int(i) for i in np.asarray(indices).ravel()]
        n = len(dataset)
        bad = [i for i in self.indices if not 0 <= i < n]
        if bad:
            raise IndexError(f"Subset indices {bad[:5]} out of range for a dataset of {n} samples")
        for name in ("num_classes", "in_channels", "class_names", "spatial_dims"):
            if hasattr(dataset, name):
                setattr(self, name, getattr(dataset, name))
        if hasattr(dataset, "sizes"):  # per-sample (H, W) or (D, H, W), e.g. of a folder
            self.sizes = [dataset.sizes[i] for i in self.indices]

    def __len__(self):
        return len(self.indices)

    def __getitem__(self, i):
        return self.dataset[self.indices[i]]

    def __repr__(self):
        return f"Subset({self.dataset!r}, {len(self)} samples)"


def random_split(dataset, fraction: float, seed: int = 0):
    """Split into ``(rest, part)`` where ``part`` holds ``max(1, round(fraction * n))`` samples."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"fraction must be in (0, 1), got {fraction!r}")
    n = len(dataset)
    if n < 2:
        raise ValueError(f"cannot split a dataset of {n} sample(s)")
    order = np.random.default_rng(seed).permutation(n)
    k = min(max(1, round(fraction * n)), n - 1)
    return Subset(dataset, order[k:]), Subset(dataset, order[:k])
