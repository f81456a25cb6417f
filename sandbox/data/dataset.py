"""Map-style datasets with ``torch.utils.data``'s names: :class:`Dataset`,
:class:`TensorDataset`, :class:`Subset` and :func:`random_split`.

Splits are reproducible: the permutation comes from ``generator`` (a
:class:`sandbox.Generator`), or from the global generator that
:func:`sandbox.manual_seed` seeds.  It differs from PyTorch's for the same seed
(numpy's PCG64 here).
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime.rng import numpy_rng

__all__ = ["Dataset", "Subset", "TensorDataset", "random_split"]


class Dataset:
    """Base class of map-style datasets: define ``__getitem__`` and ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``; all share the first dim."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        n = len(tensors[0])
        if any(len(t) != n for t in tensors):
            raise ValueError("TensorDataset: all tensors must have the same first dim (size)")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class Subset(Dataset):
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

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)

    def __repr__(self):
        return f"Subset({self.dataset!r}, {len(self)} samples)"


def _split_lengths(lengths, n):
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1):
        # Fractions: floor each share, then give the remainder out round-robin (as torch).
        if any(not 0 <= f <= 1 for f in lengths):
            raise ValueError(f"random_split: fractions must be in [0, 1], got {lengths}")
        counts = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        return counts
    if not all(isinstance(x, int | np.integer) and x >= 0 for x in lengths):
        raise TypeError(
            f"random_split: lengths must be non-negative ints or fractions summing to 1, "
            f"got {lengths}"
        )
    if sum(lengths) != n:
        raise ValueError(
            f"random_split: lengths {lengths} sum to {sum(lengths)}, the dataset has {n} samples"
        )
    return [int(x) for x in lengths]


def random_split(dataset, lengths, generator=None):
    """Split into non-overlapping :class:`Subset`\\ s of the given ``lengths`` (or fractions).

    The permutation is drawn from ``generator`` (a :class:`sandbox.Generator`; the
    global generator when None).
    """
    n = len(dataset)
    counts = _split_lengths(lengths, n)
    order = numpy_rng(generator).permutation(n)
    bounds = np.cumsum([0] + counts)
    return [Subset(dataset, order[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
