"""The example scripts run end to end (with tiny settings, so the suite stays fast)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


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
    return result.stdout


def test_custom_function(tmp_path):
    out = run("custom_function.py", cwd=tmp_path)
    assert "gradcheck: True" in out and "gradgradcheck: True" in out
    assert "gradcheck of a wrong backward: False" in out


def test_compare_upsampling(tmp_path):
    # 40 samples = 5 steps: the one-cycle schedule used to divide by zero there (issue 11).
    out = run(
        "compare_upsampling.py",
        "--epochs",
        "1",
        "--train-samples",
        "40",
        "--modes",
        "bilinear,transposed",
        cwd=tmp_path,
    )
    assert "upsample" in out and "bilinear" in out and "transposed" in out


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("train_shapes.py", "mean IoU"),
        ("train_nuclei_vs_otsu.py", "Otsu"),
    ],
)
def test_training_examples(tmp_path, script, expected):
    out = run(script, "--epochs", "1", cwd=tmp_path)
    assert expected in out
