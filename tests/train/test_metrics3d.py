"""Metrics per class on 3-D masks (label volumes and batches of them)."""

import numpy as np
import pytest

from sandbox.train.metrics import ConfusionMatrix, confusion_matrix, dice_per_class, iou_per_class


def direct_iou_dice(pred, target, k):
    """IoU and Dice of class k from voxel sets, the textbook way."""
    p, t = pred == k, target == k
    inter, union = np.sum(p & t), np.sum(p | t)
    if union == 0:
        return np.nan, np.nan
    return inter / union, 2 * inter / (p.sum() + t.sum())


def test_per_class_iou_and_dice_of_volumes():
    rng = np.random.default_rng(0)
    target = rng.integers(0, 4, (2, 6, 7, 8))
    pred = np.where(rng.random(target.shape) < 0.7, target, rng.integers(0, 4, target.shape))
    cm = confusion_matrix(pred, target, 4)
    assert cm.sum() == target.size
    for k in range(4):
        iou, dice = direct_iou_dice(pred, target, k)
        assert iou_per_class(cm)[k] == pytest.approx(iou)
        assert dice_per_class(cm)[k] == pytest.approx(dice)


def test_known_volume_scores():
    # Ball-like cube of class 1 predicted one voxel too thick on one face.
    target = np.zeros((8, 8, 8), np.int64)
    target[2:6, 2:6, 2:6] = 1
    pred = target.copy()
    pred[6, 2:6, 2:6] = 1
    m = ConfusionMatrix(3, class_names=("background", "cube", "absent"))
    m.update(pred[None], target[None])
    out = m.compute()
    assert out["iou/cube"] == pytest.approx(64 / 80)
    assert out["dice/cube"] == pytest.approx(2 * 64 / (64 + 80))
    assert out["iou/background"] == pytest.approx((512 - 80) / (512 - 64))
    assert out["iou/absent"] is None  # absent from target and prediction: skipped
    assert out["mean_iou"] == pytest.approx((64 / 80 + 432 / 448) / 2)
    assert out["pixel_accuracy"] == pytest.approx(1 - 16 / 512)


def test_batches_and_slices_add_up():
    rng = np.random.default_rng(1)
    target = rng.integers(0, 3, (4, 5, 6, 7))
    pred = rng.integers(0, 3, (4, 5, 6, 7))
    whole = ConfusionMatrix(3)
    whole.update(pred, target)
    by_volume, by_slice = ConfusionMatrix(3), ConfusionMatrix(3)
    for p, t in zip(pred, target, strict=True):
        by_volume.update(p, t)
        for ps, ts in zip(p, t, strict=True):
            by_slice.update(ps, ts)
    np.testing.assert_array_equal(whole.matrix, by_volume.matrix)
    np.testing.assert_array_equal(whole.matrix, by_slice.matrix)


def test_ignore_index_and_errors_in_3d():
    target = np.zeros((3, 4, 5), np.int64)
    target[0] = 255
    target[1:, :2] = 1
    pred = np.ones_like(target)
    cm = confusion_matrix(pred, target, 2, ignore_index=255)
    assert cm.sum() == 2 * 4 * 5  # the ignored slice is not counted
    assert cm[1, 1] == 2 * 2 * 5 and cm[0, 1] == 2 * 2 * 5
    with pytest.raises(ValueError, match="same shape"):
        confusion_matrix(pred, target[:, :, :4], 2)
    with pytest.raises(ValueError, match="target has labels outside"):
        confusion_matrix(pred, target, 2)
    with pytest.raises(TypeError, match="argmax"):
        confusion_matrix(np.zeros((1, 2, 3, 4, 5)), target, 2)
