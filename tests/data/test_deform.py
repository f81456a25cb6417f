"""RandomAffine, RandomElastic, RandomDeform: joint image/mask deformations by grid sampling."""

import numpy as np
import pytest

from sandbox.data import DataLoader, RandomAffine, RandomDeform, RandomElastic, Shapes, Shapes3D
from sandbox.data.augment import warp_pair


def ball(spatial, radius, centre=None):
    """A float image (1, *spatial) of a soft-edged ball and its 0/1 mask."""
    grids = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in spatial], indexing="ij")
    centre = [(n - 1) / 2 for n in spatial] if centre is None else centre
    r = np.sqrt(sum((g - c) ** 2 for g, c in zip(grids, centre, strict=True)))
    image = np.clip(radius + 0.5 - r, 0, 1)  # a one-voxel linear ramp at the edge
    return image[None].astype(np.float32), (r < radius).astype(np.int64)


AFFINE = dict(degrees=25, scale=(0.8, 1.2), shear=0.15, translate=0.1)
ELASTIC = dict(sigma=(3, 5), magnitude=(1, 3))


def transforms(mode="bilinear", padding_mode="zeros"):
    opts = dict(mode=mode, padding_mode=padding_mode)
    return [RandomAffine(**AFFINE, **opts), RandomElastic(**ELASTIC, **opts),
            RandomDeform([RandomElastic(**ELASTIC, **opts), RandomAffine(**AFFINE, **opts)])]


@pytest.mark.parametrize("t", transforms() + transforms("bicubic", "border"), ids=repr)
def test_mask_values_stay_in_the_label_set_2d(t):
    image, mask = Shapes(1, image_size=32, num_classes=5, seed=3)[0]
    labels = set(np.unique(mask)) | {0}  # zeros padding reads background
    rng = np.random.default_rng(0)
    for _ in range(5):
        out, warped = t(image, mask, rng)
        assert out.shape == image.shape and out.dtype == image.dtype
        assert warped.shape == mask.shape and warped.dtype == mask.dtype
        assert set(np.unique(warped)) <= labels


@pytest.mark.parametrize("t", transforms(), ids=repr)
def test_mask_values_stay_in_the_label_set_3d(t):
    image, mask = Shapes3D(1, volume_size=16, num_classes=4, seed=1)[0]
    out, warped = t(image, mask, np.random.default_rng(1))
    assert out.shape == image.shape and warped.shape == mask.shape
    assert set(np.unique(warped)) <= set(np.unique(mask)) | {0}


@pytest.mark.parametrize("spatial", [(12, 15), (6, 7, 8)])
@pytest.mark.parametrize(
    "t",
    [RandomAffine(degrees=0, scale=1, shear=0, translate=0),
     RandomAffine(degrees=0, scale=1, mode="bicubic"),
     RandomElastic(magnitude=0),
     RandomAffine(p=0.0),
     RandomDeform([RandomElastic(magnitude=0), RandomAffine(degrees=0, scale=1)])],
    ids=repr,
)
def test_identity_parameters_give_the_identity(t, spatial):
    rng = np.random.default_rng(2)
    image = rng.standard_normal((2, *spatial)).astype(np.float32)
    mask = rng.integers(0, 4, size=spatial)
    out, warped = t(image, mask, rng)
    np.testing.assert_allclose(out, image, atol=1e-5)
    np.testing.assert_array_equal(warped, mask)


@pytest.mark.parametrize("t", transforms(), ids=repr)
def test_same_seed_same_result(t):
    image, mask = Shapes(1, image_size=32, seed=4)[0]
    a = t(image, mask, np.random.default_rng(7))
    b = t(image, mask, np.random.default_rng(7))
    c = t(image, mask, np.random.default_rng(8))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_loader_epochs_are_reproducible():
    ds = Shapes(6, image_size=32, seed=5)
    t = RandomDeform([RandomElastic(**ELASTIC), RandomAffine(**AFFINE)])
    first = [m for _, m in DataLoader(ds, 3, shuffle=True, seed=1, transform=t)]
    again = [m for _, m in DataLoader(ds, 3, shuffle=True, seed=1, transform=t)]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)


def rim(mask):
    """Voxels with a face neighbour of another label (and those neighbours)."""
    out = np.zeros(mask.shape, bool)
    for axis in range(mask.ndim):
        differ = np.diff(mask, axis=axis) != 0
        lo = [slice(None)] * mask.ndim
        hi = [slice(None)] * mask.ndim
        lo[axis], hi[axis] = slice(0, -1), slice(1, None)
        out[tuple(lo)] |= differ
        out[tuple(hi)] |= differ
    return out


@pytest.mark.parametrize("spatial", [(40, 40), (20, 20, 20)])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_image_and_mask_move_together(spatial, mode):
    # The mask of an off-centre ball matches the thresholded warped ball wherever the warp
    # moved it; they differ only on the rim (nearest labels against interpolated edges).
    image, mask = ball(spatial, radius=spatial[0] / 5, centre=[n * 0.35 for n in spatial])
    t = RandomDeform([RandomElastic(**ELASTIC, mode=mode), RandomAffine(**AFFINE, mode=mode)])
    rng = np.random.default_rng(9)
    for _ in range(3):
        out, warped = t(image, mask, rng)
        disagree = (out[0] > 0.5) != (warped == 1)
        assert np.mean(warped != mask) > 0.02  # the shape did move
        assert not (disagree & ~rim(warped)).any()
        assert disagree.sum() < 0.3 * rim(warped).sum()


def test_right_angle_rotation_is_rot90():
    rng = np.random.default_rng(10)
    image = rng.standard_normal((1, 9, 9)).astype(np.float32)
    mask = rng.integers(0, 5, size=(9, 9))
    out, warped = RandomAffine(degrees=(90, 90), scale=1)(image, mask, rng)
    np.testing.assert_array_equal(warped, np.rot90(mask, 1))
    np.testing.assert_allclose(out, np.rot90(image, 1, axes=(1, 2)), atol=1e-5)


def test_translation_moves_the_content_forward():
    rng = np.random.default_rng(11)
    image = rng.standard_normal((1, 10, 8)).astype(np.float32)
    mask = rng.integers(1, 5, size=(10, 8))
    # translate 0.2 of the size: 2 rows and 1.6 columns; check rows with an exact shift.
    t = RandomAffine(degrees=0, scale=1, translate=(0.2, 0.2))
    out, warped = t(image, mask, rng)
    np.testing.assert_array_equal(warped[2:, 2:], mask[:-2, :-2])
    assert (warped[:2] == 0).all()  # zeros padding: background where nothing came from


def test_warp_pair_samples_at_positions():
    image = np.arange(12, dtype=np.float64).reshape(1, 3, 4)
    mask = np.arange(12).reshape(3, 4)
    pos = np.stack(np.meshgrid(np.arange(3.0), np.arange(4.0), indexing="ij"))
    pos[1] += 0.5  # half a column to the right
    out, warped = warp_pair(image, mask, pos, padding_mode="border")
    np.testing.assert_allclose(out[0, :, :3], image[0, :, :3] + 0.5)
    assert set(np.unique(warped)) <= set(range(12))


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda: RandomAffine(mode="nearest"), ValueError, "mode must be one of"),
        (lambda: RandomAffine(padding_mode="constant"), ValueError, "padding_mode must be"),
        (lambda: RandomAffine(scale=(1.2, 0.8)), ValueError, "low <= high"),
        (lambda: RandomAffine(scale=0), ValueError, "scale must be >="),
        (lambda: RandomAffine(degrees="x"), TypeError, "degrees must be a number or a pair"),
        (lambda: RandomElastic(sigma=0), ValueError, "sigma must be >="),
        (lambda: RandomElastic(p=2), ValueError, "p must be a probability"),
        (lambda: RandomDeform([]), TypeError, "non-empty sequence"),
    ],
)
def test_bad_arguments(build, error, match):
    with pytest.raises(error, match=match):
        build()


def test_bad_pair():
    with pytest.raises(ValueError, match="expected image"):
        RandomAffine()(np.zeros((1, 4, 4)), np.zeros((4, 5)), np.random.default_rng(0))
