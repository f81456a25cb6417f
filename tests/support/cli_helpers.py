"""Shared helpers for the CLI robustness tests: run a command, check how it ended."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from sandbox.cli.commands import main

ROOT = Path(__file__).resolve().parents[2]

# A tiny shapes run: a few steps take well under a second.
TINY = ["--image-size", "16", "--depth", "2", "--width", "4", "--train-samples", "8",
        "--val-samples", "4", "--batch-size", "4", "--quiet", "--no-plots"]


def run_cli(capsys, *argv):
    """``main(argv)`` -> (exit status, stdout, stderr)."""
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


# What `sandbox train` reports on stderr also with --quiet (which hides the bar only).
REPORT = re.compile(r"^(training \d+-level UNet|epoch \d+: val loss|early stop: )")


def messages(err):
    """The lines of ``err`` other than train's header and epoch lines."""
    return [line for line in err.strip().splitlines() if not REPORT.match(line)]


def assert_one_line_error(status, err, *needles, command="train", code=2):
    """Exit ``code`` and exactly one stderr line, ``sandbox <command>: error: ...``
    (besides train's header and epoch lines, for errors found during training)."""
    lines = messages(err)
    assert status == code, (status, err)
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith(f"sandbox {command}: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def run_subprocess(*argv, cwd=None, timeout=300):
    """``python -m sandbox argv`` in a fresh process, importing this checkout."""
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "SANDBOX_TUNE_MALLOC": "0"}
    return subprocess.run([sys.executable, "-m", "sandbox", *map(str, argv)], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def make_folder(root, sizes, num_classes=2, seed=0):
    """An ``images/`` + ``masks/`` folder of 8-bit PNGs with the given (H, W) sizes."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    root = Path(root)
    for sub in ("images", "masks"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for i, (h, w) in enumerate(sizes):
        mask = rng.integers(0, num_classes, (h, w)).astype(np.uint8)
        image = (mask * 100 + rng.integers(0, 50, (h, w))).astype(np.uint8)
        Image.fromarray(image).save(root / "images" / f"s{i}.png")
        Image.fromarray(mask).save(root / "masks" / f"s{i}.png")
    return root


def copy_run(src, dst):
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".lock"))
    return dst
