"""Command-line interface: ``sandbox <command>`` (also ``python -m sandbox``).

Commands: ``train``, ``predict``, ``gradcheck``, ``bench``, ``explain``, ``info``,
``export`` (its logic in :mod:`sandbox.interop._cli`).
Each command is one ``_cmd_<name>(args)`` function registered in :func:`build_parser`;
errors are handled in one place (:func:`sandbox.cli.errors.run_command`): a command raises
:class:`CLIError` (or a library ``ValueError``/``OSError``... naming the problem) and
the user sees one line ``sandbox <command>: error: ...`` with exit status 2 (130 for
Ctrl-C, 3 when training diverged, 1 for an internal error).  ``--debug`` or
``SANDBOX_DEBUG=1`` adds the traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .._version import __version__
from .errors import (
    ArgumentParser,
    CLIError,
    debug_requested,
    exit_process,
    notice,
    run_command,
)
from .train_distributed import add_distributed_args
from .train_options import add_train_args, config_from_args, resume_config

COMMANDS = ("train", "predict", "gradcheck", "bench", "explain", "info", "calibrate", "export")
# The default run's time, as the README states it (1,000 steps on 2-core AMD EPYC VMs:
# 21.9-22.9 s on family 26 model 2 in its quiet phases, 26.1-26.8 s in its slow ones, 130.5 s
# on family 23; tests/project/test_docs.py keeps README, docs/05 and this in step).
DEFAULT_RUN_TIME = "about 20-130 s on a 2-core machine"


def train_header(cfg, parameters: int, samples: int, steps: int) -> str:
    """The first line ``sandbox train`` prints (the README quotes it; a test compares)."""
    return (
        f"training {cfg.depth}-level UNet (width {cfg.width}, upsample={cfg.upsample}, "
        f"{parameters:,} parameters) on {cfg.data}: {samples} samples/epoch, {steps} steps, "
        f"run folder {cfg.out}"
    )


def _cmd_train(args) -> int:
    from ..train import Trainer, TrainingDiverged
    from .train_distributed import cmd_train_distributed, wants_distributed

    if wants_distributed(args):  # mpiexec / srun / --nproc: sandbox/cli/train_distributed.py
        return cmd_train_distributed(args, report=_report_training)
    if args.resume and args.overwrite:
        raise CLIError("--resume continues the run in OUT and --overwrite replaces it: pick one")
    if args.stop_after is not None and args.stop_after < 1:
        raise CLIError(f"--stop-after must be a positive number of steps, got {args.stop_after}")
    cfg = resume_config(args) if args.resume else config_from_args(args)
    trainer = Trainer(
        cfg, resume=args.resume, stop_after=args.stop_after, overwrite=args.overwrite
    )
    # --quiet hides the progress bar only: the header and the epoch lines stay.
    print(
        train_header(cfg, trainer.model.num_parameters(), len(trainer.train_set),
                     trainer.total_steps),
        file=sys.stderr,
    )
    try:
        summary = trainer.fit()
    except TrainingDiverged as exc:
        raise CLIError(str(exc), status=3) from exc
    _report_training(args, cfg, trainer, summary)
    return 0


def _report_training(args, cfg, trainer, summary) -> None:
    """The lines ``sandbox train`` prints on stdout when a run ends."""
    final = summary.get("final")
    took = _duration(summary, args.resume)
    if summary["finished"]:
        line = f"done: {summary['steps']} steps in {took}"
    else:
        line = (
            f"stopped after {summary['steps']} of {trainer.total_steps} steps "
            f"({took}); continue with --resume"
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


def _duration(summary: dict, resumed: bool) -> str:
    """The training time of the whole run; after ``--resume`` also this session's part
    (a checkpoint from before durations were stored gives the resumed part only)."""
    if not resumed:
        return f"{summary['seconds']:.1f} s"
    if summary.get("whole_run"):
        return f"{summary['seconds']:.1f} s ({summary['session_seconds']:.1f} s since --resume)"
    return f"{summary['session_seconds']:.1f} s (the resumed part only)"


def _cmd_predict(args) -> int:
    from ..train import predict_file

    result = predict_file(args.checkpoint, args.image, out=args.out, overlay_out=args.overlay,
                          overwrite=args.overwrite, tile=args.tile)
    for text in result.pop("notices", []):
        notice("sandbox predict", text)
    for warning in result.pop("warnings", []):
        print(f"sandbox predict: warning: {warning}", file=sys.stderr)
    print(json.dumps(result, indent=2))
    return 0


def _cmd_gradcheck(args) -> int:
    from .gradcheck_table import run_suite

    failures = run_suite(pattern=args.filter, verbose=True)
    return 1 if failures else 0


def _cmd_info(args) -> int:
    from .info import info

    info()
    return 0


def _cmd_calibrate(args) -> int:
    from ..bench.calibrate import calibrate
    from ..runtime import calibration
    from ..runtime.threads import get_num_threads

    previous = calibration.load()
    cal = calibrate(write=not args.dry_run)
    print(f"calibration on {cal.cpu} (medians of interleaved runs; convolutions on "
          f"{get_num_threads()} threads, gathers on 1):")
    if not cal.choices:
        print("  nothing to choose on this CPU: it has neither AVX-512 nor AVX2+FMA kernels "
              "(the portable and BLAS paths run)")
    for choice, medians in cal.timings.items():
        runs = ", ".join(f"{name} {ms:.2f} ms" for name, ms in medians.items())
        print(f"  {choice + ':':14s}{cal.choices[choice]:9s}({runs})")
    if args.dry_run:
        print("not written (--dry-run)")
    else:
        was = "replaced this machine's entry" if previous is not None else "written"
        print(f"{was}: {calibration.cache_file()} (used by processes started from now on)")
    return 0


def _cmd_explain(args) -> int:
    from .explain import explain

    if args.mode in ("trilinear", "linear"):
        rank = "volumes (5-D" if args.mode == "trilinear" else "signals (3-D"
        raise CLIError(f"--mode {args.mode} resamples {rank} input in PyTorch); the example "
                       "upsamples an image (4-D input): use bilinear, bicubic, nearest, area, "
                       "lanczos3 ...")
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
    parser.add_argument("--version", action="version", version=f"sandbox {__version__}")
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
    add_train_args(p)
    add_distributed_args(p)
    p.set_defaults(func=_cmd_train)

    p = sub.add_parser("predict", help="segment an image or volume with a trained checkpoint")
    p.add_argument("checkpoint", help="a .ckpt written by 'sandbox train'")
    p.add_argument(
        "image",
        help="PNG/TIFF/JPEG (needs Pillow) or .npy image; for a checkpoint trained on "
        "volumes a .npy/.npz volume or multi-page TIFF",
    )
    p.add_argument(
        "--out",
        help="mask file: .png, .tif or .npy, lossless (default: <image>_mask.png; "
        "volumes: .npy, default <image>_mask.npy)",
    )
    p.add_argument(
        "--overlay",
        help="overlay image (default: <image>_overlay.png; volumes: a PNG montage of "
        "slices, default <image>_montage.png)",
    )
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing --out/--overlay files (default: refuse)")
    p.add_argument("--tile", type=int, metavar="N",
                   help="predict in overlapping tiles of NxN pixels (default: the whole "
                   "image, or the largest tiles that fit the memory limit, with a notice)")
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

    p = sub.add_parser(
        "calibrate", help="measure which kernels are fastest on this machine (about a second)",
        description="Time the candidates of each kernel choice that depends on the "
        "microarchitecture (the convolutions' float32 GEMM: AVX-512 kernel or BLAS; the "
        "grid sampling's AVX-512 gathers or portable loops) and store the winners for "
        "this machine in calibration.json under $SANDBOX_CACHE_DIR (default "
        "~/.cache/sandbox). Every candidate gives results that do not depend on the "
        "thread count.")
    p.add_argument("--dry-run", action="store_true", help="measure and print, write nothing")
    p.set_defaults(func=_cmd_calibrate)

    from ..interop._cli import add_parser as add_export_parser

    add_export_parser(sub)
    return parser


def _run(argv: list) -> int:
    if argv[:1] in (["train"], ["bench"], ["predict"]):
        from ..runtime.allocator import keep_freed_memory

        keep_freed_memory()
    if argv[:1] == ["bench"]:
        # The benchmark suite parses its own options (argparse.REMAINDER would not
        # pass through arguments that start with '-').
        from ..bench import run

        return run(argv[1:])
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the subcommand, whose --help lists what it takes
        prog = f"sandbox {args.command}" if args.command else "sandbox"
        raise CLIError(
            f"unrecognized arguments: {' '.join(extra)} (see {prog} --help)", prog=prog
        )
    args.argv = list(argv)  # the command line as given (--nproc runs it again under mpiexec)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


def main(argv=None, *, exiting: bool = False) -> int:
    """Run ``sandbox`` with the argument list ``argv``; return the exit status.
    ``exiting``: the process ends right after (see :func:`~.errors.run_command`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = debug_requested(argv)
    command = argv[0] if argv and argv[0] in COMMANDS else None
    prog = f"sandbox {command}" if command else "sandbox"
    return run_command(prog, lambda: _run(argv), debug=debug, exiting=exiting)


def entry() -> None:
    """The ``sandbox`` console script: :func:`main` on ``sys.argv``, then exit with its status."""
    exit_process(main(exiting=True))


if __name__ == "__main__":  # pragma: no cover
    entry()
