"""Command-line interface: ``sandbox <command>`` (also ``python -m sandbox``).

Commands: ``train``, ``predict``, ``gradcheck``, ``bench``, ``explain``, ``info``,
``export``.
Bad arguments end with a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys

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


class CLIError(Exception):
    """A user error: printed as one line, exit status 2."""


def _add_train_args(p: argparse.ArgumentParser) -> None:
    from .resample import MODES

    g = p.add_argument_group("data")
    g.add_argument(
        "--data",
        default="shapes",
        help="'shapes' (synthetic, default), 'nuclei' (real microscopy) or a folder "
        "with images/ and masks/",
    )
    g.add_argument("--num-classes", type=int, help="classes in a folder dataset")
    g.add_argument("--image-size", type=int, help="training image/crop size (default per dataset)")
    g.add_argument("--train-samples", type=int, help="training samples per epoch")
    g.add_argument("--val-samples", type=int, help="validation samples (shapes)")
    g.add_argument(
        "--no-augment", dest="augment", action="store_false", help="turn off flips and rotations"
    )
    g = p.add_argument_group("model")
    g.add_argument(
        "--upsample",
        default="bilinear",
        help=f"decoder upsampling: one of {', '.join(MODES)}, or 'transposed' (default: bilinear)",
    )
    g.add_argument(
        "--align-corners",
        action="store_true",
        default=None,
        help="align_corners=True for bilinear/bicubic/lanczos3",
    )
    g.add_argument("--antialias", action="store_true", help="antialiased resampling")
    g.add_argument("--depth", type=int, default=3, help="UNet depth (down-sampling steps)")
    g.add_argument("--width", type=int, default=16, help="channels of the first UNet level")
    g.add_argument("--norm", default="batch", choices=["batch", "group", "none"])
    g = p.add_argument_group("optimisation")
    g.add_argument("--epochs", type=int, help="epochs (default per dataset)")
    g.add_argument("--steps", type=int, help="optimiser steps (overrides --epochs)")
    g.add_argument("--batch-size", type=int, default=8)
    g.add_argument("--lr", type=float, help="peak learning rate (AdamW + one-cycle)")
    g.add_argument("--weight-decay", type=float, default=1e-4)
    g.add_argument("--scheduler", default="onecycle", choices=["onecycle", "cosine", "none"])
    g.add_argument("--loss", choices=["ce", "dice", "ce+dice"], help="default per dataset")
    g.add_argument("--patience", type=int, help="early stop after this many epochs without gain")
    g = p.add_argument_group("run")
    g.add_argument("--threads", type=int, help="threads for kernels and BLAS (default: all cores)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", default="runs/latest", help="run folder (default: runs/latest)")
    g.add_argument("--resume", action="store_true", help="continue from OUT/last.ckpt")
    g.add_argument("--stop-after", type=int, help="stop (and checkpoint) after N steps")
    g.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG plots")
    g.add_argument("--quiet", action="store_true", help="no progress bar")


def _config_from_args(args):
    from .train import TrainConfig

    kind = args.data if args.data in ("shapes", "nuclei") else "folder"
    preset = PRESETS[kind]
    values = dict(
        data=args.data,
        upsample=args.upsample,
        align_corners=args.align_corners,
        antialias=args.antialias,
        steps=args.steps,
        batch_size=args.batch_size,
        weight_decay=args.weight_decay,
        scheduler=args.scheduler,
        depth=args.depth,
        width=args.width,
        norm=args.norm,
        augment=args.augment,
        threads=args.threads,
        seed=args.seed,
        out=args.out,
        patience=args.patience,
        progress=not args.quiet,
        plots=args.plots,
        num_classes=args.num_classes,
    )
    for name in ("image_size", "epochs", "train_samples", "val_samples", "loss", "lr"):
        given = getattr(args, name)
        values[name] = given if given is not None else preset[name]
    if kind == "folder":
        values.pop("train_samples")
        values.pop("val_samples")
    return TrainConfig(**values)


def _cmd_train(args) -> int:
    from .train import Trainer, TrainingDiverged, TrainingInterrupted

    cfg = _config_from_args(args)
    trainer = Trainer(cfg, resume=args.resume, stop_after=args.stop_after)
    if not args.quiet:
        print(
            f"training {cfg.depth}-level UNet (width {cfg.width}, upsample={cfg.upsample}, "
            f"{trainer.model.num_parameters():,} parameters) on {cfg.data}: "
            f"{len(trainer.train_set)} samples/epoch, {trainer.total_steps} steps, "
            f"run folder {cfg.out}",
            file=sys.stderr,
        )
    try:
        summary = trainer.fit()
    except TrainingDiverged as exc:
        print(f"sandbox train: {exc}", file=sys.stderr)
        return 3
    except TrainingInterrupted as exc:
        print(f"sandbox train: {exc}", file=sys.stderr)
        return 130
    final = summary.get("final") or {}
    line = (
        f"done: {summary['steps']} steps in {summary['seconds']:.1f} s; "
        f"val mean IoU {final.get('mean_iou', float('nan')):.4f}, "
        f"mean Dice {final.get('mean_dice', float('nan')):.4f}"
    )
    if "dice_fg" in final:
        line += f", foreground Dice {final['dice_fg']:.4f}"
    print(line)
    print(f"checkpoints: {cfg.out}/last.ckpt, {cfg.out}/best.ckpt; log: {cfg.out}/log.jsonl")
    for path in summary.get("plots", []):
        print(f"plot: {path}")
    return 0


def _cmd_predict(args) -> int:
    from .train import predict_file

    result = predict_file(args.checkpoint, args.image, out=args.out, overlay_out=args.overlay)
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
    parser = argparse.ArgumentParser(
        prog="sandbox",
        description="CPU training sandbox: resampling kernels with backward for every mode, "
        "a small autodiff engine, UNet training and benchmarks.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "train",
        help="train a UNet (default: synthetic shapes, ~2 minutes)",
        description="Train a UNet for segmentation and write checkpoints, a "
        "JSON-lines log and plots into the run folder.",
    )
    _add_train_args(p)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("predict", help="segment an image with a trained checkpoint")
    p.add_argument("checkpoint", help="a .ckpt written by 'sandbox train'")
    p.add_argument("image", help="PNG/TIFF/JPEG (needs Pillow) or .npy image")
    p.add_argument("--out", help="mask PNG (default: <image>_mask.png)")
    p.add_argument("--overlay", help="overlay PNG (default: <image>_overlay.png)")
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

    from .interop._cli import add_parser as add_export_parser

    add_export_parser(sub)
    return parser


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] in (["train"], ["bench"], ["predict"]):
        from ._memory import keep_freed_memory

        keep_freed_memory()
    if argv[:1] == ["bench"]:
        # The benchmark suite parses its own options (argparse.REMAINDER would not
        # pass through arguments that start with '-').
        from .bench import main as bench_main

        return bench_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError, KeyError, ImportError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"sandbox {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
