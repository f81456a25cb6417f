"""Atomic, pickle-free checkpoints.

A checkpoint is one ``.npz`` file: every numpy array of the (nested) state is
stored as its own entry, and everything else (numbers, strings, lists, dicts,
RNG states) goes into a JSON document stored alongside.  Loading uses
``allow_pickle=False``, so opening a checkpoint never runs code.

Writes are atomic: the file is written to a temporary name in the same folder,
flushed to disk, then renamed over the old one (``os.replace``), so a crash
mid-write leaves the previous checkpoint intact.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1
_META_KEY = "__meta__"


def _flatten(obj, arrays: dict, path: str):
    """Replace every ndarray in ``obj`` by a reference, collecting arrays by path."""
    if isinstance(obj, np.ndarray):
        key = f"a{len(arrays)}"
        arrays[key] = obj
        return {"__array__": key}
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        if not all(isinstance(k, str | int) for k in obj):
            raise TypeError(f"checkpoint dict keys must be str or int (at {path or 'top level'})")
        # JSON keys are strings: remember which were integers.
        return {"__dict__": [[k, _flatten(v, arrays, f"{path}/{k}")] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_flatten(v, arrays, f"{path}/{i}") for i, v in enumerate(obj)]}
    if isinstance(obj, list):
        return [_flatten(v, arrays, f"{path}/{i}") for i, v in enumerate(obj)]
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    raise TypeError(f"cannot store {type(obj).__name__} in a checkpoint (at {path or 'top level'})")


def _unflatten(obj, arrays):
    if isinstance(obj, dict):
        if "__array__" in obj:
            return arrays[obj["__array__"]]
        if "__dict__" in obj:
            return {k: _unflatten(v, arrays) for k, v in obj["__dict__"]}
        if "__tuple__" in obj:
            return tuple(_unflatten(v, arrays) for v in obj["__tuple__"])
    if isinstance(obj, list):
        return [_unflatten(v, arrays) for v in obj]
    return obj


def save(state: dict, path) -> Path:
    """Write ``state`` (nested dicts/lists of arrays and plain values) atomically to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    meta = {"format_version": FORMAT_VERSION, "state": _flatten(state, arrays, "")}
    buffer = io.BytesIO()
    np.savez(buffer, **{_META_KEY: np.array(json.dumps(meta))}, **arrays)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load(path) -> dict:
    """Read a checkpoint written by :func:`save`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data[_META_KEY]))
            arrays = {k: data[k] for k in data.files if k != _META_KEY}
    except (ValueError, OSError, KeyError) as exc:
        raise ValueError(f"{path} is not a sandbox checkpoint ({exc})") from exc
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: unsupported checkpoint format {meta.get('format_version')!r} "
            f"(this version reads {FORMAT_VERSION})"
        )
    return _unflatten(meta["state"], arrays)
