"""Activations and (log-)softmax as Functions, written to be numerically stable."""

from __future__ import annotations

import math

import numpy as np

from ..array import activation
from ..autograd import Function, is_grad_enabled
from ._arith import _elementwise, to_float, where
from ._util import normalize_axes


class Relu(Function):
    """``max(x, 0)``; with ``inplace``, written into ``x``'s own array (``relu_`` of a
    graph tensor: the gradient needs only the output, so the old values need no copy)."""

    plain_backward_arrays = True  # outside create_graph, grad is an ndarray
    fresh_grads = True  # relu_backward allocates the gradient

    @staticmethod
    def forward(ctx, x, inplace=False):
        y = activation.relu(x, out=x if inplace else None)  # on every thread
        if inplace:
            # a new array object over x's memory: the engine records it as this node's
            # output (a saved output follows the tensor that comes to hold it, see
            # _inplace.relu_), not as the input it also is
            y = y.view()
        ctx.save_for_backward(y)  # the output is usually kept alive anyway; no mask copy
        return y

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():  # create_graph: the product stays differentiable
            (y,) = ctx.saved_tensors
            return grad * (y._data > 0), None  # gradient 0 at x == 0, as torch
        (y,) = ctx.saved_arrays
        return activation.relu_backward(grad, y), None


class LeakyRelu(Function):
    plain_backward_arrays = True  # outside create_graph, grad is an ndarray
    fresh_grads = True  # leaky_relu_backward allocates the gradient

    @staticmethod
    def forward(ctx, x, slope, inplace=False):
        ctx.slope = slope
        y = activation.leaky_relu(x, slope)  # np.where(x > 0, x, x * slope), every thread
        # the gradient's mask x > 0.  As PyTorch: the input for the out-of-place op (so a
        # later write into the result is allowed), the result for leaky_relu_, where it
        # tells the same (y > 0 just where x > 0 for a slope of at least 0) and the old
        # value then needs no copy
        ctx.save_for_backward(y if inplace and slope >= 0 else x)
        return y

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():  # create_graph: the product stays differentiable
            (mask_of,) = ctx.saved_tensors
            mask = np.where(mask_of._data > 0, 1.0, ctx.slope).astype(mask_of.dtype)
            return grad * mask, None, None
        (mask_of,) = ctx.saved_arrays
        return activation.leaky_relu_backward(grad, mask_of, ctx.slope), None, None


class _Smooth(Function):
    """An activation ``y = f(x, *options)`` on the kernels of
    :mod:`sandbox.array.activation` (``_forward`` and, for a plain backward,
    ``_backward(grad, saved, *options)``, on every thread); under ``create_graph`` the
    gradient is ``grad * _slope(saved, *options)``, written with Tensor ops so that it
    is differentiable again.  ``saved`` is the output (``saves_output``) or the input."""

    plain_backward_arrays = True  # outside create_graph, grad is an ndarray
    fresh_grads = True  # the array backwards allocate the gradient
    saves_output = False

    @classmethod
    def forward(cls, ctx, x, *options):
        ctx.options = options
        y = cls._forward(x, *options)
        ctx.save_for_backward(y if cls.saves_output else x)
        return y

    @classmethod
    def backward(cls, ctx, grad):
        options = ctx.options
        if is_grad_enabled():  # create_graph
            (saved,) = ctx.saved_tensors
            return (grad * cls._slope(saved, *options), *(None,) * len(options))
        (saved,) = ctx.saved_arrays
        return (cls._backward(grad, saved, *options), *(None,) * len(options))


class Sigmoid(_Smooth):
    """``1 / (1 + e^-x)`` (``e^x / (1 + e^x)`` below 0: no overflow); ``dy = y (1 - y)``."""

    saves_output = True
    _forward = staticmethod(activation.sigmoid)
    _backward = staticmethod(activation.sigmoid_backward)

    @staticmethod
    def _slope(y):
        return y * (1.0 - y)


class Tanh(_Smooth):
    """The hyperbolic tangent; ``dy = 1 - y^2``."""

    saves_output = True
    _forward = staticmethod(activation.tanh)
    _backward = staticmethod(activation.tanh_backward)

    @staticmethod
    def _slope(y):
        return 1.0 - y * y


class Silu(_Smooth):
    """``x * sigmoid(x)``; ``dy = s (1 + x (1 - s))`` with ``s = sigmoid(x)``."""

    _forward = staticmethod(activation.silu)
    _backward = staticmethod(activation.silu_backward)

    @staticmethod
    def _slope(x):
        s = Sigmoid.apply(x)
        return s * (x * (1.0 - s) + 1.0)


_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715


class Gelu(_Smooth):
    """``x * Phi(x)``: ``dy = Phi(x) + x phi(x)``, or for ``approximate="tanh"``
    (``y = x sigmoid(2u)``, ``u = sqrt(2/pi) (x + 0.044715 x^3)``) ``s + x s (1 - s) 2u'``."""

    _forward = staticmethod(activation.gelu)
    _backward = staticmethod(activation.gelu_backward)

    @staticmethod
    def _slope(x, approximate):
        if approximate == "tanh":
            s = Sigmoid.apply((x + x * x * x * _GELU_CUBIC) * (2.0 * _SQRT_2_OVER_PI))
            du2 = (x * x * (3.0 * _GELU_CUBIC) + 1.0) * (2.0 * _SQRT_2_OVER_PI)
            return s + x * (s * (1.0 - s)) * du2
        cdf = (Erf.apply(x * (1.0 / math.sqrt(2.0))) + 1.0) * 0.5
        pdf = (x * x * -0.5).exp() * (1.0 / math.sqrt(2.0 * math.pi))
        return cdf + x * pdf


class Softplus(Function):
    """``log(1 + e^(beta x)) / beta``, linear where ``beta x > threshold`` (as torch).

    Computed as ``(max(bx, 0) + log1p(e^-|bx|)) / beta`` with ``bx = beta x``: no
    overflow for any ``x``.
    """

    @staticmethod
    def forward(ctx, x, beta, threshold):
        ctx.beta, ctx.threshold = beta, threshold
        bx = x * beta
        y = (np.maximum(bx, 0) + np.log1p(np.exp(-np.abs(bx)))) / beta
        ctx.save_for_backward(x)
        return np.where(bx > threshold, x, y).astype(x.dtype, copy=False)

    @staticmethod
    def backward(ctx, grad):
        # d/dx = sigmoid(beta x), and 1 on the linear part.
        (x,) = ctx.saved_tensors
        bx = x * ctx.beta
        slope = Sigmoid.apply(bx)
        linear = bx._data > ctx.threshold
        if linear.any():
            slope = where(linear, 1.0, slope)
        return grad * slope, None, None


class Softmax(Function):
    """``exp(x) / sum(exp(x))`` along an axis (max-shifted: no overflow), by the
    kernels; ``dx = y (g - sum(g y))``."""

    plain_backward_arrays = True  # outside create_graph, grad is an ndarray
    fresh_grads = True  # softmax_backward allocates the gradient

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        y = activation.softmax(x, axis)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():  # create_graph: differentiable ops
            (y,) = ctx.saved_tensors
            return y * (grad - (grad * y).sum(axis=ctx.axis, keepdims=True)), None
        (y,) = ctx.saved_arrays
        return activation.softmax_backward(grad, y, ctx.axis), None


class LogSoftmax(Function):
    """``x - logsumexp(x)`` along an axis, by the kernels; ``dx = g - exp(y) sum(g)``."""

    plain_backward_arrays = True
    fresh_grads = True

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        y = activation.softmax(x, axis, log=True)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        if is_grad_enabled():
            (y,) = ctx.saved_tensors
            return grad - y.exp() * grad.sum(axis=ctx.axis, keepdims=True), None
        (y,) = ctx.saved_arrays
        return activation.softmax_backward(grad, y, ctx.axis, log=True), None


class LogSumExp(Function):
    @staticmethod
    def forward(ctx, x, axes, keepdims):
        m = np.max(x, axis=axes, keepdims=True, initial=-np.inf)  # -inf for empty input
        m[~np.isfinite(m)] = 0  # an infinite max would make x - m NaN: shift by 0 instead
        with np.errstate(divide="ignore"):  # log(0) = -inf: all entries -inf, or none
            out = np.log(np.exp(x - m).sum(axis=axes, keepdims=True)) + m
        ctx.axes = axes
        ctx.out_keep = out
        ctx.save_for_backward(x)
        return out if keepdims else np.squeeze(out, axis=axes)

    @staticmethod
    def backward(ctx, grad):
        # d logsumexp / dx = exp(x - out) = softmax(x)
        (x,) = ctx.saved_tensors
        g = grad.reshape(ctx.out_keep.shape)
        if is_grad_enabled():  # create_graph: recompute the output inside the graph
            out = LogSumExp.apply(x, ctx.axes, True)
        else:
            out = ctx.out_keep
        return g * (x - out).exp(), None, None


def _axis(x, axis, op):
    (a,) = normalize_axes(axis, x.ndim, op)
    return a


def relu(x):
    """``max(x, 0)``."""
    return Relu.apply(x)


def leaky_relu(x, negative_slope=0.01):
    """``x`` for ``x > 0``, else ``negative_slope * x``."""
    return LeakyRelu.apply(x, float(negative_slope))


def sigmoid(x):
    """``1 / (1 + e^-x)``, stable for large ``|x|``."""
    return Sigmoid.apply(to_float(x))


def tanh(x):
    """Hyperbolic tangent."""
    return Tanh.apply(to_float(x))


def softplus(x, beta=1.0, threshold=20.0):
    """``log(1 + e^(beta x)) / beta``, stable for large ``|x|``; ``x`` where ``beta x > threshold``.

    As ``torch.nn.functional.softplus``: above the threshold the result is ``x``
    itself (gradient 1), which avoids rounding in ``log1p(e^-bx)`` for large inputs.
    """
    beta, threshold = float(beta), float(threshold)
    if beta == 0:
        raise ValueError("softplus: beta must be non-zero")
    return Softplus.apply(to_float(x), beta, threshold)


def softmax(x, dim=-1):
    """``exp(x) / sum(exp(x))`` along ``dim`` (max-shifted: no overflow)."""
    return Softmax.apply(to_float(x), _axis(x, dim, "softmax"))


def log_softmax(x, dim=-1):
    """``x - logsumexp(x)`` along ``dim`` (max-shifted: no overflow)."""
    return LogSoftmax.apply(to_float(x), _axis(x, dim, "log_softmax"))


def logsumexp(x, dim=None, keepdim=False):
    """``log(sum(exp(x)))`` over ``dim`` (int, tuple or None for all), stably."""
    return LogSumExp.apply(x, normalize_axes(dim, x.ndim, "logsumexp"), bool(keepdim))


# The C library's erf, on every thread; d erf(x)/dx = 2/sqrt(pi) * exp(-x^2).
Erf = _elementwise(
    "Erf", activation.erf,
    lambda grad, x: grad * ((x * x * -1.0).exp() * (2.0 / math.sqrt(math.pi))), module=__name__,
)


def erf(x):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``, elementwise."""
    return Erf.apply(to_float(x))


def gelu(x, approximate="none"):
    """GELU, ``x * Phi(x)``, as ``torch.nn.functional.gelu``.

    ``approximate="none"`` uses the exact normal CDF ``Phi(x) = (1 + erf(x/sqrt 2))/2``;
    ``"tanh"`` uses ``(1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))/2``.  First and second
    derivatives (the backward under ``create_graph`` is built from differentiable ops).
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(to_float(x), approximate)


def silu(x):
    """SiLU (swish), ``x * sigmoid(x)``, as ``torch.nn.functional.silu``."""
    return Silu.apply(to_float(x))
