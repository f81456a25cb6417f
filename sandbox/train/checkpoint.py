"""Atomic, pickle-free checkpoints.

A checkpoint is one ``.npz`` file: every numpy array of the (nested) state is
stored as its own entry, and everything else (numbers, strings, lists, dicts,
RNG states) goes into a JSON document stored alongside.  Loading uses
``allow_pickle=False``, so opening a checkpoint never runs code.

Writes are atomic: the file is written to a temporary name in the same folder,
flushed to disk, then renamed over the old one (``os.replace``), so a crash
mid-write leaves the previous checkpoint intact.  The temporary file such a crash
leaves behind is removed by :func:`remove_stale_temp_files` (the trainer calls it
when a run starts).  A damaged or foreign file given to :func:`load` raises a
``ValueError`` naming the file.
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
TEMP_SUFFIX = ".tmp"


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


def _file_mode() -> int:
    """Permissions of a normal new file (0o666 minus the umask), not mkstemp's 0o600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def save(state: dict, path) -> Path:
    """Write ``state`` (nested dicts/lists of arrays and plain values) atomically to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray] = {}
    meta = {"format_version": FORMAT_VERSION, "state": _flatten(state, arrays, "")}
    buffer = io.BytesIO()
    np.savez(buffer, **{_META_KEY: np.array(json.dumps(meta))}, **arrays)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, "wb") as f:
            f.write(buffer.getbuffer())
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def remove_stale_temp_files(folder) -> list[Path]:
    """Delete the temporary files of interrupted saves (``.<name>.ckpt.*.tmp``) in ``folder``.

    A process killed while :func:`save` writes leaves its temporary file behind (the
    checkpoint itself is intact).  Call this where no other process is saving into
    ``folder`` (the trainer does, holding the run folder's lock).  Returns what it removed.
    """
    removed = []
    for tmp in Path(folder).glob(f".*.ckpt.*{TEMP_SUFFIX}"):
        if tmp.is_file():
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _damaged(path, why: str) -> ValueError:
    return ValueError(
        f"{path} is not a sandbox checkpoint, or a damaged one ({why}); a checkpoint can "
        "be damaged by a full disk or an interrupted copy: use another one (best.ckpt or "
        "last.ckpt of the run)"
    )


def load(path) -> dict:
    """Read a checkpoint written by :func:`save`.

    Raises
    ------
    FileNotFoundError
        ``path`` does not exist (or is a folder).
    ValueError
        The file is not a checkpoint, or it is damaged (truncated, corrupted); the
        message names the file.  Never a zip, pickle or JSON error.
    """
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"checkpoint {path} is a folder, not a .ckpt file")
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    if path.stat().st_size == 0:
        raise _damaged(path, "the file is empty")
    try:
        with path.open("rb") as f:
            is_zip = f.read(4) == b"PK\x03\x04"
        if not is_zip:
            raise _damaged(path, "not a .npz/zip archive")
        with np.load(path, allow_pickle=False) as data:
            if _META_KEY not in data.files:
                raise _damaged(path, "an .npz file without the sandbox header")
            meta = json.loads(str(data[_META_KEY]))
            arrays = {k: data[k] for k in data.files if k != _META_KEY}
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise _damaged(path, _short(exc)) from exc
    except Exception as exc:  # BadZipFile, EOFError, zlib.error, a garbled npy header...
        raise _damaged(path, _short(exc)) from exc
    if not isinstance(meta, dict) or "state" not in meta:
        raise _damaged(path, "no state in the header")
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: unsupported checkpoint format {meta.get('format_version')!r} "
            f"(this version reads {FORMAT_VERSION})"
        )
    try:
        return _unflatten(meta["state"], arrays)
    except (KeyError, TypeError, ValueError) as exc:
        raise _damaged(path, f"inconsistent contents: {_short(exc)}") from exc


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."


TRAINING_KEYS = ("config", "model", "optimizer", "scheduler", "rng", "position", "best", "data")


def load_training_state(path) -> dict:
    """:func:`load` a checkpoint written by the trainer, checking it has every part."""
    state = load(path)
    missing = [k for k in TRAINING_KEYS if not isinstance(state, dict) or k not in state]
    if missing or not isinstance(state.get("config"), dict):
        raise ValueError(
            f"{path} is a sandbox checkpoint but not one written by 'sandbox train' "
            f"(missing {', '.join(missing) or 'config'})"
        )
    return state
