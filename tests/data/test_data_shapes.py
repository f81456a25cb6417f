"""Shapes and Shapes3D: the synthetic multi-class segmentation sets (images, volumes)."""

import numpy as np
import pytest

from sandbox.data import DataLoader as _DataLoader
from sandbox.data import Shapes, Shapes3D, Subset, collate_segmentation
from sandbox.data._shapes3d import gaussian_blur3d


def SegmentationLoader(*args, **kwargs):  # noqa: N802 - the trainer's loader: numpy batches
    return _DataLoader(*args, collate_fn=collate_segmentation, **kwargs)


#: the set of each rank, and the names of its classes
DATASET = {2: Shapes, 3: Shapes3D}
CLASS_NAMES = {2: ("background", "disc", "square", "triangle"),
               3: ("background", "ball", "rod", "shell")}


@pytest.mark.parametrize("spatial_dims, num_samples, size", [(2, 5, 48), (3, 4, 24)])
def test_item_types_and_shapes(spatial_dims, num_samples, size):
    if spatial_dims == 2:
        ds = Shapes(num_samples, image_size=size, num_classes=4, seed=3)
    else:
        ds = Shapes3D(num_samples, volume_size=size, num_classes=4, seed=3)
    assert len(ds) == num_samples
    assert ds.in_channels == 1 and ds.num_classes == 4
    assert ds.class_names == CLASS_NAMES[spatial_dims]
    image, mask = ds[2]
    assert image.dtype == np.float32 and image.shape == (1,) + (size,) * spatial_dims
    assert mask.dtype == np.int64 and mask.shape == (size,) * spatial_dims
    assert np.all(np.isfinite(image))
    if spatial_dims == 3:
        assert ds.spatial_dims == 3
        assert image.flags.c_contiguous and mask.flags.c_contiguous
        assert Shapes3D(1).generate(0)[0].shape == (1, 32, 32, 32)  # the default size


#: (spatial_dims, samples, size (None: the default), a longer set's length, the index read
#: from it, and which of (image, mask) is compared)
DETERMINISM = [(2, 6, None, 100, 5, 1), (3, 4, 16, 50, 3, 0)]


@pytest.mark.parametrize("spatial_dims, n, size, longer, index, part", DETERMINISM)
def test_deterministic_per_seed_and_index(spatial_dims, n, size, longer, index, part):
    def make(num, seed):
        sized = () if size is None else (size,)
        return DATASET[spatial_dims](num, *sized, seed=seed)

    a, b, c = make(n, 1), make(n, 1), make(n, 2)
    for i in range(n):
        np.testing.assert_array_equal(a[i][0], b[i][0])
        np.testing.assert_array_equal(a[i][1], b[i][1])
    # A sample depends only on (seed, index): reading order and length do not matter.
    np.testing.assert_array_equal(make(longer, 1)[index][part], a[index][part])
    if spatial_dims == 3:
        np.testing.assert_array_equal(a.generate(7)[1], make(1, 1).generate(7)[1])
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


@pytest.mark.parametrize("spatial_dims, size", [*[(2, s) for s in (16, 17, 32, 100, 128)],
                                                *[(3, s) for s in (16, 17, 40, 64)]])
def test_any_size(spatial_dims, size):
    n = {2: 3, 3: 2}[spatial_dims]
    if spatial_dims == 2:
        ds = Shapes(n, image_size=size, num_classes=6, seed=5)
    else:
        ds = Shapes3D(n, volume_size=size, num_classes=6, seed=5)
    for i in range(n):
        image, mask = ds[i]
        assert image.shape == (1,) + (size,) * spatial_dims
        assert mask.shape == (size,) * spatial_dims
        assert mask.max() < 6
        if spatial_dims == 3:
            assert mask.max() > 0


@pytest.mark.parametrize("spatial_dims", [2, 3])
def test_intensity_does_not_reveal_class(spatial_dims):
    # Without noise (and blur) the background stays below every shape, and each class
    # spans most of the shared intensity range: the grey level alone cannot tell classes
    # apart.
    if spatial_dims == 2:
        ds = Shapes(40, seed=0, noise=(0.0, 0.0))
    else:
        ds = Shapes3D(30, volume_size=24, seed=0, noise=(0.0, 0.0), blur=(0.0, 0.0))
    images = np.stack([ds[i][0][0] for i in range(len(ds))])
    masks = np.stack([ds[i][1] for i in range(len(ds))])
    assert images[masks == 0].max() < images[masks > 0].min()
    for k in range(1, 4):
        vals = images[masks == k]
        assert vals.min() < 0.6 and vals.max() > 0.9


@pytest.mark.parametrize("spatial_dims, least", [(2, 20), (3, 60)])
def test_occlusion_limit_keeps_instances_visible(spatial_dims, least):
    # Later shapes may hide at most 25 % of an earlier one, so no class is reduced to a
    # sliver: every class present keeps at least ``least`` visible pixels (voxels).
    ds = Shapes(30, seed=4) if spatial_dims == 2 else Shapes3D(20, volume_size=24, seed=4)
    for i in range(len(ds)):
        counts = np.bincount(ds[i][1].ravel(), minlength=4)[1:]
        assert np.all((counts == 0) | (counts >= least)), counts


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


# 3-D only ---------------------------------------------------------------------
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


def test_batches_through_the_loader_and_subset():
    ds = Shapes3D(5, volume_size=16, seed=0)
    sub = Subset(ds, [4, 0, 2])
    assert sub.spatial_dims == 3 and sub.num_classes == 4
    images, masks = next(iter(SegmentationLoader(sub, batch_size=3)))
    assert images.shape == (3, 1, 16, 16, 16) and images.dtype == np.float32
    assert masks.shape == (3, 16, 16, 16) and masks.dtype == np.int64
    np.testing.assert_array_equal(masks[0], ds[4][1])


def test_shapes3d_rejects_bad_arguments():
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


@pytest.mark.parametrize("spatial_dims, size", [(2, 32), (3, 16)])
def test_cache_reads_what_generation_gives_and_hands_out_copies(spatial_dims, size):
    plain = DATASET[spatial_dims](3, size, seed=4)
    cached = DATASET[spatial_dims](3, size, seed=4, cache=True)
    assert cached.cache and not plain.cache
    for _ in range(2):  # first read generates, the second reads the cache
        for i in range(3):
            for got, want in zip(cached[i], plain[i], strict=True):
                np.testing.assert_array_equal(got, want)
    assert len(cached._cache) == 3 and len(plain._cache) == 0
    assert cached._cache.nbytes() == cached.cache_bytes()
    image, mask = cached[1]
    image[:] = -1.0  # a transform working in place ...
    mask[:] = 7
    again = cached[1]  # ... does not change what the next epoch reads
    np.testing.assert_array_equal(again[0], plain[1][0])
    np.testing.assert_array_equal(again[1], plain[1][1])
