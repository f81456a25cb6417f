"""Datasets, batching and joint augmentation for segmentation (pure numpy).

Every dataset is indexable: ``len(ds)`` and ``ds[i] -> (image, mask)`` with ``image``
float32 ``(C, H, W)`` and ``mask`` int64 ``(H, W)``, and has ``num_classes``,
``in_channels`` and ``class_names``.

- :class:`Shapes` — seeded synthetic shapes (disc, square, triangle, ring, cross).
- :class:`Nuclei` — the shipped DSB2018 fluorescence image, binary nuclei masks;
  :func:`load_nuclei` (raw arrays) and :func:`otsu_threshold` (classical baseline).
- :class:`ImageFolder` — ``root/images`` + ``root/masks`` files (needs Pillow).
- :class:`Subset`, :func:`random_split` — views for train/validation splits.
- :class:`DataLoader` — batches with a (seed, epoch)-determined order and augmentation.
- :mod:`sandbox.data.augment` — ``RandomFlip``, ``RandomRotate90``, ``RandomCrop``,
  ``RandomIntensity``, ``CenterCrop``, ``Compose``.
"""

from . import augment
from ._augment import CenterCrop, Compose, RandomCrop, RandomFlip, RandomIntensity, RandomRotate90
from ._folder import ImageFolder
from ._loader import DataLoader
from ._nuclei import Nuclei, load_nuclei, otsu_segment, otsu_threshold
from ._shapes import Shapes
from ._subset import Subset, random_split

__all__ = [
    "CenterCrop",
    "Compose",
    "DataLoader",
    "ImageFolder",
    "Nuclei",
    "RandomCrop",
    "RandomFlip",
    "RandomIntensity",
    "RandomRotate90",
    "Shapes",
    "Subset",
    "augment",
    "load_nuclei",
    "otsu_segment",
    "otsu_threshold",
    "random_split",
]
