"""``sandbox.save`` / ``sandbox.load``: ``torch.save``/``torch.load`` without pickle.

The file is the sandbox's checkpoint format (:mod:`sandbox.checkpoint`): one
``.npz`` whose arrays are stored as arrays and whose structure (nested dicts,
lists, tuples, numbers, strings) is a JSON document; it is read with
``allow_pickle=False``, so loading never runs code and needs no extra package.
Sandbox tensors and PyTorch tensors are saved as arrays and come back as
sandbox tensors; numpy arrays come back as numpy arrays.
"""

from __future__ import annotations

import io
import json
import os

import numpy as np

from ..autograd import Tensor
from ..runtime.device import check_device
from . import checkpoint

_TENSOR = "__sandbox_tensor__"


def _is_torch_tensor(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "detach")


def _encode(obj):
    """Replace tensors by tagged arrays; turn mappings into plain dicts."""
    if isinstance(obj, Tensor):
        return {_TENSOR: np.array(obj.numpy(), copy=True)}
    if _is_torch_tensor(obj):
        return {_TENSOR: obj.detach().cpu().numpy().copy()}
    if isinstance(obj, np.ndarray) and obj.dtype.hasobject:
        raise TypeError("cannot save an object array without pickle; convert it to numbers")
    if isinstance(obj, dict):
        return {k: _encode(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_encode(v) for v in obj)
    return obj


def _decode(obj):
    if isinstance(obj, dict):
        if set(obj) == {_TENSOR}:
            return Tensor(obj[_TENSOR])
        return {k: _decode(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(_decode(v) for v in obj)
    return obj


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True):
    """Write ``obj`` (a state dict, or nested dicts/lists of tensors, arrays and plain values).

    Parameters
    ----------
    obj : dict, list, tuple, Tensor, ndarray, number or str (nested)
    f : str, os.PathLike or a binary file object
        A path is written atomically (temporary file, then rename).

    Notes
    -----
    Objects that are not data (modules, optimizers, functions) cannot be saved: save
    their ``state_dict()``.  ``pickle_module``/``pickle_protocol`` are not used.
    """
    if pickle_module is not None:
        raise TypeError("sandbox.save does not pickle: pickle_module= is not supported")
    state = _encode(obj)
    if isinstance(f, str | os.PathLike):
        checkpoint.save(state, f)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")
    arrays: dict[str, np.ndarray] = {}
    meta = {"format_version": checkpoint.FORMAT_VERSION,
            "state": checkpoint._flatten(state, arrays, "")}
    np.savez(f, **{checkpoint._META_KEY: np.array(json.dumps(meta))}, **arrays)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **kwargs):
    """Read what :func:`save` wrote.  Tensors come back as sandbox tensors.

    ``map_location`` may be None, ``"cpu"`` or a CPU :class:`sandbox.device`;
    ``weights_only`` is accepted (loading is always data-only).  PyTorch's own
    ``.pt`` files are pickles and cannot be read here: load them with torch and
    pass ``{k: v.numpy() for k, v in state.items()}`` to ``load_state_dict``, or
    re-save them with ``sandbox.save(state, path)``.
    """
    if map_location is not None and not callable(map_location):
        check_device(map_location)
    if isinstance(f, str | os.PathLike):
        try:
            state = checkpoint.load(f)
        except ValueError as exc:
            if "is not a sandbox checkpoint" not in str(exc):
                raise
            raise ValueError(
                f"{exc}. PyTorch .pt files are pickles, which the sandbox does not read: "
                "re-save the state dict with sandbox.save in a process that has torch"
            ) from None
        return _decode(state)
    if not hasattr(f, "read"):
        raise TypeError(f"f must be a path or a binary file object, got {type(f).__name__}")
    data = np.load(io.BytesIO(f.read()), allow_pickle=False)
    meta = json.loads(str(data[checkpoint._META_KEY]))
    arrays = {k: data[k] for k in data.files if k != checkpoint._META_KEY}
    return _decode(checkpoint._unflatten(meta["state"], arrays))
