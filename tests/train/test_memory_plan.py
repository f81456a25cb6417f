"""Memory estimates before anything big is allocated (issue 22, item 1).

The estimate of a UNet's forward is checked once against the tracemalloc peak, and every
command (train, predict, export, bench) refuses what would not fit, in one line before
its header, naming the size, the estimate and what to do.  Large images predict in
overlapping tiles with the labels of the whole-image prediction.
"""

import tracemalloc

import numpy as np
import pytest

from sandbox import nn
from sandbox.autograd import Tensor, no_grad
from sandbox.train._memory_plan import (
    eval_bytes,
    model_widths,
    train_step_bytes,
    unet_forward_count,
)
from sandbox.train._tiles import receptive_radius, tile_margin
from tests.support.cli_helpers import TINY, assert_one_line_error, run_cli


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dims, size, batch", [(2, 128, 2), (3, 16, 2)])
def test_the_estimate_is_within_a_small_factor_of_the_measured_peak(dims, size, batch):
    import sandbox.functional as F

    model = nn.UNet(1, 3, depth=2, base_width=8, spatial_dims=dims)
    rng = np.random.default_rng(0)
    x = rng.random((batch, 1, *(size,) * dims), dtype=np.float32)
    y = rng.integers(0, 3, (batch, *(size,) * dims))
    count = unet_forward_count(1, 3, model_widths(model), (size,) * dims)

    def step():
        F.cross_entropy(model(Tensor(x)), Tensor(y)).backward()

    def forward():
        model.eval()
        with no_grad():
            model(Tensor(x[:1]))
        model.train()

    step()  # warm-up: kernels' first-call tables
    measured_train, measured_eval = _peak(step), _peak(forward)
    assert 0.8 <= train_step_bytes(count, batch) / measured_train <= 6
    assert 0.8 <= eval_bytes(count, 1) / measured_eval <= 8


# --------------------------------------------------------------------- train
@pytest.mark.parametrize("argv, needles", [
    (["--image-size", "5000", "--steps", "1"], ["5000x5000", "--image-size", "--batch-size"]),
    (["--image-size", "2048", "--batch-size", "64"], ["2048x2048", "batches of 64"]),
    (["--image-size", "100000"], ["100000x100000"]),
    (["--data", "shapes3d", "--image-size", "1000"], ["1000x1000x1000 volumes"]),
])
def test_train_refuses_what_does_not_fit_before_the_header(tmp_path, capsys, argv, needles):
    out = tmp_path / "run"
    status, _, err = run_cli(capsys, "train", *argv, "--out", out, "--no-plots")
    line = assert_one_line_error(status, err, "needs an estimated", "memory limit", *needles)
    assert "training " not in err.split("error:")[0]  # no header before the refusal
    assert "GB" in line or "TB" in line or "PB" in line
    assert not out.exists()  # the run folder is left as it was: not there


def test_the_train_limit_is_sandbox_max_memory(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "100K")
    status, _, err = run_cli(capsys, "train", *TINY, "--steps", "1", "--out", tmp_path / "r")
    assert_one_line_error(status, err, "16x16 images in batches of 4", "100 KB")
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "1G")
    assert run_cli(capsys, "train", *TINY, "--steps", "1", "--out", tmp_path / "r")[0] == 0


def test_synthetic_sets_are_cached_when_they_fit_and_counted(monkeypatch):
    from sandbox.train import TrainConfig, build_datasets
    from sandbox.train._memory_plan import check_training

    cfg = TrainConfig(image_size=32, train_samples=40, val_samples=8)
    train, val = build_datasets(cfg)
    assert train.cache and val.cache  # 48 samples of 32x32: far below a quarter of the limit
    with_cache = check_training(cfg, train, val, 2)
    assert train.cache_bytes() == 40 * 32 * 32 * 12
    # 48 * 32 * 32 * 12 bytes = 576 KiB: above a quarter of a 2 MiB limit, not cached
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "2M")
    train, val = build_datasets(cfg)
    assert not train.cache and not val.cache
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "100G")
    assert check_training(cfg, train, val, 2) == with_cache - 48 * 32 * 32 * 12


# ------------------------------------------------------------------- predict
def test_tiles_give_the_whole_image_prediction():
    from sandbox.train._predict import predict, predict_tiled

    model = nn.UNet(1, 3, depth=2, base_width=4)
    model.eval()
    margin = tile_margin(2)
    assert margin % 4 == 0 and margin >= receptive_radius(2)
    image = np.random.default_rng(1).random((1, 150, 230), dtype=np.float32)
    with no_grad():
        whole = model(Tensor(image[None])).numpy()[0]
    tiled = predict_tiled(model, image, tile=2 * margin + 32, reduce=lambda logits: logits)
    # every pixel (seams included, as the margin covers the receptive field): rounding only
    np.testing.assert_allclose(tiled, whole, rtol=1e-4, atol=1e-4 * np.abs(whole).max())
    labels = predict(model, image, tile=2 * margin + 32)
    assert labels.shape == (150, 230)
    assert (labels == whole.argmax(axis=0)).mean() > 0.999


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from sandbox.cli.commands import main

    out = tmp_path_factory.mktemp("mem") / "run"
    assert main(["train", "--steps", "2", "--out", str(out), *TINY]) == 0
    return out / "last.ckpt"


def test_predict_tiles_an_image_too_large_for_the_limit(trained, tmp_path, capsys,
                                                        monkeypatch):
    pil = pytest.importorskip("PIL.Image")
    image = (np.random.default_rng(2).random((200, 300)) * 255).astype(np.uint8)
    path = tmp_path / "big.png"
    pil.fromarray(image).save(path)
    assert run_cli(capsys, "predict", trained, path, "--out", tmp_path / "whole.png")[0] == 0
    whole = np.asarray(pil.open(tmp_path / "whole.png"))
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "12M")
    status, _, err = run_cli(capsys, "predict", trained, path, "--out", tmp_path / "t.png",
                             "--overlay", tmp_path / "t_overlay.png")
    assert status == 0, err
    assert "sandbox predict: notice: " in err and "tiles of" in err and "--tile" in err
    assert (np.asarray(pil.open(tmp_path / "t.png")) == whole).mean() > 0.999
    status, _, err = run_cli(capsys, "predict", trained, path, "--tile", "30")
    assert_one_line_error(status, err, "--tile 30", "multiple of 4", command="predict")
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "100K")
    status, _, err = run_cli(capsys, "predict", trained, path, "--out", tmp_path / "u.png")
    assert_one_line_error(status, err, "200x300", "needs an estimated", command="predict")


# -------------------------------------------------------------- export, bench
def test_export_refuses_a_size_that_does_not_fit(trained, tmp_path, capsys):
    pytest.importorskip("onnx")
    status, _, err = run_cli(capsys, "export", trained, "--to", "onnx", "--size", "100000",
                             "--out", tmp_path / "m.onnx")
    assert_one_line_error(status, err, "--size 100000x100000", "needs an estimated",
                          "use a smaller --size", command="export")
    assert not (tmp_path / "m.onnx").exists()


def test_bench_refuses_before_running(capsys, monkeypatch):
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "1M")
    status, out, err = run_cli(capsys, "bench", "--quick", "--no-torch", "--filter",
                               "unet-step/nearest")
    assert_one_line_error(status, err, "benchmark suite", "needs an estimated", "--filter",
                          command="bench")
    assert out == ""  # nothing timed


def test_a_6000_pixel_image_is_planned_in_tiles_that_fit():
    from sandbox.runtime.memory import memory_limit, set_memory_limit
    from sandbox.train._predict import plan_tiles

    model = nn.UNet(1, 4, depth=3, base_width=16)
    previous = set_memory_limit("4G")
    try:
        tile, notice = plan_tiles(model, (6000, 6000), None, "big.png")
        assert tile is not None and tile % 8 == 0 and tile < 6000
        assert "tiles of" in notice and "6000x6000" in notice
        count = unet_forward_count(1, 4, model_widths(model), (tile, tile))
        assert eval_bytes(count) < memory_limit()
        assert plan_tiles(model, (256, 256), None, "small.png") == (None, None)
    finally:
        set_memory_limit(previous)


def test_checkpoints_without_the_input_rule_predict_as_before(trained, tmp_path, capsys):
    """Old checkpoints' normalisation entry (no "input" field) keeps working."""
    pil = pytest.importorskip("PIL.Image")
    from sandbox.train import checkpoint

    state = checkpoint.load_training_state(trained)
    assert state["data"]["normalization"]["input"] == "dtype-range"
    state["data"]["normalization"] = {"kind": "scale", "divisor": 255.0}
    old = tmp_path / "old.ckpt"
    checkpoint.save(state, old)
    image = tmp_path / "x.png"
    pil.fromarray((np.random.default_rng(4).random((32, 32)) * 255).astype(np.uint8)).save(image)
    masks = []
    for ckpt, name in ((trained, "new.png"), (old, "old.png")):
        assert run_cli(capsys, "predict", ckpt, image, "--out", tmp_path / name,
                       "--overlay", tmp_path / f"o_{name}")[0] == 0
        masks.append(np.asarray(pil.open(tmp_path / name)))
    np.testing.assert_array_equal(masks[0], masks[1])


def test_volume_tiles_give_the_whole_volume_prediction():
    from sandbox.train._predict import predict_tiled
    from sandbox.train._predict_volume import predict_volume

    model = nn.UNet(1, 2, depth=1, base_width=2, spatial_dims=3, upsample="trilinear")
    model.eval()
    tile = 2 * tile_margin(1, "trilinear") + 4
    volume = np.random.default_rng(5).random((1, 36, 20, 40), dtype=np.float32)
    with no_grad():
        whole = model(Tensor(volume[None])).numpy()[0]
    tiled = predict_tiled(model, volume, tile, reduce=lambda logits: logits)
    np.testing.assert_allclose(tiled, whole, rtol=1e-4, atol=1e-4 * np.abs(whole).max())
    assert predict_volume(model, volume, tile).shape == (36, 20, 40)
