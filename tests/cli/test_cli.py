"""CLI tests: a few training steps on tiny images, predict, errors, info.

What a user does ends in a result or in one stderr line, ``sandbox <command>: error: ...``,
without a traceback and without losing work (issue 11); these tests go through ``main()``
(or a subprocess) and check the exit status and that line.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from sandbox.cli.commands import main
from sandbox.train import Trainer, checkpoint
from tests.support.cli_helpers import (
    TINY,
    assert_one_line_error,
    copy_run,
    make_folder,
    messages,
    run_cli,
    run_subprocess,
)


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
    # the printed figures are rounded to 0.1 s
    assert total + 0.05 >= first and total + 0.05 >= part and "since --resume" in done
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


@pytest.fixture
def image_png(tmp_path):
    pil = pytest.importorskip("PIL.Image")
    from sandbox.data import Shapes

    image = Shapes(1, image_size=16, seed=5)[0][0][0]
    path = tmp_path / "sample.png"
    pil.fromarray((np.clip(image, 0, 1) * 255).astype(np.uint8)).save(path)
    return path


@pytest.mark.parametrize("damage", ["truncated", "bitflip", "empty", "random", "npy"])
def test_a_damaged_checkpoint_is_one_line_in_predict_and_resume(
    finished_run, tmp_path, capsys, image_png, damage
):
    run = copy_run(finished_run, tmp_path / "run")
    ckpt = run / "last.ckpt"
    data = ckpt.read_bytes()
    if damage == "truncated":
        ckpt.write_bytes(data[: len(data) // 2])
    elif damage == "bitflip":
        flipped = bytearray(data)
        flipped[len(data) // 3] ^= 0x10
        ckpt.write_bytes(bytes(flipped))
    elif damage == "empty":
        ckpt.write_bytes(b"")
    elif damage == "random":
        ckpt.write_bytes(np.random.default_rng(0).bytes(4000))
    else:
        with ckpt.open("wb") as f:
            np.save(f, np.zeros(3))
    status, _, err = run_cli(capsys, "predict", ckpt, image_png)
    assert_one_line_error(status, err, str(ckpt), "not a sandbox checkpoint", command="predict")
    status, _, err = run_cli(capsys, "train", "--resume", "--out", run, "--quiet")
    assert_one_line_error(status, err, str(ckpt), "not a sandbox checkpoint")


def test_predict_and_resume_after_the_data_folder_moved(tmp_path, capsys, monkeypatch):
    pil = pytest.importorskip("PIL.Image")
    monkeypatch.chdir(tmp_path)
    make_folder(tmp_path / "data", [(20, 20)] * 6)
    argv = ["--data", "data", "--num-classes", "2", "--image-size", "16", "--depth", "2",
            "--width", "4", "--batch-size", "2", "--quiet", "--no-plots"]
    status, _, err = run_cli(capsys, "train", "--epochs", "2", "--stop-after", "1",
                             "--out", "run", *argv)
    assert status == 0, err
    stored = json.loads((tmp_path / "run" / "config.json").read_text())["data"]
    assert stored == str(tmp_path / "data")  # relative --data stored as an absolute path
    (tmp_path / "data").rename(tmp_path / "moved")
    monkeypatch.chdir(tmp_path / "moved")  # and from another working directory
    status, out, err = run_cli(capsys, "predict", "../run/last.ckpt", "images/s0.png",
                               "--out", "../m.png")
    assert status == 0, err
    assert pil.open(tmp_path / "m.png").size == (20, 20)
    status, _, err = run_cli(capsys, "train", "--resume", "--out", "../run", "--quiet")
    assert_one_line_error(status, err, str(tmp_path / "data"), "--data FOLDER")
    status, out, err = run_cli(capsys, "train", "--resume", "--out", "../run", "--data", ".",
                               "--quiet", "--no-plots")
    assert status == 0, err
    assert "done: 4 steps" in out


@pytest.mark.parametrize("argv", [["--steps", "5"], ["--epochs", "1", "--train-samples", "40"]])
def test_short_runs_do_not_crash_the_schedule(tmp_path, capsys, argv):
    status, out, err = run_cli(capsys, "train", *argv, "--out", tmp_path / "r",
                               "--image-size", "16", "--depth", "2", "--width", "4",
                               "--quiet", "--no-plots")
    assert status == 0, err
    assert "done: 5 steps" in out


def test_predict_never_overwrites_its_input_and_writes_masks_losslessly(
    finished_run, tmp_path, capsys, image_png
):
    pil = pytest.importorskip("PIL.Image")
    original = image_png.read_bytes()
    status, _, err = run_cli(capsys, "predict", finished_run / "best.ckpt", image_png,
                             "--out", image_png)
    assert_one_line_error(status, err, "is the input file itself", command="predict")
    status, _, err = run_cli(capsys, "predict", finished_run / "best.ckpt", image_png,
                             "--overlay", image_png)
    assert_one_line_error(status, err, "is the input file itself", command="predict")
    assert image_png.read_bytes() == original
    status, _, err = run_cli(capsys, "predict", finished_run / "best.ckpt", image_png,
                             "--out", tmp_path / "m.jpg")
    assert_one_line_error(status, err, "not a lossless format", ".png", command="predict")
    png, npy = tmp_path / "m.png", tmp_path / "m.npy"
    assert run_cli(capsys, "predict", finished_run / "best.ckpt", image_png, "--out", png)[0] == 0
    # the overlay m_overlay.png of the first call exists now: replaced only when asked
    assert run_cli(capsys, "predict", finished_run / "best.ckpt", image_png, "--out", npy,
                   "--overwrite")[0] == 0
    np.testing.assert_array_equal(np.asarray(pil.open(png)), np.load(npy))


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--upsample", "transposed", "--antialias"], "do not apply to upsample='transposed'"),
        (["--upsample", "transposed", "--align-corners"], "do not apply"),
        (["--data", "nuclei", "--num-classes", "3"], "--num-classes does not apply"),
        (["--data", "nuclei", "--val-samples", "3"], "--val-samples does not apply"),
        (["--stop-after", "0"], "--stop-after must be a positive"),
    ],
)
def test_options_that_do_not_apply_are_refused(tmp_path, capsys, extra, needle):
    status, _, err = run_cli(capsys, "train", "--out", tmp_path / "r", "--quiet", *extra)
    assert_one_line_error(status, err, needle)
    assert not (tmp_path / "r" / "config.json").exists()


def test_folder_refuses_sample_counts_and_shapes_honours_num_classes(tmp_path, capsys):
    pytest.importorskip("PIL.Image")
    make_folder(tmp_path / "data", [(20, 20)] * 4)
    status, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes", "2",
                             "--train-samples", "9", "--out", tmp_path / "r", "--quiet")
    assert_one_line_error(status, err, "--train-samples does not apply")
    status, out, err = run_cli(capsys, "train", "--num-classes", "3", "--steps", "1",
                               "--out", tmp_path / "s", *TINY)
    assert status == 0, err
    state = checkpoint.load(tmp_path / "s" / "last.ckpt")
    assert state["data"]["num_classes"] == 3 and state["config"]["num_classes"] == 3


def test_stop_after_reports_a_stop_and_only_existing_checkpoints(tmp_path, capsys):
    status, out, err = run_cli(capsys, "train", "--epochs", "2", "--stop-after", "1",
                               "--out", tmp_path / "r", *TINY)
    assert status == 0, err
    assert "stopped after 1 of 4 steps" in out and "nan" not in out
    assert "best.ckpt" not in out and "last.ckpt" in out
    assert not (tmp_path / "r" / "best.ckpt").exists()


def test_resume_takes_the_settings_from_the_checkpoint(tmp_path, capsys):
    run = tmp_path / "r"
    flags = ["--upsample", "nearest", "--lr", "0.002", "--loss", "ce+dice", "--seed", "3"]
    status, _, err = run_cli(capsys, "train", "--epochs", "2", "--stop-after", "1",
                             "--out", run, *TINY, *flags)
    assert status == 0, err
    status, out, err = run_cli(capsys, "train", "--resume", "--out", run, "--quiet",
                               "--no-plots")
    assert status == 0, err
    assert "done: 4 steps" in out
    config = json.loads((run / "config.json").read_text())
    assert (config["upsample"], config["lr"], config["loss"], config["seed"]) == (
        "nearest", 0.002, "ce+dice", 3)
    status, _, err = run_cli(capsys, "train", "--resume", "--out", run, "--lr", "0.1",
                             "--depth", "3", "--quiet")
    assert_one_line_error(status, err, "--lr 0.1 (checkpoint: 0.002)", "--depth 3")


def test_predict_refuses_tiny_all_nan_and_folder_inputs(finished_run, tmp_path, capsys):
    ckpt = finished_run / "best.ckpt"
    np.save(tmp_path / "tiny.npy", np.zeros((3, 3), np.float32))
    status, _, err = run_cli(capsys, "predict", ckpt, tmp_path / "tiny.npy")
    assert_one_line_error(status, err, "3x3 pixels", "at least 4x4", command="predict")
    np.save(tmp_path / "nan.npy", np.full((16, 16), np.nan, np.float32))
    status, _, err = run_cli(capsys, "predict", ckpt, tmp_path / "nan.npy")
    assert_one_line_error(status, err, "no finite values", command="predict")
    some = np.zeros((16, 16), np.float32)
    some[0, :3] = np.nan
    np.save(tmp_path / "some.npy", some)
    status, out, err = run_cli(capsys, "predict", ckpt, tmp_path / "some.npy")
    assert status == 0 and err.strip().splitlines() == [
        f"sandbox predict: warning: {tmp_path / 'some.npy'} has 3 NaN or infinite values; "
        "the prediction there (and near them) is meaningless"]
    status, _, err = run_cli(capsys, "predict", ckpt, tmp_path)
    assert_one_line_error(status, err, "is a folder, not an image file", command="predict")


def test_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    status, _, err = run_cli(capsys, "--debug", "predict", tmp_path / "no.ckpt", tmp_path)
    assert status == 2 and "Traceback" in err
    assert err.strip().splitlines()[-1].startswith("sandbox predict: error: ")
    monkeypatch.setenv("SANDBOX_DEBUG", "1")
    status, _, err = run_cli(capsys, "predict", tmp_path / "no.ckpt", tmp_path)
    assert status == 2 and "Traceback" in err


def test_an_internal_error_is_one_line_with_exit_1(tmp_path, capsys, monkeypatch):
    def broken(self):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(Trainer, "fit", broken)
    status, _, err = run_cli(capsys, "train", "--steps", "1", "--out", tmp_path / "x", *TINY)
    lines = messages(err)
    assert status == 1 and len(lines) == 1
    assert lines[0].startswith("sandbox train: internal error: ZeroDivisionError: division by zero")
    assert "--debug" in err


def test_bad_arguments_in_a_real_process_end_in_one_line(tmp_path):
    for argv, command in ((["train", "--epochs", "many"], "train"),
                          (["predict", tmp_path / "x.ckpt", tmp_path / "y.png"], "predict"),
                          (["bench", "--repeat", "0"], "bench"),
                          (["frobnicate"], None)):
        result = run_subprocess(*argv, cwd=tmp_path)
        prog = f"sandbox {command}" if command else "sandbox"
        assert result.returncode == 2, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert result.stderr.startswith(f"{prog}: error: "), result.stderr
        assert "usage:" not in result.stderr


def test_ctrl_c_twice_in_a_real_process_ends_in_one_line(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    from tests.support.cli_helpers import ROOT

    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox", "train", "--steps", "400", "--image-size", "32",
         "--depth", "2", "--width", "8", "--batch-size", "4", "--out", str(out), "--no-plots"],
        env={"PYTHONPATH": str(ROOT), "SANDBOX_TUNE_MALLOC": "0"}, cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.time() + 120
        while not (out / "log.jsonl").exists():  # training has started
            assert proc.poll() is None and time.time() < deadline, proc.stderr.read()
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    last = [line for line in err.replace("\r", "\n").splitlines() if line.strip()][-1]
    assert last.startswith("sandbox train: "), err
