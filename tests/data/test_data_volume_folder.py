"""VolumeFolder and read_volume: volumes from .npy, .npz and multi-page TIFF files."""

import numpy as np
import pytest

from sandbox.data import DataLoader as _DataLoader
from sandbox.data import (
    VolumeFolder,
    collate_segmentation,
    is_volume_folder,
    read_volume,
)
from sandbox.data._volumes import volume_shape
from sandbox.train._config import validation_split


def SegmentationLoader(*args, **kwargs):  # noqa: N802 - the trainer's loader: numpy batches
    return _DataLoader(*args, collate_fn=collate_segmentation, **kwargs)


def save(path, array, **npz):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npy":
        np.save(path, array)
    elif path.suffix == ".npz":
        np.savez_compressed(path, **(npz or {"arr_0": array}))
    else:  # multi-page TIFF, one page per slice
        from PIL import Image

        pages = [Image.fromarray(page) for page in array]
        pages[0].save(path, save_all=True, append_images=pages[1:])


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("a", "b", "c"):
        img = rng.integers(0, 256, (5, 6, 7), dtype=np.uint8)
        mask = rng.integers(0, 3, (5, 6, 7), dtype=np.uint8)
        save(tmp_path / "images" / f"{name}.npy", img)
        save(tmp_path / "masks" / f"{name}.npy", mask)
    (tmp_path / "images" / "notes.txt").write_text("ignored")
    return tmp_path


def test_reads_npy_pairs(folder):
    ds = VolumeFolder(folder, num_classes=3)
    assert len(ds) == 3 and ds.in_channels == 1 and ds.spatial_dims == 3
    assert ds.class_names == ("class0", "class1", "class2")
    assert ds.sizes == [(5, 6, 7)] * 3
    image, mask = ds[1]
    assert image.shape == (1, 5, 6, 7) and image.dtype == np.float32
    assert mask.shape == (5, 6, 7) and mask.dtype == np.int64
    np.testing.assert_allclose(image[0], np.load(folder / "images" / "b.npy") / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(mask, np.load(folder / "masks" / "b.npy"))
    assert is_volume_folder(folder)


def test_npz_channels_and_float_values(tmp_path):
    rng = np.random.default_rng(1)
    img = rng.standard_normal((2, 4, 5, 6)).astype(np.float32)  # (C, D, H, W), kept as is
    mask = rng.integers(0, 2, (4, 5, 6))
    save(tmp_path / "images" / "x.npz", None, image=img, spacing=np.ones(3))
    save(tmp_path / "masks" / "x.npz", mask)
    save(tmp_path / "images" / "y.npy", img[:, ::-1].copy())
    save(tmp_path / "masks" / "y.npy", mask.astype(np.float64))  # integer-valued floats
    ds = VolumeFolder(tmp_path, 2, class_names=("bg", "fg"))
    assert ds.in_channels == 2 and ds.class_names == ("bg", "fg")
    np.testing.assert_array_equal(ds[0][0], img)
    np.testing.assert_array_equal(ds[0][1], mask)
    np.testing.assert_array_equal(ds[1][1], mask)


def test_uint16_multipage_tiff(tmp_path):
    pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(2)
    img = rng.integers(0, 65536, (4, 6, 5), dtype=np.uint16)
    mask = rng.integers(0, 4, (4, 6, 5), dtype=np.uint8)
    save(tmp_path / "images" / "t.tif", img)
    save(tmp_path / "masks" / "t.tiff", mask)
    assert volume_shape(tmp_path / "images" / "t.tif") == (4, 6, 5)
    np.testing.assert_array_equal(read_volume(tmp_path / "images" / "t.tif"), img)
    ds = VolumeFolder(tmp_path, 4)
    image, labels = ds[0]
    np.testing.assert_allclose(image[0], img / 65535.0, rtol=1e-6)
    np.testing.assert_array_equal(labels, mask)
    assert is_volume_folder(tmp_path)


def test_single_page_tiffs_are_not_a_volume_folder(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    (tmp_path / "images").mkdir()
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "images" / "a.tif")
    assert not is_volume_folder(tmp_path)
    assert not is_volume_folder(tmp_path / "nowhere")


def test_batches_split_and_cache(folder):
    ds = VolumeFolder(folder, 3, cache=True)
    train, val = validation_split(ds, 0.34, seed=0)
    assert train.spatial_dims == 3 and len(val) == 1
    images, masks = next(iter(SegmentationLoader(train, batch_size=2)))
    assert images.shape == (2, 1, 5, 6, 7) and masks.shape == (2, 5, 6, 7)
    first = ds[0][0]
    first[:] = -1  # the cached copy is not handed out
    assert ds[0][0].min() >= 0


def test_folder_errors_name_the_file(tmp_path, folder):
    with pytest.raises(FileNotFoundError, match="images"):
        VolumeFolder(tmp_path / "missing", 3)

    np.save(folder / "images" / "d.npy", np.zeros((5, 6, 7), np.uint8))
    with pytest.raises(FileNotFoundError, match=r"d\.npy has no mask"):
        VolumeFolder(folder, 3)
    np.save(folder / "masks" / "d.npy", np.zeros((5, 6, 8), np.uint8))
    with pytest.raises(ValueError, match=r"shape mismatch: volume .*d\.npy is \(5, 6, 7\)"):
        VolumeFolder(folder, 3)
    np.save(folder / "masks" / "d.npy", np.full((5, 6, 7), 9, np.uint8))
    ds = VolumeFolder(folder, 3)
    with pytest.raises(ValueError, match=r"masks/d\.npy has labels \[9\] outside \[0, 3\)"):
        ds[3]
    assert VolumeFolder(folder, 3, ignore_index=9)[3][1].max() == 9

    np.save(folder / "masks" / "d.npy", np.full((5, 6, 7), 0.5))
    with pytest.raises(ValueError, match=r"d\.npy: a mask must hold integer class ids"):
        VolumeFolder(folder, 3)[3]
    np.save(folder / "masks" / "d.npy", np.zeros((5, 6, 7), np.uint8))
    np.save(folder / "images" / "d.npy", np.zeros((2, 3, 5, 6, 7), np.uint8))
    with pytest.raises(ValueError, match=r"d\.npy: expected a volume \(D, H, W\) or \(C, D"):
        VolumeFolder(folder, 3)
    np.save(folder / "images" / "d.npy", np.zeros((2, 5, 6, 7), np.uint8))
    with pytest.raises(ValueError, match=r"d\.npy has 2 channel\(s\) but .*a\.npy has 1"):
        VolumeFolder(folder, 3)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "cannot read"),
        (b"\x93NUMPY\x01\x00garbage", "cannot read"),
        (b"PK\x03\x04 not really a zip", "cannot read"),
        (b"just text", "cannot read"),
    ],
)
def test_damaged_files_give_one_line_errors(folder, content, message):
    path = folder / "images" / "b.npy"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as info:
        VolumeFolder(folder, 3)
    text = str(info.value)
    assert str(path) in text and "\n" not in text


def test_read_volume_errors(tmp_path):
    np.savez(tmp_path / "two.npz", a=np.zeros((2, 2, 2)), b=np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match=r"two\.npz holds 2 arrays \(a, b\).*'image'"):
        read_volume(tmp_path / "two.npz")
    np.save(tmp_path / "text.npy", np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"text\.npy: expected an array of real numbers"):
        read_volume(tmp_path / "text.npy")
    with pytest.raises(ValueError, match=r"text\.npy: expected an array of real numbers"):
        volume_shape(tmp_path / "text.npy")
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match=r"obj\.npy"):
        read_volume(tmp_path / "obj.npy")
    (tmp_path / "v.raw").write_bytes(b"123")
    with pytest.raises(ValueError, match=r"\.raw is not a volume format"):
        read_volume(tmp_path / "v.raw")
    with pytest.raises(FileNotFoundError, match="volume file not found"):
        read_volume(tmp_path / "none.npy")
    with pytest.raises(IsADirectoryError, match="is a folder"):
        read_volume(tmp_path)
    np.save(tmp_path / "plain.npy", np.zeros((2, 2, 2)))
    (tmp_path / "plain.npy").rename(tmp_path / "renamed.npz")
    with pytest.raises(ValueError, match=r"renamed\.npz"):
        read_volume(tmp_path / "renamed.npz")


def test_no_volume_files(tmp_path):
    (tmp_path / "images").mkdir()
    (tmp_path / "masks").mkdir()
    with pytest.raises(ValueError, match="no volume files"):
        VolumeFolder(tmp_path, 2)


def test_a_png_pair_in_a_volume_folder_is_named_not_dropped_silently(tmp_path, capsys):
    pil = pytest.importorskip("PIL.Image")
    from tests.support.cli_helpers import run_cli

    rng = np.random.default_rng(0)
    for sub in ("images", "masks"):
        (tmp_path / "data" / sub).mkdir(parents=True)
    for i in range(4):
        mask = rng.integers(0, 2, (8, 8, 8)).astype(np.uint8)
        np.save(tmp_path / "data" / "masks" / f"v{i}.npy", mask)
        np.save(tmp_path / "data" / "images" / f"v{i}.npy", mask * 100 + 20)
    for sub in ("images", "masks"):
        pil.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "data" / sub / "flat.png")
    with pytest.warns(UserWarning, match="flat.png"):
        assert len(VolumeFolder(tmp_path / "data", 2)) == 4
    status, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes",
                             "2", "--image-size", "8", "--depth", "2", "--width", "2",
                             "--batch-size", "2", "--steps", "1", "--out", tmp_path / "r",
                             "--quiet", "--no-plots")
    assert status == 0, err
    notice = err.splitlines()[0]
    assert notice.startswith("sandbox train: notice: 2 file(s) skipped: ")
    assert "images/flat.png" in notice and "masks/flat.png" in notice and ".npy" in notice
