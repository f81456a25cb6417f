"""Padding as ``torch.nn.functional.pad``: constant, reflect, replicate and circular.

Negative widths crop.  Constant padding writes the input into a filled array
(:class:`~sandbox.ops._shape.Pad`); the other modes are one gather with an index
array per padded axis (``x[..., rows[:, None], cols]``), whose backward sums the
gradient back onto the source elements, so every mode is differentiable twice.
"""

from __future__ import annotations

import numpy as np

from ._shape import Pad, getitem

PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _source_index(n, before, after, mode):
    """Source index of every output position along an axis of length ``n``."""
    j = np.arange(-before, n + after)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "circular":
        return j % n
    # reflect: mirror about the edge samples (the edge is not repeated)
    period = 2 * (n - 1)
    j = np.abs(j) % period if period else np.zeros_like(j)
    return np.where(j >= n, period - j, j)


def _check_widths(pad, ndim):
    if not isinstance(pad, tuple | list) or not all(
        isinstance(p, int | np.integer) and not isinstance(p, bool) for p in pad
    ):
        raise TypeError(f"pad: widths must be a tuple of ints, got {pad!r}")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 or len(pad) // 2 > ndim:
        raise ValueError(
            f"pad: expected an even number of widths, at most 2 * ndim = {2 * ndim}, got {pad}"
        )
    return pad


def pad(input, pad, mode="constant", value=None):  # noqa: A002 - torch's names
    """Pad (or, with negative widths, crop) the last dims, as ``torch.nn.functional.pad``.

    Parameters
    ----------
    input : Tensor
    pad : tuple of int
        ``(left, right, top, bottom, front, back)``: pairs from the last dim backwards.
        Negative widths remove elements.
    mode : {"constant", "reflect", "replicate", "circular"}
        ``reflect`` mirrors without repeating the edge (needs width < size);
        ``replicate`` repeats the edge; ``circular`` wraps around (needs width <= size).
    value : float, optional
        Fill value for ``mode="constant"`` (default 0).

    Notes
    -----
    PyTorch limits the non-constant modes to the last 1-3 dims of a batched input;
    here they work on any trailing dims.
    """
    if mode not in PAD_MODES:
        raise ValueError(f"pad: mode must be one of {PAD_MODES}, got {mode!r}")
    if value is not None and mode != "constant":
        raise ValueError(f"pad: value= is only used with mode='constant', not {mode!r}")
    pad = _check_widths(pad, input.ndim)
    pairs = {input.ndim - 1 - i: (pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)}
    # Crop the negative widths first.
    crop = [slice(None)] * input.ndim
    for axis, (a, b) in pairs.items():
        n = input.shape[axis]
        if n + min(a, 0) + min(b, 0) <= 0:
            raise ValueError(
                f"pad: widths {(a, b)} leave nothing of dim {axis} (size {n})"
            )
        crop[axis] = slice(-min(a, 0), n + min(b, 0))
    x = input
    if any(min(a, b) < 0 for a, b in pairs.values()):
        x = getitem(x, tuple(crop))
    pairs = {axis: (max(a, 0), max(b, 0)) for axis, (a, b) in pairs.items()}
    if not any(a or b for a, b in pairs.values()):
        return x if x is not input else x.clone()
    if mode == "constant":
        widths = tuple(pairs.get(axis, (0, 0)) for axis in range(x.ndim))
        return Pad.apply(x, widths, 0.0 if value is None else value)
    for axis, (a, b) in pairs.items():
        n = x.shape[axis]
        limit = n - 1 if mode == "reflect" else (n if mode == "circular" else None)
        if limit is not None and max(a, b) > limit:
            raise ValueError(
                f"pad: {mode} padding of {max(a, b)} needs a dim larger than that; "
                f"dim {axis} has size {n} (at most {limit} for {mode!r})"
            )
    axes = sorted(pairs)
    index = []
    for k, axis in enumerate(axes):
        idx = _source_index(x.shape[axis], *pairs[axis], mode)
        index.append(idx.reshape((-1,) + (1,) * (len(axes) - 1 - k)))
    if axes != list(range(axes[0], x.ndim)):
        raise ValueError("pad: padded dims must be the trailing ones")
    return getitem(x, (Ellipsis, *index))
