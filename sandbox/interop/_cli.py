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
                   ".safetensors, .pt or .onnx)")
    p.add_argument("--size", type=int, nargs="+", metavar="N",
                   help="onnx: input height and width, or depth, height and width for a "
                   "model trained on volumes (one number: square or cube; default: the "
                   "training image size)")
    p.add_argument("--resize", choices=("auto", "matmul"), default="auto",
                   help="onnx: 'auto' uses Resize where it is exact, 'matmul' always the "
                   "resampling matrices")
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

    dims = model.spatial_dims
    if size is None:
        size = [state["config"].get("image_size", 64)]
    if len(size) not in (1, dims) or min(size) < 1:
        axes = "H [W]" if dims == 2 else "D [H W] for this 3-D model"
        count = "two" if dims == 2 else "three"
        raise ValueError(f"--size takes one or {count} positive ints ({axes}), got {size}")
    spatial = tuple(size) * dims if len(size) == 1 else tuple(size)
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


def run(args) -> int:
    """Run ``sandbox export`` for parsed ``args``; print what was written."""
    from ..runtime.optional import require
    from . import architecture, to_torch

    model, state = load_checkpoint_model(args.checkpoint)
    arch = architecture(model)
    out = Path(args.out) if args.out else Path(args.checkpoint).with_suffix(_SUFFIX[args.format])
    if args.format == "safetensors":
        model.save_weights(out, metadata={"sandbox.architecture": json.dumps(arch)})
        lines = [f"wrote {out} ({len(model.state_dict())} tensors, PyTorch names)"]
    elif args.format == "torch":
        torch = require("torch", "sandbox export --to torch")
        out.parent.mkdir(parents=True, exist_ok=True)
        torch.save(to_torch(model).state_dict(), out)
        arch_path = out.with_suffix(".json")
        arch_path.write_text(json.dumps(arch, indent=2) + "\n")
        lines = [f"wrote {out} (state dict) and {arch_path} (architecture)"]
    else:
        lines = _export_onnx(model, state, out, args.size, args.resize)
    print("\n".join(lines))
    return 0
