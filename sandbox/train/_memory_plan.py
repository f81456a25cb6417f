"""Memory estimates made before anything big is allocated: train, predict, export, bench.

A command that would need more memory than :func:`sandbox.runtime.memory.memory_limit`
(``SANDBOX_MAX_MEMORY``, default half the machine; the limit resampling is held to)
is refused in one line naming the size, the estimate and what to do, before it prints
its header, instead of being killed by the kernel's out-of-memory killer minutes later.

The estimate of a UNet's forward is counted from its layer shapes: the elements of
every activation a layer produces at the given input size (all of them are kept for
the backward pass in training; in evaluation only the skip connections and the
largest layer's input and output live at once), plus the largest convolution's
column workspace.  The weights ``TRAIN_KEPT``, ``TRAIN_WORK`` and ``EVAL_WORK`` were
fitted once against the tracemalloc peak of a training step and of a prediction
(2-D at 64 to 1024 pixels, 3-D at 32 voxels a side): the estimate came out 1.0 to
2.4 times the measured peak in 2-D and up to 5.4 times in 3-D (whose vol2col works in
pieces); ``tests/train/test_memory_plan.py`` keeps it between 0.8 and 6 times the
measurement, so it is neither wildly low nor wildly high.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from ..runtime.memory import ENV_VAR, format_bytes, memory_limit

FLOAT = 4  # bytes of a float32 activation
LABEL = 8  # bytes of an int64 mask label
# Fitted against measured peaks (see the module doc): the share of the counted
# activations a training step holds at its peak, and of the largest layer's workspace.
TRAIN_KEPT = 0.85
TRAIN_WORK = 0.3
EVAL_WORK = 0.75


# The synthetic training and validation sets are kept in memory (not drawn again every
# epoch) when together they take at most this share of the memory limit.
CACHE_SHARE = 0.25


def cache_if_it_fits(*datasets) -> None:
    """Turn on the sample cache of ``datasets`` (synthetic sets, which tell their
    ``cache_bytes``) when together they take at most the cache share of the limit."""
    if sum(ds.cache_bytes() for ds in datasets) <= CACHE_SHARE * memory_limit():
        for ds in datasets:
            ds.cache = True


class MemoryEstimateError(MemoryError, ValueError):
    """A command whose estimated memory exceeds the limit (one-line message)."""


@dataclass(frozen=True)
class ForwardCount:
    """Elements per sample of a UNet's forward at one input size."""

    total: int  # every activation of the forward (kept for the backward in training)
    skips: int  # the skip connections, alive through the whole forward
    largest: int  # the largest layer's input + output (+ column workspace)


def _level_sizes(spatial, depth):
    sizes = [tuple(spatial)]
    for _ in range(depth):
        sizes.append(tuple(max(s // 2, 1) for s in sizes[-1]))
    return sizes


def unet_forward_count(in_channels, num_classes, widths, spatial, upsample="bilinear",
                       norm="batch") -> ForwardCount:
    """Count the activations of a UNet (``UNet`` or ``ClassicUNet``) of these ``widths``.

    Parameters
    ----------
    in_channels, num_classes : int
    widths : sequence of int
        Channels per level, top to bottom (``len(widths) - 1`` down-sampling steps).
    spatial : sequence of int
        Input spatial size, ``(H, W)`` or ``(D, H, W)``.
    upsample, norm : str
        The decoder's upsampling and the normalisation (``"none"``: no norm outputs).
    """
    depth = len(widths) - 1
    dims = len(spatial)
    taps = 3**dims
    points = [math.prod(s) for s in _level_sizes(spatial, depth)]
    per_conv = 2 if norm == "none" else 3  # conv out, (norm out,) relu out
    total = skips = 0
    largest = 0

    def block(c_in, c_out, p):
        nonlocal total, largest
        total += 2 * per_conv * c_out * p
        # one layer at a time: input, output and the im2col/vol2col columns
        largest = max(largest, c_in * p + c_out * p + c_in * taps * p)

    block(in_channels, widths[0], points[0])
    skips += widths[0] * points[0]
    for level in range(1, depth + 1):
        total += 2 * widths[level - 1] * points[level]  # pooled map (+ argmax indices)
        block(widths[level - 1], widths[level], points[level])
        if level < depth:
            skips += widths[level] * points[level]
    for level in reversed(range(depth)):
        w, p = widths[level], points[level]
        total += w * points[level + 1] + w * p + 2 * w * p  # 1x1 conv, upsampled, cat
        block(2 * w, w, p)
    total += 3 * num_classes * points[0]  # logits, softmax, loss terms
    return ForwardCount(total + in_channels * points[0], skips, largest)


def model_widths(model) -> tuple:
    """The per-level channels of a ``UNet`` or ``ClassicUNet``."""
    if hasattr(model, "widths"):
        return tuple(model.widths)
    return tuple(model.base_width * 2**level for level in range(model.depth + 1))


def train_step_bytes(count: ForwardCount, batch: int) -> int:
    """Estimated peak of one training step (forward kept for backward, then backward)."""
    return int(FLOAT * batch * (TRAIN_KEPT * count.total + TRAIN_WORK * count.largest))


def eval_bytes(count: ForwardCount, batch: int = 1) -> int:
    """Estimated peak of a forward under ``no_grad`` (skips + the largest layer)."""
    return int(FLOAT * batch * (count.skips + EVAL_WORK * count.largest))


def check(needed: int, what: str, fix: str) -> None:
    """Raise :class:`MemoryEstimateError` when ``needed`` bytes exceed the limit."""
    limit = memory_limit()
    if needed > limit:
        source = ("from SANDBOX_MAX_MEMORY" if os.environ.get(ENV_VAR, "").strip()
                  else "half this machine's memory; SANDBOX_MAX_MEMORY sets it")
        raise MemoryEstimateError(
            f"{what} needs an estimated {format_bytes(needed)}, more than the memory limit "
            f"of {format_bytes(limit)} ({source}); {fix}"
        )


# Bytes per pixel a synthetic sample's generation holds at once (float64 coordinate
# grids, distance maps and masks: about a dozen arrays of the image's size).
_GENERATION_BYTES = 12 * 8


def _fmt_size(spatial) -> str:
    return "x".join(str(n) for n in spatial)


def check_training(cfg, train_set, val_set, dims: int) -> int:
    """Refuse a training run whose estimated peak exceeds the limit; return the estimate.

    Counts one training step of the model at ``cfg.image_size`` and ``cfg.batch_size``
    (with the batch, its augmented copy and the generation of a synthetic sample), the
    validation forward (whole images for a folder dataset) and the cached samples of
    datasets made with ``cache=True``.
    """
    widths = tuple(cfg.width * 2**level for level in range(cfg.depth + 1))
    channels, classes = train_set.in_channels, train_set.num_classes
    spatial = (cfg.image_size,) * dims
    batch = min(cfg.batch_size, max(len(train_set), 1))
    points = math.prod(spatial)
    data = 2 * batch * points * (channels * FLOAT + LABEL) + _GENERATION_BYTES * points
    step = train_step_bytes(unet_forward_count(channels, classes, widths, spatial,
                                               cfg.upsample, cfg.norm), batch)
    sizes = getattr(val_set, "sizes", None) or [spatial]
    val_spatial = max(sizes, key=math.prod) if sizes else spatial
    val_batch = 1 if len(set(sizes)) > 1 else min(cfg.batch_size, max(len(val_set), 1))
    val = eval_bytes(unet_forward_count(channels, classes, widths, val_spatial, cfg.upsample,
                                        cfg.norm), val_batch)
    cached = sum(ds.cache_bytes() for ds in (train_set, val_set)
                 if hasattr(ds, "cache_bytes") and ds.cache)
    needed = max(step, val) + data + cached
    what = (f"training a {cfg.depth}-level UNet of width {cfg.width} on "
            f"{_fmt_size(spatial)} {'volumes' if dims == 3 else 'images'} in batches of "
            f"{batch}")
    if val > step and tuple(val_spatial) != spatial:
        what += f" (validating on {_fmt_size(val_spatial)} in batches of {val_batch})"
    check(needed, what, "use a smaller --image-size or --batch-size (or --width/--depth)")
    return needed
