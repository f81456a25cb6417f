"""Weights as safetensors files, under PyTorch's parameter and buffer names.

The file holds exactly ``module.state_dict()``: the same dotted names PyTorch
gives the twin model (``inc.conv1.weight``, ``inc.norm1.running_mean``,
``inc.norm1.num_batches_tracked`` ...), float arrays in the module's dtype and
``num_batches_tracked`` as a 0-d int64, so ``safetensors.torch.load_file`` plus
``load_state_dict`` restores a PyTorch model, and it is the PyTorch layout that
burn's ``SafetensorsStore`` with its ``PyTorchToBurnAdapter`` is documented to
read.  (The safetensors format sorts its header by name; the state_dict order is
the order of the module's own slots.)
"""

from __future__ import annotations

import os
import uuid
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..runtime.optional import require


def _safetensors_numpy(purpose: str):
    return require("safetensors.numpy", purpose)


def assign_state(module, arrays: Mapping, strict: bool = True, source: str = "state"):
    """Copy ``arrays`` (name -> numpy array) into ``module``'s parameters and buffers.

    Unlike ``load_state_dict`` nothing is cast: every array must have the shape
    *and* dtype of the slot it fills.  Nothing is changed unless every check passes.

    Returns
    -------
    (missing, unexpected) : tuple of lists of str

    Raises
    ------
    KeyError
        ``strict`` and names are missing or unexpected (all are listed).
    ValueError
        A shape or dtype differs (all such names are listed).
    """
    slots, missing, unexpected = module._match_keys(arrays)
    if strict and (missing or unexpected):
        parts = []
        if missing:
            parts.append(f"missing keys: {', '.join(missing)}")
        if unexpected:
            parts.append(f"unexpected keys: {', '.join(unexpected)}")
        raise KeyError(
            f"{source} does not match {type(module).__name__}: " + "; ".join(parts)
            + " (pass strict=False to load the matching names only)"
        )
    problems = []
    for key, (owner, name, kind) in slots.items():
        if key not in arrays:
            continue
        array = arrays[key]
        current = owner._parameters[name].numpy() if kind == "param" else owner._buffers[name]
        if array.shape != current.shape:
            problems.append(f"{key}: shape {array.shape} given, model has {current.shape}")
        elif array.dtype != current.dtype:
            problems.append(f"{key}: dtype {array.dtype} given, model has {current.dtype}")
    if problems:
        listed = "; ".join(problems[:4])
        if len(problems) > 4:
            listed += f"; and {len(problems) - 4} more"
        hint = ""
        if any("dtype" in p for p in problems):
            hint = " (convert the model first, e.g. model.to(np.float64), to match the weights)"
        raise ValueError(f"{source} does not fit {type(module).__name__}: {listed}{hint}")
    for key, (owner, name, kind) in slots.items():
        if key in arrays:
            value = np.array(arrays[key], copy=True)
            if kind == "param":
                owner._parameters[name].data = value
            else:
                owner._buffers[name] = value
    return missing, unexpected


def save_weights(module, path, metadata: Mapping | None = None) -> Path:
    """Write ``module.state_dict()`` to a safetensors file (atomically).

    Parameters
    ----------
    module : sandbox.nn.Module
    path : str or os.PathLike
        Destination, conventionally ``*.safetensors``; its folder is created.
    metadata : mapping of str to str, optional
        Extra text stored in the file header (next to ``format: pt``).

    Returns
    -------
    pathlib.Path
    """
    st = _safetensors_numpy("save_weights")
    header = {"format": "pt"}
    for key, value in (metadata or {}).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(f"metadata must map str to str, got {key!r}: {value!r}")
        header[key] = value
    # np.asarray keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d)
    tensors = {k: np.asarray(v, order="C") for k, v in module.state_dict().items()}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A fresh name in the same folder (so os.replace is atomic), created by safetensors
    # itself so the file gets the usual permissions.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        st.save_file(tensors, tmp, metadata=header)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_weights(path) -> tuple[OrderedDict, dict]:
    """Read a safetensors file into ``(arrays by name, header metadata)``.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` for a file
    that is not safetensors or holds a dtype numpy cannot represent (bfloat16).
    """
    st = _safetensors_numpy("load_weights")
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"weights file not found: {path}")
    try:
        with safe_open(str(path), framework="numpy") as f:
            metadata = dict(f.metadata() or {})
        arrays = st.load_file(str(path))
    except SafetensorError as exc:
        raise ValueError(f"{path} is not a safetensors file ({exc})") from exc
    except TypeError as exc:  # e.g. bfloat16, which numpy has no dtype for
        raise ValueError(f"{path} holds a tensor numpy cannot read ({exc})") from exc
    return OrderedDict(arrays), metadata


def load_weights(module, path, strict: bool = True) -> tuple[list, list]:
    """Load a safetensors file written by :func:`save_weights` (or by PyTorch) into ``module``.

    Every tensor must match its parameter or buffer in shape and dtype; with
    ``strict`` (default) the names must match exactly, too.

    Returns
    -------
    (missing, unexpected) : tuple of lists of str
    """
    arrays, _ = read_weights(path)
    return assign_state(module, arrays, strict=strict, source=str(path))
