"""CLI smoke tests: a few training steps on tiny images, predict, errors, info."""

import json
import os
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


def test_info_prints_the_cpu_and_the_simd_path():
    from sandbox.cli.info import info_dict
    from sandbox.runtime import simd

    env = {k: v for k, v in os.environ.items() if k not in ("SANDBOX_ISA", "SANDBOX_GEMM")}
    res = subprocess.run([sys.executable, "-m", "sandbox", "info"], capture_output=True,
                         text=True, check=True, env={**env, "SANDBOX_ISA": "portable"})
    cpu = simd.cpu()
    line = next(x for x in res.stdout.splitlines() if x.startswith("cpu id:"))
    assert f"family {cpu.family}, model {cpu.model_number}; ISA {cpu.isa}" in line
    assert "simd path:       portable" in res.stdout and "conv gemm:       blas" in res.stdout
    d = info_dict()
    assert d["simd_path"] == simd.current().isa and d["simd_paths"][-1] == "portable"
    bad = subprocess.run([sys.executable, "-m", "sandbox", "info"], capture_output=True,
                         text=True, env={**env, "SANDBOX_ISA": "sse9"})
    assert bad.returncode == 2 and "SANDBOX_ISA must be one of auto, avx512, avx2, portable" \
        in bad.stderr


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


# ----------------------------------------------- options that do not apply, messages
def _run(capsys, *argv):
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_version(capsys):
    from sandbox import __version__

    status, out, _ = _run(capsys, "--version")
    assert status == 0 and out.strip() == f"sandbox {__version__}"


@pytest.mark.parametrize("argv, needles", [
    (["train", "--data", "shapes3d", "--upsample", "bilinear"], ["bilinear", "4-D", "trilinear"]),
    (["train", "--data", "shapes", "--upsample", "trilinear"], ["trilinear", "5-D", "bilinear"]),
    (["explain", "--mode", "trilinear"], ["trilinear", "5-D", "4-D", "bilinear"]),
])
def test_mode_and_rank_mismatches_are_refused_as_pytorch_does(tmp_path, capsys, argv, needles):
    from tests.support.cli_helpers import assert_one_line_error

    status, _, err = _run(capsys, *argv, *(["--out", tmp_path / "r"] if argv[0] == "train"
                                            else []))
    assert_one_line_error(status, err, *needles, command=argv[0])
    assert not (tmp_path / "r").exists()


def test_too_many_threads_are_capped_with_a_notice(tmp_path, capsys):
    from sandbox.runtime.threads import available_cores
    from sandbox.train import checkpoint

    status, _, err = _run(capsys, "train", *TINY, "--steps", "1", "--threads", "1000",
                          "--out", tmp_path / "r")
    assert status == 0
    cores = available_cores()
    assert f"sandbox train: notice: --threads 1000 is more than the {cores} core" in err
    assert f"using {cores}" in err
    assert checkpoint.load_training_state(tmp_path / "r" / "last.ckpt")["config"]["threads"] \
        == cores


def test_quiet_hides_only_the_progress_bar(tmp_path, capsys):
    status, out, err = _run(capsys, "train", *TINY, "--epochs", "2", "--out", tmp_path / "r")
    assert status == 0
    lines = err.splitlines()
    assert lines[0].startswith("training 2-level UNet")
    assert [line.split(":")[0] for line in lines[1:]] == ["epoch 0", "epoch 1"]
    assert "step/s" not in err and "%|" not in err  # no progress bar
    assert out.startswith("done: 4 steps")


def test_the_duration_after_resume_counts_the_whole_run(tmp_path, capsys):
    from sandbox.train import checkpoint

    run = tmp_path / "r"
    assert _run(capsys, "train", *TINY, "--epochs", "2", "--stop-after", "3", "--out", run)[0] == 0
    first = checkpoint.load_training_state(run / "last.ckpt")["time"]["seconds"]
    status, out, _ = _run(capsys, "train", "--resume", "--out", run, "--quiet", "--no-plots")
    assert status == 0
    done = out.splitlines()[0]
    total = float(done.split(" in ")[1].split(" s")[0])
    part = float(done.split("(")[1].split(" s since --resume")[0])
    assert total >= first and total >= part and "since --resume" in done
    summary = json.loads((run / "summary.json").read_text())
    assert abs(summary["seconds"] - total) <= 0.051 and summary["whole_run"] is True
    # a checkpoint from before durations were stored: says it counts the resumed part
    old = tmp_path / "old"
    assert _run(capsys, "train", *TINY, "--epochs", "2", "--stop-after", "1", "--out", old)[0] == 0
    state = checkpoint.load_training_state(old / "last.ckpt")
    state.pop("time")
    checkpoint.save(state, old / "last.ckpt")
    status, out, _ = _run(capsys, "train", "--resume", "--out", old, "--quiet", "--no-plots")
    assert status == 0 and "(the resumed part only)" in out


def test_images_too_small_for_batch_norm_are_refused_early(tmp_path, capsys):
    pytest.importorskip("PIL.Image")
    from tests.support.cli_helpers import assert_one_line_error, make_folder

    data = make_folder(tmp_path / "data", [(8, 8)] * 6)
    status, _, err = _run(capsys, "train", "--data", data, "--num-classes", "2",
                          "--image-size", "8", "--batch-size", "1", "--out", tmp_path / "r")
    assert_one_line_error(status, err, "--image-size 8 with --depth 3", "batch norm",
                          "--image-size 16", "--depth 2", "--norm group")
    assert "training " not in err and not (tmp_path / "r").exists()
