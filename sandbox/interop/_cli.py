"""``sandbox export CKPT --to safetensors|torch|onnx [--out PATH]``.

``sandbox.cli`` registers the sub-command with :func:`add_parser`; the work is
done here.  Errors are plain ``ValueError`` / ``FileNotFoundError`` /
``ImportError`` with one-line messages, which the CLI prints as one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

FORMATS = ("safetensors", "torch", "onnx")
_SUFFIX = {"safetensors": ".safetensors", "torch": ".pt", "onnx": ".onnx"}


def add_parser(sub) -> None:
    """Add the ``export`` sub-command to an ``argparse`` sub-parser collection."""
    p = sub.add_parser(
        "export",
        help="write a checkpoint's model as safetensors, a PyTorch state dict or ONNX",
        description="Convert the model of a training checkpoint for use elsewhere: "
        "safetensors weights (PyTorch names), a PyTorch state dict plus the architecture "
        "as JSON, or an ONNX model (checked with ONNX Runtime when it is installed).",
    )
    p.add_argument("checkpoint", help="a .ckpt written by 'sandbox train'")
    p.add_argument("--to", required=True, choices=FORMATS, dest="format",
                   help="output format")
    p.add_argument("--out", help="output file (default: the checkpoint's name with "
                   ".safetensors, .pt or .onnx); --to torch also writes the architecture "
                   "next to it as <out>.json. Existing files are refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true",
                   help="replace existing output files (never the checkpoint itself)")
    p.add_argument("--size", type=int, nargs="+", metavar="N",
                   help="onnx: input height and width, or depth, height and width for a "
                   "model trained on volumes (one number: square or cube; default: the "
                   "training image size)")
    p.add_argument("--resize", choices=("auto", "matmul"),
                   help="onnx: 'auto' uses Resize where it is exact, 'matmul' always the "
                   "resampling matrices (default: auto)")
    p.set_defaults(func=run)


def load_checkpoint_model(path):
    """Rebuild the UNet of a training checkpoint, in eval mode.

    Returns ``(model, state)`` where ``state`` is the whole checkpoint.  Only the
    architecture fields of the stored config are read, so a checkpoint whose
    data folder has moved still exports.
    """
    from .. import nn
    from ..train import checkpoint

    state = checkpoint.load(path)
    try:
        cfg, data, weights = state["config"], state["data"], state["model"]
        kwargs = dict(
            in_channels=data["in_channels"], num_classes=data["num_classes"],
            depth=cfg["depth"], base_width=cfg["width"], upsample=cfg["upsample"],
            norm=cfg["norm"], align_corners=cfg["align_corners"], antialias=cfg["antialias"],
            spatial_dims=data.get("spatial_dims", 2),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"{path} is not a training checkpoint (no {exc} entry); "
            "export needs a .ckpt written by 'sandbox train'"
        ) from exc
    model = nn.UNet(**kwargs)
    try:
        model.load_state_dict(weights)
    except KeyError as exc:
        raise ValueError(f"{path}: the stored weights do not fit the stored architecture "
                         f"({exc.args[0]})") from exc
    model.eval()
    return model, state


def _export_onnx(model, state, out, size, resize) -> list[str]:
    from ..runtime.optional import require
    from . import run_onnx, to_onnx

    spatial = _spatial(model, state, size)
    to_onnx(model, (1, model.in_channels, *spatial), out, resize=resize)
    lines = [f"wrote {out} (ONNX opset 18, input 'input' of shape (batch, "
             f"{model.in_channels}, {', '.join(map(str, spatial))}))"]
    try:
        require("onnxruntime", "checking the ONNX file")
    except ImportError:
        return lines + ["onnxruntime is not installed: the file was not run "
                        "(pip install 'cpu-train-sandbox[interop]')"]
    from ..autograd import Tensor, no_grad

    x = np.random.default_rng(0).standard_normal((2, model.in_channels, *spatial))
    x = x.astype(np.float32)
    with no_grad():
        ref = model(Tensor(x)).numpy()
    diff = float(np.abs(run_onnx(out, x) - ref).max())
    scale = float(np.abs(ref).max())
    return lines + [f"ONNX Runtime output vs sandbox: max |diff| = {diff:.3g} "
                    f"(max |output| = {scale:.3g})"]


# Extensions each format's file may take.
_SUFFIXES = {"safetensors": (".safetensors",), "torch": (".pt", ".pth"), "onnx": (".onnx",)}
_NAMES = {"safetensors": "safetensors", "torch": "PyTorch state dict", "onnx": "ONNX"}


def _check_options(args) -> None:
    """Options of another format are refused, not ignored."""
    if args.format != "onnx":
        for flag, value in (("--size", args.size), ("--resize", args.resize)):
            if value is not None:
                raise ValueError(f"{flag} applies to --to onnx only, not --to {args.format} "
                                 "(which writes the weights, whatever the input size)")


def _outputs(args) -> list[Path]:
    """Every file the export will write, checked before anything is done."""
    from ..train._outputs import check_new_file

    ckpt = Path(args.checkpoint)
    out = Path(args.out) if args.out else ckpt.with_suffix(_SUFFIX[args.format])
    paths = [check_new_file(out, "--out", inputs=[ckpt], overwrite=args.overwrite,
                            suffixes=_SUFFIXES[args.format], what=_NAMES[args.format])]
    if args.format == "torch":
        paths.append(check_new_file(out.with_suffix(".json"), "--out (its architecture "
                                    "file)", inputs=[ckpt], overwrite=args.overwrite))
    return paths


def _check_memory(model, state, size) -> None:
    """ONNX export runs the model on a batch of 2 at the export size: estimate first."""
    from ..train._memory_plan import check, eval_bytes, model_widths, unet_forward_count

    spatial = _spatial(model, state, size)
    count = unet_forward_count(model.in_channels, model.num_classes, model_widths(model),
                               spatial, model.upsample, model.norm)
    # the resampling matrices of the decoder (MatMul form): out x in per axis and level
    matrices = sum(4 * (n // 2**level) * (n // 2 ** (level + 1))
                   for n in spatial for level in range(model.depth))
    needed = eval_bytes(count, 2) + matrices + 2 * 2 * count.largest  # ORT's copy
    check(needed, f"exporting to ONNX at --size {'x'.join(map(str, spatial))} (and checking "
          "the file on a batch of 2)", "use a smaller --size")


def _spatial(model, state, size) -> tuple:
    dims = model.spatial_dims
    if size is None:
        size = [state["config"].get("image_size", 64)]
    if len(size) not in (1, dims) or min(size) < 1:
        axes = "H [W]" if dims == 2 else "D [H W] for this 3-D model"
        count = "two" if dims == 2 else "three"
        raise ValueError(f"--size takes one or {count} positive ints ({axes}), got {size}")
    return tuple(size) * dims if len(size) == 1 else tuple(size)


def run(args) -> int:
    """Run ``sandbox export`` for parsed ``args``; print what was written."""
    from ..runtime.optional import require
    from . import architecture, to_torch

    _check_options(args)
    args.resize = args.resize or "auto"
    model, state = load_checkpoint_model(args.checkpoint)
    if args.format == "onnx":
        _spatial(model, state, args.size)  # the options first, then the files
    paths = _outputs(args)
    out = paths[0]
    if args.format == "onnx":
        _check_memory(model, state, args.size)
    arch = architecture(model)
    if args.format == "safetensors":
        model.save_weights(out, metadata={"sandbox.architecture": json.dumps(arch)})
        lines = [f"wrote {out} ({len(model.state_dict())} tensors, PyTorch names)"]
    elif args.format == "torch":
        torch = require("torch", "sandbox export --to torch")
        with open(out, "wb") as f:  # an OSError naming the file, not torch's RuntimeError
            torch.save(to_torch(model).state_dict(), f)
        arch_path = paths[1]
        arch_path.write_text(json.dumps(arch, indent=2) + "\n")
        lines = [f"wrote {out} (state dict) and {arch_path} (architecture)"]
    else:
        lines = _export_onnx(model, state, out, args.size, args.resize)
    print("\n".join(lines))
    return 0
