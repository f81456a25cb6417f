"""Training on volumes: shapes3d and folders of volumes, checkpoints, resume, predict, CLI."""

import json
from types import SimpleNamespace

import numpy as np
import pytest

from sandbox.cli.train_options import PRESETS, config_from_args
from sandbox.data import Shapes3D
from sandbox.train import (
    TrainConfig,
    Trainer,
    checkpoint,
    load_model,
    predict_file,
    predict_volume_file,
)
from tests.support.cli_helpers import assert_one_line_error, run_cli

TINY3D = ["--image-size", "16", "--depth", "2", "--width", "4", "--batch-size", "2",
          "--quiet", "--no-plots"]


def tiny3d(out, **overrides):
    values = dict(
        data="shapes3d",
        image_size=16,
        depth=2,
        width=4,
        train_samples=6,
        val_samples=2,
        batch_size=2,
        epochs=2,
        lr=1e-2,
        loss="ce+dice",
        log_every=1,
        progress=False,
        plots=False,
        out=str(out),
        threads=2,
    )
    values.update(overrides)
    return TrainConfig(**values)


def _train_losses(out):
    lines = (out / "log.jsonl").read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines if '"train"' in line]


def test_shapes3d_trains_a_3d_unet_and_stores_it(tmp_path):
    trainer = Trainer(tiny3d(tmp_path))
    assert trainer.spatial_dims == 3 and trainer.model.spatial_dims == 3
    assert trainer.class_names == ("background", "ball", "rod", "shell")
    images, masks = next(iter(trainer.train_loader.batches(0)))
    assert images.shape == (2, 1, 16, 16, 16) and masks.shape == (2, 16, 16, 16)
    summary = trainer.fit()
    assert summary["finished"] and summary["steps"] == 6
    final = summary["final"]
    assert 0.0 <= final["mean_iou"] <= 1.0 and "iou/shell" in final
    state = checkpoint.load(tmp_path / "last.ckpt")
    assert state["data"]["spatial_dims"] == 3
    model, info = load_model(tmp_path / "best.ckpt")
    assert model.spatial_dims == 3 and info["spatial_dims"] == 3


def test_resume_equals_uninterrupted_3d_training(tmp_path):
    full = Trainer(tiny3d(tmp_path / "full"))
    full.fit()
    first = Trainer(tiny3d(tmp_path / "split"), stop_after=4)
    assert not first.fit()["finished"]
    resumed = Trainer(tiny3d(tmp_path / "split"), resume=True)
    assert resumed.step == 4
    resumed.fit()
    assert _train_losses(tmp_path / "split") == _train_losses(tmp_path / "full")
    a, b = full.model.state_dict(), resumed.model.state_dict()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_plots_of_a_3d_run(tmp_path):
    pytest.importorskip("matplotlib")
    summary = Trainer(tiny3d(tmp_path, plots=True, epochs=1)).fit()
    assert sorted(p.rsplit("/", 1)[1] for p in summary["plots"]) == [
        "curves.png", "predictions.png"
    ]
    assert (tmp_path / "predictions.png").stat().st_size > 1000


def _volume_folder(root, n=4, size=(16, 18, 20)):
    rng = np.random.default_rng(0)
    for i in range(n):
        (root / "images").mkdir(parents=True, exist_ok=True)
        (root / "masks").mkdir(parents=True, exist_ok=True)
        mask = np.zeros(size, np.uint8)
        mask[4:12, 4:12, 4:12] = 1
        image = (mask * 180 + rng.integers(0, 60, size)).astype(np.uint8)
        np.save(root / "images" / f"v{i}.npy", image)
        np.savez_compressed(root / "masks" / f"v{i}.npz", mask=mask)
    return root


def test_volume_folder_trains_on_crops(tmp_path):
    folder = _volume_folder(tmp_path / "data")
    cfg = tiny3d(tmp_path / "run", data=str(folder), num_classes=2)
    trainer = Trainer(cfg)
    assert trainer.spatial_dims == 3
    images, masks = next(iter(trainer.train_loader.batches(0)))
    assert images.shape == (2, 1, 16, 16, 16)  # random 16^3 crops of 16x18x20 volumes
    summary = trainer.fit()
    assert "dice_fg" in summary["final"]
    with pytest.raises(ValueError, match=r"do not fit the smallest image, .*\(16x18x20\)"):
        Trainer(tiny3d(tmp_path / "run2", data=str(folder), num_classes=2, image_size=24))


def test_predict_on_a_volume_writes_mask_and_montage(tmp_path):
    Trainer(tiny3d(tmp_path / "run")).fit()
    ckpt = tmp_path / "run" / "best.ckpt"
    image, _ = Shapes3D(1, 16, seed=9)[0]
    np.save(tmp_path / "vol.npy", image[0])
    result = predict_file(ckpt, tmp_path / "vol.npy")
    assert result["mask"] == str(tmp_path / "vol_mask.npy")
    labels = np.load(tmp_path / "vol_mask.npy")
    assert labels.shape == (16, 16, 16) and labels.max() < 4
    assert sum(result["voxels_per_class"].values()) == 16**3
    if result["montage"] is not None:  # Pillow installed
        assert result["montage"] == str(tmp_path / "vol_montage.png")
    model, _ = load_model(ckpt)
    from sandbox.train import predict_volume

    np.testing.assert_array_equal(labels, predict_volume(model, image))

    with pytest.raises(ValueError, match=r"use the \.npy extension"):
        predict_volume_file(ckpt, tmp_path / "vol.npy", out=tmp_path / "m.png")
    with pytest.raises(ValueError, match="is the input file itself"):
        predict_volume_file(ckpt, tmp_path / "vol.npy", out=tmp_path / "vol.npy")
    np.save(tmp_path / "small.npy", np.zeros((3, 16, 16), np.float32))
    with pytest.raises(ValueError, match=r"small\.npy is 3x16x16 voxels; .* at least 4"):
        predict_volume_file(ckpt, tmp_path / "small.npy")
    np.save(tmp_path / "two.npy", np.zeros((2, 8, 8, 8), np.float32))
    with pytest.raises(ValueError, match=r"two\.npy has 2 channel\(s\); this model takes 1"):
        predict_volume_file(ckpt, tmp_path / "two.npy")


def _args(**given):
    names = ("data", "num_classes", "image_size", "train_samples", "val_samples", "augment",
             "upsample", "align_corners", "antialias", "depth", "width", "norm", "epochs",
             "steps", "batch_size", "lr", "weight_decay", "scheduler", "loss", "patience",
             "threads", "seed", "out")
    values = dict.fromkeys(names)
    values.update(given, quiet=True, plots=False)
    return SimpleNamespace(**values)


def test_presets(tmp_path):
    cfg = config_from_args(_args(data="shapes3d"))
    for name, value in PRESETS["shapes3d"].items():
        assert getattr(cfg, name) == value, name
    assert cfg.depth == 3 and cfg.width == 8 and cfg.batch_size == 4
    # Given options win over the preset; the 2-D presets and defaults are unchanged.
    assert config_from_args(_args(data="shapes3d", width=16)).width == 16
    shapes = config_from_args(_args())
    assert (shapes.data, shapes.width, shapes.batch_size, shapes.image_size) == (
        "shapes", 16, 8, 64)
    folder = _volume_folder(tmp_path / "vols")
    cfg = config_from_args(_args(data=str(folder), num_classes=2))
    assert (cfg.image_size, cfg.width, cfg.batch_size) == (32, 8, 4)


def test_cli_trains_and_predicts_volumes(tmp_path, capsys):
    out = tmp_path / "run"
    status, stdout, err = run_cli(capsys, "train", "--data", "shapes3d", "--steps", "2",
                                  "--train-samples", "4", "--val-samples", "2", *TINY3D,
                                  "--out", out)
    assert status == 0, err
    assert stdout.startswith("done: 2 steps")
    image, _ = Shapes3D(1, 16, seed=3)[0]
    np.savez(tmp_path / "v.npz", image=image)
    status, stdout, err = run_cli(capsys, "predict", out / "best.ckpt", tmp_path / "v.npz")
    assert status == 0, err
    assert json.loads(stdout)["mask"] == str(tmp_path / "v_mask.npy")
    status, _, err = run_cli(capsys, "predict", out / "best.ckpt", tmp_path / "v.npz",
                             "--out", tmp_path / "v.png")
    assert_one_line_error(status, err, "use the .npy extension", command="predict")


@pytest.mark.parametrize(
    "argv, needles",
    [
        (["--num-classes", "9"], ["num_classes for shapes3d must be 2 to 6"]),
        (["--val-samples", "0"], ["val_samples must be a positive integer"]),
        (["--image-size", "4"], ["too small for depth=3"]),
    ],
)
def test_cli_errors_for_shapes3d_are_one_line(tmp_path, capsys, argv, needles):
    status, _, err = run_cli(capsys, "train", "--data", "shapes3d", *argv, "--out",
                             tmp_path / "r", "--quiet")
    assert_one_line_error(status, err, *needles)
