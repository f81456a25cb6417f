"""Segmentation metrics from a confusion matrix (pure numpy).

The confusion matrix ``cm`` is ``(K, K)`` int64 with ``cm[t, p]`` = number of pixels
of true class ``t`` predicted as ``p`` (rows: target, columns: prediction). With
``TP = diag(cm)``, ``FP = cm.sum(0) - TP``, ``FN = cm.sum(1) - TP``:

- IoU (Jaccard) per class: ``TP / (TP + FP + FN)``
- Dice (F1) per class: ``2 TP / (2 TP + FP + FN)``
- pixel accuracy: ``trace(cm) / cm.sum()``

Absent classes: a class that appears neither in the target nor in the prediction has
``TP + FP + FN = 0``; its IoU and Dice are NaN (undefined, not 0 or 1) and the means
skip it (``nanmean``), as is common practice. A class present in the target but never
predicted, or predicted but absent from the target, scores 0 and counts in the mean.
If every class is absent (no pixels counted) the means and accuracy are NaN.
"""

from __future__ import annotations

import numpy as np


def _check_num_classes(num_classes):
    if isinstance(num_classes, bool) or not isinstance(num_classes, int | np.integer):
        raise TypeError(f"num_classes must be an integer >= 1, got {num_classes!r}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be an integer >= 1, got {num_classes}")
    return int(num_classes)


def _as_labels(x, name):
    x = np.asarray(x)
    if x.dtype == bool:
        return x.astype(np.int64)
    if not np.issubdtype(x.dtype, np.integer):
        raise TypeError(
            f"{name} must hold integer class labels, got dtype {x.dtype} "
            f"(for logits of shape (N, K, H, W) or (N, K, D, H, W) pass logits.argmax(1))"
        )
    return x.astype(np.int64, copy=False)


def confusion_matrix(pred, target, num_classes, ignore_index=None):
    """Count (target, prediction) label pairs.

    Parameters
    ----------
    pred : array_like of int or bool
        Predicted labels, any shape (e.g. ``(N, H, W)``, or ``(N, D, H, W)`` for
        volumes), values in ``[0, num_classes)``.
    target : array_like of int or bool
        True labels, same shape as ``pred``, values in ``[0, num_classes)`` or equal
        to ``ignore_index``.
    num_classes : int
    ignore_index : int, optional
        Pixels whose target equals this value are not counted (their prediction is not
        checked either).

    Returns
    -------
    ndarray of int64, shape (num_classes, num_classes)
        ``cm[t, p]``: pixels of true class ``t`` predicted as ``p``.
    """
    k = _check_num_classes(num_classes)
    pred = _as_labels(pred, "pred")
    target = _as_labels(target, "target")
    if pred.shape != target.shape:
        raise ValueError(f"pred and target must have the same shape, got {pred.shape} and "
                         f"{target.shape}")
    pred, target = pred.ravel(), target.ravel()
    if ignore_index is not None:
        keep = target != ignore_index
        pred, target = pred[keep], target[keep]
    for name, x in (("target", target), ("pred", pred)):
        if x.size and (x.min() < 0 or x.max() >= k):
            bad = x[(x < 0) | (x >= k)]
            hint = "" if ignore_index is None or name == "pred" else \
                f" or ignore_index={ignore_index}"
            raise ValueError(
                f"{name} has labels outside [0, {k}){hint}: e.g. {np.unique(bad)[:10].tolist()}"
            )
    # One bincount over the flattened pair index t * K + p.
    return np.bincount(target * k + pred, minlength=k * k).reshape(k, k).astype(np.int64)


def _check_cm(cm):
    cm = np.asarray(cm)
    if cm.ndim != 2 or cm.shape[0] != cm.shape[1]:
        raise ValueError(f"cm must be a square (K, K) confusion matrix, got shape {cm.shape}")
    return cm.astype(np.float64)


def iou_per_class(cm):
    """Per-class intersection over union; NaN for a class absent from target and prediction."""
    cm = _check_cm(cm)
    tp = np.diag(cm)
    denom = cm.sum(0) + cm.sum(1) - tp
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, tp / denom, np.nan)


def dice_per_class(cm):
    """Per-class Dice (F1) score; NaN for a class absent from target and prediction."""
    cm = _check_cm(cm)
    tp = np.diag(cm)
    denom = cm.sum(0) + cm.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, 2.0 * tp / denom, np.nan)


def _nanmean(x):
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x)]
    return float(x.mean()) if x.size else float("nan")


def mean_iou(cm):
    """Mean IoU over the classes present in target or prediction (NaNs skipped)."""
    return _nanmean(iou_per_class(cm))


def mean_dice(cm):
    """Mean Dice over the classes present in target or prediction (NaNs skipped)."""
    return _nanmean(dice_per_class(cm))


def pixel_accuracy(cm):
    """Fraction of counted pixels predicted correctly (NaN when nothing was counted)."""
    cm = _check_cm(cm)
    total = cm.sum()
    return float(np.trace(cm) / total) if total > 0 else float("nan")


class ConfusionMatrix:
    """Accumulate a confusion matrix over batches and read metrics from it.

    Parameters
    ----------
    num_classes : int
    ignore_index : int, optional
        Target value whose pixels are skipped.
    class_names : sequence of str, optional
        Used as keys by :meth:`compute`; default ``"0"``, ``"1"``, ...

    Examples
    --------
    >>> cm = ConfusionMatrix(3)
    >>> cm.update(np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2]))
    >>> round(cm.mean_iou, 4)
    0.6667
    """

    def __init__(self, num_classes, ignore_index=None, class_names=None):
        self.num_classes = _check_num_classes(num_classes)
        self.ignore_index = ignore_index
        if class_names is None:
            class_names = [str(i) for i in range(self.num_classes)]
        self.class_names = tuple(class_names)
        if len(self.class_names) != self.num_classes:
            raise ValueError(f"class_names has {len(self.class_names)} entries, "
                             f"num_classes is {self.num_classes}")
        self.reset()

    def reset(self):
        """Zero the counts."""
        self.matrix = np.zeros((self.num_classes, self.num_classes), dtype=np.int64)

    def update(self, pred, target):
        """Add the pixels of one batch (``pred`` and ``target`` labels, same shape)."""
        self.matrix += confusion_matrix(pred, target, self.num_classes, self.ignore_index)

    @property
    def total(self):
        """Number of pixels counted."""
        return int(self.matrix.sum())

    @property
    def iou(self):
        """Per-class IoU, shape (K,); NaN for classes absent from target and prediction."""
        return iou_per_class(self.matrix)

    @property
    def dice(self):
        """Per-class Dice, shape (K,); NaN for classes absent from target and prediction."""
        return dice_per_class(self.matrix)

    @property
    def mean_iou(self):
        return mean_iou(self.matrix)

    @property
    def mean_dice(self):
        return mean_dice(self.matrix)

    @property
    def pixel_accuracy(self):
        return pixel_accuracy(self.matrix)

    def compute(self):
        """Metrics as a JSON-friendly dict (floats; NaN becomes ``None``).

        Keys: ``mean_iou``, ``mean_dice``, ``pixel_accuracy``, ``iou/<name>``,
        ``dice/<name>``.
        """
        def clean(v):
            v = float(v)
            return None if np.isnan(v) else v

        out = {
            "mean_iou": clean(self.mean_iou),
            "mean_dice": clean(self.mean_dice),
            "pixel_accuracy": clean(self.pixel_accuracy),
        }
        for name, i, d in zip(self.class_names, self.iou, self.dice, strict=True):
            out[f"iou/{name}"] = clean(i)
            out[f"dice/{name}"] = clean(d)
        return out

    def __repr__(self):
        return (f"ConfusionMatrix(num_classes={self.num_classes}, total={self.total}, "
                f"mean_iou={self.mean_iou:.4f})")
