"""Layer and instance normalisation: layer norm's own row kernels (with its elementwise
affine) and instance norm as a group norm of one channel a group, both on every thread,
and Tensor ops for the rest (empty inputs, float16)."""

from __future__ import annotations

import numpy as np

from ..array._validate import FLOAT_DTYPES
from ..autograd import Tensor, no_grad
from ._norm import LayerNorm, group_norm


def _normalize(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    d = x - mean
    var = (d * d).mean(axis=axes, keepdims=True)  # biased, as torch normalises
    return d / (var + eps).sqrt()


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):  # noqa: A002
    """Normalise over the last ``len(normalized_shape)`` dims, as ``F.layer_norm`` in torch."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape:
        raise ValueError(
            f"layer_norm: normalized_shape {shape} must equal the last dims of the input "
            f"{input.shape}"
        )
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != shape:
            raise ValueError(f"layer_norm: {name} must have the normalized shape {shape}, "
                             f"got {tuple(p.shape)}")
    if input.numel() and input.dtype in FLOAT_DTYPES:  # the kernels: one node, its affine too
        return LayerNorm.apply(input, weight, bias, len(shape), float(eps))
    y = _normalize(input, tuple(range(input.ndim - len(shape), input.ndim)), eps)
    if weight is not None:
        y = y * weight
    return y + bias if bias is not None else y


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its spatial dims, as torch.

    With ``use_input_stats`` the statistics come from the input, and running
    statistics (arrays of shape ``(C,)``, if given) are updated in place with the
    batch average of the per-sample mean and unbiased variance; otherwise the
    running statistics are used.
    """
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected an (N, C, ...) input, got shape {input.shape}")
    axes = tuple(range(2, input.ndim))
    if use_input_stats:
        # a group norm of one channel a group: its kernels (one node, every thread) in
        # place of the five-node composition, 3x slower
        y = group_norm(input, input.shape[1], weight, bias, eps)
        if running_mean is not None:
            with no_grad():
                data = input.numpy()
                n = int(np.prod([data.shape[a] for a in axes]))
                mean = data.mean(axis=axes).mean(axis=0)
                var = data.var(axis=axes, ddof=1 if n > 1 else 0).mean(axis=0)
                rm = running_mean.numpy() if isinstance(running_mean, Tensor) else running_mean
                rv = running_var.numpy() if isinstance(running_var, Tensor) else running_var
                rm *= 1 - momentum
                rm += momentum * mean
                rv *= 1 - momentum
                rv += momentum * var
    else:
        if running_mean is None or running_var is None:
            raise ValueError(
                "instance_norm: use_input_stats=False needs running_mean and running_var"
            )
        rm = np.asarray(running_mean.numpy() if isinstance(running_mean, Tensor) else running_mean)
        rv = np.asarray(running_var.numpy() if isinstance(running_var, Tensor) else running_var)
        bshape = (1, input.shape[1]) + (1,) * len(axes)
        y = (input - rm.reshape(bshape)) / np.sqrt(rv.reshape(bshape) + eps)
        if weight is not None:
            y = y * weight.reshape(bshape)
        if bias is not None:
            y = y + bias.reshape(bshape)
    return y
