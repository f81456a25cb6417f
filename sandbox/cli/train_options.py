"""``sandbox train`` options: defaults, presets per dataset, and the resume rules.

Every train option parses to None when not given, so :func:`resume_config` can tell
an option the user gave (checked against the checkpoint) from a default (taken from
the checkpoint).  Options that do not apply to the chosen data are refused.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from .errors import CLIError, notice

# Per-dataset defaults for options the user did not give.
PRESETS = {
    "shapes": dict(image_size=64, epochs=20, train_samples=400, val_samples=64, loss="ce", lr=5e-3),
    "nuclei": dict(
        image_size=96, epochs=20, train_samples=64, val_samples=4, loss="ce+dice", lr=1e-2
    ),
    "folder": dict(
        image_size=128, epochs=20, train_samples=0, val_samples=0, loss="ce+dice", lr=3e-3
    ),
    # Volumes: a 3-D UNet, narrower and with smaller batches (a 32^3 sample holds as many
    # voxels as eight 64x64 images, and every 3x3x3 kernel is three times a 3x3 one).
    "shapes3d": dict(
        image_size=32, epochs=10, train_samples=200,
        val_samples=16, loss="ce+dice", lr=1e-2, depth=3, width=8, batch_size=4,
        upsample="trilinear",
    ),
    "volumes": dict(
        image_size=32, epochs=20, train_samples=0, val_samples=0, loss="ce+dice", lr=3e-3,
        width=8, batch_size=4, upsample="trilinear",
    ),
}


# Defaults of the options that are the same for every dataset.  Every train option
# parses to None when not given, so ``--resume`` can tell given from defaulted.
DEFAULTS = dict(
    upsample="bilinear",
    align_corners=None,
    antialias=False,
    depth=3,
    width=16,
    norm="batch",
    steps=None,
    batch_size=8,
    weight_decay=1e-4,
    scheduler="onecycle",
    patience=None,
    augment=True,
    threads=None,
    seed=0,
    num_classes=None,
)
DEFAULT_OUT = "runs/latest"
# Options that only some datasets use: giving them elsewhere is an error, not a no-op.
ONLY_FOR = {
    "num_classes": ("shapes", "shapes3d", "folder"),
    "train_samples": ("shapes", "shapes3d", "nuclei"),
    "val_samples": ("shapes", "shapes3d"),
}
# Settings a resumed run may change (everything else must match the checkpoint).
RESUMABLE = ("threads", "patience", "progress", "plots", "out")


def add_train_args(p: argparse.ArgumentParser) -> None:
    from ..array.resample import MODES

    g = p.add_argument_group("data")
    g.add_argument(
        "--data",
        help="'shapes' (synthetic, default), 'nuclei' (real microscopy), 'shapes3d' "
        "(synthetic volumes, a 3-D UNet) or a folder with images/ and masks/ (2-D images, "
        "or volumes: .npy/.npz/multi-page TIFF) (with --resume: where the folder is now)",
    )
    g.add_argument(
        "--num-classes",
        type=int,
        help="classes (folder data: required; shapes, shapes3d: 2-6, default 4)",
    )
    g.add_argument(
        "--image-size",
        type=int,
        help="training image size (shapes), crop size (nuclei, folder); default per dataset",
    )
    g.add_argument("--train-samples", type=int, help="training samples per epoch (shapes, nuclei)")
    g.add_argument("--val-samples", type=int, help="validation samples (shapes)")
    g.add_argument(
        "--no-augment",
        dest="augment",
        action="store_false",
        default=None,
        help="turn off flips and rotations (folder data: centre crops instead of random ones)",
    )
    g = p.add_argument_group("model")
    g.add_argument(
        "--upsample",
        help=f"decoder upsampling: one of {', '.join(MODES)}, or 'transposed' (default: "
        "bilinear; volumes: trilinear)",
    )
    g.add_argument(
        "--align-corners",
        action="store_true",
        default=None,
        help="align_corners=True (bilinear, bicubic, cubic, lanczos3, lanczos5)",
    )
    g.add_argument(
        "--antialias",
        action="store_true",
        default=None,
        help="antialiased resampling (bilinear, bicubic, cubic, lanczos3, lanczos5)",
    )
    g.add_argument("--depth", type=int, help="UNet depth (down-sampling steps; default 3)")
    g.add_argument("--width", type=int, help="channels of the first UNet level (default 16)")
    g.add_argument(
        "--norm",
        choices=["batch", "group", "none", "syncbatch"],
        help="default: batch; under several ranks batch is per rank, syncbatch spans the "
        "global batch, group is exact (docs/10-several-machines.md)",
    )
    g = p.add_argument_group("optimisation")
    g.add_argument("--epochs", type=int, help="epochs (default per dataset)")
    g.add_argument("--steps", type=int, help="optimiser steps (overrides --epochs)")
    g.add_argument("--batch-size", type=int, help="default 8")
    g.add_argument("--lr", type=float, help="peak learning rate (AdamW + one-cycle)")
    g.add_argument("--weight-decay", type=float, help="default 1e-4")
    g.add_argument("--scheduler", choices=["onecycle", "cosine", "none"], help="default onecycle")
    g.add_argument("--loss", choices=["ce", "dice", "ce+dice"], help="default per dataset")
    g.add_argument("--patience", type=int, help="early stop after this many epochs without gain")
    g = p.add_argument_group("run")
    g.add_argument("--threads", type=int,
                   help="threads for kernels and BLAS (default: all cores; more than the "
                   "cores is capped to them, with a notice)")
    g.add_argument("--seed", type=int, help="default 0")
    g.add_argument("--out", help=f"run folder (default: {DEFAULT_OUT})")
    g.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run already in the run folder (default: refuse); the old run "
        "is deleted only once the new run's data, model and first step have worked",
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="continue from OUT/last.ckpt with the settings stored in it",
    )
    g.add_argument("--stop-after", type=int, help="stop (and checkpoint) after N steps")
    g.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG plots")
    g.add_argument("--quiet", action="store_true",
                   help="no progress bar (the header, the epoch lines and the result still "
                   "print)")


def _data_kind(data: str) -> str:
    return data if data in ("shapes", "nuclei", "shapes3d") else "folder"


def _given(args) -> dict:
    """The train settings given on the command line (config field name -> value)."""
    from ..train import TrainConfig

    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    given = {k: v for k, v in vars(args).items() if k in fields and v is not None}
    given.pop("plots", None)  # handled with progress below: always from this command line
    return given


def _check_applicable(values: dict, given: dict) -> None:
    kind = _data_kind(values["data"])
    for name, kinds in ONLY_FOR.items():
        if name in given and kind not in kinds:
            flag = "--" + name.replace("_", "-")
            what = {
                "folder": "a folder dataset uses every image pair (80% to train, 20% to validate)",
                "nuclei": "the nuclei set has fixed classes and validation images",
                "shapes": "it does not apply to shapes",
                "shapes3d": "it does not apply to shapes3d",
            }[kind]
            raise CLIError(f"{flag} does not apply to --data {values['data']}: {what}")


def config_from_args(args):
    """A fresh run's TrainConfig: given options, else the dataset's preset, else DEFAULTS."""
    from ..data import is_volume_folder
    from ..train import TrainConfig

    given = _given(args)
    data = given.get("data", "shapes")
    _check_applicable({"data": data}, given)
    kind = _data_kind(data)
    if kind == "folder" and not Path(data).is_dir():
        raise CLIError(
            f"--data must be 'shapes', 'nuclei', 'shapes3d' or an existing folder with images/ "
            f"and masks/; {data} is not a folder"
        )
    preset = PRESETS["volumes" if kind == "folder" and is_volume_folder(data) else kind]
    # Given options win over the dataset's preset, which wins over the common defaults.
    values = {**DEFAULTS, **preset, "data": data, **given}
    if kind == "folder":
        values.pop("train_samples")
        values.pop("val_samples")
    values.update(out=args.out or DEFAULT_OUT, progress=not args.quiet, plots=args.plots)
    _cap_threads(values)
    _check_upsample_rank(values, volumes=kind == "shapes3d" or preset is PRESETS["volumes"])
    return TrainConfig(**values)


def _cap_threads(values: dict) -> None:
    """More threads than cores is allowed (as in PyTorch) but only makes every kernel
    slower: cap to the cores, with a notice."""
    from ..runtime.threads import available_cores

    cores = available_cores()
    if values.get("threads") is not None and values["threads"] > cores:
        notice("sandbox train", f"--threads {values['threads']} is more than the {cores} "
               f"core(s) this process may use; using {cores} (the results are the same for "
               "any thread count)")
        values["threads"] = cores


def _check_upsample_rank(values: dict, volumes: bool) -> None:
    """Refuse, as PyTorch does, a linear mode named for another rank: ``bilinear`` takes
    images (4-D input), ``trilinear`` volumes (5-D).  (``bicubic`` on volumes is the
    sandbox's tricubic, documented; the rank-free modes work at every rank.)"""
    mode = values.get("upsample")
    if volumes and mode in ("bilinear", "linear"):
        raise CLIError(
            f"--upsample {mode} resamples images (4-D input in PyTorch); a 3-D UNet on "
            f"volumes (--data {values['data']}) takes trilinear (or nearest, area, bicubic, "
            "lanczos3, transposed ...)")
    if not volumes and mode in ("trilinear", "linear"):
        rank = "volumes (5-D" if mode == "trilinear" else "signals (3-D"
        raise CLIError(
            f"--upsample {mode} resamples {rank} input in PyTorch); a 2-D UNet on images "
            f"(--data {values['data']}) takes bilinear (or nearest, bicubic, area, lanczos3, "
            "transposed ...)")


def resume_config(args):
    """The checkpoint's TrainConfig, updated by the options that may change on resume."""
    from ..train import TrainConfig, checkpoint

    out = Path(args.out or DEFAULT_OUT)
    path = out / "last.ckpt"
    if not path.is_file():
        raise CLIError(
            f"cannot resume: no checkpoint at {path} (train without --resume first, "
            f"or point --out at the run folder)"
        )
    saved = checkpoint.load_training_state(path)["config"]
    given = _given(args)
    conflicts = []
    for name, value in given.items():
        if name in RESUMABLE or value == saved.get(name):
            continue
        if name == "data" and "folder" == _data_kind(value) == _data_kind(saved["data"]):
            continue  # the same folder data, moved
        flag = "--no-augment" if name == "augment" else f"--{name.replace('_', '-')}"
        conflicts.append(f"{flag} {value!r} (checkpoint: {saved.get(name)!r})")
    if conflicts:
        raise CLIError(
            f"cannot resume {path} with different settings: {', '.join(conflicts)}; leave them "
            "out (resume takes the settings from the checkpoint) or start a new run"
        )
    values = {**saved, **{k: v for k, v in given.items() if k in RESUMABLE or k == "data"}}
    if _data_kind(values["data"]) == "folder" and not Path(values["data"]).is_dir():
        raise CLIError(
            f"cannot resume: the training data folder {values['data']} (from the checkpoint) "
            "is not there any more; point to its new place with --data FOLDER"
        )
    values.update(out=str(out), progress=not args.quiet, plots=args.plots)
    _cap_threads(values)
    return TrainConfig.from_dict(values)
