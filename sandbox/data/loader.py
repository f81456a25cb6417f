"""Batching: :class:`DataLoader`, with ``torch.utils.data.DataLoader``'s arguments, and
what the trainer needs on top: a reproducible order and augmentation, exact resume.

Order and randomness:

- Without ``seed`` (PyTorch's way), each epoch's order is a permutation drawn from
  ``generator``, or from the global generator that :func:`sandbox.manual_seed` seeds.
- With ``seed``, everything random derives from ``(seed, epoch)``: the order of
  epoch ``e`` is ``default_rng([seed, 0, e]).permutation(n)`` when shuffling, and the
  ``transform`` of the sample at position ``k`` of epoch ``e`` receives
  ``default_rng([seed, 1, e, k])``, independent of the batch size and of where
  iteration started.  ``state_dict()`` (seed and epoch) in a checkpoint and
  ``batches(epoch, start=b)`` after loading it continue an epoch at batch ``b`` with
  exactly the batches an uninterrupted run would have produced.
- A dataset with a ``set_epoch(e)`` method (e.g. :class:`~sandbox.data.Nuclei`, whose
  random crops depend on the epoch) is told the epoch before its samples are read.

Batches are collated by :func:`default_collate` (PyTorch's rules: tensors) or by
``collate_fn``; the trainer passes :func:`collate_segmentation` (numpy float32
images and int64 masks, with the shapes checked).  ``num_workers > 0`` is accepted
with one warning: batches are loaded in the main process, identical to
``num_workers=0``.
"""

from __future__ import annotations

import collections.abc as abc
import warnings

import numpy as np

from ..autograd import Tensor
from ..runtime.rng import numpy_rng

__all__ = ["DataLoader", "collate_segmentation", "default_collate", "get_worker_info"]


def _check_count(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


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
        Source of the shuffle order when no ``seed`` is given (the global generator
        when None).
    seed : int, optional
        Derive the order and the transforms' randomness from ``(seed, epoch)`` (see
        the module notes): reproducible and resumable at any batch.
    transform : callable, optional
        ``transform(image, mask, rng) -> (image, mask)``, applied per ``(image, mask)``
        sample with a generator from ``(seed, epoch, position)`` (``seed`` 0 when not
        given); see :mod:`sandbox.data.augment`.

    ``pin_memory``, ``timeout``, ``worker_init_fn``, ``prefetch_factor``,
    ``persistent_workers`` and ``multiprocessing_context`` are accepted and have
    no effect on the CPU in one process (``worker_init_fn`` is not called).

    Notes
    -----
    Iterating yields the batches of the current ``epoch`` and then advances
    ``epoch`` by one (the epoch is consumed when the iterator is created); call
    :meth:`set_epoch` to choose it.  ``len(loader)`` is the number of batches per epoch.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 seed=None, transform=None):
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
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be callable or None, got {transform!r}")
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
        self.seed = None if seed is None else _check_count("seed", seed, 0)
        self.transform = transform
        self.epoch = 0

    # ------------------------------------------------------------ epochs and resume
    def set_epoch(self, epoch):
        """Make the next iteration produce epoch ``epoch``."""
        self.epoch = _check_count("epoch", epoch, 0)

    def state_dict(self):
        """``{"seed": ..., "epoch": ...}``: what an exact resume needs."""
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state):
        """Restore ``seed`` and ``epoch`` saved by :meth:`state_dict`."""
        seed = state["seed"]
        self.seed = None if seed is None else _check_count("seed", seed, 0)
        self.set_epoch(state["epoch"])

    def order(self, epoch):
        """Dataset indices in the order epoch ``epoch`` visits them."""
        if self.sampler is not None:
            return np.asarray([int(i) for i in self.sampler], dtype=np.int64)
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n)
        if self.seed is not None:
            return np.random.default_rng([self.seed, 0, int(epoch)]).permutation(n)
        return numpy_rng(self.generator).permutation(n)

    def _index_batches(self, epoch, start=0):
        if self.batch_sampler is not None:
            for b, batch in enumerate(self.batch_sampler):
                if b >= start:
                    yield [int(i) for i in batch], None
            return
        order = self.order(epoch)
        if self.batch_size is None:
            yield from ((int(i), k) for k, i in enumerate(order) if k >= start)
            return
        bs = self.batch_size
        stop = len(order) - len(order) % bs if self.drop_last else len(order)
        for first in range(start * bs, stop, bs):
            yield [int(i) for i in order[first:first + bs]], first

    def _sample(self, epoch, position, index):
        sample = self.dataset[index]
        if self.transform is not None:
            image, mask = sample
            rng = np.random.default_rng([self.seed or 0, 1, epoch, position])
            sample = self.transform(np.asarray(image), np.asarray(mask), rng)
        return sample

    def batches(self, epoch, start=0, shard=None):
        """Yield the batches of epoch ``epoch``, beginning with batch number ``start``.

        Does not change ``self.epoch``.  ``shard=(r, n)`` yields only part ``r`` of
        ``n`` equal contiguous parts of every batch (rank ``r``'s share in a
        data-parallel run): the same samples and augmentations, position for
        position, as the whole batch holds; ``n`` must divide ``batch_size``.
        """
        epoch = _check_count("epoch", epoch, 0)
        start = _check_count("start", start, 0)
        part, per = self._shard(shard)
        if hasattr(self.dataset, "set_epoch"):
            self.dataset.set_epoch(epoch)
        for batch, first in self._index_batches(epoch, start):
            if not isinstance(batch, list):  # batch_size=None: one sample, as it is
                sample = self._sample(epoch, first, batch)
                yield sample if self.collate_fn is default_collate else self.collate_fn(sample)
                continue
            if per is not None:  # this rank's positions of the global batch
                batch, first = batch[part * per : (part + 1) * per], first + part * per
            positions = range(first, first + len(batch)) if first is not None else [None] * len(
                batch)
            samples = [self._sample(epoch, k, i) for k, i in zip(positions, batch, strict=True)]
            if self.collate_fn is collate_segmentation:
                yield collate_segmentation(samples, batch)
            else:
                yield self.collate_fn(samples)

    def _shard(self, shard):
        """``(r, samples per part)`` for ``shard=(r, n)``; ``(0, None)`` for no shard."""
        if shard is None:
            return 0, None
        part, parts = shard
        if not (
            isinstance(self.batch_size, int) and isinstance(parts, int) and parts >= 1
            and isinstance(part, int) and 0 <= part < parts and self.batch_size % parts == 0
        ):
            raise ValueError(
                f"shard must be (r, n) with 0 <= r < n and n dividing batch_size "
                f"{self.batch_size}, got {shard!r}"
            )
        return part, self.batch_size // parts

    def __iter__(self):
        epoch = self.epoch
        self.epoch += 1
        return self.batches(epoch)

    def __len__(self):
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        n = len(self.sampler) if self.sampler is not None else len(self.dataset)
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __repr__(self):
        seed = "" if self.seed is None else f", seed={self.seed}"
        return (f"DataLoader({type(self.dataset).__name__}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, drop_last={self.drop_last}{seed})")


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


def collate_segmentation(samples, indices=None):
    """Stack ``(image, mask)`` samples into ``(B, C, *spatial)`` float32 images and
    ``(B, *spatial)`` int64 masks, as numpy arrays (the trainer's batches).

    The spatial dimensions come from the first sample: ``(H, W)`` or ``(D, H, W)``.
    ``indices`` (the samples' dataset indices) name the sample in error messages.
    """
    samples = [(np.asarray(img), np.asarray(mask)) for img, mask in samples]
    if indices is None:
        indices = list(range(len(samples)))
    first_img, first_mask = samples[0]
    volumes = np.ndim(first_mask) == 3
    for (img, mask), idx in zip(samples, indices, strict=True):
        if mask.ndim != (3 if volumes else 2) or img.ndim != mask.ndim + 1 or (
            img.shape[1:] != mask.shape
        ):
            expected = (
                "image (C, D, H, W) and mask (D, H, W) of the same D, H, W"
                if volumes
                else "image (C, H, W) and mask (H, W) of the same H, W"
            )
            raise ValueError(
                f"sample {idx}: expected {expected}; got image {img.shape} and mask {mask.shape}"
            )
        if img.shape != first_img.shape:
            raise ValueError(
                f"cannot batch samples of different shapes: sample {indices[0]} has image "
                f"{first_img.shape}, sample {idx} has {img.shape} (resize or crop them to "
                f"one size, e.g. ImageFolder(image_size=...) or RandomCrop)"
            )
    images = np.stack([s[0] for s in samples]).astype(np.float32, copy=False)
    masks = np.stack([s[1] for s in samples]).astype(np.int64, copy=False)
    return images, masks
