"""Datasets, batching and joint augmentation for segmentation (pure numpy).

Every dataset is indexable: ``len(ds)`` and ``ds[i] -> (image, mask)`` with ``image``
float32 ``(C, H, W)`` and ``mask`` int64 ``(H, W)`` (volumes: ``(C, D, H, W)`` and
``(D, H, W)``, and ``spatial_dims = 3``), and has ``num_classes``, ``in_channels`` and
``class_names``.

- :class:`Shapes` — seeded synthetic shapes (disc, square, triangle, ring, cross).
- :class:`Nuclei` — the shipped DSB2018 fluorescence image, binary nuclei masks;
  :func:`load_nuclei` (raw arrays) and :func:`otsu_threshold` (classical baseline).
- :class:`ImageFolder` — ``root/images`` + ``root/masks`` files (needs Pillow).
- :class:`Shapes3D` — seeded synthetic volumes (ball, rod, shell, cube, cross).
- :class:`VolumeFolder` — ``root/images`` + ``root/masks`` volumes (``.npy``, ``.npz``,
  multi-page TIFF); :func:`read_volume` reads one file.
- :class:`Dataset`, :class:`TensorDataset`, :class:`Subset`, :func:`random_split` —
  PyTorch's dataset vocabulary, with splits for train/validation.
- :class:`DataLoader` — PyTorch's loader; with ``seed=`` a (seed, epoch)-determined
  order and augmentation, resumable at any batch; :func:`collate_segmentation` gives
  the trainer's numpy batches, :func:`default_collate` PyTorch's.
- :mod:`sandbox.data.augment` — ``RandomFlip``, ``RandomRotate90``, ``RandomCrop``,
  ``RandomIntensity``, ``CenterCrop``, ``Compose``; for volumes ``RandomFlip3D``,
  ``RandomRotate3D``, ``RandomCrop3D``, ``CenterCrop3D``.
"""

from . import augment
from ._augment import CenterCrop, Compose, RandomCrop, RandomFlip, RandomIntensity, RandomRotate90
from ._augment3d import CenterCrop3D, RandomCrop3D, RandomFlip3D, RandomRotate3D
from ._folder import ImageFolder
from ._nuclei import Nuclei, load_nuclei, otsu_segment, otsu_threshold
from ._pairs import DataNotice
from ._shapes import Shapes
from ._shapes3d import Shapes3D
from ._volume_folder import VolumeFolder, is_volume_folder
from ._volumes import read_volume
from .dataset import Dataset, Subset, TensorDataset, random_split
from .loader import DataLoader, collate_segmentation, default_collate, get_worker_info

__all__ = [
    "CenterCrop",
    "CenterCrop3D",
    "Compose",
    "DataLoader",
    "DataNotice",
    "Dataset",
    "ImageFolder",
    "Nuclei",
    "RandomCrop",
    "RandomCrop3D",
    "RandomFlip",
    "RandomFlip3D",
    "RandomIntensity",
    "RandomRotate3D",
    "RandomRotate90",
    "Shapes",
    "Shapes3D",
    "Subset",
    "TensorDataset",
    "VolumeFolder",
    "augment",
    "collate_segmentation",
    "default_collate",
    "get_worker_info",
    "is_volume_folder",
    "load_nuclei",
    "otsu_segment",
    "otsu_threshold",
    "random_split",
    "read_volume",
]
