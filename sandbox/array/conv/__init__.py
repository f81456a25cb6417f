"""Convolution and transposed convolution on plain ndarrays, 2-D and 3-D.

Public ops, as ``torch.nn.functional``'s: :func:`conv`, :func:`conv_backward`,
:func:`conv_transpose` and :func:`conv_transpose_backward` take ``(N, C, H, W)`` or
``(N, C, D, H, W)`` inputs and dispatch on ``ndim`` (as :func:`sandbox.resample.resize`
does); ``conv2d``, ``conv3d``, ``conv_transpose2d`` ... are the same ops with the
rank fixed.  Each validates its arguments once (:func:`plan_conv`, in ``_checks``)
and then runs its rank's paths:

``_run2d``
    Winograd F(2x2, 3x3) or F(4x4, 3x3) (``_winograd``) for eligible 3x3 stride-1
    ungrouped convs, else im2col + GEMM in fixed chunks of samples (``_im2col``).
``_run3d``
    2-D Winograd summed over depth (``_winograd3d``) for eligible 3x3x3 convs, else
    vol2col + GEMM (``_vol2col``), in slabs of depth planes for large samples.

Every op also takes ``plan=``, a :class:`ConvPlan` from :func:`plan_conv` for the same
arguments: then it does not validate again (the differentiable Functions plan once in
the forward and reuse the plan in the backward).  Which path runs depends on the
shapes and on the knobs in :data:`TUNING` (``_tuning``), never on the thread count;
every result is bitwise identical for any number of threads.
"""

from __future__ import annotations

import inspect

import numpy as np

from . import _run2d, _run3d
from . import _winograd as winograd  # noqa: F401  (the 2-D Winograd path; tests spy on it)
from ._checks import (
    ConvPlan,
    check_grad_output,
    conv2d_output_size,
    conv3d_output_size,
    conv_output_size,
    conv_transpose2d_output_size,
    conv_transpose3d_output_size,
    conv_transpose_output_size,
    plan_conv,
)
from ._tuning import TUNING, ConvTuning, chunk_threads, tuned

__all__ = [
    "TUNING",
    "ConvPlan",
    "ConvTuning",
    "conv",
    "conv2d",
    "conv2d_backward",
    "conv2d_output_size",
    "conv3d",
    "conv3d_backward",
    "conv3d_output_size",
    "conv_backward",
    "conv_output_size",
    "conv_transpose",
    "conv_transpose2d",
    "conv_transpose2d_backward",
    "conv_transpose2d_output_size",
    "conv_transpose3d",
    "conv_transpose3d_backward",
    "conv_transpose3d_output_size",
    "conv_transpose_backward",
    "conv_transpose_output_size",
    "chunk_threads",
    "plan_conv",
    "tuned",
]

_RUN = {2: _run2d, 3: _run3d}


def _grad_checked(plan, grad_output, input, weight):
    channels = weight.shape[1] * plan.groups if plan.transposed else weight.shape[0]
    check_grad_output(grad_output, input, (input.shape[0], channels, *plan.out_size))


def conv(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1, *, plan=None,
         nd=None):
    """Cross-correlation of any spatial rank, as ``torch.nn.functional.conv2d``/``conv3d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, H, W) or (N, C_in, D, H, W), float32 or float64
    weight : ndarray, shape (C_out, C_in/groups, *kernel), same dtype and rank
    bias : ndarray, shape (C_out,), optional
    stride, padding, dilation : int or tuple of ints (one per spatial axis)
        Positive stride and dilation, non-negative zero padding.
    groups : int
        Positive, dividing both ``C_in`` and ``C_out``.
    plan : ConvPlan, optional
        From :func:`plan_conv` for these arguments: skips the validation.
    nd : int, optional
        The spatial rank (2 or 3) the input must have; None: ``input.ndim - 2``.

    Returns
    -------
    ndarray, shape (N, C_out, *out) with, per axis,
    ``out = (size + 2*padding - dilation*(k-1) - 1) // stride + 1``.
    """
    if plan is None:
        plan = plan_conv(input, weight, bias, stride, padding, dilation, groups, nd=nd)
    return _RUN[plan.nd].conv_forward(input, weight, bias, plan)


def _empty_batch_grads(input, weight, bias_channels: int, needs):
    """The gradients of a batch of no samples: an empty input gradient, zero weight and
    bias gradients (as PyTorch; no loop of the kernels has a chunk to run)."""
    return (np.empty(input.shape, input.dtype) if needs[0] else None,
            np.zeros(weight.shape, weight.dtype) if needs[1] else None,
            np.zeros(bias_channels, weight.dtype) if needs[2] else None)


def conv_backward(grad_output, input, weight, stride=1, padding=0, dilation=1, groups=1,
                  needs=(True, True, True), *, plan=None, nd=None):
    """Gradients of :func:`conv` with respect to (input, weight, bias).

    ``needs`` (three bools) skips the gradients not wanted; those come back as None.
    ``grad_output`` must have the shape :func:`conv` returns (checked unless ``plan``
    is given).
    """
    if plan is None:
        plan = plan_conv(input, weight, None, stride, padding, dilation, groups, nd=nd)
        _grad_checked(plan, grad_output, input, weight)
    if input.shape[0] == 0:
        return _empty_batch_grads(input, weight, weight.shape[0], needs)
    return _RUN[plan.nd].conv_backward(grad_output, input, weight, plan, needs)


def conv_transpose(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                   dilation=1, *, plan=None, nd=None):
    """Transposed convolution of any spatial rank, as ``conv_transpose2d``/``conv_transpose3d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, H, W) or (N, C_in, D, H, W), float32 or float64
    weight : ndarray, shape (C_in, C_out/groups, *kernel), same dtype and rank
    bias : ndarray, shape (C_out,), optional
    stride, padding, output_padding, dilation : int or tuple of ints
        ``output_padding`` must be smaller than the stride or the dilation.
    groups : int
    plan, nd
        As for :func:`conv` (a plan made with ``transposed=True``).

    Returns
    -------
    ndarray, shape (N, C_out, *out) with, per axis,
    ``out = (size-1)*stride - 2*padding + dilation*(k-1) + output_padding + 1``.
    """
    if plan is None:
        plan = plan_conv(input, weight, bias, stride, padding, dilation, groups,
                         transposed=True, output_padding=output_padding, nd=nd)
    return _RUN[plan.nd].transpose_forward(input, weight, bias, plan)


def conv_transpose_backward(grad_output, input, weight, stride=1, padding=0, output_padding=0,
                            groups=1, dilation=1, needs=(True, True, True), *, plan=None,
                            nd=None):
    """Gradients of :func:`conv_transpose` with respect to (input, weight, bias).

    The input gradient is a convolution of ``grad_output`` with ``weight``; the
    weight gradient pairs ``input`` with the columns of ``grad_output``.
    """
    if plan is None:
        plan = plan_conv(input, weight, None, stride, padding, dilation, groups,
                         transposed=True, output_padding=output_padding, nd=nd)
        _grad_checked(plan, grad_output, input, weight)
    if input.shape[0] == 0:
        return _empty_batch_grads(input, weight, weight.shape[1] * plan.groups, needs)
    return _RUN[plan.nd].transpose_backward(grad_output, input, weight, plan, needs)


# The rank-fixed names (PyTorch's): the generic ops with ``nd`` set.
def _rank_fixed(op, nd: int):
    """``op`` with the spatial rank fixed to ``nd``: the same arguments but the
    keyword-only ``plan`` and ``nd``, named as PyTorch names it (``conv2d_backward``)."""
    base, backward = op.__name__.removesuffix("_backward"), op.__name__.endswith("_backward")
    name = f"{base}{nd}d" + ("_backward" if backward else "")
    signature = inspect.signature(op)
    signature = signature.replace(parameters=[
        p for p in signature.parameters.values() if p.kind is not p.KEYWORD_ONLY
    ])

    def fixed(*args, **kwargs):
        # plan and nd are op's keyword-only arguments (no positional reaches them); a
        # typo is op's own TypeError.  No signature binding: this is on the hot path.
        if "plan" in kwargs or "nd" in kwargs:
            name_ = "plan" if "plan" in kwargs else "nd"
            raise TypeError(f"{fixed.__name__}() got an unexpected keyword argument {name_!r}")
        return op(*args, **kwargs, nd=nd)

    fixed.__name__ = fixed.__qualname__ = name
    fixed.__signature__ = signature
    if backward:
        what = f"Gradients of :func:`{base}{nd}d` with respect to (input, weight, bias)"
    else:
        torch_name = f"torch.nn.functional.{name}"
        what = f"{nd}-D :func:`{base}` of ``{_LAYOUT[nd]}`` inputs, as ``{torch_name}``"
    fixed.__doc__ = (
        f"{what}.\n\nThe arguments and results of :func:`{op.__name__}`, without ``plan`` "
        "and ``nd``.\n"
    )
    return fixed


_LAYOUT = {2: "(N, C, H, W)", 3: "(N, C, D, H, W)"}
conv2d, conv3d = _rank_fixed(conv, 2), _rank_fixed(conv, 3)
conv2d_backward, conv3d_backward = _rank_fixed(conv_backward, 2), _rank_fixed(conv_backward, 3)
conv_transpose2d, conv_transpose3d = _rank_fixed(conv_transpose, 2), _rank_fixed(conv_transpose, 3)
conv_transpose2d_backward = _rank_fixed(conv_transpose_backward, 2)
conv_transpose3d_backward = _rank_fixed(conv_transpose_backward, 3)
