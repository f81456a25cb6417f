"""Volume/mask pairs from a folder: ``root/images/<stem>.<ext>`` + ``root/masks/<stem>.<ext>``.

The 3-D sibling of :class:`~sandbox.data.ImageFolder`, for ``.npy``, ``.npz`` and
multi-page TIFF volumes (see :mod:`sandbox.data._volumes`).
"""

from __future__ import annotations

from pathlib import Path

from ._pairs import PairedFolder
from ._volumes import (
    VOLUME_EXTENSIONS,
    as_image_volume,
    as_label_volume,
    read_volume,
    volume_shape,
)


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


class VolumeFolder(PairedFolder):
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

    EXTENSIONS = VOLUME_EXTENSIONS
    ITEM = "volume"

    def __init__(self, root, num_classes, ignore_index=None, class_names=None, cache=False):
        self._init_pairs(root, num_classes, ignore_index, cache)

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
        self._init_class_names(class_names)

    def _read(self, img_path, mask_path):
        image = as_image_volume(read_volume(img_path, "image"), img_path)
        mask = as_label_volume(read_volume(mask_path, "mask"), mask_path)
        if image.shape[1:] != mask.shape:  # the files changed since the dataset was made
            raise ValueError(
                f"shape mismatch: volume {img_path} is {image.shape[1:]} (D, H, W) but mask "
                f"{mask_path} is {mask.shape}"
            )
        mask = self._check_labels(mask, mask_path)
        return image, mask
