"""Joint augmentations keep image and mask aligned (2-D images and 3-D volumes), and the
3-D flips and rotations invert."""

import itertools

import numpy as np
import pytest

from sandbox.data import (
    CenterCrop3D,
    Compose,
    RandomCrop,
    RandomCrop3D,
    RandomFlip,
    RandomFlip3D,
    RandomIntensity,
    RandomRotate3D,
    RandomRotate90,
    Shapes3D,
    collate_segmentation,
)
from sandbox.data import DataLoader as _DataLoader
from sandbox.data.augment import RandomFlip as RandomFlipPublic
from sandbox.data.augment import apply_axis_map, invert_axis_map


def SegmentationLoader(*args, **kwargs):  # noqa: N802 - the trainer's loader: numpy batches
    return _DataLoader(*args, collate_fn=collate_segmentation, **kwargs)


def encoded_pair(c, *shape):
    """A mask of ``shape`` (H, W or D, H, W) with a unique label per pixel or voxel, and an
    image whose channels encode it."""
    mask = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    image = np.stack([mask * (k + 1) for k in range(c)]).astype(np.float32)
    return image, mask


def assert_aligned(image, mask):
    assert image.shape[1:] == mask.shape
    for k in range(image.shape[0]):
        np.testing.assert_array_equal(image[k], mask * (k + 1))


TRANSFORMS = {
    2: [
        RandomFlip(),
        RandomFlip(horizontal=False),
        RandomRotate90(),
        RandomCrop(5),
        RandomCrop((4, 7)),
        Compose([RandomCrop(9), RandomFlip(p=0.7), RandomRotate90()]),
    ],
    3: [
        RandomFlip3D(),
        RandomFlip3D(axes=(0,)),
        RandomRotate3D(),
        RandomCrop3D(3),
        RandomCrop3D((2, 4, 3)),
        CenterCrop3D((4, 2, 5)),
        Compose([RandomCrop3D(4), RandomFlip3D(p=0.7), RandomRotate3D()]),
    ],
}
SHAPES = {2: [(12, 12), (10, 14)], 3: [(6, 6, 6), (5, 6, 7), (6, 4, 6)]}
DRAWS = {2: 20, 3: 15}  # calls of each transform per shape


@pytest.mark.parametrize(
    "spatial_dims, transform, shape",
    [(d, t, s) for d in (2, 3) for s in SHAPES[d] for t in TRANSFORMS[d]],
    ids=lambda v: repr(v).replace(" ", ""),
)
def test_image_and_mask_stay_aligned(spatial_dims, transform, shape):
    rng = np.random.default_rng(0)
    for _ in range(DRAWS[spatial_dims]):
        image, mask = transform(*encoded_pair(2, *shape), rng)
        assert_aligned(image, mask)
        assert image.flags.c_contiguous and mask.flags.c_contiguous
        assert image.dtype == np.float32 and mask.dtype == np.int64


@pytest.mark.parametrize("transform", [RandomFlip(), RandomRotate90()], ids=repr)
def test_flips_and_rotations_are_exact_permutations(transform):
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(40):
        image, mask = transform(*encoded_pair(1, 6, 6), rng)
        assert image.shape == (1, 6, 6)
        np.testing.assert_array_equal(np.sort(mask.ravel()), np.arange(36))
        seen.add(mask.tobytes())
    # Flips: identity, h, v, both; rotations: 0, 90, 180, 270 -- all four occur.
    assert len(seen) == 4


def test_rotate_non_square_keeps_shape():
    rng = np.random.default_rng(2)
    for _ in range(20):
        image, mask = RandomRotate90()(*encoded_pair(1, 4, 6), rng)
        assert mask.shape == (4, 6)


def test_flip_options():
    rng = np.random.default_rng(3)
    image, mask = encoded_pair(1, 5, 5)
    for _ in range(10):
        _, m = RandomFlip(horizontal=False, vertical=True, p=1.0)(image, mask, rng)
        np.testing.assert_array_equal(m, mask[::-1])
        _, m = RandomFlip(horizontal=True, vertical=False, p=1.0)(image, mask, rng)
        np.testing.assert_array_equal(m, mask[:, ::-1])
        _, m = RandomFlip(p=0.0)(image, mask, rng)
        np.testing.assert_array_equal(m, mask)


def test_crop_is_a_window_and_rng_controls_it():
    image, mask = encoded_pair(1, 10, 10)
    a = RandomCrop(4)(image, mask, np.random.default_rng(7))[1]
    b = RandomCrop(4)(image, mask, np.random.default_rng(7))[1]
    np.testing.assert_array_equal(a, b)
    top, left = divmod(int(a[0, 0]), 10)
    np.testing.assert_array_equal(a, mask[top:top + 4, left:left + 4])
    tops = {RandomCrop(4)(image, mask, np.random.default_rng(s))[1][0, 0] for s in range(30)}
    assert len(tops) > 5
    with pytest.raises(ValueError, match="larger than the input"):
        RandomCrop(11)(image, mask, np.random.default_rng(0))


def test_intensity_changes_image_only():
    image, mask = encoded_pair(1, 4, 4)
    out_img, out_mask = RandomIntensity()(image, mask, np.random.default_rng(0))
    np.testing.assert_array_equal(out_mask, mask)
    assert out_img.dtype == np.float32 and not np.array_equal(out_img, image)


def test_errors_and_public_module():
    assert RandomFlipPublic is RandomFlip
    with pytest.raises(ValueError, match="p must be"):
        RandomFlip(p=1.5)
    with pytest.raises(ValueError, match="size must be positive"):
        RandomCrop(0)
    with pytest.raises(TypeError, match="callable"):
        Compose([RandomFlip(), 3])
    with pytest.raises(ValueError, match="same H, W"):
        RandomFlip()(np.zeros((1, 4, 4)), np.zeros((4, 5)), np.random.default_rng(0))


# 3-D volumes ------------------------------------------------------------------
def test_flips_reach_all_eight_and_only_flip():
    rng = np.random.default_rng(1)
    seen = set()
    for _ in range(200):
        _, mask = RandomFlip3D()(*encoded_pair(1, 3, 4, 5), rng)
        assert mask.shape == (3, 4, 5)
        np.testing.assert_array_equal(np.sort(mask.ravel()), np.arange(60))
        seen.add(mask.tobytes())
    base = encoded_pair(1, 3, 4, 5)[1]
    expected = {
        np.ascontiguousarray(np.flip(base, axes) if axes else base).tobytes()
        for n in range(4)
        for axes in itertools.combinations(range(3), n)
    }
    assert seen == expected  # the 8 combinations of flips, nothing else


def test_flip_axes_restrict_the_flips():
    rng = np.random.default_rng(2)
    base = encoded_pair(1, 6, 6, 6)[1]
    seen = {RandomFlip3D(axes=(2,))(*encoded_pair(1, 6, 6, 6), rng)[1].tobytes() for _ in range(50)}
    assert seen == {base.tobytes(), np.ascontiguousarray(base[:, :, ::-1]).tobytes()}
    assert RandomFlip3D(p=0.0)(*encoded_pair(1, 6, 6, 6), rng)[1].tobytes() == base.tobytes()


def _rot90_group(volume):
    """Every orientation reachable by composing np.rot90 in the three planes."""
    seen = {volume.tobytes(): volume}
    frontier = [volume]
    while frontier:
        new = []
        for v in frontier:
            for plane in ((0, 1), (0, 2), (1, 2)):
                r = np.ascontiguousarray(np.rot90(v, 1, plane))
                if r.tobytes() not in seen:
                    seen[r.tobytes()] = r
                    new.append(r)
        frontier = new
    return set(seen)


def test_rotations_are_the_24_proper_rotations_of_a_cube():
    rng = np.random.default_rng(3)
    base = encoded_pair(1, 4, 4, 4)[1]
    seen = {RandomRotate3D()(*encoded_pair(1, 4, 4, 4), rng)[1].tobytes() for _ in range(600)}
    # Exactly the orientations generated by 90-degree turns in every plane: 24, no
    # mirror images.
    assert seen == _rot90_group(base)
    assert len(seen) == 24


def test_rotations_of_a_box_keep_its_shape():
    rng = np.random.default_rng(4)
    seen = set()
    for _ in range(200):
        image, mask = RandomRotate3D()(*encoded_pair(1, 4, 4, 6), rng)
        assert mask.shape == (4, 4, 6) and image.shape == (1, 4, 4, 6)
        seen.add(mask.tobytes())
    # Depth and height are equal: 90-degree turns in that plane, 180 in the others.
    assert len(seen) == 8


@pytest.mark.parametrize("transform", [RandomFlip3D(), RandomRotate3D()], ids=repr)
def test_drawn_maps_are_applied_jointly_and_invert(transform):
    for seed in range(30):
        image, mask = encoded_pair(2, 4, 4, 4)
        out_img, out_mask = transform(image, mask, np.random.default_rng(seed))
        m = transform.draw(np.random.default_rng(seed), mask.shape)
        np.testing.assert_array_equal(out_mask, apply_axis_map(mask, m))
        np.testing.assert_array_equal(out_img, apply_axis_map(image, m))
        inverse = invert_axis_map(m)
        np.testing.assert_array_equal(apply_axis_map(out_mask, inverse), mask)
        np.testing.assert_array_equal(apply_axis_map(out_img, inverse), image)


def test_every_signed_permutation_inverts():
    x = np.random.default_rng(5).random((2, 3, 4, 5))
    for perm in itertools.permutations(range(3)):
        for flips in itertools.product((False, True), repeat=3):
            y = apply_axis_map(x, (perm, flips))
            assert y.shape[1:] == tuple(x.shape[1 + p] for p in perm)
            np.testing.assert_array_equal(apply_axis_map(y, invert_axis_map((perm, flips))), x)


def test_crops_cut_the_same_box():
    image, mask = encoded_pair(1, 8, 9, 10)
    crop = RandomCrop3D((3, 4, 5))
    for seed in range(10):
        z, y, x = crop.corner(np.random.default_rng(seed), mask.shape)
        out_img, out_mask = crop(image, mask, np.random.default_rng(seed))
        np.testing.assert_array_equal(out_mask, mask[z:z + 3, y:y + 4, x:x + 5])
        assert_aligned(out_img, out_mask)
    _, centre = CenterCrop3D(4)(image, mask)
    np.testing.assert_array_equal(centre, mask[2:6, 2:6, 3:7])


def test_loader_applies_the_augmentation_reproducibly():
    ds = Shapes3D(4, volume_size=16, seed=0)
    t = Compose([RandomCrop3D(12), RandomFlip3D(), RandomRotate3D()])
    a = list(SegmentationLoader(ds, batch_size=2, shuffle=True, seed=3, transform=t).batches(1))
    b = list(SegmentationLoader(ds, batch_size=2, shuffle=True, seed=3, transform=t).batches(1))
    assert a[0][0].shape == (2, 1, 12, 12, 12) and a[0][1].shape == (2, 12, 12, 12)
    for (ia, ma), (ib, mb) in zip(a, b, strict=True):
        np.testing.assert_array_equal(ia, ib)
        np.testing.assert_array_equal(ma, mb)


def test_rejects_bad_input():
    image, mask = encoded_pair(1, 4, 4, 4)
    with pytest.raises(ValueError, match=r"image \(C, D, H, W\) and mask \(D, H, W\)"):
        RandomFlip3D()(image[0], mask, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"image \(C, D, H, W\)"):
        RandomRotate3D()(image, mask[:, :, :3], np.random.default_rng(0))
    with pytest.raises(ValueError, match="larger than the input"):
        RandomCrop3D(5)(image, mask, np.random.default_rng(0))
    with pytest.raises(ValueError, match="larger than the input"):
        CenterCrop3D((1, 1, 5))(image, mask)
    with pytest.raises(ValueError, match="three positive ints"):
        RandomCrop3D((2, 2))
    with pytest.raises(TypeError, match="int or three ints"):
        RandomCrop3D("big")
    with pytest.raises(ValueError, match="axes"):
        RandomFlip3D(axes=(3,))
    with pytest.raises(ValueError, match="probability"):
        RandomFlip3D(p=2)
