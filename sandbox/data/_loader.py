"""Batching with a reproducible order: everything random derives from (seed, epoch).

- The sample order of epoch ``e`` is ``default_rng([seed, 0, e]).permutation(n)``
  when ``shuffle`` (else ``0..n-1``).
- The transform of the sample at position ``k`` of epoch ``e`` receives
  ``default_rng([seed, 1, e, k])``, independent of the batch size and of where
  iteration started.
- A dataset with a ``set_epoch(e)`` method (e.g. :class:`~sandbox.data.Nuclei`, whose
  random crops depend on the epoch) is told the epoch before its samples are read.

Exact resume: store ``loader.state_dict()`` (seed and epoch) in a checkpoint; after
loading it, ``loader.batches(epoch, start=b)`` continues epoch ``epoch`` at batch ``b``
with exactly the batches an uninterrupted run would have produced.
"""

from __future__ import annotations

import numpy as np

from ._shapes import _check_int


class DataLoader:
    """Iterate a dataset in batches of numpy arrays.

    Parameters
    ----------
    dataset : indexable
        ``len(dataset)`` and ``dataset[i] -> (image (C, H, W), mask (H, W))``, or
        volumes: ``(image (C, D, H, W), mask (D, H, W))``.
    batch_size : int, default 1
    shuffle : bool, default False
        Draw a new permutation every epoch (seeded by ``(seed, epoch)``).
    seed : int, default 0
    drop_last : bool, default False
        Drop the last batch when it is smaller than ``batch_size``.
    transform : callable, optional
        ``transform(image, mask, rng) -> (image, mask)``, applied per sample (see
        :mod:`sandbox.data.augment`).

    Notes
    -----
    Iterating (``for images, masks in loader``) yields ``images`` float32
    ``(B, C, H, W)`` and ``masks`` int64 ``(B, H, W)`` (volumes: ``(B, C, D, H, W)`` and
    ``(B, D, H, W)``) for the current ``epoch``, and
    then advances ``epoch`` by one (the epoch is consumed when the iterator is
    created). Call :meth:`set_epoch` to choose the epoch explicitly, e.g. at the start
    of every epoch of a training loop or after resuming. ``len(loader)`` is the
    number of batches per epoch.
    """

    def __init__(self, dataset, batch_size=1, shuffle=False, seed=0, drop_last=False,
                 transform=None):
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise TypeError("dataset must define __len__ and __getitem__")
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be callable or None, got {transform!r}")
        self.dataset = dataset
        self.batch_size = _check_int("batch_size", batch_size, 1)
        self.shuffle = bool(shuffle)
        self.seed = _check_int("seed", seed, 0)
        self.drop_last = bool(drop_last)
        self.transform = transform
        self.epoch = 0

    def __len__(self):
        n = len(self.dataset)
        if self.drop_last:
            return n // self.batch_size
        return -(-n // self.batch_size)

    def set_epoch(self, epoch):
        """Make the next iteration produce epoch ``epoch``."""
        self.epoch = _check_int("epoch", epoch, 0)

    def state_dict(self):
        """``{"seed": ..., "epoch": ...}``: what an exact resume needs."""
        return {"seed": self.seed, "epoch": self.epoch}

    def load_state_dict(self, state):
        """Restore ``seed`` and ``epoch`` saved by :meth:`state_dict`."""
        self.seed = _check_int("seed", state["seed"], 0)
        self.set_epoch(state["epoch"])

    def order(self, epoch):
        """Dataset indices in the order epoch ``epoch`` visits them."""
        n = len(self.dataset)
        if self.shuffle:
            return np.random.default_rng([self.seed, 0, int(epoch)]).permutation(n)
        return np.arange(n)

    def batches(self, epoch, start=0, shard=None):
        """Yield the batches of epoch ``epoch``, beginning with batch number ``start``.

        Does not change ``self.epoch``.  ``shard=(r, n)`` yields only part ``r`` of
        ``n`` equal contiguous parts of every batch (rank ``r``'s share in a
        data-parallel run): the same samples and augmentations, position for
        position, as the whole batch holds; ``n`` must divide ``batch_size``.
        """
        epoch = _check_int("epoch", epoch, 0)
        start = _check_int("start", start, 0)
        part, parts = (0, 1) if shard is None else shard
        parts = _check_int("shard count", parts, 1)
        if not (isinstance(part, int) and 0 <= part < parts) or self.batch_size % parts:
            raise ValueError(
                f"shard must be (r, n) with 0 <= r < n and n dividing batch_size "
                f"{self.batch_size}, got {shard!r}"
            )
        if hasattr(self.dataset, "set_epoch"):
            self.dataset.set_epoch(epoch)
        order = self.order(epoch)
        bs = self.batch_size
        per = bs // parts
        for b in range(start, len(self)):
            first = b * bs + part * per
            positions = range(first, min(first + per, order.size))
            samples = [self._sample(epoch, k, int(order[k])) for k in positions]
            yield _collate(samples, [int(order[k]) for k in positions])

    def _sample(self, epoch, position, index):
        image, mask = self.dataset[index]
        image, mask = np.asarray(image), np.asarray(mask)
        if self.transform is not None:
            rng = np.random.default_rng([self.seed, 1, epoch, position])
            image, mask = self.transform(image, mask, rng)
        return image, mask

    def __iter__(self):
        epoch = self.epoch
        self.epoch += 1
        return self.batches(epoch)

    def __repr__(self):
        return (f"DataLoader({self.dataset!r}, batch_size={self.batch_size}, "
                f"shuffle={self.shuffle}, seed={self.seed}, drop_last={self.drop_last})")


def _collate(samples, indices):
    """Stack samples into ``(B, C, *spatial)`` float32 images and ``(B, *spatial)`` int64 masks.

    The spatial dimensions come from the first sample: ``(H, W)`` or ``(D, H, W)``.
    """
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
