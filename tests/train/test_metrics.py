"""Confusion matrix and the metrics derived from it, against hand-worked examples, on
label images and on label volumes (and batches of them)."""

import math

import numpy as np
import pytest

from sandbox.train.metrics import (
    ConfusionMatrix,
    confusion_matrix,
    dice_per_class,
    iou_per_class,
    mean_dice,
    mean_iou,
    pixel_accuracy,
)

# target / prediction of 8 pixels, 3 classes:
#   target 0 0 0 1 1 1 2 2
#   pred   0 0 1 1 1 2 2 0
TARGET = np.array([[0, 0, 0, 1], [1, 1, 2, 2]])
PRED = np.array([[0, 0, 1, 1], [1, 2, 2, 0]])
# rows = target, columns = prediction
CM = np.array([[2, 1, 0],
               [0, 2, 1],
               [1, 0, 1]])


def test_confusion_matrix_hand_example():
    cm = confusion_matrix(PRED, TARGET, 3)
    assert cm.dtype == np.int64
    np.testing.assert_array_equal(cm, CM)


def test_metrics_hand_example():
    # class 0: TP 2, FP 1, FN 1 -> IoU 2/4, Dice 4/6
    # class 1: TP 2, FP 1, FN 1 -> IoU 2/4, Dice 4/6
    # class 2: TP 1, FP 1, FN 1 -> IoU 1/3, Dice 2/4
    np.testing.assert_allclose(iou_per_class(CM), [0.5, 0.5, 1 / 3])
    np.testing.assert_allclose(dice_per_class(CM), [2 / 3, 2 / 3, 0.5])
    assert mean_iou(CM) == pytest.approx((0.5 + 0.5 + 1 / 3) / 3)
    assert mean_dice(CM) == pytest.approx((2 / 3 + 2 / 3 + 0.5) / 3)
    assert pixel_accuracy(CM) == pytest.approx(5 / 8)


def test_class_absent_everywhere_is_nan_and_skipped():
    target = np.array([0, 0, 1, 1])
    pred = np.array([0, 1, 1, 1])
    cm = confusion_matrix(pred, target, 4)  # classes 2 and 3 never occur
    np.testing.assert_array_equal(cm[2:], 0)
    np.testing.assert_array_equal(cm[:, 2:], 0)
    iou = iou_per_class(cm)
    np.testing.assert_allclose(iou[:2], [1 / 2, 2 / 3])
    assert np.isnan(iou[2]) and np.isnan(iou[3])
    assert mean_iou(cm) == pytest.approx((1 / 2 + 2 / 3) / 2)
    dice = dice_per_class(cm)
    np.testing.assert_allclose(dice[:2], [2 / 3, 4 / 5])
    assert mean_dice(cm) == pytest.approx((2 / 3 + 4 / 5) / 2)


def test_class_missed_or_hallucinated_scores_zero():
    # Class 2 is in the target but never predicted; class 1 predicted but not present.
    target = np.array([0, 2, 2])
    pred = np.array([0, 1, 1])
    iou = iou_per_class(confusion_matrix(pred, target, 3))
    np.testing.assert_allclose(iou, [1.0, 0.0, 0.0])


def test_ignore_index():
    target = np.array([0, 255, 1, 255])
    pred = np.array([0, 1, 1, 7])  # predictions at ignored pixels are not checked
    cm = confusion_matrix(pred, target, 2, ignore_index=255)
    np.testing.assert_array_equal(cm, [[1, 0], [0, 1]])


def test_accumulator_matches_one_shot():
    rng = np.random.default_rng(0)
    target = rng.integers(0, 5, (6, 16, 16))
    pred = np.where(rng.random(target.shape) < 0.7, target, rng.integers(0, 5, target.shape))
    acc = ConfusionMatrix(5, class_names="abcde")
    for t, p in zip(target, pred, strict=True):
        acc.update(p, t)
    full = confusion_matrix(pred, target, 5)
    np.testing.assert_array_equal(acc.matrix, full)
    # Against a plain double loop.
    ref = np.zeros((5, 5), np.int64)
    for t, p in zip(target.ravel(), pred.ravel(), strict=True):
        ref[t, p] += 1
    np.testing.assert_array_equal(full, ref)
    assert acc.total == target.size
    assert acc.pixel_accuracy == pytest.approx((pred == target).mean())
    assert acc.mean_iou == pytest.approx(mean_iou(full))
    out = acc.compute()
    assert out["mean_iou"] == pytest.approx(acc.mean_iou)
    assert out["iou/c"] == pytest.approx(acc.iou[2]) and out["dice/e"] == pytest.approx(acc.dice[4])
    acc.reset()
    assert acc.total == 0 and math.isnan(acc.mean_iou) and math.isnan(acc.pixel_accuracy)
    assert acc.compute()["mean_iou"] is None


def test_bool_inputs_and_binary_case():
    target = np.array([[True, False], [True, True]])
    pred = np.array([[True, True], [False, True]])
    cm = confusion_matrix(pred, target, 2)
    np.testing.assert_array_equal(cm, [[0, 1], [1, 2]])
    assert dice_per_class(cm)[1] == pytest.approx(2 * 2 / (2 * 2 + 1 + 1))


def test_validation_errors():
    with pytest.raises(ValueError, match="same shape"):
        confusion_matrix(np.zeros(3, int), np.zeros(4, int), 2)
    with pytest.raises(TypeError, match="pred must hold integer"):
        confusion_matrix(np.zeros(3), np.zeros(3, int), 2)
    with pytest.raises(ValueError, match=r"target has labels outside \[0, 2\): e.g. \[5\]"):
        confusion_matrix(np.zeros(3, int), np.array([0, 5, 1]), 2)
    with pytest.raises(ValueError, match=r"pred has labels outside \[0, 2\)"):
        confusion_matrix(np.array([0, -1, 1]), np.zeros(3, int), 2)
    with pytest.raises(ValueError, match="num_classes"):
        confusion_matrix(np.zeros(3, int), np.zeros(3, int), 0)
    with pytest.raises(ValueError, match="square"):
        iou_per_class(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="class_names"):
        ConfusionMatrix(3, class_names=["a"])


# 3-D --------------------------------------------------------------------------
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
