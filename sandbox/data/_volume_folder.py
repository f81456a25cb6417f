"""Volume/mask pairs from a folder: ``root/images/<stem>.<ext>`` + ``root/masks/<stem>.<ext>``.

The 3-D sibling of :class:`~sandbox.data.ImageFolder`, for ``.npy``, ``.npz`` and
multi-page TIFF volumes (see :mod:`sandbox.data._volumes`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._shapes import _check_index, _check_int
from ._volumes import (
    VOLUME_EXTENSIONS,
    as_image_volume,
    as_label_volume,
    read_volume,
    volume_shape,
)


def _list(folder):
    files = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix.lower() in VOLUME_EXTENSIONS:
            if path.stem in files:
                raise ValueError(
                    f"two files with the stem {path.stem!r} in {folder}: "
                    f"{files[path.stem].name} and {path.name}"
                )
            files[path.stem] = path
    return files


def is_volume_folder(root) -> bool:
    """True when ``root/images`` holds volumes: a ``.npy``/``.npz`` file or a multi-page TIFF.

    A folder of single-page images (PNG, JPEG, one-page TIFF) is an
    :class:`~sandbox.data.ImageFolder` instead.
    """
    images = Path(root) / "images"
    if not images.is_dir():
        return False
    for path in sorted(images.iterdir()):
        suffix = path.suffix.lower()
        if not path.is_file():
            continue
        if suffix in (".npy", ".npz"):
            return True
        if suffix in (".tif", ".tiff"):
            try:
                shape = volume_shape(path)
            except (ValueError, ImportError):
                return False
            return shape[0] > 1
    return False


class VolumeFolder:
    """Segmentation pairs of volumes read from ``root/images/`` and ``root/masks/``.

    An image and its mask share the file stem (``images/a.npz`` goes with
    ``masks/a.tif``); files with other extensions are ignored.

    Parameters
    ----------
    root : str or Path
        Folder holding ``images/`` and ``masks/``.
    num_classes : int
        Mask labels must lie in ``[0, num_classes)`` (or equal ``ignore_index``).
    ignore_index : int, optional
        A label value allowed outside ``[0, num_classes)`` (e.g. 255 for "unlabelled").
    class_names : sequence of str, optional
        Default ``("class0", "class1", ...)``.
    cache : bool, default False
        Keep decoded pairs in memory after the first read.

    Notes
    -----
    Images are ``(D, H, W)`` (one channel) or channels-first ``(C, D, H, W)`` arrays, or
    multi-page TIFFs (a page per slice); they become float32 ``(C, D, H, W)``, with
    ``uint8``/``uint16`` scaled to ``[0, 1]`` and other types kept as stored. Masks are
    ``(D, H, W)`` integer labels and become int64. An ``.npz`` holds one array, or
    names the one to use ``image`` (in ``images/``) or ``mask`` (in ``masks/``). Pairs
    are matched and their shapes compared when the dataset is created (file headers
    only); labels are checked when a sample is read. Every error names the file.
    """

    spatial_dims = 3

    def __init__(self, root, num_classes, ignore_index=None, class_names=None, cache=False):
        self.root = Path(root)
        self.num_classes = _check_int("num_classes", num_classes, 1)
        self.ignore_index = None if ignore_index is None else int(ignore_index)
        self.cache = bool(cache)
        self._cache = {}

        image_dir, mask_dir = self.root / "images", self.root / "masks"
        for d in (image_dir, mask_dir):
            if not d.is_dir():
                raise FileNotFoundError(
                    f"VolumeFolder expects {image_dir} and {mask_dir}; {d} is not a directory"
                )
        images, masks = _list(image_dir), _list(mask_dir)
        if not images and not masks:
            raise ValueError(
                f"no volume files ({', '.join(VOLUME_EXTENSIONS)}) found in {image_dir} "
                f"and {mask_dir}"
            )
        for stem, path in images.items():
            if stem not in masks:
                raise FileNotFoundError(f"volume {path} has no mask: expected {mask_dir}/{stem}.*")
        for stem, path in masks.items():
            if stem not in images:
                raise FileNotFoundError(f"mask {path} has no volume: expected {image_dir}/{stem}.*")
        self.pairs = [(images[s], masks[s]) for s in sorted(images)]

        self.sizes = []  # (D, H, W) of every pair
        channels = None
        for img_path, mask_path in self.pairs:
            img_shape = volume_shape(img_path, "image")
            mask_shape = volume_shape(mask_path, "mask")
            if len(img_shape) not in (3, 4):
                raise ValueError(
                    f"{img_path}: expected a volume (D, H, W) or (C, D, H, W), got shape "
                    f"{img_shape}"
                )
            if len(mask_shape) != 3:
                raise ValueError(
                    f"{mask_path}: expected a label volume (D, H, W), got shape {mask_shape}"
                )
            spatial = tuple(img_shape[-3:])
            if spatial != tuple(mask_shape):
                raise ValueError(
                    f"shape mismatch: volume {img_path} is {spatial} (D, H, W) but mask "
                    f"{mask_path} is {tuple(mask_shape)}"
                )
            c = img_shape[0] if len(img_shape) == 4 else 1
            if channels is None:
                channels = c
            elif c != channels:
                raise ValueError(
                    f"{img_path} has {c} channel(s) but {self.pairs[0][0]} has {channels}; "
                    "every volume needs the same number of channels"
                )
            self.sizes.append(spatial)
        self.in_channels = channels
        if class_names is None:
            class_names = tuple(f"class{i}" for i in range(self.num_classes))
        self.class_names = tuple(class_names)
        if len(self.class_names) != self.num_classes:
            raise ValueError(
                f"class_names has {len(self.class_names)} entries, num_classes is {num_classes}"
            )

    def __len__(self):
        return len(self.pairs)

    def __repr__(self):
        return f"VolumeFolder({str(self.root)!r}, num_classes={self.num_classes}, n={len(self)})"

    def __getitem__(self, index):
        index = _check_index(index, len(self))
        if index in self._cache:
            image, mask = self._cache[index]
            return image.copy(), mask.copy()
        image, mask = self._read(*self.pairs[index])
        if self.cache:
            self._cache[index] = (image, mask)
            return image.copy(), mask.copy()
        return image, mask

    def _read(self, img_path, mask_path):
        image = as_image_volume(read_volume(img_path, "image"), img_path)
        mask = as_label_volume(read_volume(mask_path, "mask"), mask_path)
        if image.shape[1:] != mask.shape:  # the files changed since the dataset was made
            raise ValueError(
                f"shape mismatch: volume {img_path} is {image.shape[1:]} (D, H, W) but mask "
                f"{mask_path} is {mask.shape}"
            )
        bad = (mask < 0) | (mask >= self.num_classes)
        if self.ignore_index is not None:
            bad &= mask != self.ignore_index
        if bad.any():
            values = np.unique(mask[bad])
            allowed = f"[0, {self.num_classes})"
            if self.ignore_index is not None:
                allowed += f" or ignore_index={self.ignore_index}"
            raise ValueError(
                f"mask {mask_path} has labels {values[:10].tolist()} outside {allowed} "
                f"(num_classes={self.num_classes})"
            )
        return image, mask
