"""CLI smoke tests: a few training steps on tiny images, predict, errors, info."""

import json
import subprocess
import sys

import numpy as np
import pytest

from sandbox.cli.commands import main

TINY = [
    "--image-size",
    "16",
    "--depth",
    "2",
    "--width",
    "4",
    "--train-samples",
    "8",
    "--val-samples",
    "4",
    "--batch-size",
    "4",
    "--quiet",
    "--no-plots",
]


def test_train_then_predict(tmp_path, capsys):
    pil = pytest.importorskip("PIL.Image")
    out = tmp_path / "run"
    assert main(["train", "--steps", "3", "--out", str(out), *TINY]) == 0
    printed = capsys.readouterr().out
    assert "done: 3 steps" in printed and "val mean IoU" in printed
    assert (out / "last.ckpt").is_file() and (out / "best.ckpt").is_file()

    from sandbox.data import Shapes

    image = Shapes(1, image_size=16, seed=5)[0][0][0]
    png = tmp_path / "sample.png"
    pil.fromarray((np.clip(image, 0, 1) * 255).astype(np.uint8)).save(png)
    assert main(["predict", str(out / "best.ckpt"), str(png)]) == 0
    result = json.loads(capsys.readouterr().out)
    mask = np.asarray(pil.open(result["mask"]))
    assert mask.shape == (16, 16) and mask.max() < 6
    assert pil.open(result["overlay"]).size == (16, 16)
    assert sum(result["pixels_per_class"].values()) == 256


def test_resume_through_the_cli(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["train", "--epochs", "2", "--stop-after", "2", "--out", out, *TINY]) == 0
    assert main(["train", "--epochs", "2", "--resume", "--out", out, *TINY]) == 0
    assert "done: 4 steps" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["train", "--upsample", "cubic-spline"], "mode"),
        (["train", "--lr", "-1"], "lr must be a positive"),
        (["train", "--data", "/no/such/folder"], "--data must be"),
        (["train", "--resume", "--out", "{tmp}/none"], "no checkpoint"),
        (["predict", "{tmp}/missing.ckpt", "{tmp}/x.png"], "not found"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, argv, match):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(argv + ["--quiet"] if argv[0] == "train" else argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and match in err and err.startswith("sandbox ")


@pytest.mark.parametrize(
    "argv", [["train", "--epochs", "many"], ["train", "--norm", "layer"], ["train", "--bogus"]]
)
def test_argparse_errors_exit_2_with_one_line(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("sandbox train: error: ") and "(see sandbox train --help)" in err


def test_info_runs_as_module():
    res = subprocess.run(
        [sys.executable, "-m", "sandbox", "info"], capture_output=True, text=True, check=True
    )
    assert "openmp:" in res.stdout and "threads:" in res.stdout


def test_bench_options_pass_through_the_cli(capsys):
    assert main(["bench", "--list", "--filter", "unet-step"]) == 0
    out = capsys.readouterr().out
    assert "unet-step/bilinear" in out and "resize/" not in out


def test_train_on_an_image_folder(tmp_path, capsys):
    pil = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(0)
    for sub in ("images", "masks"):
        (tmp_path / "data" / sub).mkdir(parents=True)
    for i in range(6):
        mask = rng.integers(0, 3, (20, 20)).astype(np.uint8)
        image = (mask * 80 + rng.integers(0, 30, (20, 20))).astype(np.uint8)
        pil.fromarray(image).save(tmp_path / "data" / "images" / f"s{i}.png")
        pil.fromarray(mask).save(tmp_path / "data" / "masks" / f"s{i}.png")
    argv = ["train", "--data", str(tmp_path / "data"), "--num-classes", "3", "--steps", "2",
            "--image-size", "16", "--depth", "2", "--width", "4", "--batch-size", "2",
            "--out", str(tmp_path / "run"), "--quiet", "--no-plots"]
    assert main(argv) == 0
    assert "done: 2 steps" in capsys.readouterr().out
    assert main(argv[:3] + ["--steps", "2", "--out", str(tmp_path / "r2"), "--quiet"]) == 2
    assert "num_classes" in capsys.readouterr().err
