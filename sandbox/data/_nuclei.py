"""A real annotated microscopy image: nuclei from the 2018 Data Science Bowl.

The data file ``sandbox/data/shipped/nuclei_dsb2018.npz`` ships with the package (see
``nuclei_dsb2018.md`` beside it for provenance, citation and licence). It holds one
512x512 uint8 fluorescence image and its instance labels. The split is by rows:
training crops come from the top 384 rows, validation is the bottom 128 rows.
"""

from __future__ import annotations

import importlib.resources

import numpy as np

from ._checks import _check_index, _check_int

DATA_FILE = "nuclei_dsb2018.npz"
TRAIN_ROWS = 384  # rows [0, 384) train, rows [384, 512) validation
IMAGE_SIZE = 512


def load_nuclei():
    """Load the raw nuclei image and its instance labels.

    Returns
    -------
    image : ndarray of uint8, shape (512, 512)
        Fluorescence image (values 0-235).
    instances : ndarray of uint8, shape (512, 512)
        0 for background, 1..125 one id per annotated nucleus. Use
        ``instances > 0`` as the binary foreground mask.
    """
    ref = importlib.resources.files("sandbox").joinpath("data", "shipped", DATA_FILE)
    with importlib.resources.as_file(ref) as path, np.load(path) as data:
        return data["image"].copy(), data["instances"].copy()


def otsu_threshold(image, bins=256):
    """Otsu's threshold: the level that maximises the between-class variance.

    For a histogram with probabilities ``p_i`` at levels ``x_i``, splitting after bin
    ``k`` gives class weights ``w0 = sum_{i<=k} p_i``, ``w1 = 1 - w0`` and means
    ``m0``, ``m1``; Otsu picks the ``k`` maximising ``w0 * w1 * (m0 - m1)**2``
    (equivalently ``(m_T w0 - m_k)**2 / (w0 w1)`` with cumulative mean ``m_k``).

    Parameters
    ----------
    image : array_like
        Any shape, integer or floating point; NaNs are not allowed.
    bins : int, default 256
        Number of histogram bins for floating-point input. Integer input with a
        value range of at most 256 levels is histogrammed exactly, one bin per level.

    Returns
    -------
    float
        Threshold ``t``: foreground is ``image > t``. For integer images ``t`` is
        an integer level; for float images it is a bin centre.
    """
    x = np.asarray(image)
    if x.size == 0:
        raise ValueError("image must not be empty")
    numeric = np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)
    if x.dtype == bool or not numeric:
        raise TypeError(f"image must be an integer or floating-point array, got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.floating) and not np.all(np.isfinite(x)):
        raise ValueError("image must not contain NaN or infinite values")
    lo, hi = x.min(), x.max()
    if lo == hi:
        return float(lo)
    if np.issubdtype(x.dtype, np.integer) and int(hi) - int(lo) < 256:
        counts = np.bincount((x.astype(np.int64) - int(lo)).ravel())
        levels = np.arange(counts.size, dtype=np.float64) + float(lo)
    else:
        bins = _check_int("bins", bins, 2)
        counts, edges = np.histogram(x, bins=bins, range=(float(lo), float(hi)))
        levels = 0.5 * (edges[:-1] + edges[1:])
    p = counts / counts.sum()
    w0 = np.cumsum(p)  # weight of the class "<= level k"
    mk = np.cumsum(p * levels)  # first moment up to k
    mt = mk[-1]
    w1 = 1.0 - w0
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mt * w0 - mk) ** 2 / (w0 * w1)
    between[~np.isfinite(between)] = -1.0  # splits with an empty side
    between[-1] = -1.0
    return float(levels[int(np.argmax(between))])


def otsu_segment(image):
    """Binary segmentation by Otsu's threshold: ``(image > otsu_threshold(image))`` as int64."""
    image = np.asarray(image)
    return (image > otsu_threshold(image)).astype(np.int64)


class Nuclei:
    """Binary nucleus segmentation on the shipped DSB2018 fluorescence image.

    Parameters
    ----------
    split : {"train", "val"}
        ``"train"``: random ``crop_size`` crops lying entirely in rows ``[0, 384)``.
        ``"val"``: rows ``[384, 512)``, a fixed set — four 128x128 tiles
        (``val_mode="tiles"``) or the whole 128x512 strip (``val_mode="strip"``).
    crop_size : int, default 128
        Side of the square training crops (16 to 384). Ignored for ``"val"``.
    samples_per_epoch : int, default 64
        Length of the training split (crops drawn per epoch).
    seed : int, default 0
        Crop ``i`` of epoch ``e`` is placed by ``np.random.default_rng([seed, e, i])``.
        The epoch is set by :meth:`set_epoch`, which :class:`DataLoader` calls each
        epoch, so crops differ between epochs yet are reproducible.
    val_mode : {"tiles", "strip"}, default "tiles"

    Notes
    -----
    Normalisation: the uint8 image is divided by 255, then standardised with the mean
    and standard deviation of the *training rows* (no validation statistics leak in),
    so training crops have roughly zero mean and unit variance. The same constants are
    applied to both splits and exposed as ``mean`` and ``std`` (in /255 units); apply
    them to new images with :meth:`normalize`. Mask: ``instances > 0`` as int64
    (0 background, 1 nucleus).
    """

    in_channels = 1
    num_classes = 2
    class_names = ("background", "nucleus")

    def __init__(self, split="train", crop_size=128, samples_per_epoch=64, seed=0,
                 val_mode="tiles"):
        if split not in ("train", "val"):
            raise ValueError(f"split must be 'train' or 'val', got {split!r}")
        if val_mode not in ("tiles", "strip"):
            raise ValueError(f"val_mode must be 'tiles' or 'strip', got {val_mode!r}")
        self.split = split
        self.val_mode = val_mode
        self.crop_size = _check_int("crop_size", crop_size, 16)
        if self.crop_size > TRAIN_ROWS:
            raise ValueError(f"crop_size must be between 16 and {TRAIN_ROWS}, got {crop_size}")
        self.samples_per_epoch = _check_int("samples_per_epoch", samples_per_epoch, 1)
        self.seed = _check_int("seed", seed, 0)
        self.epoch = 0
        raw, instances = load_nuclei()
        scaled = raw.astype(np.float64) / 255.0
        train = scaled[:TRAIN_ROWS]
        self.mean = float(train.mean())
        self.std = float(train.std())
        self.image = ((scaled - self.mean) / self.std).astype(np.float32)
        self.mask = (instances > 0).astype(np.int64)
        if split == "val":
            tile = IMAGE_SIZE - TRAIN_ROWS  # 128
            if val_mode == "tiles":
                self._boxes = [(TRAIN_ROWS, c, tile, tile) for c in range(0, IMAGE_SIZE, tile)]
            else:
                self._boxes = [(TRAIN_ROWS, 0, IMAGE_SIZE - TRAIN_ROWS, IMAGE_SIZE)]

    def normalize(self, image_uint8):
        """Apply this dataset's normalisation to a uint8 image, returning float32."""
        x = np.asarray(image_uint8, dtype=np.float64) / 255.0
        return ((x - self.mean) / self.std).astype(np.float32)

    def set_epoch(self, epoch):
        """Select the epoch whose random training crops ``__getitem__`` returns."""
        self.epoch = _check_int("epoch", epoch, 0)

    def __len__(self):
        return self.samples_per_epoch if self.split == "train" else len(self._boxes)

    def __repr__(self):
        return (f"Nuclei(split={self.split!r}, crop_size={self.crop_size}, "
                f"samples_per_epoch={self.samples_per_epoch}, seed={self.seed})")

    def box(self, index):
        """``(row, col, height, width)`` of sample ``index`` in the 512x512 image."""
        index = _check_index(index, len(self))
        if self.split == "val":
            return self._boxes[index]
        rng = np.random.default_rng([self.seed, self.epoch, index])
        s = self.crop_size
        row = int(rng.integers(0, TRAIN_ROWS - s + 1))
        col = int(rng.integers(0, IMAGE_SIZE - s + 1))
        return row, col, s, s

    def __getitem__(self, index):
        r, c, h, w = self.box(index)
        image = self.image[None, r:r + h, c:c + w].copy()
        mask = self.mask[r:r + h, c:c + w].copy()
        return image, mask
