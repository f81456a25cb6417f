"""Fuzz: every command that reads a file, fed truncated, bit-flipped, empty and foreign files.

Each run must end as a user would want: exit 0 (the damage did not matter, e.g. a
flipped bit in a zip timestamp) or exit 2 with exactly one line
``sandbox <command>: error: ...`` -- never a traceback, never an internal error.
The damaged files are derived from valid ones with a fixed seed, so a failure
reproduces.
"""

import json
import shutil
import zipfile

import numpy as np
import pytest

from tests.support.cli_helpers import TINY, make_folder, messages, run_cli

pil = pytest.importorskip("PIL.Image")

SEED = 11


def variants(valid: bytes, foreign: dict) -> dict:
    """name -> damaged bytes: empty, truncations, bit flips, and foreign files."""
    rng = np.random.default_rng([SEED, len(valid)])
    out = {"empty": b""}
    for cut in sorted({1, 8, 40, len(valid) // 4, len(valid) // 2, len(valid) - 1}):
        if 0 < cut < len(valid):
            out[f"truncated@{cut}"] = valid[:cut]
    positions = [0, 3, 20, 60, len(valid) // 2, len(valid) - 10]
    positions += rng.integers(0, len(valid), 6).tolist()
    for pos in positions:
        if 0 <= pos < len(valid):
            flipped = bytearray(valid)
            flipped[pos] ^= 1 << int(rng.integers(0, 8))
            out[f"bitflip@{pos}"] = bytes(flipped)
    out.update({f"foreign:{k}": v for k, v in foreign.items()})
    return out


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A trained run, a valid PNG/.npy image, a folder dataset and foreign files."""
    from sandbox.cli.commands import main

    root = tmp_path_factory.mktemp("fuzz")
    run = root / "run"
    assert main(["train", "--epochs", "1", "--out", str(run), *TINY]) == 0
    image = (np.random.default_rng(0).random((16, 16)) * 255).astype(np.uint8)
    pil.fromarray(image).save(root / "image.png")
    np.save(root / "image.npy", image.astype(np.float32) / 255)
    make_folder(root / "data", [(16, 16)] * 4)
    zip_path = root / "other.zip"
    with zipfile.ZipFile(zip_path, "w") as z:
        z.writestr("hello.txt", "hi")
    npy = root / "arr.npy"
    np.save(npy, np.arange(10))
    baseline = {"options": {"quick": True, "threads": 2},
                "results": [{"name": "resize/nearest/a/fwd", "rtol": 1e-5,
                             "ours": {"median": 1e-3, "mad": 1e-5, "iqr": 2e-5, "min": 9e-4,
                                      "n": 3}, "checksum": []}]}
    (root / "base.json").write_text(json.dumps(baseline))
    foreign = {
        "random": np.random.default_rng(SEED).bytes(3000),
        "text": b"just some notes\n",
        "npy": npy.read_bytes(),
        "png": (root / "image.png").read_bytes(),
        "zip": zip_path.read_bytes(),
        "json": b'{"results": 3}',
        "ckpt": (run / "last.ckpt").read_bytes(),
    }
    return {"root": root, "run": run, "foreign": foreign}


def check(status, err, command, allowed=(0, 2)):
    assert "Traceback" not in err, err
    assert status in allowed, (status, err)
    lines = messages(err)
    if status == 2:
        assert len(lines) == 1 and lines[0].startswith(f"sandbox {command}: error: "), err
    else:
        assert all(line.startswith(f"sandbox {command}: warning: ") for line in lines), err


def _targets(files):
    root, run = files["root"], files["run"]
    return {
        "predict-checkpoint": ((run / "best.ckpt").read_bytes(), "x.ckpt",
                               lambda p, d: ["predict", p, root / "image.png",
                                             "--out", d / "m.png"]),
        "predict-png": ((root / "image.png").read_bytes(), "x.png",
                        lambda p, d: ["predict", run / "best.ckpt", p, "--out", d / "m.png"]),
        "predict-npy": ((root / "image.npy").read_bytes(), "x.npy",
                        lambda p, d: ["predict", run / "best.ckpt", p, "--out", d / "m.png"]),
        "resume-checkpoint": ((run / "last.ckpt").read_bytes(), "last.ckpt", None),
        "folder-image": ((root / "data" / "images" / "s0.png").read_bytes(), "images/s0.png",
                         None),
        "folder-mask": ((root / "data" / "masks" / "s0.png").read_bytes(), "masks/s0.png",
                        None),
        "bench-baseline": ((root / "base.json").read_bytes(), "base.json",
                           lambda p, d: ["bench", "--quick", "--no-torch", "--no-memory",
                                         "--no-progress", "--repeat", "1", "--warmup", "0",
                                         "--filter", "resize/nearest/a/fwd", "--compare", p]),
    }


TARGETS = ["predict-checkpoint", "predict-png", "predict-npy", "resume-checkpoint",
           "folder-image", "folder-mask", "bench-baseline"]


@pytest.mark.parametrize("target", TARGETS)
def test_damaged_and_foreign_files_end_in_one_line(files, tmp_path, capsys, target):
    valid, name, argv = _targets(files)[target]
    command = {"predict": "predict", "bench": "bench"}.get(target.split("-")[0], "train")
    tried = 0
    for label, content in variants(valid, files["foreign"]).items():
        case = tmp_path / label.replace(":", "_").replace("@", "_")
        if target == "resume-checkpoint":
            shutil.copytree(files["run"], case, ignore=shutil.ignore_patterns(".lock"))
            (case / name).write_bytes(content)
            args = ["train", "--resume", "--out", case, "--quiet", "--no-plots"]
        elif target.startswith("folder"):
            shutil.copytree(files["root"] / "data", case / "data")
            (case / "data" / name).write_bytes(content)
            args = ["train", "--data", case / "data", "--num-classes", "2", "--steps", "1",
                    "--image-size", "8", "--depth", "2", "--width", "4", "--batch-size", "2",
                    "--out", case / "run", "--quiet", "--no-plots"]
        else:
            case.mkdir()
            path = case / name
            path.write_bytes(content)
            args = argv(path, case)
        status, _, err = run_cli(capsys, *args)
        allowed = (0, 1, 2) if command == "bench" else (0, 2)  # bench: 1 = case flagged
        try:
            check(status, err, command, allowed)
        except AssertionError as exc:
            raise AssertionError(f"{target} / {label}: {exc}") from None
        tried += 1
    assert tried >= 15
