"""Volume predictions: the .npy label volume and the PNG slice montage."""

import sys

import numpy as np
import pytest

from sandbox.data import Shapes3D
from sandbox.train._plots import PALETTE
from sandbox.train._volume_output import (
    MISSING_PIL,
    montage,
    save_mask_volume,
    save_montage,
    write_volume_prediction,
)


@pytest.fixture
def sample():
    return Shapes3D(1, volume_size=16, seed=2)[0]


def test_mask_volume_round_trips(tmp_path, sample):
    _, mask = sample
    path = save_mask_volume(mask, tmp_path / "m.npy")
    back = np.load(path)
    assert back.dtype == np.uint8
    np.testing.assert_array_equal(back, mask)
    many = np.arange(300 * 2 * 2).reshape(300, 2, 2) % 300
    back = np.load(save_mask_volume(many, tmp_path / "many.npy"))
    assert back.dtype == np.int32
    np.testing.assert_array_equal(back, many)


def test_mask_volume_rejects_bad_input(tmp_path, sample):
    _, mask = sample
    with pytest.raises(ValueError, match=r"use the \.npy extension"):
        save_mask_volume(mask, tmp_path / "m.png")
    with pytest.raises(ValueError, match=r"\(D, H, W\)"):
        save_mask_volume(mask[0], tmp_path / "m.npy")
    with pytest.raises(TypeError, match="integer class ids"):
        save_mask_volume(mask.astype(float), tmp_path / "m.npy")


def test_montage_tiles_show_the_slices(sample):
    image, mask = sample
    rgb, index = montage(image, mask, slices=4, columns=2, tile=16)
    np.testing.assert_array_equal(index, [0, 5, 10, 15])
    assert rgb.shape == (2 * 16 + 2, 2 * 16 + 2, 3) and rgb.dtype == np.float32
    assert rgb.min() >= 0 and rgb.max() <= 1
    # The white separators, then a tile whose labelled voxels carry their class colour.
    np.testing.assert_array_equal(rgb[16:18], 1.0)
    z = 10
    tile = rgb[18:, :16]  # third tile: row 1, column 0
    labels = mask[z]
    for k in np.unique(labels[labels > 0]):
        colour = tile[labels == k].mean(axis=0)
        grey = tile[labels == 0].mean(axis=0)
        # The class colour pulls the overlay away from grey, towards PALETTE[k].
        assert np.dot(colour - grey, PALETTE[k] - 0.5) > 0
    # Slicing along another axis and enlarging small volumes.
    rgb, index = montage(image, mask, axis=2, tile=64)
    assert index.size == 16 and rgb.shape == (4 * 64 + 3 * 2,) * 2 + (3,)
    rgb, _ = montage(image[0], None, slices=1)
    assert np.allclose(rgb[..., 0], rgb[..., 1])  # no labels: grey


def test_montage_rejects_bad_input(sample):
    image, mask = sample
    with pytest.raises(ValueError, match="spatial shape"):
        montage(image, mask[:-1])
    with pytest.raises(ValueError, match="axis must be 0, 1 or 2"):
        montage(image, mask, axis=3)
    with pytest.raises(ValueError, match="slices must be between 1 and the 16"):
        montage(image, mask, slices=17)
    with pytest.raises(ValueError, match=r"\(C, D, H, W\) or \(D, H, W\)"):
        montage(image[0, 0], None)


def test_montage_png_written(tmp_path, sample):
    Image = pytest.importorskip("PIL.Image")
    image, mask = sample
    result = write_volume_prediction(image, mask, tmp_path / "p.npy", tmp_path / "p.png")
    assert result == {"mask": str(tmp_path / "p.npy"), "montage": str(tmp_path / "p.png")}
    with Image.open(tmp_path / "p.png") as im:
        assert im.mode == "RGB" and im.size == (4 * 96 + 6, 4 * 96 + 6)
        pixels = np.asarray(im)
    expected, _ = montage(image, mask)
    # Equal to the montage except where the slice numbers are written.
    same = np.all(pixels == (expected * 255).round().astype(np.uint8), axis=-1)
    assert 0.97 < same.mean() < 1.0
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), mask)
    assert write_volume_prediction(image, mask, tmp_path / "q.npy")["montage"] is None


def test_without_pillow_the_mask_is_written_and_the_extra_named(tmp_path, sample, monkeypatch):
    image, mask = sample
    monkeypatch.setitem(sys.modules, "PIL", None)
    result = write_volume_prediction(image, mask, tmp_path / "p.npy", tmp_path / "p.png")
    assert result["montage"] is None and result["warnings"] == [MISSING_PIL]
    assert "cpu-train-sandbox[images]" in MISSING_PIL
    assert not (tmp_path / "p.png").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "p.npy"), mask)
    with pytest.raises(ImportError, match=r"cpu-train-sandbox\[images\]"):
        save_montage(image, mask, tmp_path / "p.png")
