"""ImageFolder: pairs of image/mask files read with Pillow."""

import sys

import numpy as np
import pytest

from sandbox.data import DataLoader as _DataLoader
from sandbox.data import ImageFolder, collate_segmentation
from tests.support.cli_helpers import assert_one_line_error, make_folder, run_cli


def SegmentationLoader(*args, **kwargs):  # noqa: N802 - the trainer's loader: numpy batches
    return _DataLoader(*args, collate_fn=collate_segmentation, **kwargs)

Image = pytest.importorskip("PIL.Image")


def write(path, array):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path)


@pytest.fixture
def folder(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("a", "b", "c"):
        img = rng.integers(0, 256, (12, 16), dtype=np.uint8)
        mask = rng.integers(0, 3, (12, 16), dtype=np.uint8)
        write(tmp_path / "images" / f"{name}.png", img)
        write(tmp_path / "masks" / f"{name}.png", mask)
    (tmp_path / "images" / "notes.txt").write_text("ignored")
    return tmp_path


def test_reads_grayscale_pairs(folder):
    ds = ImageFolder(folder, num_classes=3)
    assert len(ds) == 3 and ds.in_channels == 1 and ds.num_classes == 3
    assert ds.class_names == ("class0", "class1", "class2")
    image, mask = ds[1]
    assert image.shape == (1, 12, 16) and image.dtype == np.float32
    assert mask.shape == (12, 16) and mask.dtype == np.int64
    with (Image.open(folder / "images" / "b.png") as im,
          Image.open(folder / "masks" / "b.png") as mk):
        np.testing.assert_allclose(image[0], np.asarray(im) / 255.0, rtol=1e-6)
        np.testing.assert_array_equal(mask, np.asarray(mk))
    images, masks = next(iter(SegmentationLoader(ds, batch_size=3)))
    assert images.shape == (3, 1, 12, 16) and masks.shape == (3, 12, 16)


def test_rgb_images_other_extension_and_resize(tmp_path):
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (10, 8, 3), dtype=np.uint8)
    write(tmp_path / "images" / "x.png", rgb)
    mask = np.zeros((10, 8), np.uint8)
    mask[:, 4:] = 1
    write(tmp_path / "masks" / "x.tif", mask)
    ds = ImageFolder(tmp_path, num_classes=2, cache=True)
    image, m = ds[0]
    assert ds.in_channels == 3 and image.shape == (3, 10, 8)
    np.testing.assert_allclose(image, np.moveaxis(rgb, -1, 0) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(m, mask)
    image[:] = 0  # the cached copy is not affected
    assert ds[0][0].max() > 0
    small = ImageFolder(tmp_path, num_classes=2, image_size=(5, 4))
    image, m = small[0]
    assert image.shape == (3, 5, 4) and m.shape == (5, 4)
    assert set(np.unique(m)) == {0, 1}  # nearest keeps labels exact
    gray = ImageFolder(tmp_path, num_classes=2, channels=1)
    assert gray[0][0].shape == (1, 10, 8)


def test_palette_mask_and_16_bit_image(tmp_path):
    img16 = np.arange(48, dtype=np.uint16).reshape(6, 8) * 1000
    write(tmp_path / "images" / "p.png", img16)
    labels = np.tile(np.array([0, 1, 2, 1], np.uint8), (6, 2))
    pal = Image.fromarray(labels).convert("P")
    pal.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0] + [0] * (256 * 3 - 9))
    (tmp_path / "masks").mkdir()
    pal.save(tmp_path / "masks" / "p.png")
    with Image.open(tmp_path / "masks" / "p.png") as saved:
        assert saved.mode == "P"
    image, mask = ImageFolder(tmp_path, num_classes=3)[0]
    np.testing.assert_allclose(image[0], img16 / 65535.0, rtol=1e-6)
    np.testing.assert_array_equal(mask, labels)


def test_missing_partner_names_the_file(folder):
    (folder / "masks" / "c.png").unlink()
    with pytest.raises(FileNotFoundError, match=r"c\.png has no mask"):
        ImageFolder(folder, num_classes=3)
    write(folder / "masks" / "c.png", np.zeros((12, 16), np.uint8))
    write(folder / "masks" / "d.png", np.zeros((12, 16), np.uint8))
    with pytest.raises(FileNotFoundError, match=r"d\.png has no image"):
        ImageFolder(folder, num_classes=3)


def test_size_mismatch_names_the_file(folder):
    write(folder / "masks" / "b.png", np.zeros((12, 15), np.uint8))
    with pytest.raises(ValueError, match=r"size mismatch: image .*b\.png is 16x12"):
        ImageFolder(folder, num_classes=3)


def test_label_out_of_range_names_the_file(folder):
    bad = np.zeros((12, 16), np.uint8)
    bad[0, 0] = 7
    bad[1, 1] = 255
    write(folder / "masks" / "b.png", bad)
    ds = ImageFolder(folder, num_classes=3)
    ds[0]
    with pytest.raises(ValueError, match=r"b\.png has labels \[7, 255\] outside \[0, 3\)"):
        ds[1]
    ds = ImageFolder(folder, num_classes=3, ignore_index=255)
    with pytest.raises(ValueError, match=r"\[7\] outside"):
        ds[1]
    bad[0, 0] = 0
    write(folder / "masks" / "b.png", bad)
    assert ImageFolder(folder, num_classes=3, ignore_index=255)[1][1][1, 1] == 255


def test_colour_mask_rejected(folder):
    write(folder / "masks" / "a.png", np.random.default_rng(0).integers(0, 2, (12, 16, 3),
                                                                        dtype=np.uint8))
    with pytest.raises(ValueError, match=r"a\.png is a colour image"):
        ImageFolder(folder, num_classes=3)[0]


def test_empty_and_missing_folders(tmp_path):
    with pytest.raises(FileNotFoundError, match="images"):
        ImageFolder(tmp_path, num_classes=2)
    (tmp_path / "images").mkdir()
    (tmp_path / "masks").mkdir()
    with pytest.raises(ValueError, match="no image files"):
        ImageFolder(tmp_path, num_classes=2)


def test_without_pillow_explains_how_to_install(folder, monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"cpu-train-sandbox\[images\]"):
        ImageFolder(folder, num_classes=3)


# ------------------------------------- one reader, every bit depth, training = predict
def _depth_images(tmp_path):
    """The same picture as 8-bit, 16-bit and 32-bit integer PNG/TIFF and float TIFF."""
    rng = np.random.default_rng(3)
    base = rng.integers(0, 256, (32, 32))
    files = {
        "u8.png": base.astype(np.uint8),
        "u16.png": (base * 257).astype(np.uint16),  # 255 -> 65535: the same [0, 1] values
        "i32.tif": (base * 257).astype(np.int32),
        "f32.tif": (base / 255.0).astype(np.float32),
    }
    paths = {}
    for name, array in files.items():
        paths[name] = tmp_path / name
        Image.fromarray(array).save(paths[name])
    return base / 255.0, paths


def test_read_image_keeps_every_depth_and_matches_image_folder(tmp_path):
    from sandbox.data._folder import read_image

    expected, paths = _depth_images(tmp_path)
    for name, path in paths.items():
        image = read_image(path, 1)
        assert image.dtype == np.float32 and image.shape == (1, 32, 32), name
        np.testing.assert_allclose(image[0], expected, atol=1e-6, err_msg=name)
        root = tmp_path / name.replace(".", "_")
        (root / "images").mkdir(parents=True)
        (root / "masks").mkdir()
        Image.fromarray(np.zeros((32, 32), np.uint8)).save(root / "masks" / f"{path.stem}.png")
        (root / "images" / path.name).write_bytes(path.read_bytes())
        np.testing.assert_array_equal(ImageFolder(root, 2)[0][0], image)  # training's view


def test_predict_reads_16_bit_and_float_images_as_training_does(tmp_path, capsys):
    from tests.support.cli_helpers import TINY, run_cli

    run = tmp_path / "run"
    assert run_cli(capsys, "train", *TINY, "--steps", "2", "--out", run)[0] == 0
    _, paths = _depth_images(tmp_path)
    masks = {}
    for name, path in paths.items():
        out = tmp_path / f"{path.stem}_mask.png"
        status, _, err = run_cli(capsys, "predict", run / "last.ckpt", path, "--out", out)
        assert status == 0, err
        masks[name] = np.asarray(Image.open(out))
    for name, mask in masks.items():  # 16-bit all-foreground, float all-background before
        np.testing.assert_array_equal(mask, masks["u8.png"], err_msg=name)


def test_binary_masks_saved_as_0_255_are_read_as_classes_with_a_notice(tmp_path, capsys):
    from tests.support.cli_helpers import make_folder, run_cli

    data = make_folder(tmp_path / "data", [(16, 16)] * 4)
    for mask in (data / "masks").iterdir():
        labels = np.asarray(Image.open(mask))
        Image.fromarray((labels * 255).astype(np.uint8)).save(mask)
    with pytest.warns(UserWarning, match="0/255"):
        pairs = ImageFolder(data, 2)
        assert set(np.unique(pairs[0][1])) <= {0, 1}
    status, _, err = run_cli(capsys, "train", "--data", data, "--num-classes", "2",
                             "--image-size", "16", "--depth", "2", "--batch-size", "2",
                             "--steps", "1", "--out", tmp_path / "r", "--quiet", "--no-plots")
    assert status == 0, err
    lines = err.splitlines()
    assert lines[0].startswith("sandbox train: notice: masks saved as 0/255")  # before header
    assert sum("0/255" in line for line in lines) == 1
    assert lines[1].startswith("training ")
    # 255 among other labels is not a 0/255 mask: refused, with the fix named
    Image.fromarray(np.array([[0, 1], [255, 1]] * 8, np.uint8).repeat(8, 1)).save(
        next((data / "masks").iterdir()))
    status, _, err = run_cli(capsys, "train", "--data", data, "--num-classes", "2",
                             "--image-size", "16", "--depth", "2", "--batch-size", "2",
                             "--steps", "4", "--no-augment", "--out", tmp_path / "r2",
                             "--quiet", "--no-plots")
    assert status == 2 and "ignore_index=255" in err and "only 0 and 255" in err


def test_small_folder_images_name_the_image_size_option(tmp_path, capsys):
    make_folder(tmp_path / "data", [(64, 64)] * 4)
    status, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes", "2",
                             "--steps", "1", "--out", tmp_path / "r", "--quiet")
    assert_one_line_error(status, err, "--image-size 64", "s0.png (64x64)")


@pytest.mark.parametrize("augment", [[], ["--no-augment"]])
def test_folder_images_of_different_sizes_train_and_validate(tmp_path, capsys, augment):
    sizes = [(40, 48), (64, 36), (50, 50), (33, 70), (48, 48), (60, 40)]
    make_folder(tmp_path / "data", sizes)
    status, out, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes",
                               "2", "--epochs", "1", "--image-size", "32", "--depth", "2",
                               "--width", "4", "--batch-size", "2", "--out", tmp_path / "r",
                               "--quiet", "--no-plots", *augment)
    assert status == 0, err
    assert "done: 2 steps" in out and "val mean IoU" in out


def test_unreadable_images_are_named_in_predict_and_train(finished_run, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    status, _, err = run_cli(capsys, "predict", finished_run / "best.ckpt", notes)
    assert_one_line_error(status, err, "cannot read", str(notes), command="predict")
    make_folder(tmp_path / "data", [(20, 20)] * 4)
    (tmp_path / "data" / "images" / "s2.png").write_bytes(b"\x89PNG garbage")
    status, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes", "2",
                             "--image-size", "16", "--depth", "2", "--steps", "1",
                             "--out", tmp_path / "r", "--quiet")
    assert_one_line_error(status, err, "cannot read", "s2.png")
