"""Shapes: the synthetic multi-class segmentation set."""

import numpy as np
import pytest

from sandbox.data import Shapes


def test_item_types_and_shapes():
    ds = Shapes(5, image_size=48, num_classes=4, seed=3)
    assert len(ds) == 5
    assert ds.in_channels == 1 and ds.num_classes == 4
    assert ds.class_names == ("background", "disc", "square", "triangle")
    image, mask = ds[2]
    assert image.dtype == np.float32 and image.shape == (1, 48, 48)
    assert mask.dtype == np.int64 and mask.shape == (48, 48)
    assert np.all(np.isfinite(image))


def test_deterministic_per_seed_and_index():
    a, b, c = Shapes(6, seed=1), Shapes(6, seed=1), Shapes(6, seed=2)
    for i in range(6):
        np.testing.assert_array_equal(a[i][0], b[i][0])
        np.testing.assert_array_equal(a[i][1], b[i][1])
    # A sample depends only on (seed, index): reading order and length do not matter.
    np.testing.assert_array_equal(Shapes(100, seed=1)[5][1], a[5][1])
    assert not np.array_equal(a[0][0], c[0][0])
    assert not np.array_equal(a[0][1], a[1][1])


@pytest.mark.parametrize("num_classes", [2, 3, 4, 5, 6])
def test_labels_in_range_and_every_class_appears(num_classes):
    ds = Shapes(12, image_size=64, num_classes=num_classes, seed=0)
    masks = np.stack([ds[i][1] for i in range(len(ds))])
    assert masks.min() >= 0 and masks.max() < num_classes
    counts = np.bincount(masks.ravel(), minlength=num_classes)
    assert np.all(counts > 0), counts
    # Shapes cover a good share of the image but do not swamp the background.
    assert 0.15 < 1 - counts[0] / masks.size < 0.6


@pytest.mark.parametrize("size", [16, 17, 32, 100, 128])
def test_any_image_size(size):
    ds = Shapes(3, image_size=size, num_classes=6, seed=5)
    for i in range(3):
        image, mask = ds[i]
        assert image.shape == (1, size, size) and mask.shape == (size, size)
        assert mask.max() < 6


def test_intensity_does_not_reveal_class():
    # Every class spans most of the instance intensity range, so the grey level alone
    # cannot tell classes apart; shapes are brighter than the background.
    ds = Shapes(40, seed=0, noise=(0.0, 0.0))
    images = np.stack([ds[i][0][0] for i in range(len(ds))])
    masks = np.stack([ds[i][1] for i in range(len(ds))])
    assert images[masks == 0].max() < images[masks > 0].min()
    for k in range(1, 4):
        vals = images[masks == k]
        assert vals.min() < 0.6 and vals.max() > 0.9


def test_occlusion_limit_keeps_instances_visible():
    # Later shapes may hide at most 25 % of an earlier one, so no class is reduced to a
    # sliver: every class present in an image keeps at least 20 visible pixels.
    ds = Shapes(30, seed=4)
    for i in range(len(ds)):
        counts = np.bincount(ds[i][1].ravel(), minlength=4)[1:]
        assert np.all((counts == 0) | (counts >= 20)), counts


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_classes"):
        Shapes(4, num_classes=7)
    with pytest.raises(ValueError, match="image_size"):
        Shapes(4, image_size=8)
    with pytest.raises(TypeError, match="num_samples"):
        Shapes(2.5)
    with pytest.raises(ValueError, match="radius"):
        Shapes(4, image_size=32, radius=(4, 20))
    with pytest.raises(IndexError):
        Shapes(4)[4]
    assert np.array_equal(Shapes(4)[-1][1], Shapes(4)[3][1])
