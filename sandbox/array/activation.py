"""Elementwise kernels on every thread: ReLU (the forward and its gradient through the
output), the leaky ReLU, the error function, the smooth activations (sigmoid, SiLU, GELU,
tanh and exp) and softmax (below).

numpy's ``np.maximum(x, 0)`` and ``g * (y > 0)`` run on one thread; in a UNet
written with ``nn.ReLU`` modules they were the largest serial part of a training
step after the Python overhead; numpy's ``np.where`` of the leaky ReLU took 5 ns an
element (a branch on the sign of each: 2.6 ms for a (8, 16, 64, 64) float32 map on the
AMD EPYC family 25 model 1 VM, on numpy's one thread, 7 times ``np.maximum``; the leaky
ReLU's forward + backward at 2 threads went from 6.16 to 0.24 ms, ``python
benchmarks/bench_ops_vs_torch.py --threads 1 2 --ops leaky_relu``).  The kernels
(``pyx/_activation.pyx``) compute the same operations, so the results are bitwise
numpy's for any thread count; other dtypes and non-contiguous arrays take numpy's path.
"""

from __future__ import annotations

import math

import numpy as np

from .._C import _activation, _softmax
from ..runtime.threads import kernel_threads

__all__ = ["erf", "exp", "gelu", "gelu_backward", "leaky_relu", "leaky_relu_backward", "relu",
           "relu_backward", "sigmoid", "sigmoid_backward", "silu", "silu_backward", "softmax",
           "softmax_backward", "tanh", "tanh_backward"]

_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _flat(a: np.ndarray) -> np.ndarray | None:
    """``a`` as a flat view for the kernels, or None when they cannot take it."""
    if a.dtype not in _KERNEL_DTYPES or not a.flags.c_contiguous or a.ndim == 0:
        return None
    return a.reshape(-1)


def _pass(code, x, out, numpy_form, param=0.0):
    """``out`` (allocated like ``x`` when None) by the kernel ``code`` where it takes both
    arrays; else ``numpy_form(out)``, numpy's operations written into ``out`` (a new
    array for None)."""
    flat = _flat(x)
    if flat is not None:
        if out is None:
            out = np.empty_like(x)
        flat_out = _flat(out) if out.dtype == x.dtype else None
        if flat_out is not None:
            _activation.unary(code, flat, flat_out, param, kernel_threads(flat.size))
            return out
    return numpy_form(out)


def _gradient(code, grad, other, numpy_form, param=0.0):
    """The gradient kernel ``code`` of ``grad`` and ``other`` into a new array where it
    takes them (one dtype and shape), else ``numpy_form()``."""
    g, o = _flat(grad), _flat(other)
    if g is None or o is None or grad.dtype != other.dtype or grad.shape != other.shape:
        return numpy_form()
    out = np.empty_like(grad)
    _activation.gradient(code, g, o, out.reshape(-1), param, kernel_threads(g.size))
    return out


def relu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``max(x, 0)`` elementwise, as ``np.maximum(x, 0)`` (NaN propagates).

    Parameters
    ----------
    x : ndarray
    out : ndarray, optional
        Where to write (may be ``x`` for an in-place ReLU); same shape and dtype.

    Returns
    -------
    ndarray
    """
    return _pass(_activation.RELU, x, out, lambda o: np.maximum(x, 0, out=o))


def relu_backward(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The gradient of ReLU through its output: ``grad * (y > 0)`` (0 where ``y == 0``).

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    y : ndarray
        The output of the forward (same shape).

    Returns
    -------
    ndarray
    """
    return _gradient(_activation.RELU, grad, y, lambda: grad * (y > 0))


def _into(out, y):
    """``y``, or ``y`` written into ``out`` (then ``out``)."""
    if out is None:
        return y
    out[...] = y
    return out


def leaky_relu(x: np.ndarray, slope: float, out: np.ndarray | None = None) -> np.ndarray:
    """``x`` where ``x > 0``, else ``x * slope``: ``np.where(x > 0, x, x * slope)``
    elementwise (``slope`` a Python float, rounded to ``x``'s dtype; NaN propagates).

    Parameters
    ----------
    x : ndarray
    slope : float
    out : ndarray, optional
        Where to write (may be ``x`` for an in-place call); same shape and dtype.

    Returns
    -------
    ndarray
    """
    return _pass(_activation.LEAKY_RELU, x, out,
                 lambda o: _into(o, np.where(x > 0, x, x * slope)), slope)


def leaky_relu_backward(grad: np.ndarray, mask_of: np.ndarray, slope: float) -> np.ndarray:
    """The gradient of the leaky ReLU: ``grad * np.where(mask_of > 0, 1, slope)`` (``slope``
    in ``grad``'s dtype).

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    mask_of : ndarray
        The forward's input, or its output where ``slope >= 0`` (positive exactly where
        the input is); same shape.
    slope : float

    Returns
    -------
    ndarray
    """
    return _gradient(_activation.LEAKY_RELU, grad, mask_of,
                     lambda: grad * np.where(mask_of > 0, 1.0, slope).astype(grad.dtype), slope)


def erf(x: np.ndarray) -> np.ndarray:
    """The error function elementwise, by the C library's ``erf`` in double precision
    (numpy has none); float32 inputs give float32, rounded once.

    Parameters
    ----------
    x : ndarray, float32 or float64

    Returns
    -------
    ndarray
    """
    return _unary(_activation.ERF, x, None)  # float16: in float32, as PyTorch


# -- the smooth activations (pyx/_activation.pyx) ---------------------------------------
#
# numpy's exp and tanh, and the C library's exp and erf, are calls gcc cannot vectorise,
# on one thread: SiLU's forward + backward took 2.3 times PyTorch's time at 1 thread and
# 3.7 at 2, GELU's 5.1 and 5.3 (a (8, 16, 64, 64) float32 map, AMD EPYC family 25 model 1
# VM, python benchmarks/bench_ops_vs_torch.py --threads 1 2 --ops silu gelu).  The
# kernels compute float32 in float32 with their own vectorisable exp (within 2 ulps, as
# in float64) and erfc (a fitted e^(z^2) erfc(z) times one exp), on every thread, for any
# thread count the same bits.  Float16 computes in float32 and rounds once, as PyTorch.

_GELU_CODES = {"none": _activation.GELU, "tanh": _activation.GELU_TANH}


def _work(a: np.ndarray) -> np.ndarray:
    """``a`` flat and contiguous in the kernels' dtype (float32 for float16)."""
    dtype = a.dtype if a.dtype in _KERNEL_DTYPES else np.dtype(np.float32)
    return np.ascontiguousarray(a, dtype=dtype).reshape(-1)


def _unary(code: int, x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
    """``_activation.unary(code)`` of ``x``, into ``out`` when given."""
    flat = _work(x)
    direct = out is not None and _flat(out) is not None and out.dtype == flat.dtype
    res = out if direct else np.empty(x.shape, flat.dtype)
    _activation.unary(code, flat, res.reshape(-1), 0.0, kernel_threads(flat.size))
    if direct:
        return out
    return _into(out, res.astype(x.dtype, copy=False))


def _binary(code: int, grad: np.ndarray, saved: np.ndarray) -> np.ndarray:
    """``_activation.gradient(code)``: ``grad * f'`` from the saved input or output."""
    g, s = _work(grad), _work(saved)
    if s.dtype != g.dtype:
        s = s.astype(g.dtype)
    out = np.empty(grad.shape, g.dtype)
    _activation.gradient(code, g, s, out.reshape(-1), 0.0, kernel_threads(g.size))
    return out.astype(grad.dtype, copy=False)


def exp(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``e^x`` elementwise on every thread (within 2 ulps of the exact value).

    Parameters
    ----------
    x : ndarray, floating
    out : ndarray, optional
        Where to write (may be ``x``); same shape.

    Returns
    -------
    ndarray
    """
    return _unary(_activation.EXP, x, out)


def tanh(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The hyperbolic tangent elementwise, as ``-expm1(-2|x|) / (2 + expm1(-2|x|))`` with
    the sign of ``x`` (no overflow, no cancellation near 0).

    Parameters
    ----------
    x : ndarray, floating
    out : ndarray, optional
        Where to write (may be ``x``); same shape.

    Returns
    -------
    ndarray
    """
    return _unary(_activation.TANH, x, out)


def tanh_backward(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The gradient of tanh through its output: ``grad * (1 - y * y)``.

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    y : ndarray
        The forward's output (same shape).

    Returns
    -------
    ndarray
    """
    return _binary(_activation.TANH, grad, y)


def sigmoid(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``1 / (1 + e^-x)`` elementwise, as ``e^x / (1 + e^x)`` below 0 (no overflow).

    Parameters
    ----------
    x : ndarray, floating
    out : ndarray, optional
        Where to write (may be ``x``); same shape.

    Returns
    -------
    ndarray
    """
    return _unary(_activation.SIGMOID, x, out)


def sigmoid_backward(grad: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The gradient of the sigmoid through its output: ``grad * y * (1 - y)``.

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    y : ndarray
        The forward's output (same shape).

    Returns
    -------
    ndarray
    """
    return _binary(_activation.SIGMOID, grad, y)


def silu(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """SiLU (swish), ``x * sigmoid(x)``, elementwise.

    Parameters
    ----------
    x : ndarray, floating
    out : ndarray, optional
        Where to write (may be ``x``); same shape.

    Returns
    -------
    ndarray
    """
    return _unary(_activation.SILU, x, out)


def silu_backward(grad: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The gradient of SiLU through its input: ``grad * s * (1 + x * (1 - s))``,
    ``s = sigmoid(x)`` (PyTorch's form).

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    x : ndarray
        The forward's input (same shape).

    Returns
    -------
    ndarray
    """
    return _binary(_activation.SILU, grad, x)


def gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """GELU, ``x * Phi(x)`` elementwise (``Phi`` the standard normal CDF).

    Parameters
    ----------
    x : ndarray, floating
    approximate : {"none", "tanh"}
        ``"none"``: ``Phi(x) = erfc(-x / sqrt 2) / 2``; ``"tanh"``: PyTorch's
        ``(1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2``, computed as
        ``sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3))`` (the same function, without the
        cancellation of ``1 + tanh`` for negative ``x``).  Not checked here (the
        callers do).

    Returns
    -------
    ndarray
    """
    return _unary(_GELU_CODES[approximate], x, None)


def gelu_backward(grad: np.ndarray, x: np.ndarray, approximate: str = "none") -> np.ndarray:
    """The gradient of GELU through its input: ``grad * (Phi(x) + x * phi(x))`` (``phi``
    the normal density; for ``"tanh"``, the derivative of that form).

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    x : ndarray
        The forward's input (same shape).
    approximate : {"none", "tanh"}

    Returns
    -------
    ndarray
    """
    return _binary(_GELU_CODES[approximate], grad, x)


# -- softmax (pyx/_softmax.pyx) ----------------------------------------------------------


def _around(shape, axis: int) -> tuple[int, int, int]:
    """``(outer, C, inner)``: ``shape`` seen with ``axis`` in the middle."""
    return (math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:]))


def softmax(x: np.ndarray, axis: int, log: bool = False) -> np.ndarray:
    """Softmax of ``x`` along ``axis``, ``e^(x - m) / sum(e^(x - m))`` with ``m`` the
    maximum (no overflow); ``log=True``: log-softmax, ``x - m - log(sum(e^(x - m)))``.

    Parameters
    ----------
    x : ndarray, floating, at least 1-D
    axis : int
        A non-negative axis of ``x`` (the callers normalise it).
    log : bool

    Returns
    -------
    ndarray, shape and dtype of ``x``
    """
    flat = _work(x)
    out = np.empty(x.shape, flat.dtype)
    outer, c, inner = _around(x.shape, axis)
    _softmax.forward(flat, out.reshape(-1), outer, c, inner, log, kernel_threads(flat.size))
    return out.astype(x.dtype, copy=False)


def softmax_backward(grad: np.ndarray, y: np.ndarray, axis: int, log: bool = False
                     ) -> np.ndarray:
    """The gradient of :func:`softmax` through its output ``y``: ``y * (grad - sum(grad *
    y))`` along ``axis``, or for ``log=True`` ``grad - e^y * sum(grad)``.

    Parameters
    ----------
    grad : ndarray
        The gradient of the output.
    y : ndarray
        The forward's output (same shape).
    axis : int
    log : bool

    Returns
    -------
    ndarray
    """
    g, s = _work(grad), _work(y)
    if s.dtype != g.dtype:
        s = s.astype(g.dtype)
    out = np.empty(grad.shape, g.dtype)
    outer, c, inner = _around(grad.shape, axis)
    _softmax.backward(g, s, out.reshape(-1), outer, c, inner, log, kernel_threads(g.size))
    return out.astype(grad.dtype, copy=False)
