"""What the folder datasets share: finding ``images/``-``masks/`` pairs by file stem,
checking labels, and serving (optionally cached) samples.

:class:`~sandbox.data.ImageFolder` and :class:`~sandbox.data.VolumeFolder` differ only
in how a file is read and what shape it has; this base class holds the rest.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ._cache import CachedSamples, SampleCache
from ._checks import _check_index, _check_int


def list_files(folder, extensions) -> dict:
    """``{stem: path}`` of the files of ``folder`` with one of ``extensions``; two files
    with one stem are an error."""
    files = {}
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.suffix.lower() in extensions:
            if path.stem in files:
                raise ValueError(
                    f"two files with the stem {path.stem!r} in {folder}: "
                    f"{files[path.stem].name} and {path.name}"
                )
            files[path.stem] = path
    return files


# Image and volume file types of both folder datasets (files of the other kind are named).
_KNOWN = (".png", ".tif", ".tiff", ".jpg", ".jpeg", ".npy", ".npz")


class DataNotice(UserWarning):
    """A one-line notice about the data (e.g. 0/255 masks read as 0/1); the CLI prints
    it as ``notice: ...``."""


class PairedFolder(CachedSamples):
    """Base of the folder datasets: ``root/images/<stem>.*`` with ``root/masks/<stem>.*``.

    Subclasses set ``EXTENSIONS`` and ``ITEM`` (the word for an image file in
    messages), and define ``_read(image_path, mask_path) -> (image, mask)``.
    """

    EXTENSIONS: tuple = ()
    ITEM = "image"

    def _init_pairs(self, root, num_classes, ignore_index, cache) -> None:
        """Set ``root``, ``num_classes``, ``ignore_index``, the cache and ``pairs``."""
        self.root = Path(root)
        self.num_classes = _check_int("num_classes", num_classes, 1)
        self.ignore_index = None if ignore_index is None else int(ignore_index)
        self._cache = SampleCache(cache)
        self._noticed_255 = False
        image_dir, mask_dir = self.root / "images", self.root / "masks"
        for d in (image_dir, mask_dir):
            if not d.is_dir():
                raise FileNotFoundError(
                    f"{type(self).__name__} expects {image_dir} and {mask_dir}; {d} is not a "
                    f"directory"
                )
        images, masks = list_files(image_dir, self.EXTENSIONS), list_files(mask_dir,
                                                                           self.EXTENSIONS)
        if not images and not masks:
            raise ValueError(
                f"no {self.ITEM} files ({', '.join(self.EXTENSIONS)}) found in {image_dir} "
                f"and {mask_dir}"
            )
        for stem, path in images.items():
            if stem not in masks:
                raise FileNotFoundError(
                    f"{self.ITEM} {path} has no mask: expected {mask_dir}/{stem}.*")
        for stem, path in masks.items():
            if stem not in images:
                raise FileNotFoundError(
                    f"mask {path} has no {self.ITEM}: expected {image_dir}/{stem}.*")
        self.pairs = [(images[s], masks[s]) for s in sorted(images)]
        self._notice_ignored(image_dir, mask_dir)

    def _notice_ignored(self, *folders) -> None:
        """One notice naming the image or volume files of another kind that are skipped
        (e.g. a PNG pair in a folder of volumes), so none is dropped without a word."""
        skipped = [path for folder in folders for path in sorted(folder.iterdir())
                   if path.is_file() and path.suffix.lower() in _KNOWN
                   and path.suffix.lower() not in self.EXTENSIONS]
        if skipped:
            names = ", ".join(str(p) for p in skipped[:4]) + (" ..." if len(skipped) > 4
                                                              else "")
            warnings.warn(
                f"{len(skipped)} file(s) skipped: {names}; {type(self).__name__} reads only "
                f"{', '.join(self.EXTENSIONS)}", DataNotice, stacklevel=3,
            )

    def _init_class_names(self, class_names) -> None:
        if class_names is None:
            class_names = tuple(f"class{i}" for i in range(self.num_classes))
        self.class_names = tuple(class_names)
        if len(self.class_names) != self.num_classes:
            raise ValueError(
                f"class_names has {len(self.class_names)} entries, num_classes is "
                f"{self.num_classes}"
            )

    def _check_labels(self, mask, mask_path):
        """``mask`` with labels checked: a ValueError names the file when one lies outside
        the classes.  A two-class mask saved as 0/255 (the usual way binary masks are
        stored) becomes 0/1, with one notice per dataset."""
        if (self.num_classes == 2 and self.ignore_index != 255 and mask.size
                and mask.max() == 255 and np.isin(mask, (0, 255)).all()):
            mask = (mask == 255).astype(mask.dtype)
            if not self._noticed_255:
                self._noticed_255 = True
                warnings.warn(
                    f"masks saved as 0/255 (first: {mask_path}) are read as classes 0/1",
                    DataNotice, stacklevel=2,
                )
        bad = (mask < 0) | (mask >= self.num_classes)
        if self.ignore_index is not None:
            bad &= mask != self.ignore_index
        if bad.any():
            values = np.unique(mask[bad])
            allowed = f"[0, {self.num_classes})"
            if self.ignore_index is not None:
                allowed += f" or ignore_index={self.ignore_index}"
            hint = ""
            if self.num_classes == 2 and 255 in values:
                hint = ("; a binary mask must hold 0 and 1, or only 0 and 255 (read as 0/1); "
                        "or pass ignore_index=255 if 255 marks unlabelled pixels")
            raise ValueError(
                f"mask {mask_path} has labels {values[:10].tolist()} outside {allowed} "
                f"(num_classes={self.num_classes}){hint}"
            )
        return mask

    def __len__(self):
        return len(self.pairs)

    def __repr__(self):
        return (f"{type(self).__name__}({str(self.root)!r}, num_classes={self.num_classes}, "
                f"n={len(self)})")

    def __getitem__(self, index):
        index = _check_index(index, len(self))
        return self._cache.get(index, lambda: self._read(*self.pairs[index]))

    def _read(self, image_path, mask_path):
        raise NotImplementedError
