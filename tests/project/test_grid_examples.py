"""The grid-sampling examples train end to end (few steps) and report sensible numbers."""

import os
import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(script, *args, cwd):
    # Import the sandbox of this checkout, not whichever one is installed.
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parent)}
    result = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def number(pattern, text):
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in the output:\n{text}"
    return float(match.group(1))


def test_register_shapes_improves_dice(tmp_path):
    out = run("register_shapes.py", "--steps", "80", "--train-pairs", "64", "--val-pairs", "16",
              "--figure", "field.png", cwd=tmp_path)
    before = number(r"mean Dice: before ([0-9.]+)", out)
    after = number(r"mean Dice: before [0-9.]+, after ([0-9.]+)", out)
    mse_before = number(r"validation MSE: before ([0-9.]+)", out)
    mse_after = number(r"validation MSE: before [0-9.]+, after ([0-9.]+)", out)
    assert 0.4 < before < 0.9  # the pairs start misaligned, not hopeless
    assert after > before + 0.02  # 80 steps already register (600, the default: about +0.2)
    assert mse_after < 0.9 * mse_before
    assert (tmp_path / "field.png").stat().st_size > 10_000


def test_register_shapes_with_velocity_integration(tmp_path):
    out = run("register_shapes.py", "--steps", "40", "--train-pairs", "32", "--val-pairs", "8",
              "--integrate", "4", cwd=tmp_path)
    assert "velocity, 4 squarings" in out
    before = number(r"mean Dice: before ([0-9.]+)", out)
    after = number(r"mean Dice: before [0-9.]+, after ([0-9.]+)", out)
    assert after > before


def test_spatial_transformer_trains_theta(tmp_path):
    out = run("spatial_transformer.py", "--steps", "400", "--train-samples", "1000",
              "--val-samples", "200", cwd=tmp_path)
    without = number(r"accuracy: without STN ([0-9.]+)", out)
    with_stn = number(r"with STN ([0-9.]+)\s*$", out.split("theta:")[0])
    moved = number(r"mean \|theta - identity\| ([0-9.]+)", out)
    # Five classes: chance is 0.2. 400 steps train the classifier; whether the STN has
    # found a useful zoom by then varies (the defaults, 3000 steps: +0.03 on average over
    # four seeds, see the example's docstring).
    assert without > 0.3 and with_stn > 0.15
    assert moved > 1e-3  # the grid gradient reached theta
