"""Datasets and batching with ``torch.utils.data``'s names and signatures.

- :class:`Dataset` (base class), :class:`TensorDataset`, :class:`Subset`,
  :func:`random_split` (lengths or fractions, ``generator=``).
- :class:`DataLoader`: any sample type (tensors, arrays, numbers, dicts, tuples)
  collated by :func:`default_collate` into :class:`~sandbox.Tensor` batches, or by
  your ``collate_fn``.

Determinism: the order of every epoch is a permutation drawn from ``generator``
(or, without one, from the global generator that :func:`sandbox.manual_seed`
seeds), so a seeded run repeats exactly.  The sequence differs from PyTorch's for
the same seed (numpy's PCG64 here).  ``num_workers > 0`` is accepted with one
warning: batches are loaded in the main process, identical to ``num_workers=0``.

For segmentation training with seeded augmentation and exact resume see
:class:`sandbox.data.DataLoader`.
"""

from __future__ import annotations

import collections.abc as abc
import math
import warnings

import numpy as np

from ..autograd import Tensor
from ..runtime.rng import numpy_rng

__all__ = ["DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate",
           "get_worker_info", "random_split"]


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
    """The samples ``indices`` of ``dataset``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = [int(i) for i in np.asarray(indices).ravel()]

    def __getitem__(self, index):
        if isinstance(index, list):
            return [self.dataset[self.indices[i]] for i in index]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


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


def get_worker_info():
    """None: batches are always loaded in the main process."""
    return None


def _stack(items, what):
    shapes = {np.shape(a) for a in items}
    if len(shapes) != 1:
        raise ValueError(
            f"default_collate: cannot stack {what} of different shapes {sorted(shapes)}; "
            "resize/crop them to one size or pass a collate_fn"
        )
    return Tensor._make(np.stack(items))


def default_collate(batch):
    """Combine a list of samples into a batch, with PyTorch's rules.

    Tensors and arrays are stacked along a new first dim (dtypes kept); Python
    floats become a float64 tensor, ints int64, bools bool; strings stay a list;
    dicts, named tuples and sequences are collated field by field (tuples and
    lists become lists).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return _stack([b.numpy() for b in batch], "tensors")
    if hasattr(elem, "detach") and hasattr(elem, "numpy"):  # a torch tensor
        return _stack([np.asarray(b.detach().cpu().numpy()) for b in batch], "tensors")
    if isinstance(elem, np.ndarray | np.generic) and elem.dtype.kind in "biuf":
        return _stack([np.asarray(b) for b in batch], "arrays")
    if isinstance(elem, bool):
        return Tensor._make(np.asarray(batch, np.bool_))
    if isinstance(elem, int):
        return Tensor._make(np.asarray(batch, np.int64))
    if isinstance(elem, float):
        return Tensor._make(np.asarray(batch, np.float64))
    if isinstance(elem, str | bytes):
        return list(batch)
    if isinstance(elem, abc.Mapping):
        return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch, strict=True)))
    if isinstance(elem, abc.Sequence):
        if len({len(b) for b in batch}) != 1:
            raise ValueError("default_collate: each element in the batch must have equal size")
        return [default_collate(list(s)) for s in zip(*batch, strict=True)]
    raise TypeError(
        f"default_collate: samples must contain tensors, numpy arrays, numbers, dicts or "
        f"lists; found {type(elem).__name__}"
    )


class DataLoader:
    """Iterate a dataset in batches, with ``torch.utils.data.DataLoader``'s arguments.

    Parameters
    ----------
    dataset : indexable with ``len``
    batch_size : int or None, default 1
        None yields the samples one by one, collated individually.
    shuffle : bool, default False
        Visit the samples in a new random order every epoch.
    sampler, batch_sampler : iterable, optional
        An iterable of indices (or of index lists); excludes ``shuffle``.
    num_workers : int, default 0
        Accepted; values above 0 load in the main process (one warning).
    collate_fn : callable, optional
        ``collate_fn(list_of_samples) -> batch``; :func:`default_collate` when None.
    drop_last : bool, default False
        Drop the last incomplete batch.
    generator : sandbox.Generator, optional
        Source of the shuffle order (the global generator when None).

    ``pin_memory``, ``timeout``, ``worker_init_fn``, ``prefetch_factor``,
    ``persistent_workers`` and ``multiprocessing_context`` are accepted and have
    no effect on the CPU in one process (``worker_init_fn`` is not called).
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device=""):
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError("dataset must define __len__ and __getitem__ (a map-style dataset)")
        if batch_size is not None and (isinstance(batch_size, bool) or
                                       not isinstance(batch_size, int) or batch_size < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {batch_size!r}")
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(f"num_workers must be a non-negative int, got {num_workers!r}")
        if shuffle and (sampler is not None or batch_sampler is not None):
            raise ValueError("shuffle=True cannot be combined with a sampler or batch_sampler")
        if batch_sampler is not None and (batch_size != 1 or drop_last or sampler is not None):
            raise ValueError(
                "batch_sampler excludes batch_size, shuffle, sampler and drop_last"
            )
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"collate_fn must be callable, got {collate_fn!r}")
        if num_workers > 0:
            warnings.warn(
                f"DataLoader(num_workers={num_workers}): the sandbox loads batches in the main "
                "process; the batches and their order are the same as with num_workers=0",
                stacklevel=2,
            )
        self.dataset = dataset
        self.batch_size = None if batch_sampler is not None else batch_size
        self.shuffle = bool(shuffle)
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = default_collate if collate_fn is None else collate_fn
        self.drop_last = bool(drop_last)
        self.generator = generator

    def _indices(self):
        if self.sampler is not None:
            return [int(i) for i in self.sampler]
        n = len(self.dataset)
        if self.shuffle:
            return numpy_rng(self.generator).permutation(n).tolist()
        return list(range(n))

    def _index_batches(self):
        if self.batch_sampler is not None:
            yield from (list(b) for b in self.batch_sampler)
            return
        order = self._indices()
        if self.batch_size is None:
            yield from order
            return
        bs = self.batch_size
        stop = len(order) - len(order) % bs if self.drop_last else len(order)
        for start in range(0, stop, bs):
            yield order[start:start + bs]

    def __iter__(self):
        single = self.batch_size is None and self.batch_sampler is None
        for batch in self._index_batches():
            if single:  # no batching: samples as they are (or through the user's collate_fn)
                sample = self.dataset[batch]
                yield sample if self.collate_fn is default_collate else self.collate_fn(sample)
            else:
                yield self.collate_fn([self.dataset[i] for i in batch])

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __repr__(self):
        return (f"DataLoader({type(self.dataset).__name__}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last})")
