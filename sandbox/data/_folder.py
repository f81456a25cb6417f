"""Image/mask pairs from a folder: ``root/images/<stem>.<ext>`` + ``root/masks/<stem>.<ext>``.

Reading PNG/TIFF/JPEG needs Pillow (``pip install "cpu-train-sandbox[images]"``); it is
imported only when an :class:`ImageFolder` is created.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._checks import _check_int
from ._pairs import PairedFolder

EXTENSIONS = (".png", ".tif", ".tiff", ".jpg", ".jpeg")
_GRAY_MODES = ("1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "I;16N", "F")


def _import_pil():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(
            "ImageFolder reads PNG/TIFF/JPEG files with Pillow, which is not installed: "
            'pip install "cpu-train-sandbox[images]"  (or: pip install Pillow)'
        ) from None
    return Image


def _unreadable(path, exc) -> ValueError:
    return ValueError(
        f"cannot read {path}: not an image file Pillow can decode, or a damaged one "
        f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__}); replace or "
        "remove it"
    )


def open_image(pil, path):
    """``PIL.Image.open(path)``, with undecodable files as a ``ValueError`` naming the file."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder, not an image file")
    try:
        return pil.open(path)
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as exc:  # UnidentifiedImageError, SyntaxError, DecompressionBombError...
        raise _unreadable(path, exc) from None


def _load(im, path) -> None:
    """Decode the pixels now (Pillow is lazy), so a damaged file fails here with its name."""
    try:
        im.load()
    except Exception as exc:  # truncated data, bad checksums, decoder errors
        raise _unreadable(path, exc) from None


def image_array(pil, im, channels: int, size=None) -> np.ndarray:
    """A decoded Pillow image as float32 ``(C, H, W)``, scaled as training scales it.

    8-bit (and RGB) images are divided by 255, 16-bit ones by 65535, 32-bit integer
    images (mode ``I``) by 65535 when they hold values above 255 (16-bit data in a
    32-bit container, the usual case) else by 255; float images (mode ``F``) are kept
    as stored.  ``channels`` 1 converts colour to grey, 3 grey to RGB; ``size``
    ``(H, W)`` resizes bilinearly.  :func:`read_image` and :class:`ImageFolder` both
    use this, so prediction sees what training saw.
    """
    if channels == 3:
        if im.mode != "RGB":
            im = im.convert("RGB")
    elif im.mode not in ("L", "I", "I;16", "F"):
        im = im.convert("L")
    # Scale to [0, 1] by the full range of the stored integer type.
    if im.mode in ("L", "RGB"):
        scale = 255.0
    elif im.mode == "I;16":
        scale = 65535.0
    elif im.mode == "I":  # 32-bit container; 16-bit data is the usual content
        scale = 65535.0 if np.asarray(im).max(initial=0) > 255 else 255.0
    else:  # "F": floating point, kept as is
        scale = 1.0
    if size is not None:
        if im.mode not in ("L", "RGB", "F"):
            im = im.convert("F")  # 16/32-bit integers resize as float
        im = im.resize(tuple(size)[::-1], resample=pil.Resampling.BILINEAR)
    a = np.asarray(im).astype(np.float32) / np.float32(scale)
    a = a[None] if a.ndim == 2 else np.moveaxis(a, -1, 0)
    return np.ascontiguousarray(a)


def read_image(path, channels: int) -> np.ndarray:
    """Read an image file (PNG/TIFF/JPEG, any bit depth) as training reads it.

    Returns float32 ``(C, H, W)`` scaled by :func:`image_array`'s rule; a file that
    cannot be decoded raises ``ValueError`` naming it.
    """
    pil = _import_pil()
    with open_image(pil, path) as im:
        _load(im, path)
        return image_array(pil, im, channels)


class ImageFolder(PairedFolder):
    """Segmentation pairs read from ``root/images/`` and ``root/masks/``.

    An image and its mask share the file stem (``images/a.jpg`` goes with
    ``masks/a.png``); files with other extensions are ignored.

    Parameters
    ----------
    root : str or Path
        Folder holding ``images/`` and ``masks/``.
    num_classes : int
        Mask labels must lie in ``[0, num_classes)`` (or equal ``ignore_index``).
    image_size : int or (int, int), optional
        Resize every pair to ``(height, width)``: bilinear for images, nearest for
        masks. Default: keep each file's size (a batch then needs equal sizes).
    channels : {None, 1, 3}, default None
        1 converts to grayscale, 3 to RGB; ``None`` takes 1 if the first image is
        grayscale, else 3, and converts the rest to match.
    ignore_index : int, optional
        A label value allowed outside ``[0, num_classes)`` (e.g. 255 for "unlabelled"),
        to be skipped by the loss and :func:`sandbox.metrics.confusion_matrix`.
    class_names : sequence of str, optional
        Default ``("class0", "class1", ...)``.
    cache : bool, default False
        Keep decoded pairs in memory after the first read.

    Notes
    -----
    Images become float32 ``(C, H, W)`` scaled to ``[0, 1]`` (integer images divided
    by their dtype's maximum: 255 for 8-bit, 65535 for 16-bit; float images as they
    are); masks must be label images (grayscale or palette ``P``; an RGB mask is
    accepted only when its three channels are equal) and become int64 ``(H, W)``.
    Pairs are matched and their sizes compared when the dataset is created (file
    headers only); labels are checked when a sample is read. Every error names the
    file.
    """

    EXTENSIONS = EXTENSIONS

    def __init__(self, root, num_classes, image_size=None, channels=None, ignore_index=None,
                 class_names=None, cache=False):
        self._pil = _import_pil()
        self.root = Path(root)
        self.num_classes = _check_int("num_classes", num_classes, 1)
        if image_size is not None:
            if isinstance(image_size, int | np.integer) and not isinstance(image_size, bool):
                image_size = (int(image_size), int(image_size))
            image_size = tuple(_check_int("image_size", int(s), 1) for s in image_size)
            if len(image_size) != 2:
                raise ValueError(f"image_size must be an int or (height, width), got {image_size}")
        self.image_size = image_size
        if channels not in (None, 1, 3):
            raise ValueError(f"channels must be None, 1 or 3, got {channels!r}")
        self._init_pairs(root, num_classes, ignore_index, cache)

        self.sizes = []  # (H, W) of every pair, as stored (before image_size)
        for img_path, mask_path in self.pairs:
            with self._open(img_path) as im, self._open(mask_path) as mk:
                if im.size != mk.size:
                    raise ValueError(
                        f"size mismatch: image {img_path} is {im.size[0]}x{im.size[1]} (WxH) "
                        f"but mask {mask_path} is {mk.size[0]}x{mk.size[1]}"
                    )
                if channels is None:
                    channels = 1 if im.mode in _GRAY_MODES else 3
                self.sizes.append(self.image_size or (im.size[1], im.size[0]))
        self.in_channels = channels
        self._init_class_names(class_names)

    def _open(self, path):
        """Open an image file; an unreadable one raises ``ValueError`` naming it."""
        return open_image(self._pil, path)

    def _read(self, img_path, mask_path):
        with self._open(img_path) as im:
            _load(im, img_path)
            image = self._image_array(im, img_path)
        with self._open(mask_path) as mk:
            _load(mk, mask_path)
            mask = self._mask_array(mk, mask_path)
        mask = self._check_labels(mask, mask_path)
        return image, mask

    def _image_array(self, im, path):
        return image_array(self._pil, im, self.in_channels, self.image_size)

    def _mask_array(self, mk, path):
        if self.image_size is not None:
            mk = mk.resize(self.image_size[::-1], resample=self._pil.Resampling.NEAREST)
        m = np.asarray(mk)
        if m.ndim == 3:
            if m.shape[2] >= 3 and np.array_equal(m[..., 0], m[..., 1]) and np.array_equal(
                m[..., 0], m[..., 2]
            ):
                m = m[..., 0]
            else:
                raise ValueError(
                    f"mask {path} is a colour image (mode {mk.mode}); masks must be label "
                    "images (grayscale or palette) holding one class id per pixel"
                )
        if not (np.issubdtype(m.dtype, np.integer) or m.dtype == bool):
            if not np.all(m == np.round(m)):
                raise ValueError(f"mask {path} has non-integer values (mode {mk.mode})")
        return m.astype(np.int64)
