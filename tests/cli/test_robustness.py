"""Issue 11: nothing a user does ends in a traceback or loses work (one test per item).

CLI tests go through ``main()`` (or a subprocess) and check the exit status and that
stderr is one line, ``sandbox <command>: error: ...``, without a traceback.
"""

import json
import os
import stat
import warnings

import numpy as np
import pytest

from sandbox.train import TrainConfig, Trainer, TrainingDiverged, checkpoint
from tests.support.cli_helpers import (
    TINY,
    assert_one_line_error,
    copy_run,
    make_folder,
    messages,
    run_cli,
    run_subprocess,
)

pil = pytest.importorskip("PIL.Image")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A finished tiny run (2 epochs of 2 steps): its folder holds last/best.ckpt."""
    from sandbox.cli.commands import main

    out = tmp_path_factory.mktemp("trained") / "run"
    assert main(["train", "--epochs", "2", "--out", str(out), *TINY]) == 0
    return out


@pytest.fixture
def image_png(tmp_path):
    from sandbox.data import Shapes

    image = Shapes(1, image_size=16, seed=5)[0][0][0]
    path = tmp_path / "sample.png"
    pil.fromarray((np.clip(image, 0, 1) * 255).astype(np.uint8)).save(path)
    return path


# 1 ------------------------------------------------------------ damaged checkpoints
@pytest.mark.parametrize("damage", ["truncated", "bitflip", "empty", "random", "npy"])
def test_1_damaged_checkpoint_is_one_line_in_predict_and_resume(
    trained, tmp_path, capsys, image_png, damage
):
    run = copy_run(trained, tmp_path / "run")
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


# 2 ------------------------------------------------- predict needs only the checkpoint
def test_2_predict_and_resume_after_the_data_folder_moved(tmp_path, capsys, monkeypatch):
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


# 3 ---------------------------------------------------- schedules for any step count
@pytest.mark.parametrize("argv", [["--steps", "5"], ["--epochs", "1", "--train-samples", "40"]])
def test_3_short_runs_do_not_crash_the_schedule(tmp_path, capsys, argv):
    status, out, err = run_cli(capsys, "train", *argv, "--out", tmp_path / "r",
                               "--image-size", "16", "--depth", "2", "--width", "4",
                               "--quiet", "--no-plots")
    assert status == 0, err
    assert "done: 5 steps" in out


@pytest.mark.parametrize("three_phase", [False, True])
def test_3_one_cycle_works_for_every_step_count(three_phase):
    from sandbox import nn, optim

    params = list(nn.Conv2d(1, 1, 1).parameters())
    for total in range(1, 15):
        for pct in (0.0, 0.1, 0.2, 0.3, 0.5, 1.0):
            opt = optim.AdamW(params, lr=1e-3)
            sched = optim.OneCycleLR(opt, max_lr=1e-2, total_steps=total, pct_start=pct,
                                     three_phase=three_phase)
            rates = []
            for _ in range(total):
                rates.append(opt.param_groups[0]["lr"])
                sched.step()
            assert all(0 < r <= 1e-2 for r in rates), (total, pct, rates)


# 4 ------------------------------------------------ huge sizes refused before allocating
@pytest.mark.parametrize("kwargs", [dict(size=(10**9, 10**9)), dict(scale_factor=1e8)])
def test_4_huge_size_is_refused_before_anything_is_allocated(kwargs):
    import tracemalloc

    from sandbox.array.resample import resize
    from sandbox.runtime.memory import ResampleSizeError

    x = np.zeros((1, 1, 8, 8), np.float32)
    tracemalloc.start()
    try:
        with pytest.raises(ResampleSizeError) as info:
            resize(x, mode="bilinear", **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000, peak  # bytes: the error message and frames, no arrays
    message = str(info.value)
    assert "would need at least" in message and "PB" in message
    assert "SANDBOX_MAX_MEMORY" in message and "set_memory_limit" in message
    assert isinstance(info.value, MemoryError) and isinstance(info.value, ValueError)


def test_4_memory_limit_is_settable_and_covers_the_adjoint(monkeypatch):
    import sandbox
    from sandbox.array.resample import resize, resize_adjoint
    from sandbox.runtime.memory import ResampleSizeError, total_memory

    x = np.zeros((1, 1, 8, 8), np.float32)
    default = sandbox.memory_limit()
    assert default == int(0.5 * total_memory())
    previous = sandbox.set_memory_limit("1M")
    try:
        assert resize(x, size=(200, 200), mode="bilinear").shape == (1, 1, 200, 200)
        with pytest.raises(ResampleSizeError, match=r"memory limit of 1 MB \(set by"):
            resize(x, size=(1000, 1000), mode="bilinear")
        with pytest.raises(ResampleSizeError):
            resize_adjoint(x, (1000, 1000), size=(8, 8), mode="bilinear")
    finally:
        sandbox.set_memory_limit(previous)
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "2M")
    assert sandbox.memory_limit() == 2 << 20
    with pytest.raises(ResampleSizeError, match="from SANDBOX_MAX_MEMORY"):
        resize(x, size=(1000, 1000), mode="bilinear")
    monkeypatch.setenv("SANDBOX_MAX_MEMORY", "lots")
    with pytest.raises(ValueError, match="K/M/G/T suffix"):
        sandbox.memory_limit()
    with pytest.raises(ValueError, match="positive number of bytes"):
        sandbox.set_memory_limit(-1)


# 5 ------------------------------------------------------------------ folder data
def test_5_small_folder_images_name_the_image_size_option(tmp_path, capsys):
    make_folder(tmp_path / "data", [(64, 64)] * 4)
    status, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes", "2",
                             "--steps", "1", "--out", tmp_path / "r", "--quiet")
    assert_one_line_error(status, err, "--image-size 64", "s0.png (64x64)")


@pytest.mark.parametrize("augment", [[], ["--no-augment"]])
def test_5_folder_images_of_different_sizes_train_and_validate(tmp_path, capsys, augment):
    sizes = [(40, 48), (64, 36), (50, 50), (33, 70), (48, 48), (60, 40)]
    make_folder(tmp_path / "data", sizes)
    status, out, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes",
                               "2", "--epochs", "1", "--image-size", "32", "--depth", "2",
                               "--width", "4", "--batch-size", "2", "--out", tmp_path / "r",
                               "--quiet", "--no-plots", *augment)
    assert status == 0, err
    assert "done: 2 steps" in out and "val mean IoU" in out


# 6 ------------------------------------------------------------- unreadable images
def test_6_unreadable_images_are_named(trained, tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("not an image")
    status, _, err = run_cli(capsys, "predict", trained / "best.ckpt", notes)
    assert_one_line_error(status, err, "cannot read", str(notes), command="predict")
    make_folder(tmp_path / "data", [(20, 20)] * 4)
    (tmp_path / "data" / "images" / "s2.png").write_bytes(b"\x89PNG garbage")
    status, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes", "2",
                             "--image-size", "16", "--depth", "2", "--steps", "1",
                             "--out", tmp_path / "r", "--quiet")
    assert_one_line_error(status, err, "cannot read", "s2.png")


# 7 ------------------------------------------------------------ orphan temp files
KILL_DURING_SAVE = """
import os, signal, sys
import numpy as np
from sandbox import checkpoint
os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)  # die between write and rename
checkpoint.save({"w": np.zeros(100000)}, sys.argv[1])
"""


def test_7_temp_files_of_killed_saves_are_removed_at_the_next_start(trained, tmp_path, capsys):
    import subprocess
    import sys

    from tests.support.cli_helpers import ROOT

    run = copy_run(trained, tmp_path / "run")
    result = subprocess.run([sys.executable, "-c", KILL_DURING_SAVE, str(run / "last.ckpt")],
                            env={"PYTHONPATH": str(ROOT)}, capture_output=True)
    assert result.returncode == -9
    orphans = list(run.glob(".last.ckpt.*.tmp"))
    assert len(orphans) == 1 and orphans[0].stat().st_size > 100_000
    checkpoint.load(run / "last.ckpt")  # the checkpoint itself is intact
    status, _, err = run_cli(capsys, "train", "--resume", "--out", run, "--quiet", "--no-plots")
    assert status == 0, err
    assert not list(run.glob("*.tmp")) and not list(run.glob(".*.tmp"))


# 8 ---------------------------------------------------- runs never overwrite each other
def test_8_a_new_run_refuses_an_existing_run_folder(trained, tmp_path, capsys):
    run = copy_run(trained, tmp_path / "run")
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


def test_8_two_runs_cannot_share_a_folder_at_once(tmp_path):
    first = Trainer(_tiny(tmp_path))
    with pytest.raises(ValueError, match="in use by another training run"):
        Trainer(_tiny(tmp_path), overwrite=True)
    first.fit()  # releases the folder when done
    Trainer(_tiny(tmp_path), overwrite=True).close()


def _tiny(out, **overrides):
    values = dict(data="shapes", image_size=16, depth=2, width=4, train_samples=8,
                  val_samples=4, batch_size=4, epochs=1, progress=False, plots=False,
                  out=str(out))
    return TrainConfig(**{**values, **overrides})


# 9 ----------------------------------------------------------------- predict outputs
def test_9_predict_never_overwrites_its_input_and_writes_masks_losslessly(
    trained, tmp_path, capsys, image_png
):
    original = image_png.read_bytes()
    status, _, err = run_cli(capsys, "predict", trained / "best.ckpt", image_png,
                             "--out", image_png)
    assert_one_line_error(status, err, "is the input file itself", command="predict")
    status, _, err = run_cli(capsys, "predict", trained / "best.ckpt", image_png,
                             "--overlay", image_png)
    assert_one_line_error(status, err, "is the input file itself", command="predict")
    assert image_png.read_bytes() == original
    status, _, err = run_cli(capsys, "predict", trained / "best.ckpt", image_png,
                             "--out", tmp_path / "m.jpg")
    assert_one_line_error(status, err, "not a lossless format", ".png", command="predict")
    png, npy = tmp_path / "m.png", tmp_path / "m.npy"
    assert run_cli(capsys, "predict", trained / "best.ckpt", image_png, "--out", png)[0] == 0
    # the overlay m_overlay.png of the first call exists now: replaced only when asked
    assert run_cli(capsys, "predict", trained / "best.ckpt", image_png, "--out", npy,
                   "--overwrite")[0] == 0
    np.testing.assert_array_equal(np.asarray(pil.open(png)), np.load(npy))


# 10 ---------------------------------------------------- options that do not apply
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
def test_10_options_that_do_not_apply_are_refused(tmp_path, capsys, extra, needle):
    status, _, err = run_cli(capsys, "train", "--out", tmp_path / "r", "--quiet", *extra)
    assert_one_line_error(status, err, needle)
    assert not (tmp_path / "r" / "config.json").exists()


def test_10_folder_refuses_sample_counts_and_shapes_honours_num_classes(tmp_path, capsys):
    make_folder(tmp_path / "data", [(20, 20)] * 4)
    status, _, err = run_cli(capsys, "train", "--data", tmp_path / "data", "--num-classes", "2",
                             "--train-samples", "9", "--out", tmp_path / "r", "--quiet")
    assert_one_line_error(status, err, "--train-samples does not apply")
    status, out, err = run_cli(capsys, "train", "--num-classes", "3", "--steps", "1",
                               "--out", tmp_path / "s", *TINY)
    assert status == 0, err
    state = checkpoint.load(tmp_path / "s" / "last.ckpt")
    assert state["data"]["num_classes"] == 3 and state["config"]["num_classes"] == 3


def test_10_stop_after_reports_a_stop_and_only_existing_checkpoints(tmp_path, capsys):
    status, out, err = run_cli(capsys, "train", "--epochs", "2", "--stop-after", "1",
                               "--out", tmp_path / "r", *TINY)
    assert status == 0, err
    assert "stopped after 1 of 4 steps" in out and "nan" not in out
    assert "best.ckpt" not in out and "last.ckpt" in out
    assert not (tmp_path / "r" / "best.ckpt").exists()


# 11 -------------------------------------------------- resume without repeating flags
def test_11_resume_takes_the_settings_from_the_checkpoint(tmp_path, capsys):
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


# 12 ---------------------------------------------------------------------------- bench
def test_12_bench_refuses_a_bad_save_name_before_running(tmp_path, capsys):
    status, out, err = run_cli(capsys, "bench", "--quick", "--no-torch", "--save", "../x",
                               "--filter", "resize/nearest/a/fwd", "--no-progress")
    assert_one_line_error(status, err, "baseline name", "'../x'", command="bench")
    assert out == ""  # nothing was timed
    status, out, err = run_cli(capsys, "bench", "--quick", "--json", tmp_path / "no" / "x.json",
                               "--filter", "resize/nearest/a/fwd")
    assert_one_line_error(status, err, "does not exist", command="bench")


def test_12_a_lucky_quiet_baseline_does_not_flag_normal_jitter():
    from sandbox.bench import compare

    def result(times):
        from sandbox.bench._timing import summarize

        return {"name": "c", "ours": summarize(np.array(times)).as_dict(), "checksum": []}

    # Three repeats where two agree by chance: the MAD is ~0, the spread is not.
    base = result([1.000, 1.001, 1.35])
    now = result([1.20, 1.22, 1.25])
    (delta,) = compare([base], [now])
    assert not delta.slower, delta
    (delta,) = compare([result([1.0, 1.01, 1.02])], [result([1.5, 1.52, 1.55])])
    assert delta.slower  # a real slowdown still counts


# 13 ------------------------------------------------------------------------ smaller
def test_13_second_ctrl_c_ends_in_one_line(tmp_path, capsys, monkeypatch):
    import signal

    from sandbox.train import _interrupt

    trainer = Trainer(_tiny(tmp_path))
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


def test_13_predict_refuses_tiny_all_nan_and_folder_inputs(trained, tmp_path, capsys):
    ckpt = trained / "best.ckpt"
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


def test_13_nan_stop_message_comes_without_numpy_warnings(tmp_path):
    trainer = Trainer(_tiny(tmp_path))
    trainer.model.head.weight.numpy()[...] = 1e38  # overflows on the way to a NaN loss
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would fail the test
        with pytest.raises(TrainingDiverged, match="loss became"):
            trainer.fit()


def test_13_checkpoints_get_normal_file_permissions(tmp_path):
    umask = os.umask(0o022)
    try:
        path = checkpoint.save({"w": np.zeros(2)}, tmp_path / "c.ckpt")
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_13_predictions_plot_has_a_class_legend():
    plt = pytest.importorskip("matplotlib.pyplot")
    from sandbox.train._plots import _class_legend

    fig = plt.figure()
    _class_legend(fig, ("background", "disc", "square"))
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "background (no colour)", "disc", "square"]
    plt.close(fig)


def test_13_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    status, _, err = run_cli(capsys, "--debug", "predict", tmp_path / "no.ckpt", tmp_path)
    assert status == 2 and "Traceback" in err
    assert err.strip().splitlines()[-1].startswith("sandbox predict: error: ")
    monkeypatch.setenv("SANDBOX_DEBUG", "1")
    status, _, err = run_cli(capsys, "predict", tmp_path / "no.ckpt", tmp_path)
    assert status == 2 and "Traceback" in err


def test_13_an_internal_error_is_one_line_with_exit_1(tmp_path, capsys, monkeypatch):
    def broken(self):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(Trainer, "fit", broken)
    status, _, err = run_cli(capsys, "train", "--steps", "1", "--out", tmp_path / "x", *TINY)
    lines = messages(err)
    assert status == 1 and len(lines) == 1
    assert lines[0].startswith("sandbox train: internal error: ZeroDivisionError: division by zero")
    assert "--debug" in err


# 14 -------------------------------------------------------------------- a subprocess
def test_14_bad_arguments_in_a_real_process_end_in_one_line(tmp_path):
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


def test_13_ctrl_c_twice_in_a_real_process_ends_in_one_line(tmp_path):
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
