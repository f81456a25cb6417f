"""Batch and group normalisation on plain ndarrays (numpy; float32 stays float32).

Notation for one normalisation group of ``m`` values (a channel over batch and
space for batch norm; ``C/G`` channels of one sample for group norm)::

    mean = sum(x) / m,   var = sum((x - mean)**2) / m,   invstd = 1 / sqrt(var + eps)
    xhat = (x - mean) * invstd,   y = weight * xhat + bias

and the backward with ``dxhat = weight * dy``::

    dx = invstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat))

The kernels (``pyx/_norm.pyx``, every thread) take their sums in lanes of the input's
dtype by blocks of 1024 values of a plane (of a group, in group norm), the blocks
added in double.  Batch norm parallelises over channels; group norm over the groups of
the samples, one kernel a pass: a group of a sample (C/G consecutive planes) gets its
statistics, its per-channel scalars and its output or input-gradient planes in one
iteration.  With
numpy's steps on (N, C) arrays between batch norm's kernels, group norm's forward +
backward of a (8, 16, 64, 64) float32 map had taken 1.18x PyTorch's time at 1 thread
and 1.22x at 2; 0.89x and 0.84x this way (AMD EPYC family 25 model 1 VM, ``python
benchmarks/bench_ops_vs_torch.py --threads 1 2 --ops group_norm``).
"""

from __future__ import annotations

import math

import numpy as np

from .._C import _norm as _kernels
from ..runtime.threads import kernel_threads
from ._validate import FLOAT_DTYPES, check_float, check_same_dtype
from .copy import contiguous

__all__ = ["batch_norm", "batch_norm_backward", "batch_norm_relu", "batch_norm_relu_backward",
           "batch_norm_relu_mask",
           "layer_norm", "layer_norm_backward",
           "group_norm", "group_norm_backward"]


def _check_input(input, name="input"):
    check_float(input, name)
    if input.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (N, C, ...), "
                         f"got shape {input.shape}")


def _check_param(arr, name, channels, ref=None):
    """``arr`` (None, or a float ndarray of shape ``(channels,)`` and, given ``ref``, of
    its dtype), else the TypeError or ValueError naming ``name``."""
    if arr is None or (isinstance(arr, np.ndarray) and arr.shape == (channels,)
                       and (arr.dtype in FLOAT_DTYPES if ref is None
                            else arr.dtype == ref.dtype)):
        return arr  # the common case, in one test (ref is a float array)
    check_float(arr, name)
    if ref is not None:
        check_same_dtype(arr, ref, name)
    raise ValueError(f"{name} must have shape ({channels},), got {arr.shape}")


def _check_eps(eps):
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps!r}")


def _view3(x):
    """(N, C, ...) -> contiguous (N, C, L)."""
    return contiguous(x).reshape(x.shape[0], x.shape[1], math.prod(x.shape[2:]))


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalisation, as ``torch.nn.functional.batch_norm``.

    Parameters
    ----------
    input : ndarray, shape (N, C, ...), float32 or float64
    running_mean, running_var : ndarray, shape (C,), or None
        Running statistics.  Used for normalisation when ``training`` is False;
        updated in place (unbiased variance) when ``training`` is True.
    weight, bias : ndarray, shape (C,), optional
    training : bool
        Normalise with the batch statistics (biased variance).
    momentum : float
        ``running = (1 - momentum) * running + momentum * batch_stat``.
    eps : float

    Returns
    -------
    out : ndarray, same shape and dtype as ``input``
    mean, invstd : ndarray, shape (C,)
        The statistics used (saved for :func:`batch_norm_backward`).
    """
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps,
                       relu=False)


def batch_norm_relu(input, running_mean, running_var, weight=None, bias=None, training=False,
                    momentum=0.1, eps=1e-5):
    """Batch normalisation followed by ReLU, in one pass over the data.

    Bitwise identical to ``np.maximum(batch_norm(...)[0], 0)`` (NaN propagates),
    without the intermediate array.

    Parameters
    ----------
    input, running_mean, running_var, weight, bias, training, momentum, eps
        As for :func:`batch_norm`.

    Returns
    -------
    out : ndarray, same shape and dtype as ``input``
        ``max(batch_norm(input), 0)``; keep it for :func:`batch_norm_relu_backward`.
    mean, invstd : ndarray, shape (C,)
        The statistics used.
    """
    return _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps,
                       relu=True)


def _scale_shift(mean, invstd, weight, bias, dtype):
    """Batch norm's affine ``y = x * scale + shift``: ``scale = invstd * weight``, ``shift
    = bias - mean * scale``, in numpy's operations in ``dtype`` (the bits ``train_forward``
    replays, and the backward recomputes ReLU's mask with)."""
    scale = np.ascontiguousarray(invstd if weight is None else invstd * weight, dtype=dtype)
    shift = np.ascontiguousarray(-mean * scale if bias is None else bias - mean * scale,
                                 dtype=dtype)
    return scale, shift


def batch_norm_relu_mask(input, mean, invstd, weight=None, bias=None):
    """ReLU's mask of :func:`batch_norm_relu`: where its output is > 0, recomputed from
    the input with the forward's scale and shift (its bits).

    Parameters
    ----------
    input : ndarray, shape (N, C, ...)
    mean, invstd : ndarray, shape (C,)
        The statistics :func:`batch_norm_relu` returned.
    weight, bias : ndarray, shape (C,), or None
        The forward's affine parameters.

    Returns
    -------
    ndarray of bool, the shape of ``input``
    """
    _check_input(input)
    scale, shift = _scale_shift(mean, invstd, weight, bias, input.dtype)
    x = _view3(input)
    out = np.empty_like(x)
    _kernels.affine(x, scale, shift, out, kernel_threads(x.size), True)
    return (out > 0).reshape(input.shape)


def _scalars_in_kernel(dtype, *arrays) -> bool:
    """Whether batch norm runs in the one-region kernels ``train_forward`` /
    ``backward_fused``, whose per-channel scalars replay the numpy expressions below bit
    for bit: every given array of the input's dtype and contiguous (running statistics
    of another dtype take the numpy path)."""
    for a in arrays:
        if a is not None and not (isinstance(a, np.ndarray) and a.dtype == dtype
                                  and a.flags.c_contiguous):
            return False
    return True


def _batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps, relu):
    _check_input(input)
    _check_eps(eps)
    c = input.shape[1]
    weight = _check_param(weight, "weight", c, input)
    bias = _check_param(bias, "bias", c, input)
    _check_param(running_mean, "running_mean", c)
    _check_param(running_var, "running_var", c)
    x = _view3(input)
    n, c, length = x.shape
    m = n * length
    dtype = x.dtype.type
    threads = kernel_threads(x.size)
    if training:
        if m <= 1:
            raise ValueError(f"batch_norm in training needs more than 1 value per channel, "
                             f"got input of shape {input.shape}")
        if _scalars_in_kernel(x.dtype, running_mean, running_var):
            # moments, scalars and the affine pass in one parallel region (same bits)
            mean, invstd = np.empty(c, x.dtype), np.empty(c, x.dtype)
            scale, shift = np.empty(c, x.dtype), np.empty(c, x.dtype)
            empty = mean[:0]
            out = np.empty_like(x)
            _kernels.train_forward(
                x, eps, empty if weight is None else weight, empty if bias is None else bias,
                empty if running_mean is None else running_mean,
                empty if running_var is None else running_var, momentum, mean, invstd, scale,
                shift, weight is not None, bias is not None, running_mean is not None,
                running_var is not None, out, threads, relu)
            return out.reshape(input.shape), mean, invstd
        mean64, var64 = np.empty(c), np.empty(c)
        _kernels.channel_moments(x, mean64, var64, threads)
        mean = mean64.astype(dtype)
        invstd = (1 / np.sqrt(var64 + eps)).astype(dtype)
        if running_mean is not None:
            running_mean *= 1 - momentum
            running_mean += momentum * mean
        if running_var is not None:
            running_var *= 1 - momentum
            running_var += (momentum * m / (m - 1)) * var64.astype(dtype)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm with training=False needs running_mean and running_var")
        mean = running_mean.astype(dtype)
        invstd = (1 / np.sqrt(running_var + eps)).astype(dtype)
    scale, shift = _scale_shift(mean, invstd, weight, bias, x.dtype)
    out = np.empty_like(x)
    _kernels.affine(x, scale, shift, out, threads, relu)
    return out.reshape(input.shape), mean, invstd


def batch_norm_backward(grad_output, input, mean, invstd, weight=None, training=False,
                        needs=(True, True, True)):
    """Gradients of :func:`batch_norm` with respect to (input, weight, bias).

    ``mean`` and ``invstd`` are the statistics :func:`batch_norm` returned.  In
    training mode the statistics depend on the input (the full formula in the
    module docstring); in eval mode they are constants.
    """
    return _batch_norm_backward(grad_output, input, mean, invstd, weight, None, training, needs,
                                relu=False)


def batch_norm_relu_backward(grad_output, input, mean, invstd, weight=None, bias=None,
                             training=False, needs=(True, True, True)):
    """Gradients of :func:`batch_norm_relu` with respect to (input, weight, bias).

    The ReLU passes the gradient where the output is > 0 (0 at 0, as PyTorch).  That
    mask is recomputed from ``input`` with the forward's own scale and shift (from
    ``mean``, ``invstd``, ``weight`` and ``bias``, in the same float operations), so it
    is the forward's mask bit for bit and the output need not be kept or read.  Bitwise
    identical to :func:`batch_norm_backward` of ``grad_output * (output > 0)``, without
    that array and in two passes over the data.

    Parameters
    ----------
    grad_output, input : ndarray, shape (N, C, ...)
    mean, invstd : ndarray, shape (C,)
        The statistics :func:`batch_norm_relu` returned.
    weight, bias : ndarray, shape (C,), or None
        The forward's affine parameters (``bias`` sets the mask, not a gradient).
    training, needs
        As for :func:`batch_norm_backward`.
    """
    return _batch_norm_backward(grad_output, input, mean, invstd, weight, bias, training, needs,
                                relu=True)


def _batch_norm_backward(grad_output, input, mean, invstd, weight, bias, training, needs, relu):
    _check_input(grad_output, "grad_output")
    if grad_output.shape != input.shape:
        raise ValueError(f"grad_output must have the shape of input {input.shape}, "
                         f"got {grad_output.shape}")
    c = input.shape[1]
    for stat, name in ((mean, "mean"), (invstd, "invstd")):
        if _check_param(stat, name, c) is None:
            raise TypeError(f"{name} must be the ndarray of shape ({c},) that the forward "
                            f"returned, got None")
    _check_param(weight, "weight", c, input)
    _check_param(bias, "bias", c, input)
    x = _view3(input)
    g = _view3(grad_output)
    n, c, length = x.shape
    m = n * length
    dtype = x.dtype.type
    threads = kernel_threads(x.size)
    if _scalars_in_kernel(x.dtype, mean, invstd, weight, bias):
        # sums, scalars and the input gradient in one parallel region (same bits)
        sum_g, sum_gxhat = np.empty(c, x.dtype), np.empty(c, x.dtype)
        scratch = (np.empty(c, x.dtype), np.empty(c, x.dtype), np.empty(c, x.dtype),
                   np.empty(c, x.dtype))
        gx = np.empty_like(g) if needs[0] else None
        _kernels.backward_fused(g, x, mean, invstd, mean if weight is None else weight,
                                mean if bias is None else bias, weight is not None,
                                bias is not None, relu, training, sum_g, sum_gxhat, *scratch,
                                gx, threads)
        return (None if gx is None else gx.reshape(input.shape),
                sum_gxhat if needs[1] else None, sum_g if needs[2] else None)
    # ReLU's mask from the forward's affine (its bits), where the kernels' scalars cannot run
    mask = _scale_shift(mean, invstd, weight, bias, x.dtype) if relu else None
    sum_g64, sum_gx64 = np.empty(c), np.empty(c)
    if mask is None:
        _kernels.channel_sums(g, x, sum_g64, sum_gx64, threads)
    else:
        _kernels.masked_channel_sums(g, x, *mask, sum_g64, sum_gx64, threads)
    sum_g = sum_g64.astype(dtype)
    # sum(g * xhat) = invstd * (sum(g * x) - mean * sum(g))
    sum_gxhat = (invstd * (sum_gx64 - mean * sum_g64)).astype(dtype)
    gx = None
    if needs[0]:
        a = invstd if weight is None else invstd * weight
        if training:
            # dx = a * (g - sum_g/m - xhat * sum_gxhat/m) = a*g + b*x + shift
            b = -a * invstd * sum_gxhat / dtype(m)
            shift = -a * sum_g / dtype(m) - b * mean
        else:
            b = np.zeros_like(a)
            shift = np.zeros_like(a)
        gx = np.empty_like(g)
        coeffs = (a.astype(dtype), b.astype(dtype), shift.astype(dtype))
        _kernels.affine2(g, x, *(mask or (None, None)), *coeffs, gx, threads)
        gx = gx.reshape(input.shape)
    gw = sum_gxhat if needs[1] else None
    gb = sum_g if needs[2] else None
    return gx, gw, gb


def _check_group(input, num_groups, weight, bias, eps):
    _check_input(input)
    _check_eps(eps)
    c = input.shape[1]
    if (isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer))
            or num_groups < 1):
        raise ValueError(f"num_groups must be a positive int, got {num_groups!r}")
    if c % num_groups:
        raise ValueError(f"num_groups={num_groups} must divide the number of channels ({c})")
    return _check_param(weight, "weight", c, input), _check_param(bias, "bias", c, input)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalisation, as ``torch.nn.functional.group_norm``.

    Parameters
    ----------
    input : ndarray, shape (N, C, ...), float32 or float64
    num_groups : int
        Divides ``C``; statistics per sample over ``C/num_groups`` channels and space.
    weight, bias : ndarray, shape (C,), optional
    eps : float

    Returns
    -------
    out : ndarray, same shape as ``input``
    mean, invstd : ndarray, shape (N, num_groups)
    """
    weight, bias = _check_group(input, num_groups, weight, bias, eps)
    x = _view3(input)
    out = np.empty_like(x)
    mean = np.empty((x.shape[0], num_groups), x.dtype)
    invstd = np.empty_like(mean)
    _kernels.group_norm_forward(x, num_groups, float(eps), _param(weight, x.dtype),
                                _param(bias, x.dtype), weight is not None, bias is not None,
                                out, mean, invstd, kernel_threads(x.size))
    return out.reshape(input.shape), mean, invstd


def _param(p, dtype, length=-1):
    """A weight or bias as the kernels take it: flat, contiguous, of ``dtype`` (``length``
    elements when given), or a placeholder when None."""
    if p is None:
        return np.zeros(1, dtype)
    return np.ascontiguousarray(p, dtype=dtype).reshape(length)


def group_norm_backward(grad_output, input, mean, invstd, num_groups, weight=None,
                        needs=(True, True, True)):
    """Gradients of :func:`group_norm` with respect to (input, weight, bias)."""
    _check_input(grad_output, "grad_output")
    x, g = _view3(input), _view3(grad_output)
    n, c = x.shape[:2]
    sum_g, sum_gxhat = np.empty((n, c)), np.empty((n, c))  # per (sample, channel) plane
    gx = np.empty_like(g) if needs[0] else None
    stats = (np.ascontiguousarray(v, dtype=x.dtype) for v in (mean, invstd))
    _kernels.group_norm_backward(g, x, *stats, _param(weight, x.dtype),
                                 weight is not None, sum_g, sum_gxhat, gx,
                                 kernel_threads(x.size))
    gw = sum_gxhat.sum(axis=0).astype(x.dtype) if needs[1] else None
    gb = sum_g.sum(axis=0).astype(x.dtype) if needs[2] else None
    return (None if gx is None else gx.reshape(input.shape)), gw, gb


# -- layer norm ---------------------------------------------------------------------------

#: row chunks of layer norm's weight and bias gradients (a function of the shape only)
_LN_CHUNKS = 16


def layer_norm(input, length, weight=None, bias=None, eps=1e-5):
    """Layer normalisation over the last axes (their product ``length``), with an
    elementwise affine, as ``torch.nn.functional.layer_norm``; the kernels' rows on every
    thread (``pyx/_norm.pyx``: a row's mean and squared deviations in lanes of its dtype
    by blocks, then double; then the output with its affine in one pass).

    Parameters
    ----------
    input : ndarray, float32 or float64, its last axes of ``length`` elements in all
    length : int
        The number of elements normalised together (the product of ``normalized_shape``).
    weight, bias : ndarray of ``length`` elements (any shape), optional
    eps : float

    Returns
    -------
    out : ndarray, the input's shape
    mean, rstd : ndarray, one per row (``input.size // length``), the input's dtype
    """
    x = np.ascontiguousarray(input).reshape(-1, length)
    dtype = x.dtype
    out = np.empty_like(x)
    mean, rstd = np.empty(x.shape[0], dtype), np.empty(x.shape[0], dtype)
    w = _param(weight, dtype, length)
    b = _param(bias, dtype, length)
    _kernels.layer_norm_forward(x, w, b, weight is not None, bias is not None, float(eps), out,
                                mean, rstd, kernel_threads(x.size))
    return out.reshape(input.shape), mean, rstd


def layer_norm_backward(grad_output, input, mean, rstd, weight=None, needs=(True, True, True)):
    """Gradients of :func:`layer_norm` with respect to (input, weight, bias), None where
    ``needs`` says; the weight's and the bias's flat, ``length`` elements (the caller
    gives them the normalised shape), also where there is no weight or bias.

    The input gradient is ``rstd * (d - mean(d) - xhat * mean(d * xhat))`` per row, with
    ``d = grad * weight`` and ``xhat = (x - mean) * rstd``; the weight's ``sum(grad *
    xhat)`` and the bias's ``sum(grad)`` over the rows by fixed chunks of rows added in
    order, each chunk's blocks of 64 rows summed in the input's dtype, then in double.
    """
    length = mean.size and input.size // mean.size
    x = np.ascontiguousarray(input).reshape(-1, length)
    g = np.ascontiguousarray(grad_output, dtype=x.dtype).reshape(x.shape)
    dtype = x.dtype
    want_params = bool(needs[1] or needs[2])
    gx = np.empty_like(x) if needs[0] else np.empty((1, 1), dtype)
    chunks = max(1, min(_LN_CHUNKS, x.shape[0]))
    parts = np.zeros((chunks, 2 * length) if want_params else (1, 1))
    block = np.zeros(parts.shape, dtype)  # each chunk's block of rows, in the input's dtype
    _kernels.layer_norm_backward(g, x, mean, rstd, _param(weight, dtype, length),
                                 weight is not None, gx, bool(needs[0]), parts, block,
                                 want_params, kernel_threads(x.size))
    sums = parts.sum(axis=0) if want_params else None  # the chunks in order
    gw = sums[:length].astype(dtype) if needs[1] else None
    gb = sums[length:].astype(dtype) if needs[2] else None
    return (gx.reshape(input.shape) if needs[0] else None), gw, gb
