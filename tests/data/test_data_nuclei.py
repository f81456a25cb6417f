"""Nuclei: the shipped DSB2018 image, its split, and the Otsu baseline."""

import importlib.resources

import numpy as np
import pytest

from sandbox.data import DataLoader as _DataLoader
from sandbox.data import (
    Nuclei,
    collate_segmentation,
    load_nuclei,
    otsu_segment,
    otsu_threshold,
)


def SegmentationLoader(*args, **kwargs):  # noqa: N802 - the trainer's loader: numpy batches
    return _DataLoader(*args, collate_fn=collate_segmentation, **kwargs)


def test_shipped_files_and_raw_arrays():
    root = importlib.resources.files("sandbox").joinpath("data", "shipped")
    for name in ("nuclei_dsb2018.npz", "nuclei_dsb2018.md",
                 "nuclei_dsb2018.LICENSE-stardist.txt"):
        assert root.joinpath(name).is_file(), name
    image, instances = load_nuclei()
    assert image.shape == instances.shape == (512, 512)
    assert image.dtype == instances.dtype == np.uint8
    assert instances.max() == 125
    assert 0.15 < (instances > 0).mean() < 0.25


def test_val_split_is_bottom_rows():
    image, instances = load_nuclei()
    tiles = Nuclei("val")
    assert len(tiles) == 4 and tiles.num_classes == 2 and tiles.in_channels == 1
    masks = np.concatenate([tiles[i][1] for i in range(4)], axis=1)
    np.testing.assert_array_equal(masks, (instances[384:] > 0).astype(np.int64))
    strip = Nuclei("val", val_mode="strip")
    assert len(strip) == 1
    x, y = strip[0]
    assert x.shape == (1, 128, 512) and x.dtype == np.float32 and y.dtype == np.int64
    np.testing.assert_allclose(x[0], strip.normalize(image[384:]))
    images = np.concatenate([tiles[i][0] for i in range(4)], axis=2)
    np.testing.assert_array_equal(images, x)


def test_train_crops_come_from_top_rows_only():
    ds = Nuclei("train", crop_size=96, samples_per_epoch=50, seed=0)
    assert len(ds) == 50
    rows = []
    for epoch in range(3):
        ds.set_epoch(epoch)
        for i in range(len(ds)):
            r, c, h, w = ds.box(i)
            assert (h, w) == (96, 96) and 0 <= r and r + h <= 384 and 0 <= c and c + w <= 512
            rows.append(r)
    assert max(rows) + 96 > 330  # the crops do reach the bottom of the training region
    x, y = ds[0]
    r, c, _, _ = ds.box(0)
    np.testing.assert_array_equal(y, (load_nuclei()[1][r:r + 96, c:c + 96] > 0))
    assert x.shape == (1, 96, 96) and set(np.unique(y)) <= {0, 1}


def test_train_crops_deterministic_and_epoch_dependent():
    a, b = Nuclei(seed=1), Nuclei(seed=1)
    assert [a.box(i) for i in range(8)] == [b.box(i) for i in range(8)]
    assert [a.box(i) for i in range(8)] != [Nuclei(seed=2).box(i) for i in range(8)]
    before = [a.box(i) for i in range(8)]
    a.set_epoch(1)
    assert [a.box(i) for i in range(8)] != before
    # The loader sets the dataset's epoch.
    loader = SegmentationLoader(b, batch_size=4)
    loader.set_epoch(1)
    next(iter(loader))
    assert b.epoch == 1


def test_normalisation_uses_training_statistics():
    ds = Nuclei("train", crop_size=384)
    train_rows = ds.image[:384]
    assert abs(train_rows.mean()) < 1e-4 and abs(train_rows.std() - 1) < 1e-4


def test_otsu_on_bimodal_image():
    rng = np.random.default_rng(0)
    truth = np.zeros((64, 64), dtype=bool)
    truth[16:48, 10:40] = True
    img = np.where(truth, 170, 60) + rng.normal(0, 12, truth.shape)
    t_float = otsu_threshold(img)
    assert 90 < t_float < 140
    assert ((img > t_float) == truth).mean() > 0.999
    t_int = otsu_threshold(np.clip(img, 0, 255).astype(np.uint8))
    assert t_int == int(t_int) and 90 < t_int < 140
    np.testing.assert_array_equal(otsu_segment(img), (img > t_float).astype(np.int64))


def test_otsu_exact_two_levels():
    img = np.array([[10, 10, 200, 200]], dtype=np.uint8)
    t = otsu_threshold(img)
    assert 10 <= t < 200
    assert np.array_equal(img > t, [[False, False, True, True]])
    assert otsu_threshold(np.full((3, 3), 7, np.uint8)) == 7.0
    with pytest.raises(TypeError):
        otsu_threshold(np.zeros((2, 2), dtype=bool))


def test_otsu_baseline_on_validation_rows():
    image, instances = load_nuclei()
    pred = otsu_segment(image[384:]).astype(bool)
    gt = instances[384:] > 0
    dice = 2 * (pred & gt).sum() / (pred.sum() + gt.sum())
    assert 0.8 < dice < 0.95


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="split"):
        Nuclei("test")
    with pytest.raises(ValueError, match="crop_size"):
        Nuclei(crop_size=400)
    with pytest.raises(ValueError, match="val_mode"):
        Nuclei("val", val_mode="tile")
