"""``repr(tensor)`` / ``str(tensor)`` laid out as PyTorch prints them.

``tensor([1., 2.])``, ``tensor([0.1000, 2.5000], requires_grad=True)``,
``tensor([1, 2], dtype=sandbox.int32)``, ``tensor(3.5000, grad_fn=<MulBackward>)``:
four digits after the point, a trailing ``.`` when every float is a whole number,
scientific notation when the magnitudes span more than 1000x (or exceed 1e8, or go
below 1e-4), one width for every element, lines of at most 80 characters, and
tensors of more than 1000 elements summarised with ``...`` (three items per edge).
The dtype is named when it is not a default one (the default float dtype, int64
and bool).
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime.dtypes import get_default_dtype

__all__ = ["tensor_repr"]

_PRECISION = 4
_THRESHOLD = 1000
_EDGE = 3
_LINEWIDTH = 80


class _Format:
    """One number format (and width) for every element of a tensor."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci = False
        self.width = 1
        flat = values.ravel()
        if not self.floating:
            for v in flat.tolist():
                self.width = max(self.width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        big, small = np.abs(finite).max(), np.abs(finite).min()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        spread = big / small > 1000.0 or big > 1.0e8
        self.sci = spread if self.int_mode else (spread or small < 1.0e-4)
        for v in finite.tolist():
            text = self._plain(v)
            self.width = max(self.width, len(text) + (self.int_mode and not self.sci))

    def _plain(self, v) -> str:
        if self.sci:
            return f"{v:.{_PRECISION}e}"
        if self.int_mode:
            return f"{v:.0f}"
        return f"{v:.{_PRECISION}f}"

    def __call__(self, v) -> str:
        if not self.floating:
            text = str(v)
        elif self.sci:
            text = f"{v:{self.width}.{_PRECISION}e}"
        elif self.int_mode:
            text = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            text = f"{v:.{_PRECISION}f}"
        return " " * (self.width - len(text)) + text


def _summary(a: np.ndarray) -> np.ndarray:
    """The elements a summarised print shows (the edges of every dim)."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * _EDGE:
        a = np.concatenate([a[:_EDGE], a[-_EDGE:]])
    if a.ndim == 1:
        return a
    return np.stack([_summary(row) for row in a])


def _vector(a, indent, summarize, fmt) -> str:
    per_line = max(1, (_LINEWIDTH - indent) // (fmt.width + 2))
    if summarize and a.shape[0] > 2 * _EDGE:
        items = [fmt(v) for v in a[:_EDGE].tolist()] + [" ..."]
        items += [fmt(v) for v in a[-_EDGE:].tolist()]
    else:
        items = [fmt(v) for v in a.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _body(a, indent, summarize, fmt) -> str:
    if a.ndim == 0:
        return fmt(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    n = a.shape[0]
    if summarize and n > 2 * _EDGE:
        rows = [_body(a[i], indent + 1, summarize, fmt) for i in range(_EDGE)] + ["..."]
        rows += [_body(a[i], indent + 1, summarize, fmt) for i in range(n - _EDGE, n)]
    else:
        rows = [_body(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def tensor_repr(t) -> str:
    """PyTorch's printed form of ``t`` (see the module docstring)."""
    a = t._data
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if a.size == 0:
        body = "[]"
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
    else:
        summarize = a.size > _THRESHOLD
        fmt = _Format(_summary(a) if summarize else a)
        body = _body(a, indent, summarize, fmt)
    if a.dtype not in (np.dtype(get_default_dtype()), np.dtype(np.int64), np.dtype(np.bool_)):
        suffixes.append(f"dtype=sandbox.{a.dtype}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:  # a suffix that would overflow the line starts a new one
        if last + len(s) + 2 > _LINEWIDTH:
            text += ",\n" + " " * indent + s
            last = indent + len(s)
        else:
            text += ", " + s
            last += len(s) + 2
    return text + ")"
