"""Carry models out and in: safetensors weights, PyTorch twins and ONNX files.

* :meth:`sandbox.nn.Module.save_weights` / :meth:`~sandbox.nn.Module.load_weights`
  (also :func:`save_weights` / :func:`load_weights` here): safetensors files under
  PyTorch's parameter and buffer names.
* :func:`to_torch` / :func:`from_torch`: an equivalent ``torch.nn.Module`` with
  the same weights, and back.
* :func:`to_onnx`: an ONNX file that ONNX Runtime (or burn's ONNX import) runs.
* :func:`architecture`: the constructor arguments of a UNet, as plain JSON data.

The optional packages (``safetensors``, ``onnx``, ``onnxruntime`` from the
``interop`` extra, ``torch`` from the ``torch`` extra) are imported only inside
these functions; a missing one raises an ``ImportError`` naming the extra.
"""

from __future__ import annotations

import numpy as np

from ..nn._safetensors import load_weights, read_weights, save_weights

# Loaded on first use, so that ``sandbox --help`` (which registers ``export``) stays light.
_LAZY = {"to_torch": "_torch", "from_torch": "_torch", "to_onnx": "_onnx", "run_onnx": "_onnx"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def architecture(model) -> dict:
    """The constructor arguments that rebuild ``model`` (a :class:`~sandbox.nn.UNet`).

    Returns ``{"class": "UNet", "kwargs": {...}}`` with JSON-friendly values;
    ``sandbox.nn.UNet(**arch["kwargs"])`` builds the same architecture.
    """
    from ..nn import UNet

    if not isinstance(model, UNet):
        raise TypeError(f"architecture() describes a sandbox.nn.UNet, got {type(model).__name__}")
    first_up = model.ups[0]
    dtype = next(model.parameters()).dtype
    return {
        "class": "UNet",
        "kwargs": {
            "in_channels": int(model.in_channels),
            "num_classes": int(model.num_classes),
            "depth": int(model.depth),
            "base_width": int(model.base_width),
            "upsample": model.upsample,
            "norm": model.norm,
            "align_corners": first_up.align_corners,
            "antialias": bool(first_up.antialias),
            "dtype": np.dtype(dtype).name,
            "spatial_dims": int(model.spatial_dims),
        },
    }


__all__ = [
    "architecture",
    "from_torch",
    "load_weights",
    "read_weights",
    "run_onnx",
    "save_weights",
    "to_onnx",
    "to_torch",
]
