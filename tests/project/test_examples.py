"""The example scripts run end to end (with tiny settings, so the suite stays fast), and
the numbers they print are true of what they did: scores in range and consistent with
each other and with the run folders, losses falling, the examples' own claims right.

Timings are only checked to be numbers that are not negative.
"""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NUM = r"(-?[0-9]+(?:\.[0-9]+)?)"


def run(script, *args, cwd):
    # Import the sandbox of this checkout, not whichever one is installed.
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, result.stderr


def numbers(pattern, text):
    """Every match of ``pattern`` in ``text`` (at least one), its groups as floats."""
    found = re.findall(pattern, text, flags=re.MULTILINE)
    assert found, f"{pattern!r} not in the output:\n{text}"
    return [tuple(map(float, m)) if isinstance(m, tuple) else float(m) for m in found]


def val_losses(stderr):
    """The validation loss of each epoch, from the trainer's epoch lines on stderr."""
    return numbers(rf"^epoch \d+: val loss {NUM}", stderr.replace("\r", "\n"))


def summary(folder):
    return json.loads((folder / "summary.json").read_text())


def train_losses(folder):
    log = [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]
    return [e["loss"] for e in log if e["kind"] == "train"]


def test_custom_function(tmp_path):
    out, _ = run("custom_function.py", cwd=tmp_path)
    printed = dict(line.rsplit(": ", 1) for line in out.splitlines() if ": " in line)
    assert printed == {
        "softplus'(x) == sigmoid(x)": "True",
        "gradcheck": "True",
        "gradgradcheck": "True",
        "gradcheck of a wrong backward": "False (expected False)",
    }


@pytest.mark.parametrize("epochs", [1, 2])
def test_compare_upsampling(tmp_path, epochs):
    # 40 samples = 5 steps an epoch: the one-cycle schedule used to divide by zero at
    # 5 steps in all (issue 11). Two epochs show the validation loss falling.
    modes = ["bilinear", "transposed"]
    out, err = run("compare_upsampling.py", "--epochs", str(epochs), "--train-samples", "40",
                   "--modes", ",".join(modes), cwd=tmp_path)
    per_mode = re.findall(rf"^(\S+)\s+mean IoU {NUM}\s+\({NUM} s\)$", out, flags=re.MULTILINE)
    table = re.findall(rf"^(\S+)\s+{NUM}\s+{NUM}\s+{NUM}$", out, flags=re.MULTILINE)
    assert [m for m, *_ in per_mode] == modes  # one line per mode, in the order asked
    assert sorted(m for m, *_ in table) == sorted(modes)
    ious = [float(iou) for _, iou, _, _ in table]
    assert ious == sorted(ious, reverse=True)  # the table is best first
    for mode, iou, acc, sec in table:
        iou, acc, sec = float(iou), float(acc), float(sec)
        assert 0 <= iou <= 1 and 0 <= acc <= 1 and sec >= 0
        assert iou == float(dict((m, i) for m, i, _ in per_mode)[mode])
        final = summary(tmp_path / "runs" / f"compare-{mode}")
        assert final["steps"] == 5 * epochs
        assert iou == pytest.approx(final["final"]["mean_iou"], abs=5e-4)
        assert acc == pytest.approx(final["final"]["pixel_accuracy"], abs=5e-4)
    losses = val_losses(err)  # the modes' epochs one after the other
    assert len(losses) == epochs * len(modes) and all(math.isfinite(v) for v in losses)
    if epochs == 2:
        for first, last in zip(losses[::2], losses[1::2], strict=True):
            assert last < first


def test_train_shapes(tmp_path):
    out, err = run("train_shapes.py", "--epochs", "1", cwd=tmp_path)
    from sandbox.nn import UNet

    folder = tmp_path / "runs" / "example-shapes"
    config = json.loads((folder / "config.json").read_text())
    # The model line and the parameter count describe the same network.
    (args,) = re.findall(r"^UNet\(\n\s+(.*)$", out, flags=re.MULTILINE)
    model = eval(f"UNet({args})", {"UNet": UNet})  # noqa: S307 - the example's own repr
    (params,) = numbers(r"^([0-9,]+) parameters", out.replace(",", ""))
    assert params == model.num_parameters() > 0
    assert "classes: ('background', 'disc', 'square', 'triangle')" in out
    (steps,) = numbers(r"^validation after (\d+) steps", out)
    assert steps == math.ceil(config["train_samples"] / config["batch_size"]) == 50
    classes = numbers(rf"^  \S+\s+IoU {NUM}  Dice {NUM}$", out)
    assert len(classes) == 4
    for iou, dice in classes:
        assert 0 <= iou <= 1 and 0 <= dice <= 1
        assert dice == pytest.approx(2 * iou / (1 + iou), abs=2e-3)  # one confusion matrix
    ((mean_iou, accuracy),) = numbers(rf"mean IoU {NUM}, pixel accuracy {NUM}", out)
    assert mean_iou == pytest.approx(sum(i for i, _ in classes) / 4, abs=2e-3)
    assert 0 <= accuracy <= 1
    assert classes[0][0] > 0.9  # the background is found after one epoch
    final = summary(folder)["final"]
    assert mean_iou == pytest.approx(final["mean_iou"], abs=5e-4)
    losses = train_losses(folder)
    assert all(math.isfinite(v) for v in losses) and losses[-1] < 0.5 * losses[0]
    (val,) = val_losses(err)
    assert math.isfinite(val) and val == pytest.approx(final["loss"], abs=5e-5)
    pictures = re.search(r"^pictures: (.*)$", out, flags=re.MULTILINE).group(1)
    if "install matplotlib" not in pictures:
        for picture in pictures.split(", "):
            assert (tmp_path / picture).stat().st_size > 1000


def test_train_nuclei_vs_otsu(tmp_path):
    out, err = run("train_nuclei_vs_otsu.py", "--epochs", "2", cwd=tmp_path)
    from sandbox.data import Nuclei

    (tiles,) = numbers(r"^validation \(rows 384-511, (\d+) tiles\)", out)
    assert tiles == len(Nuclei("val"))
    ((otsu_dice, otsu_iou, otsu_acc),) = numbers(rf"^  Otsu\s+{NUM}\s+{NUM}\s+{NUM}$", out)
    ((unet_dice, unet_iou, unet_acc),) = numbers(rf"^  UNet\s+{NUM}\s+{NUM}\s+{NUM}$", out)
    for value in (otsu_dice, otsu_iou, otsu_acc, unet_dice, unet_iou, unet_acc):
        assert 0 <= value <= 1
    assert otsu_dice > 0.5  # a real baseline: the nuclei are bright on a dark background
    final = summary(tmp_path / "runs" / "example-nuclei")["final"]
    assert unet_dice == pytest.approx(final["dice_fg"], abs=5e-4)
    assert unet_iou == pytest.approx(final["mean_iou"], abs=5e-4)
    assert unet_acc == pytest.approx(final["pixel_accuracy"], abs=5e-4)
    # The verdict follows from the printed numbers.
    verdict = "beats" if unet_dice > otsu_dice else "does not beat"
    if unet_dice != otsu_dice:
        assert f"The UNet {verdict} the Otsu baseline." in out
    losses = val_losses(err)
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)
    assert losses[1] < losses[0]
