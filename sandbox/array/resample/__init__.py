"""Array-level resampling (resize) and its adjoint on plain numpy arrays.

Every mode is a separable linear map: per spatial axis a banded weight table
(:func:`weight_table`; ``_weights`` builds them).  :func:`resize` applies the tables axis
by axis with the Cython kernels in ``sandbox._C._resample``; :func:`resize_adjoint`
applies the transposed tables (the exact adjoint, i.e. the backward of
:func:`resize`), also as a gather, so it needs no atomics and is bitwise
identical for any thread count.

Modes (PyTorch 2.13 semantics unless noted, see docs/design.md §2):

``nearest``
    PyTorch's legacy ``floor(o * scale)`` rule, float32 index math, including
    its ``out == in`` and ``out == 2 * in`` shortcuts.
``nearest-exact``
    ``floor((o + 0.5) * scale)`` (Pillow / scikit-image).
``linear`` / ``bilinear`` / ``trilinear``
    Aliases, accepted for any number of spatial axes.
``bicubic``
    Keys cubic with A = -0.75 and replicate border (PyTorch).
``cubic`` (extra)
    Keys cubic with a = -0.5, out-of-range taps skipped and the weights
    renormalised (Pillow / JAX ``cubic``).  With ``antialias`` identical to
    ``bicubic`` with ``antialias``.
``lanczos3``, ``lanczos5`` (``lanczos5`` is an extra)
    ``sinc(x) sinc(x / a)`` with out-of-range taps skipped and renormalised
    (burn's Lanczos3).  Not stretched without ``antialias``; with ``antialias``
    ``lanczos3`` is PyTorch's ``lanczos`` mode.
``lanczos``
    PyTorch's name: ``lanczos3`` that requires ``antialias=True``.
``area``
    Adaptive average pooling bins (PyTorch).

Every mode works for (N, C, L), (N, C, H, W) and (N, C, D, H, W) inputs, with
and without ``antialias`` where the mode has a filter.
"""

from __future__ import annotations

import numpy as np

from ..copy import contiguous
from . import dispatch
from ._options import MODES, _check_mode, check_array, check_input_size, make_plan
from ._weights import Table, dense_matrix, get_table

__all__ = [
    "MODES",
    "Table",
    "check_array",
    "check_options",
    "output_size",
    "plan_resize",
    "resize",
    "resize_adjoint",
    "weight_matrix",
    "weight_table",
]


def check_options(mode: str, align_corners=None, antialias: bool = False) -> str:
    """Validate a mode and its options without resampling anything.

    Raises the same ``ValueError``/``TypeError`` as :func:`resize` would (naming the
    valid choices) and returns the canonical mode name.  Layers call it at
    construction so a bad option fails early, not at the first forward.
    """
    return _check_mode(mode, antialias, align_corners)


def plan_resize(
    x,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    antialias=False,
    recompute_scale_factor=None,
):
    """Validate a :func:`resize` of ``x`` once and return its plan.

    A layer that resizes and later takes the adjoint passes the plan to both
    (``plan=``), which then skip the validation and the memory check.

    Parameters
    ----------
    x : numpy.ndarray
        The input :func:`resize` will get (its shape and dtype are what is checked).
    size, scale_factor, mode, align_corners, antialias, recompute_scale_factor
        As for :func:`resize`.

    Returns
    -------
    Plan
        The canonical mode, the input and output spatial sizes and the options.
    """
    check_array(x, "x")
    plan = make_plan(
        x.shape[2:], size, scale_factor, mode, align_corners, antialias, recompute_scale_factor,
        lead=x.shape[0] * x.shape[1], itemsize=x.itemsize,
    )
    if min(x.shape[2:]) < 1:
        raise ValueError(f"x must have non-empty spatial axes, got shape {x.shape}")
    return plan


def resize(
    x,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    antialias=False,
    recompute_scale_factor=None,
    *,
    plan=None,
):
    """Resize the spatial axes of ``x`` (PyTorch ``interpolate`` semantics).

    Parameters
    ----------
    x : numpy.ndarray
        float32 or float64 array of shape (N, C, L), (N, C, H, W) or (N, C, D, H, W).
        Any memory layout; read-only arrays are fine.
    size : int or tuple of int, optional
        Output spatial size (one int for all axes, or one per axis).
    scale_factor : float or tuple of float, optional
        Multiplier for the spatial size; the output size is ``floor(in * scale_factor)``
        and, unless ``recompute_scale_factor`` is true, the sampling step is
        ``1 / scale_factor``.  Exactly one of ``size`` and ``scale_factor``.
    mode : str
        One of :data:`MODES` (see the module docstring).
    align_corners : bool, optional
        Corner-aligned coordinates (``s = o * (in-1)/(out-1)``) for the filter
        modes; must be None for nearest, nearest-exact and area.
    antialias : bool
        Stretch the filter when downsampling (Pillow / PyTorch antialias); for
        linear, bicubic, cubic, lanczos3, lanczos5.
    recompute_scale_factor : bool, optional
        Use ``in / out`` instead of ``1 / scale_factor`` for the sampling step.
    plan : Plan, optional
        From :func:`plan_resize` for this ``x`` and these options: skips the validation.

    Returns
    -------
    numpy.ndarray
        New C-contiguous array of shape (N, C, *out_size), same dtype as ``x``.
    """
    if plan is None:
        plan = plan_resize(x, size, scale_factor, mode, align_corners, antialias,
                           recompute_scale_factor)
    return dispatch.resample(_samples(x), plan, adjoint=False)


def resize_adjoint(
    grad,
    input_size,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    antialias=False,
    recompute_scale_factor=None,
    *,
    plan=None,
):
    """Adjoint (backward) of :func:`resize`: map an output gradient back to the input.

    ``<resize(x, ...), grad> == <x, resize_adjoint(grad, x.shape[2:], ...)>`` for all
    ``x`` and ``grad``.

    Parameters
    ----------
    grad : numpy.ndarray
        float32 or float64 gradient with the shape :func:`resize` returns for an
        input of spatial size ``input_size``.
    input_size : int or tuple of int
        Spatial size of the forward's input (one entry per spatial axis).
    size, scale_factor, mode, align_corners, antialias, recompute_scale_factor
        The forward's options, as for :func:`resize`.
    plan : Plan, optional
        The forward's plan (:func:`plan_resize`), for a ``grad`` of the shape that
        forward returned: skips the validation (``input_size`` and the options are
        then not read).

    Returns
    -------
    numpy.ndarray
        Array of shape (N, C, *input_size), same dtype as ``grad``.
    """
    if plan is not None:
        return dispatch.resample(_samples(grad), plan, adjoint=True)
    check_array(grad, "grad")
    in_sizes = check_input_size(input_size, grad.ndim - 2)
    plan = make_plan(
        in_sizes, size, scale_factor, mode, align_corners, antialias, recompute_scale_factor,
        lead=grad.shape[0] * grad.shape[1], itemsize=grad.itemsize,
    )
    expected = (*grad.shape[:2], *plan.out_sizes)
    if grad.shape != expected:
        raise ValueError(
            f"grad has shape {grad.shape} but the forward output for input_size={in_sizes} "
            f"with these options has shape {expected}; grad must have shape {expected}"
        )
    return dispatch.resample(_samples(grad), plan, adjoint=True)


def _samples(x: np.ndarray) -> np.ndarray:
    """``x`` as the passes read it: as it is when it or each of its samples is
    C-contiguous (a channel slice; large enough that a call a sample costs less than a
    copy), else a contiguous copy."""
    if x.flags.c_contiguous or (x.nbytes >= _SAMPLEWISE_MIN_BYTES
                                and dispatch.samples_contiguous(x)):
        return x
    return contiguous(x)


#: an array whose samples each are contiguous runs sample by sample from this size on,
#: where a call a sample costs less than the copy: the UNet's up-sampling gradients (a
#: channel slice of its concatenation's), batch 8, bilinear, against a copy first:
#: 0.67-0.68 of the time on 32 channels at 128², 0.79-0.80 on 64 at 64², 0.82-0.86 on 128
#: at 32², 0.98-1.03 on 256 at 16² (2 MB; Zen 3 VM, family 25 model 1, 1 and 2 threads)
_SAMPLEWISE_MIN_BYTES = 1 << 22


def output_size(
    input_size, size=None, scale_factor=None, mode="nearest", recompute_scale_factor=None
):
    """Spatial output size of :func:`resize` for spatial ``input_size`` (a tuple)."""
    in_sizes = check_input_size(input_size, len(np.atleast_1d(input_size)))
    plan = make_plan(
        in_sizes, size, scale_factor, mode, None, False, recompute_scale_factor, lead=0
    )  # lead=0: a size query allocates no arrays
    return plan.out_sizes


def weight_table(
    n_in,
    n_out,
    *,
    mode="linear",
    scale_factor=None,
    align_corners=None,
    antialias=False,
    dtype=np.float64,
    adjoint=False,
):
    """The banded weight table of one axis of :func:`resize` (what the kernels read).

    Row ``o`` of the map is ``y[o] = sum_k weights[o, k] * x[start[o] + k]`` for
    ``k < ntap[o]``.  With ``adjoint=True`` it is the transposed table: per input
    index, the contiguous range of outputs that read it (what the backward gathers).

    Parameters
    ----------
    n_in, n_out : int
        Input and output length of the axis.
    mode, align_corners, antialias
        As for :func:`resize`.
    scale_factor : float, optional
        The per-axis factor the kernel uses as ``1 / scale_factor``
        (None: ``n_in / n_out``; ignored by ``area``).
    dtype : numpy dtype
        float32 or float64: the weights are computed in this precision, as the
        kernels use them.
    adjoint : bool
        Return the transposed table.

    Returns
    -------
    Table
        Named tuple ``(start, ntap, weights, n_in, identity)``; ``start`` and ``ntap``
        have one entry per output (per input when ``adjoint``), ``weights`` one row.
    """
    plan = make_plan((n_in,), n_out, None, mode, align_corners, antialias, None)
    sf = None if scale_factor is None or plan.mode == "area" else float(scale_factor)
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError(f"dtype must be float32 or float64, got {dt}")
    return get_table(plan.mode, n_in, n_out, sf, plan.align_corners, plan.antialias, dt.char,
                     bool(adjoint))


def weight_matrix(
    n_in,
    n_out,
    *,
    mode="linear",
    scale_factor=None,
    align_corners=None,
    antialias=False,
    dtype=np.float64,
):
    """Dense (n_out, n_in) matrix of one axis of :func:`resize` (for inspection and docs).

    The same options as :func:`weight_table`; ``resize`` applies one such matrix per
    spatial axis, and its backward applies their transposes.
    """
    table = weight_table(n_in, n_out, mode=mode, scale_factor=scale_factor,
                         align_corners=align_corners, antialias=antialias, dtype=dtype)
    return dense_matrix(table)
