"""Joint augmentations keep image and mask aligned."""

import numpy as np
import pytest

from sandbox.data import Compose, RandomCrop, RandomFlip, RandomIntensity, RandomRotate90
from sandbox.data.augment import RandomFlip as RandomFlipPublic


def encoded_pair(c=2, h=12, w=12):
    """A mask with a unique label per pixel and an image whose channels encode it."""
    mask = np.arange(h * w, dtype=np.int64).reshape(h, w)
    image = np.stack([mask * (k + 1) for k in range(c)]).astype(np.float32)
    return image, mask


def assert_aligned(image, mask):
    assert image.shape[1:] == mask.shape
    for k in range(image.shape[0]):
        np.testing.assert_array_equal(image[k], mask * (k + 1))


TRANSFORMS = [
    RandomFlip(),
    RandomFlip(horizontal=False),
    RandomRotate90(),
    RandomCrop(5),
    RandomCrop((4, 7)),
    Compose([RandomCrop(9), RandomFlip(p=0.7), RandomRotate90()]),
]


@pytest.mark.parametrize("transform", TRANSFORMS, ids=repr)
@pytest.mark.parametrize("shape", [(12, 12), (10, 14)])
def test_image_and_mask_stay_aligned(transform, shape):
    rng = np.random.default_rng(0)
    for _ in range(20):
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
