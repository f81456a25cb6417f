"""Command-line interface: ``sandbox <command>`` (also ``python -m sandbox``).

Commands: ``train``, ``predict``, ``gradcheck``, ``bench``, ``explain``, ``info``.
Each command is one ``_cmd_<name>(args)`` function registered in :func:`build_parser`;
errors are handled in one place (:func:`sandbox._usage.run_command`): a command raises
:class:`CLIError` (or a library ``ValueError``/``OSError``... naming the problem) and
the user sees one line ``sandbox <command>: error: ...`` with exit status 2 (130 for
Ctrl-C, 3 when training diverged, 1 for an internal error).  ``--debug`` or
``SANDBOX_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from ._usage import ArgumentParser, CLIError, debug_requested, run_command

COMMANDS = ("train", "predict", "gradcheck", "bench", "explain", "info")
# The default run's time, as the README states it (1,000 steps at 8-12 steps/s measured on
# unshared 2-core machines; tests/test_docs.py keeps README, docs/05 and this in step).
DEFAULT_RUN_TIME = "about 120 s on a 2-core machine"

# Per-dataset defaults for options the user did not give.
PRESETS = {
    "shapes": dict(image_size=64, epochs=20, train_samples=400, val_samples=64, loss="ce", lr=5e-3),
    "nuclei": dict(
        image_size=96, epochs=20, train_samples=64, val_samples=4, loss="ce+dice", lr=1e-2
    ),
    "folder": dict(
        image_size=128, epochs=20, train_samples=0, val_samples=0, loss="ce+dice", lr=3e-3
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
    "num_classes": ("shapes", "folder"),
    "train_samples": ("shapes", "nuclei"),
    "val_samples": ("shapes",),
}
# Settings a resumed run may change (everything else must match the checkpoint).
RESUMABLE = ("threads", "patience", "progress", "plots", "out")


def _add_train_args(p: argparse.ArgumentParser) -> None:
    from .resample import MODES

    g = p.add_argument_group("data")
    g.add_argument(
        "--data",
        help="'shapes' (synthetic, default), 'nuclei' (real microscopy) or a folder "
        "with images/ and masks/ (with --resume: where the folder is now)",
    )
    g.add_argument(
        "--num-classes", type=int, help="classes (folder data: required; shapes: 2-6, default 4)"
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
        help=f"decoder upsampling: one of {', '.join(MODES)}, or 'transposed' (default: bilinear)",
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
    g.add_argument("--norm", choices=["batch", "group", "none"], help="default: batch")
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
    g.add_argument("--threads", type=int, help="threads for kernels and BLAS (default: all cores)")
    g.add_argument("--seed", type=int, help="default 0")
    g.add_argument("--out", help=f"run folder (default: {DEFAULT_OUT})")
    g.add_argument(
        "--overwrite",
        action="store_true",
        help="replace the run already in the run folder (default: refuse)",
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="continue from OUT/last.ckpt with the settings stored in it",
    )
    g.add_argument("--stop-after", type=int, help="stop (and checkpoint) after N steps")
    g.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG plots")
    g.add_argument("--quiet", action="store_true", help="no progress bar")


def _data_kind(data: str) -> str:
    return data if data in ("shapes", "nuclei") else "folder"


def _given(args) -> dict:
    """The train settings given on the command line (config field name -> value)."""
    from .train import TrainConfig

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
            }[kind]
            raise CLIError(f"{flag} does not apply to --data {values['data']}: {what}")


def _config_from_args(args):
    """A fresh run's TrainConfig: given options, else the dataset's preset, else DEFAULTS."""
    from .train import TrainConfig

    given = _given(args)
    values = {**DEFAULTS, "data": "shapes", **given}
    _check_applicable(values, given)
    kind = _data_kind(values["data"])
    if kind == "folder" and not Path(values["data"]).is_dir():
        raise CLIError(
            f"--data must be 'shapes', 'nuclei' or an existing folder with images/ and masks/; "
            f"{values['data']} is not a folder"
        )
    for name, value in PRESETS[kind].items():
        values.setdefault(name, value)
    if kind == "folder":
        values.pop("train_samples")
        values.pop("val_samples")
    values.update(out=args.out or DEFAULT_OUT, progress=not args.quiet, plots=args.plots)
    return TrainConfig(**values)


def _resume_config(args):
    """The checkpoint's TrainConfig, updated by the options that may change on resume."""
    from . import checkpoint
    from .train import TrainConfig

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
        conflicts.append(f"--{name.replace('_', '-')} {value!r} (checkpoint: {saved.get(name)!r})")
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
    return TrainConfig.from_dict(values)


def train_header(cfg, parameters: int, samples: int, steps: int) -> str:
    """The first line ``sandbox train`` prints (the README quotes it; a test compares)."""
    return (
        f"training {cfg.depth}-level UNet (width {cfg.width}, upsample={cfg.upsample}, "
        f"{parameters:,} parameters) on {cfg.data}: {samples} samples/epoch, {steps} steps, "
        f"run folder {cfg.out}"
    )


def _cmd_train(args) -> int:
    from .train import Trainer, TrainingDiverged

    if args.resume and args.overwrite:
        raise CLIError("--resume continues the run in OUT and --overwrite replaces it: pick one")
    if args.stop_after is not None and args.stop_after < 1:
        raise CLIError(f"--stop-after must be a positive number of steps, got {args.stop_after}")
    cfg = _resume_config(args) if args.resume else _config_from_args(args)
    trainer = Trainer(
        cfg, resume=args.resume, stop_after=args.stop_after, overwrite=args.overwrite
    )
    if not args.quiet:
        print(
            train_header(cfg, trainer.model.num_parameters(), len(trainer.train_set),
                         trainer.total_steps),
            file=sys.stderr,
        )
    try:
        summary = trainer.fit()
    except TrainingDiverged as exc:
        raise CLIError(str(exc), status=3) from exc
    final = summary.get("final")
    if summary["finished"]:
        line = f"done: {summary['steps']} steps in {summary['seconds']:.1f} s"
    else:
        line = (
            f"stopped after {summary['steps']} of {trainer.total_steps} steps "
            f"({summary['seconds']:.1f} s); continue with --resume"
        )
    if final:
        line += f"; val mean IoU {final['mean_iou']:.4f}, mean Dice {final['mean_dice']:.4f}"
        if "dice_fg" in final:
            line += f", foreground Dice {final['dice_fg']:.4f}"
    print(line)
    written = [str(cfg_path) for cfg_path in (Path(cfg.out) / "last.ckpt", Path(cfg.out) /
               "best.ckpt") if cfg_path.is_file()]
    print(f"checkpoints: {', '.join(written) or 'none'}; log: {cfg.out}/log.jsonl")
    for path in summary.get("plots", []):
        print(f"plot: {path}")
    return 0


def _cmd_predict(args) -> int:
    from .train import predict_file

    result = predict_file(args.checkpoint, args.image, out=args.out, overlay_out=args.overlay)
    for warning in result.pop("warnings", []):
        print(f"sandbox predict: warning: {warning}", file=sys.stderr)
    print(json.dumps(result, indent=2))
    return 0


def _cmd_gradcheck(args) -> int:
    from .gradcheck_suite import run_suite

    failures = run_suite(pattern=args.filter, verbose=True)
    return 1 if failures else 0


def _cmd_info(args) -> int:
    from ._info import info

    info()
    return 0


def _cmd_explain(args) -> int:
    from .explain import explain

    explain(mode=args.mode)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="sandbox",
        description="CPU training sandbox: resampling kernels with backward for every mode, "
        "a small autodiff engine, UNet training and benchmarks.",
    )
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks (also: SANDBOX_DEBUG=1)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "train",
        help=f"train a UNet (default: synthetic shapes, {DEFAULT_RUN_TIME})",
        description="Train a UNet for segmentation and write checkpoints, a "
        "JSON-lines log and plots into the run folder.",
        epilog="A run folder that already holds a run is refused unless --resume (continue "
        "it, with the settings stored in its checkpoint) or --overwrite (replace it). "
        "Exit status: 0 done, 2 bad arguments or data, 3 diverged (NaN loss), "
        "130 interrupted (Ctrl-C saves a checkpoint first).",
    )
    _add_train_args(p)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("predict", help="segment an image with a trained checkpoint")
    p.add_argument("checkpoint", help="a .ckpt written by 'sandbox train'")
    p.add_argument("image", help="PNG/TIFF/JPEG (needs Pillow) or .npy image")
    p.add_argument(
        "--out", help="mask file: .png, .tif or .npy, lossless (default: <image>_mask.png)"
    )
    p.add_argument("--overlay", help="overlay image (default: <image>_overlay.png)")
    p.set_defaults(func=_cmd_predict)

    p = sub.add_parser("gradcheck", help="check every op's gradient against finite differences")
    p.add_argument("--filter", help="only ops whose name contains this text")
    p.set_defaults(func=_cmd_gradcheck)

    # Listed for --help only: main() hands "sandbox bench ..." to sandbox.bench.main.
    sub.add_parser("bench", help="regression benchmarks, side by side with PyTorch")

    p = sub.add_parser("explain", help="walk through a tiny backward pass step by step")
    p.add_argument("--mode", default="bilinear", help="resampling mode used in the example")
    p.set_defaults(func=_cmd_explain)

    p = sub.add_parser("info", help="print version, OpenMP, threads and BLAS")
    p.set_defaults(func=_cmd_info)
    return parser


def _run(argv: list) -> int:
    if argv[:1] in (["train"], ["bench"], ["predict"]):
        from ._memory import keep_freed_memory

        keep_freed_memory()
    if argv[:1] == ["bench"]:
        # The benchmark suite parses its own options (argparse.REMAINDER would not
        # pass through arguments that start with '-').
        from .bench import run

        return run(argv[1:])
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the subcommand, whose --help lists what it takes
        prog = f"sandbox {args.command}" if args.command else "sandbox"
        raise CLIError(
            f"unrecognized arguments: {' '.join(extra)} (see {prog} --help)", prog=prog
        )
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


def main(argv=None) -> int:
    """Run ``sandbox`` with the argument list ``argv``; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    prog = f"sandbox {command}" if command else "sandbox"
    return run_command(prog, lambda: _run(argv), debug=debug)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
