"""Shapes3D: the synthetic volumetric segmentation set."""

import numpy as np
import pytest

from sandbox.data import DataLoader as _DataLoader
from sandbox.data import Shapes3D, Subset, collate_segmentation
from sandbox.data._shapes3d import gaussian_blur3d


def SegmentationLoader(*args, **kwargs):  # noqa: N802 - the trainer's loader: numpy batches
    return _DataLoader(*args, collate_fn=collate_segmentation, **kwargs)


def test_item_types_and_shapes():
    ds = Shapes3D(4, volume_size=24, num_classes=4, seed=3)
    assert len(ds) == 4
    assert ds.in_channels == 1 and ds.num_classes == 4 and ds.spatial_dims == 3
    assert ds.class_names == ("background", "ball", "rod", "shell")
    image, mask = ds[2]
    assert image.dtype == np.float32 and image.shape == (1, 24, 24, 24)
    assert mask.dtype == np.int64 and mask.shape == (24, 24, 24)
    assert image.flags.c_contiguous and mask.flags.c_contiguous
    assert np.all(np.isfinite(image))
    assert Shapes3D(1).generate(0)[0].shape == (1, 32, 32, 32)  # the default size


def test_deterministic_per_seed_and_index():
    a, b, c = Shapes3D(4, 16, seed=1), Shapes3D(4, 16, seed=1), Shapes3D(4, 16, seed=2)
    for i in range(4):
        np.testing.assert_array_equal(a[i][0], b[i][0])
        np.testing.assert_array_equal(a[i][1], b[i][1])
    # A sample depends only on (seed, index): length and reading order do not matter.
    np.testing.assert_array_equal(Shapes3D(50, 16, seed=1)[3][0], a[3][0])
    np.testing.assert_array_equal(a.generate(7)[1], Shapes3D(1, 16, seed=1).generate(7)[1])
    assert not np.array_equal(a[0][0], c[0][0])
    assert not np.array_equal(a[0][1], a[1][1])


@pytest.mark.parametrize("num_classes", [2, 3, 4, 5, 6])
def test_labels_in_range_and_classes_balanced(num_classes):
    ds = Shapes3D(16, volume_size=24, num_classes=num_classes, seed=0)
    masks = np.stack([ds[i][1] for i in range(len(ds))])
    assert masks.min() >= 0 and masks.max() < num_classes
    counts = np.bincount(masks.ravel(), minlength=num_classes)
    fg = 1 - counts[0] / masks.size
    # Shapes fill a fair share of the volume without swamping the background ...
    assert 0.05 < fg < 0.5, fg
    # ... and no shape class is rare: each has at least a fifth of an equal share.
    share = counts[1:] / counts[1:].sum()
    assert np.all(share > 0.2 / (num_classes - 1)), share
    # Every volume holds at least one shape.
    assert all(np.any(m > 0) for m in masks)


@pytest.mark.parametrize("size", [16, 17, 40, 64])
def test_any_volume_size(size):
    ds = Shapes3D(2, volume_size=size, num_classes=6, seed=5)
    for i in range(2):
        image, mask = ds[i]
        assert image.shape == (1, size, size, size) and mask.shape == (size,) * 3
        assert mask.max() < 6 and mask.max() > 0


def test_intensity_does_not_reveal_class():
    # Without noise and blur the background stays below every shape, and each class
    # spans most of the shared intensity range: the grey level does not tell the class.
    ds = Shapes3D(30, volume_size=24, seed=0, noise=(0.0, 0.0), blur=(0.0, 0.0))
    images = np.stack([ds[i][0][0] for i in range(len(ds))])
    masks = np.stack([ds[i][1] for i in range(len(ds))])
    assert images[masks == 0].max() < images[masks > 0].min()
    for k in range(1, 4):
        vals = images[masks == k]
        assert vals.min() < 0.6 and vals.max() > 0.9


def test_blur_and_noise_act_on_the_image_only():
    sharp = Shapes3D(1, 24, seed=4, noise=(0.0, 0.0), blur=(0.0, 0.0))[0]
    soft = Shapes3D(1, 24, seed=4, noise=(0.0, 0.0), blur=(0.8, 0.8))[0]
    noisy = Shapes3D(1, 24, seed=4, noise=(0.05, 0.05), blur=(0.0, 0.0))[0]
    np.testing.assert_array_equal(sharp[1], soft[1])
    np.testing.assert_array_equal(sharp[1], noisy[1])
    # Blur softens edges (smaller jumps between neighbours) but keeps the mean.
    jump = lambda v: np.abs(np.diff(v[0], axis=0)).max()  # noqa: E731
    assert jump(soft[0]) < 0.8 * jump(sharp[0])
    assert abs(soft[0].mean() - sharp[0].mean()) < 0.01
    residual = noisy[0] - sharp[0]
    assert 0.04 < residual.std() < 0.06


def test_gaussian_blur_keeps_constants_and_mass():
    const = np.full((6, 7, 8), 0.3)
    np.testing.assert_allclose(gaussian_blur3d(const, 1.0), const, atol=1e-12)
    impulse = np.zeros((15, 15, 15))
    impulse[7, 7, 7] = 1.0
    out = gaussian_blur3d(impulse, 1.0)
    assert out.sum() == pytest.approx(1.0)
    assert out[7, 7, 7] == out.max()
    np.testing.assert_allclose(out, out.transpose(1, 2, 0), atol=1e-15)  # isotropic
    assert gaussian_blur3d(impulse, 0) is impulse


def test_occlusion_limit_keeps_instances_visible():
    # A later shape may hide at most a quarter of an earlier one: no class present in a
    # volume is reduced to a sliver.
    ds = Shapes3D(20, volume_size=24, seed=4)
    for i in range(len(ds)):
        counts = np.bincount(ds[i][1].ravel(), minlength=4)[1:]
        assert np.all((counts == 0) | (counts >= 60)), counts


def test_batches_through_the_loader_and_subset():
    ds = Shapes3D(5, volume_size=16, seed=0)
    sub = Subset(ds, [4, 0, 2])
    assert sub.spatial_dims == 3 and sub.num_classes == 4
    images, masks = next(iter(SegmentationLoader(sub, batch_size=3)))
    assert images.shape == (3, 1, 16, 16, 16) and images.dtype == np.float32
    assert masks.shape == (3, 16, 16, 16) and masks.dtype == np.int64
    np.testing.assert_array_equal(masks[0], ds[4][1])


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="num_classes must be between 2 and 6"):
        Shapes3D(4, num_classes=7)
    with pytest.raises(ValueError, match="volume_size"):
        Shapes3D(4, volume_size=8)
    with pytest.raises(TypeError, match="num_samples"):
        Shapes3D(2.5)
    with pytest.raises(ValueError, match="radius"):
        Shapes3D(4, volume_size=16, radius=(4, 9))
    with pytest.raises(ValueError, match="shapes_per_volume"):
        Shapes3D(4, shapes_per_volume=(0, 2))
    with pytest.raises(TypeError, match="blur"):
        Shapes3D(4, blur=0.5)
    with pytest.raises(ValueError, match="max_occlusion"):
        Shapes3D(4, max_occlusion=1.0)
    with pytest.raises(IndexError):
        Shapes3D(3)[3]
