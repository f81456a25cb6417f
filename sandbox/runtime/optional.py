"""Import an optional package (an extra) only inside the function that needs it."""

from __future__ import annotations

import importlib

# Package -> the extra of this project that installs it.
EXTRAS = {
    "torch": "torch",
    "safetensors": "interop",
    "onnx": "interop",
    "onnxruntime": "interop",
}


def require(package: str, purpose: str):
    """Import ``package`` or raise an ``ImportError`` naming the extra that installs it.

    Parameters
    ----------
    package : str
        Top-level module name, e.g. ``"onnx"`` or ``"safetensors.numpy"``.
    purpose : str
        What needs it, for the message (e.g. ``"to_onnx"``).
    """
    top = package.split(".")[0]
    try:
        return importlib.import_module(package)
    except ImportError as exc:
        extra = EXTRAS.get(top, "interop")
        raise ImportError(
            f"{purpose} needs the optional package {top!r}, which cannot be imported ({exc}); "
            f"install it with: pip install 'cpu-train-sandbox[{extra}]'"
        ) from exc
