"""The trainer: exact resume, atomic checkpoints, NaN stop, Ctrl-C, early stop, plots; and
training on volumes: shapes3d and folders of volumes, checkpoints, predict, CLI."""

import json
import os
import signal
import stat
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from sandbox.cli.train_options import PRESETS, config_from_args
from sandbox.data import Shapes3D
from sandbox.train import (
    TrainConfig,
    Trainer,
    TrainingDiverged,
    TrainingInterrupted,
    checkpoint,
    load_model,
    predict_file,
    predict_volume_file,
)
from tests.support.cli_helpers import TINY, assert_one_line_error, copy_run, messages, run_cli


def tiny_config(out, **overrides):
    values = dict(
        data="shapes",
        image_size=16,
        depth=2,
        width=4,
        train_samples=16,
        val_samples=4,
        batch_size=4,
        epochs=2,
        lr=5e-3,
        log_every=1,
        progress=False,
        plots=False,
        out=str(out),
        threads=2,
    )
    values.update(overrides)
    return TrainConfig(**values)


def _params(trainer):
    return {k: v.copy() for k, v in trainer.model.state_dict().items()}


def _train_losses(out):
    lines = (out / "log.jsonl").read_text().splitlines()
    return [json.loads(line)["loss"] for line in lines if '"train"' in line]


@pytest.mark.parametrize("spatial_dims, stop_after", [(2, 3), (2, 4), (2, 5), (3, 4)])
def test_resume_equals_uninterrupted_training(tmp_path, spatial_dims, stop_after):
    config = tiny_config if spatial_dims == 2 else tiny3d
    full = Trainer(config(tmp_path / "full"))
    full.fit()

    first = Trainer(config(tmp_path / "split"), stop_after=stop_after)
    summary = first.fit()
    assert not summary["finished"] and summary["steps"] == stop_after
    resumed = Trainer(config(tmp_path / "split"), resume=True)
    assert resumed.step == stop_after
    resumed.fit()

    assert _train_losses(tmp_path / "split") == _train_losses(tmp_path / "full")
    a, b = _params(full), _params(resumed)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def test_resume_refuses_changed_settings(tmp_path):
    Trainer(tiny_config(tmp_path), stop_after=1).fit()
    with pytest.raises(ValueError, match=r"different settings for: lr"):
        Trainer(tiny_config(tmp_path, lr=1.0), resume=True)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        Trainer(tiny_config(tmp_path / "empty"), resume=True)


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "c.ckpt"
    checkpoint.save({"w": np.arange(3.0), "step": 1}, path)

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save({"w": np.zeros(3), "step": 2}, path)
    monkeypatch.undo()
    state = checkpoint.load(path)
    assert state["step"] == 1
    np.testing.assert_array_equal(state["w"], np.arange(3.0))
    assert [p.name for p in tmp_path.iterdir()] == ["c.ckpt"]  # no temp file left


def test_checkpoint_round_trips_nested_state(tmp_path):
    rng = np.random.default_rng(0)
    state = {
        "a": {1: np.ones((2, 2), np.float32), "x": (1, 2.5, None)},
        "r": rng.bit_generator.state,
        "list": [np.int64(3), "s", True],
    }
    checkpoint.save(state, tmp_path / "s.ckpt")
    back = checkpoint.load(tmp_path / "s.ckpt")
    assert back["a"]["x"] == (1, 2.5, None) and back["list"] == [3, "s", True]
    assert back["a"][1].dtype == np.float32
    assert back["r"] == state["r"]
    (tmp_path / "junk.ckpt").write_text("not a checkpoint")
    with pytest.raises(ValueError, match="not a sandbox checkpoint"):
        checkpoint.load(tmp_path / "junk.ckpt")
    with pytest.raises(TypeError, match="cannot store object"):
        checkpoint.save({"bad": object()}, tmp_path / "bad.ckpt")


def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
    trainer = Trainer(tiny_config(tmp_path), stop_after=2)
    trainer.fit()
    good = checkpoint.load(tmp_path / "last.ckpt")
    trainer.stop_after = None
    trainer.model.head.weight.numpy()[...] = np.nan
    with pytest.raises(TrainingDiverged, match=r"loss became nan at step 3 .*last\.ckpt"):
        trainer.fit()
    after = checkpoint.load(tmp_path / "last.ckpt")
    assert after["position"]["step"] == 2
    for k, v in good["model"].items():
        np.testing.assert_array_equal(after["model"][k], v)
        assert np.all(np.isfinite(v))


def test_ctrl_c_saves_a_checkpoint_then_stops(tmp_path):
    trainer = Trainer(tiny_config(tmp_path))
    original_step = trainer.optimizer.step
    calls = []

    def step_and_interrupt():
        original_step()
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)

    trainer.optimizer.step = step_and_interrupt
    before = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN if inherited
    with pytest.raises(TrainingInterrupted, match="interrupted at step 2"):
        trainer.fit()
    assert checkpoint.load(tmp_path / "last.ckpt")["position"]["step"] == 2
    assert signal.getsignal(signal.SIGINT) is before  # the handler put back as it was


def test_early_stopping_and_best_checkpoint(tmp_path, monkeypatch):
    scores = iter([0.5, 0.4, 0.3, 0.2])

    def fake_evaluate(self, loader=None):
        s = next(scores)
        return {"loss": 1.0, "mean_iou": s, "mean_dice": s, "pixel_accuracy": s}

    monkeypatch.setattr(Trainer, "evaluate", fake_evaluate)
    trainer = Trainer(tiny_config(tmp_path, epochs=4, patience=2))
    summary = trainer.fit()
    assert summary["epochs"] == 3  # epoch 0 best, then two epochs without improvement
    assert summary["best_epoch"] == 0 and summary["best_score"] == 0.5
    assert checkpoint.load(tmp_path / "best.ckpt")["position"]["epoch"] == 1


def test_training_learns_and_writes_plots(tmp_path):
    pytest.importorskip("matplotlib")
    cfg = tiny_config(tmp_path, epochs=3, plots=True, lr=2e-2)
    trainer = Trainer(cfg)
    summary = trainer.fit()
    losses = _train_losses(tmp_path)
    assert np.mean(losses[-3:]) < np.mean(losses[:3])
    assert summary["finished"] and summary["final"]["mean_iou"] is not None
    for name in ("curves.png", "predictions.png", "summary.json", "config.json", "best.ckpt"):
        assert (tmp_path / name).is_file(), name


def test_nuclei_runs_and_reports_foreground_dice(tmp_path):
    cfg = tiny_config(
        tmp_path, data="nuclei", image_size=32, train_samples=4, epochs=1, loss="ce+dice"
    )
    summary = Trainer(cfg).fit()
    assert 0.0 <= summary["final"]["dice_fg"] <= 1.0


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (dict(data=""), "data must be one of"),
        (dict(upsample="transposed", antialias=True), "do not apply to upsample='transposed'"),
        (dict(upsample="transposed", align_corners=False), "do not apply"),
        (dict(data="nuclei", num_classes=3), "num_classes does not apply"),
        (dict(lr=-1.0), "lr must be a positive"),
        (dict(loss="focal"), "loss must be one of"),
        (dict(epochs=0), "epochs must be a positive integer"),
        (dict(image_size=8, depth=4), "too small for depth=4"),
        (dict(upsample="nearest", align_corners=True), "align_corners"),
        (dict(upsample="area", antialias=True), "antialias"),
    ],
)
def test_bad_config_is_rejected(tmp_path, overrides, match):
    with pytest.raises(ValueError, match=match):
        tiny_config(tmp_path, **overrides)


def test_without_matplotlib_training_finishes_with_a_message(tmp_path, monkeypatch, capsys):
    from sandbox.train import _plots

    monkeypatch.setattr(_plots, "_pyplot", lambda: None)
    summary = Trainer(tiny_config(tmp_path, epochs=1, plots=True)).fit()
    assert summary["finished"] and summary["plots"] == []
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert not (tmp_path / "curves.png").exists()


# ------------------------------------------- the run folder: nothing lost, nothing left
def _bad_mask_folder(root):
    """A folder dataset whose masks hold a label outside the two classes."""
    from tests.support.cli_helpers import make_folder

    pytest.importorskip("PIL.Image")
    from PIL import Image

    data = make_folder(root, [(16, 16)] * 4)
    for mask in sorted((data / "masks").iterdir()):
        Image.fromarray(np.full((16, 16), 7, np.uint8)).save(mask)
    return data


def test_overwrite_keeps_the_old_run_until_the_new_one_works(tmp_path, capsys):
    from tests.support.cli_helpers import TINY, assert_one_line_error, run_cli

    run = tmp_path / "run"
    assert run_cli(capsys, "train", *TINY, "--steps", "2", "--out", run)[0] == 0
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    data = _bad_mask_folder(tmp_path / "bad")
    status, _, err = run_cli(capsys, "train", "--data", data, "--num-classes", "2",
                             "--image-size", "16", "--depth", "2", "--batch-size", "2",
                             "--out", run, "--overwrite", "--quiet", "--no-plots")
    assert_one_line_error(status, err, "labels [7]")
    after = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    assert after == before  # the old run is all there, .lock included


def test_a_run_that_fails_at_start_leaves_the_folder_as_it_found_it(tmp_path, capsys):
    from tests.support.cli_helpers import TINY, run_cli

    data = _bad_mask_folder(tmp_path / "bad")
    new = tmp_path / "a" / "b" / "run"
    argv = ["train", "--data", data, "--num-classes", "2", "--image-size", "16", "--depth",
            "2", "--batch-size", "2", "--quiet", "--no-plots"]
    assert run_cli(capsys, *argv, "--out", new)[0] == 2
    assert not (tmp_path / "a").exists()  # folders it made are gone
    existing = tmp_path / "mine"
    existing.mkdir()
    (existing / "notes.txt").write_text("mine")
    assert run_cli(capsys, *argv, "--out", existing)[0] == 2
    assert sorted(p.name for p in existing.iterdir()) == ["notes.txt"]
    # and the default-style folder then takes a good run without --overwrite
    assert run_cli(capsys, "train", *TINY, "--steps", "1", "--out", existing)[0] == 0


def test_a_start_without_checkpoint_is_taken_over_with_a_notice(tmp_path, capsys):
    from tests.support.cli_helpers import TINY, run_cli

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")  # e.g. killed by the OOM killer at step 5
    (run / "log.jsonl").write_text('{"kind": "train", "step": 1}\n')
    status, _, err = run_cli(capsys, "train", *TINY, "--steps", "1", "--out", run)
    assert status == 0
    assert "sandbox train: notice: run folder" in err and "never wrote a checkpoint" in err
    log = (run / "log.jsonl").read_text().splitlines()
    assert len(log) == 2 and json.loads(log[0])["loss"]  # the new run's log only
    status, _, err = run_cli(capsys, "train", *TINY, "--steps", "1", "--out", run)
    assert status == 2 and "already holds a run" in err  # a real run is refused


def _one_epoch_config(out, **overrides):
    values = dict(data="shapes", image_size=16, depth=2, width=4, train_samples=8,
                  val_samples=4, batch_size=4, epochs=1, progress=False, plots=False,
                  out=str(out))
    return TrainConfig(**{**values, **overrides})


KILL_DURING_SAVE = """
import os, signal, sys
import numpy as np
from sandbox import checkpoint
os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # die between write and rename
checkpoint.save({"w": np.zeros(100000)}, sys.argv[1])
"""


def test_temp_files_of_killed_saves_are_removed_at_the_next_start(finished_run, tmp_path, capsys):
    import subprocess
    import sys

    from tests.support.cli_helpers import ROOT

    run = copy_run(finished_run, tmp_path / "run")
    result = subprocess.run([sys.executable, "-c", KILL_DURING_SAVE, str(run / "last.ckpt")],
                            env={"PYTHONPATH": str(ROOT)}, capture_output=True)
    assert result.returncode == -9
    orphans = list(run.glob(".last.ckpt.*.tmp"))
    assert len(orphans) == 1 and orphans[0].stat().st_size > 100_000
    checkpoint.load(run / "last.ckpt")  # the checkpoint itself is intact
    status, _, err = run_cli(capsys, "train", "--resume", "--out", run, "--quiet", "--no-plots")
    assert status == 0, err
    assert not list(run.glob("*.tmp")) and not list(run.glob(".*.tmp"))


def test_a_new_run_refuses_an_existing_run_folder(finished_run, tmp_path, capsys):
    run = copy_run(finished_run, tmp_path / "run")
    before = (run / "log.jsonl").read_text()
    status, _, err = run_cli(capsys, "train", "--steps", "1", "--out", run, *TINY)
    assert_one_line_error(status, err, "already holds a run", "--resume", "--overwrite")
    assert (run / "log.jsonl").read_text() == before
    status, out, err = run_cli(capsys, "train", "--steps", "1", "--out", run, "--overwrite",
                               *TINY)
    assert status == 0, err
    log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert max(e["step"] for e in log) == 1  # the old run's log is gone, not appended to
    afile = tmp_path / "afile"
    afile.write_text("x")
    status, _, err = run_cli(capsys, "train", "--out", afile, *TINY)
    assert_one_line_error(status, err, "is a file, not a folder")


def test_two_runs_cannot_share_a_folder_at_once(tmp_path):
    first = Trainer(_one_epoch_config(tmp_path))
    with pytest.raises(ValueError, match="in use by another training run"):
        Trainer(_one_epoch_config(tmp_path), overwrite=True)
    first.fit()  # releases the folder when done
    Trainer(_one_epoch_config(tmp_path), overwrite=True).close()


def test_a_ctrl_c_inside_the_progress_bars_close_is_held_until_it_is_closed():
    """A second Ctrl-C landing inside tqdm's close() (the real-process test met it) is
    delivered once the bar is closed: the bar is not left open for its finalizer to print
    again after the CLI's last line."""
    from sandbox.train import _interrupt

    class Bar:
        closed = False

        def close(self):
            os.kill(os.getpid(), signal.SIGINT)  # arrives while closing
            self.closed = True

    def second_ctrl_c(signum, frame):
        raise KeyboardInterrupt("stopped at once by a second Ctrl-C")

    bar = Bar()
    previous = signal.signal(signal.SIGINT, second_ctrl_c)
    try:
        with pytest.raises(KeyboardInterrupt, match="second Ctrl-C"):
            _interrupt.close_progress(bar)
        assert bar.closed
        assert signal.getsignal(signal.SIGINT) is second_ctrl_c  # the handler put back
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C ignored (the CLI, stopping):
        ignored = Bar()
        _interrupt.close_progress(ignored)  # nothing delivered afterwards
        assert ignored.closed and signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_second_ctrl_c_ends_in_one_line(tmp_path, capsys, monkeypatch):
    import signal

    from sandbox.train import _interrupt

    trainer = Trainer(_one_epoch_config(tmp_path))
    previous = _interrupt.install_sigint(trainer)
    try:
        handler = signal.getsignal(signal.SIGINT)
        handler(signal.SIGINT, None)  # first: finish the step, save, stop
        with pytest.raises(KeyboardInterrupt, match="second Ctrl-C"):
            handler(signal.SIGINT, None)
    finally:
        signal.signal(signal.SIGINT, previous)
        trainer.close()
    capsys.readouterr()

    def interrupted(self):
        raise KeyboardInterrupt("stopped at once by a second Ctrl-C; steps ... are lost")

    monkeypatch.setattr(Trainer, "fit", interrupted)
    status, _, err = run_cli(capsys, "train", "--steps", "1", "--out", tmp_path / "x", *TINY)
    lines = messages(err)
    assert status == 130 and len(lines) == 1 and "Traceback" not in err
    assert lines[0].startswith("sandbox train: stopped at once by a second Ctrl-C")


def test_nan_stop_message_comes_without_numpy_warnings(tmp_path):
    trainer = Trainer(_one_epoch_config(tmp_path))
    trainer.model.head.weight.numpy()[...] = 1e38  # overflows on the way to a NaN loss
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would fail the test
        with pytest.raises(TrainingDiverged, match="loss became"):
            trainer.fit()


def test_checkpoints_get_normal_file_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        path = checkpoint.save({"w": np.zeros(2)}, tmp_path / "c.ckpt")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_predictions_plot_has_a_class_legend():
    plt = pytest.importorskip("matplotlib.pyplot")
    from sandbox.train._plots import _class_legend

    fig = plt.figure()
    _class_legend(fig, ("background", "disc", "square"))
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "background (no colour)", "disc", "square"]
    plt.close(fig)


# 3-D --------------------------------------------------------------------------
TINY3D = ["--image-size", "16", "--depth", "2", "--width", "4", "--batch-size", "2",
          "--quiet", "--no-plots"]


def tiny3d(out, **overrides):
    """tiny_config for volumes: 6 + 2 synthetic 3-D samples, batch 2, CE + Dice."""
    settings = dict(data="shapes3d", train_samples=6, val_samples=2, batch_size=2, lr=1e-2,
                    loss="ce+dice")
    settings.update(overrides)
    return tiny_config(out, **settings)


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
