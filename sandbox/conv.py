"""2-D convolution and transposed convolution on plain ndarrays (im2col + GEMM).

A convolution chunk of ``nb`` samples is one GEMM per group::

    out[n0:n0+nb] (O, nb*ho*wo) = weight.reshape(O, C/g*kh*kw) @ im2col(x)[n0:n0+nb]

with the column layout documented in ``pyx/_im2col.pyx``.  The chunk size
``nb`` depends on the shapes only, never on the thread count: one sample when a
sample has at least ``TARGET_COLS`` output pixels (the GEMM then writes straight
into the output), else enough samples to reach ``TARGET_COLS`` columns, and
never more than ``MAX_COL_BYTES`` of columns.  Column buffers are never kept
between forward and backward: the backward recomputes them.

Parallelism (one thread pool): chunks run on :func:`sandbox._parallel.parallel_map`
(``sandbox.get_num_threads()`` threads, dynamic scheduling); inside a chunk the
im2col/col2im kernels run serially (``KERNEL_THREADS``) and the GEMMs call numpy's
BLAS, which :mod:`sandbox._config` pins to one thread.  Each chunk writes only its
own samples of the output; weight and bias gradients are one partial per chunk,
summed in chunk order (:class:`sandbox._parallel.OrderedSum`), so every result is
bitwise identical for any thread count.  Temporary memory is one column buffer
per worker thread (``sandbox._parallel.scratch``) plus the in-flight partials.

The same two loops serve both ops, because a transposed convolution is the
adjoint of a convolution with the same weight:

* ``_unfold_loop``: ``im2col(a)`` per chunk; optionally ``y = W @ col`` and
  ``dW += b @ col.T`` (conv2d forward; conv_transpose2d backward).
* ``_fold_loop``: ``b`` per chunk; optionally ``dW += b @ im2col(a).T`` and
  ``y = col2im(W.T @ b)`` (conv2d backward; conv_transpose2d forward).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._C import _im2col
from ._config import get_num_threads
from ._parallel import OrderedSum, parallel_map, scratch
from ._winograd import (
    MIN_CHANNELS_WEIGHT_GRAD,
    weight_transform,
    winograd_conv3x3,
    winograd_weight_grad,
)
from ._winograd import eligible as _winograd_eligible

__all__ = [
    "conv2d",
    "conv2d_backward",
    "conv2d_output_size",
    "conv_transpose2d",
    "conv_transpose2d_backward",
    "conv_transpose2d_output_size",
]

#: a chunk gets at least this many GEMM columns (small planes are batched up to it).
#: Single-threaded sgemm here reaches ~90 GFLOPS already at 16 columns (measured), so a
#: small target keeps many chunks (parallelism) at the UNet's 8x8 and 4x4 levels.
TARGET_COLS = 64
#: upper bound for one column buffer (bytes); one sample always fits
MAX_COL_BYTES = 32 * 2**20


#: Use Winograd F(2x2, 3x3) (``sandbox._winograd``) for 3x3 stride-1 ungrouped convs:
#: forward and input gradient.  2.25x fewer GEMM flops; see that module for why.
WINOGRAD = True

#: Threads for the im2col/col2im/pooling kernels; 0 means ``sandbox.get_num_threads()``.
#: Default 1: conv kernels run inside pool chunks (the chunks are the parallelism),
#: and OpenMP teams next to other threads fought for the 2 cores (measured: a
#: 16-channel 64x64 conv forward ~30x slower when OpenMP and BLAS pools alternated).
KERNEL_THREADS = 1


def _kernel_threads() -> int:
    return KERNEL_THREADS or get_num_threads()


# --------------------------------------------------------------------------- validation

def _pair(value, name: str, minimum: int) -> tuple[int, int]:
    """``int`` or length-2 sequence of ints -> ``(rows, cols)``, each ``>= minimum``."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        pair = (int(value), int(value))
    elif (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
    ):
        pair = (int(value[0]), int(value[1]))
    else:
        raise TypeError(f"{name} must be an int or a pair of ints, got {value!r}")
    if min(pair) < minimum:
        what = "positive" if minimum == 1 else "non-negative"
        raise ValueError(f"{name} must be {what} (>= {minimum}), got {value!r}")
    return pair


def _check_float(arr, name: str) -> np.ndarray:
    """Return ``arr`` as an ndarray, raising TypeError unless float32/float64."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(arr).__name__}")
    if arr.dtype not in (np.float32, np.float64):
        raise TypeError(f"{name} must have dtype float32 or float64, got {arr.dtype}")
    return arr


def _check_same_dtype(arr, ref, name: str) -> None:
    if arr.dtype != ref.dtype:
        raise TypeError(
            f"{name} dtype {arr.dtype} does not match input dtype {ref.dtype} "
            f"(cast one of them, e.g. x.astype(np.{arr.dtype}) or model.to(np.{ref.dtype}))"
        )


def _check_4d(arr, name: str, layout: str) -> None:
    if arr.ndim != 4:
        raise ValueError(f"{name} must be 4-D {layout}, got shape {arr.shape}")


def _check_groups(groups) -> int:
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"groups must be a positive int, got {groups!r}")
    return int(groups)


def _check_bias(bias, channels: int, ref: np.ndarray):
    if bias is None:
        return None
    _check_float(bias, "bias")
    _check_same_dtype(bias, ref, "bias")
    if bias.shape != (channels,):
        raise ValueError(f"bias must have shape ({channels},), got {bias.shape}")
    return bias


class _Geom(NamedTuple):
    """Kernel size, stride, padding and dilation (rows, columns)."""

    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int
    dh: int
    dw: int

    def args(self):
        return tuple(self)

    def is_pointwise(self) -> bool:
        """1x1 kernel, stride 1, no padding: im2col is the identity."""
        return (self.kh, self.kw, self.sh, self.sw, self.ph, self.pw) == (1, 1, 1, 1, 0, 0)


def _geometry(weight, stride, padding, dilation) -> _Geom:
    sh, sw = _pair(stride, "stride", 1)
    ph, pw = _pair(padding, "padding", 0)
    dh, dw = _pair(dilation, "dilation", 1)
    kh, kw = weight.shape[2], weight.shape[3]
    if kh < 1 or kw < 1:
        raise ValueError(f"weight kernel size must be positive, got {(kh, kw)}")
    return _Geom(kh, kw, sh, sw, ph, pw, dh, dw)


def _conv_out(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv2d_output_size(h, w, kernel_size, stride=1, padding=0, dilation=1) -> tuple[int, int]:
    """Spatial output size of :func:`conv2d` (PyTorch's formula)."""
    kh, kw = _pair(kernel_size, "kernel_size", 1)
    sh, sw = _pair(stride, "stride", 1)
    ph, pw = _pair(padding, "padding", 0)
    dh, dw = _pair(dilation, "dilation", 1)
    return _conv_out(h, kh, sh, ph, dh), _conv_out(w, kw, sw, pw, dw)


def conv_transpose2d_output_size(h, w, kernel_size, stride=1, padding=0, output_padding=0,
                                 dilation=1) -> tuple[int, int]:
    """Spatial output size of :func:`conv_transpose2d` (PyTorch's formula)."""
    kh, kw = _pair(kernel_size, "kernel_size", 1)
    sh, sw = _pair(stride, "stride", 1)
    ph, pw = _pair(padding, "padding", 0)
    oph, opw = _pair(output_padding, "output_padding", 0)
    dh, dw = _pair(dilation, "dilation", 1)
    return ((h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1,
            (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1)


def _check_conv(input, weight, bias, stride, padding, dilation, groups, transposed=False):
    """Validate conv2d / conv_transpose2d arguments; return (geom, groups, bias)."""
    _check_float(input, "input")
    _check_float(weight, "weight")
    _check_same_dtype(weight, input, "weight")
    _check_4d(input, "input", "(N, C, H, W)")
    layout = "(C_in, C_out/groups, kh, kw)" if transposed else "(C_out, C_in/groups, kh, kw)"
    _check_4d(weight, "weight", layout)
    groups = _check_groups(groups)
    geom = _geometry(weight, stride, padding, dilation)
    c_in = input.shape[1]
    if transposed:
        if weight.shape[0] != c_in:
            raise ValueError(
                f"weight of shape {weight.shape} expects {weight.shape[0]} input channels "
                f"(weight.shape[0]), but input of shape {input.shape} has {c_in}")
        if c_in % groups:
            raise ValueError(f"groups={groups} must divide the input channels ({c_in})")
        c_out = weight.shape[1] * groups
    else:
        if c_in % groups:
            raise ValueError(f"groups={groups} must divide the input channels ({c_in})")
        if weight.shape[1] * groups != c_in:
            raise ValueError(
                f"weight of shape {weight.shape} with groups={groups} expects "
                f"{weight.shape[1] * groups} input channels, but input of shape "
                f"{input.shape} has {c_in}")
        c_out = weight.shape[0]
        if c_out % groups:
            raise ValueError(
                f"groups={groups} must divide the output channels (weight.shape[0]={c_out})")
    bias = _check_bias(bias, c_out, input)
    return geom, groups, bias


# --------------------------------------------------------------------------- chunked loops

def _chunk(n: int, plane: int, rows: int, itemsize: int) -> int:
    """Samples per chunk (see module docstring); never depends on the thread count."""
    nb = max(1, min(n, -(-TARGET_COLS // max(plane, 1))))
    cap = MAX_COL_BYTES // max(plane * rows * itemsize, 1)
    return max(1, min(nb, cap))


def _blocks(n: int, nb: int) -> list[tuple[int, int, int]]:
    """``(chunk index, first sample, samples)`` for chunks of ``nb`` samples."""
    return [(i, n0, min(nb, n - n0)) for i, n0 in enumerate(range(0, n, nb))]


def _gather(arr, n0, nb, name):
    """``arr[n0:n0+nb]`` (N, K, ...) as a (K, nb*P) matrix: a view when nb == 1,
    else a copy into this thread's scratch buffer ``name``."""
    k = arr.shape[1]
    plane = arr[0, 0].size
    if nb == 1:
        return arr[n0].reshape(k, plane)
    mat = scratch(name, (k, nb, plane), arr.dtype)
    np.copyto(mat, arr[n0:n0 + nb].reshape(nb, k, plane).transpose(1, 0, 2))
    return mat.reshape(k, nb * plane)


def _scatter(mat, arr, n0, nb):
    """Inverse of :func:`_gather`: ``arr[n0:n0+nb] = mat`` (K, nb*P)."""
    k = arr.shape[1]
    np.copyto(arr[n0:n0 + nb].reshape(nb, k, -1), mat.reshape(k, nb, -1).transpose(1, 0, 2))


def _grouped_matmul(a, b, out, groups, trans_a=False, trans_b=False):
    """``out[g] = op(a[g]) @ op(b[g])`` for row blocks ``g`` of ``a``/``b``/``out``."""
    ra, rb, ro = a.shape[0] // groups, b.shape[0] // groups, out.shape[0] // groups
    for g in range(groups):
        ag = a[g * ra:(g + 1) * ra]
        bg = b[g * rb:(g + 1) * rb]
        np.matmul(ag.T if trans_a else ag, bg.T if trans_b else bg, out=out[g * ro:(g + 1) * ro])


def _unfold_loop(a, wmat, geom, ho, wo, groups, y=None, b=None, bias=None):
    """Per chunk of samples: ``col = im2col(a)``; ``y = wmat @ col (+ bias)`` if ``y``
    is given; returns ``sum b @ col.T`` (shape of ``wmat``, summed in chunk order)
    if ``b`` is given, else None.

    ``a`` (N, C, H, W); ``wmat`` (O, C/g*kh*kw); ``y`` and ``b`` (N, O, ho, wo).
    """
    n, c = a.shape[:2]
    o = wmat.shape[0]
    plane = ho * wo
    rows = c * geom.kh * geom.kw
    nt = _kernel_threads()
    pointwise = geom.is_pointwise()
    blocks = _blocks(n, _chunk(n, plane, rows, a.itemsize))
    gw = None if b is None else OrderedSum(len(blocks))

    def task(block):
        i, n0, nb = block
        if pointwise:
            col = _gather(a, n0, nb, "col")
        else:
            col = scratch("col", (rows, nb * plane), a.dtype)
            _im2col.im2col(a, col, n0, nb, *geom.args(), ho, wo, nt)
        if y is not None:
            ymat = y[n0].reshape(o, plane) if nb == 1 else scratch("out", (o, nb * plane), a.dtype)
            _grouped_matmul(wmat, col, ymat, groups)
            if nb > 1:
                _scatter(ymat, y, n0, nb)
            if bias is not None:
                y[n0:n0 + nb] += bias.reshape(-1, 1, 1)
        if b is not None:
            partial = np.empty_like(wmat)
            _grouped_matmul(_gather(b, n0, nb, "grad"), col, partial, groups, trans_b=True)
            gw.add(i, partial)

    parallel_map(task, blocks)
    return None if gw is None else gw.out


def _fold_loop(b, wmat, geom, h, w, groups, y=None, a=None, bias_grad=False):
    """Per chunk of samples of ``b`` (N, O, ho, wo): returns ``(gw, gb)`` with
    ``gw = sum b @ im2col(a).T`` if ``a`` (N, C, h, w) is given and ``gb`` the
    per-channel sum of ``b`` if ``bias_grad`` (both summed in chunk order, else
    None); writes ``y = col2im(wmat.T @ b)`` (N, C, h, w) if ``y`` is given.
    """
    n, o, ho, wo = b.shape
    rg = wmat.shape[1]
    c = rg * groups // (geom.kh * geom.kw)
    plane = ho * wo
    rows = c * geom.kh * geom.kw
    nt = _kernel_threads()
    pointwise = geom.is_pointwise()
    blocks = _blocks(n, _chunk(n, plane, rows, b.itemsize))
    gw = None if a is None else OrderedSum(len(blocks))
    gb = OrderedSum(len(blocks)) if bias_grad else None

    def task(block):
        i, n0, nb = block
        bmat = _gather(b, n0, nb, "grad")
        if gb is not None:
            gb.add(i, bmat.sum(axis=1))
        if a is not None:
            if pointwise:
                col = _gather(a, n0, nb, "col")
            else:
                col = scratch("col", (rows, nb * plane), b.dtype)
                _im2col.im2col(a, col, n0, nb, *geom.args(), ho, wo, nt)
            partial = np.empty_like(wmat)
            _grouped_matmul(bmat, col, partial, groups, trans_b=True)
            gw.add(i, partial)
        if y is not None:
            if pointwise and nb == 1:
                _grouped_matmul(wmat, bmat, y[n0].reshape(c, plane), groups, trans_a=True)
                return
            col = scratch("col", (rows, nb * plane), b.dtype)  # the im2col above is consumed
            _grouped_matmul(wmat, bmat, col, groups, trans_a=True)
            _im2col.col2im(col, y, n0, nb, *geom.args(), ho, wo, nt)

    parallel_map(task, blocks)
    return (None if gw is None else gw.out), (None if gb is None else gb.out)


def _add_bias(y, bias):
    if bias is not None:
        y += bias.reshape(1, -1, 1, 1)


# --------------------------------------------------------------------------- public ops

def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D cross-correlation, as ``torch.nn.functional.conv2d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, H, W), float32 or float64
    weight : ndarray, shape (C_out, C_in/groups, kh, kw), same dtype
    bias : ndarray, shape (C_out,), optional
    stride, padding, dilation : int or (int, int)
        Positive stride and dilation, non-negative zero padding.
    groups : int
        Positive, dividing both ``C_in`` and ``C_out``.

    Returns
    -------
    ndarray, shape (N, C_out, H_out, W_out) with
    ``H_out = (H + 2*padding - dilation*(kh-1) - 1) // stride + 1``.
    """
    geom, groups, bias = _check_conv(input, weight, bias, stride, padding, dilation, groups)
    n, _, h, w = input.shape
    ho = _conv_out(h, geom.kh, geom.sh, geom.ph, geom.dh)
    wo = _conv_out(w, geom.kw, geom.sw, geom.pw, geom.dw)
    if ho <= 0 or wo <= 0:
        raise ValueError(
            f"output size ({ho}, {wo}) is not positive: input spatial size {(h, w)} (padded by "
            f"{(geom.ph, geom.pw)}) is smaller than the dilated kernel "
            f"{(geom.dh * (geom.kh - 1) + 1, geom.dw * (geom.kw - 1) + 1)}")
    x = np.ascontiguousarray(input)
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    y = np.empty((n, weight.shape[0], ho, wo), dtype=input.dtype)
    if WINOGRAD and _winograd_eligible(geom, groups, *weight.shape[1::-1], *input.shape[2:]):
        winograd_conv3x3(x, weight_transform(np.ascontiguousarray(weight)), y, geom.ph, geom.pw,
                         _kernel_threads(), bias)
    else:
        _unfold_loop(x, wmat, geom, ho, wo, groups, y=y, bias=bias)
    return y


def conv2d_backward(grad_output, input, weight, stride=1, padding=0, dilation=1, groups=1,
                    needs=(True, True, True)):
    """Gradients of :func:`conv2d` with respect to (input, weight, bias).

    ``needs`` (three bools) skips the gradients not wanted; those come back as
    None.  ``grad_output`` must have the shape :func:`conv2d` returns.
    """
    geom, groups, _ = _check_conv(input, weight, None, stride, padding, dilation, groups)
    _check_float(grad_output, "grad_output")
    _check_same_dtype(grad_output, input, "grad_output")
    n, _, h, w = input.shape
    expected = (n, weight.shape[0],
                _conv_out(h, geom.kh, geom.sh, geom.ph, geom.dh),
                _conv_out(w, geom.kw, geom.sw, geom.pw, geom.dw))
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have shape {expected}, got {grad_output.shape}")
    gout = np.ascontiguousarray(grad_output)
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    a = np.ascontiguousarray(input) if needs[1] else None
    gw, gb = None, None
    if any(needs):
        wino = WINOGRAD and _winograd_eligible(geom, groups, *weight.shape[1::-1], h, w)
        if needs[0] and wino:
            # dx = conv2d(dy, flip(w)^T, padding=2-p): a 3x3 stride-1 conv again
            flipped = weight.transpose(1, 0, 2, 3)[:, :, ::-1, ::-1]
            u = weight_transform(np.ascontiguousarray(flipped))
            winograd_conv3x3(gout, u, gx, 2 - geom.ph, 2 - geom.pw, _kernel_threads())
        if needs[1] and wino and min(weight.shape[:2]) >= MIN_CHANNELS_WEIGHT_GRAD:
            gw = winograd_weight_grad(a, gout, geom.ph, geom.pw, _kernel_threads())
            gb = gout.sum(axis=(0, 2, 3)) if needs[2] else None
        elif needs[1] or needs[2] or not wino:
            gw, gb = _fold_loop(gout, wmat, geom, h, w, groups, y=None if wino else gx,
                                a=a, bias_grad=needs[2])
    gw = gw.reshape(weight.shape) if needs[1] else None
    return gx, gw, gb


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution, as ``torch.nn.functional.conv_transpose2d``.

    Parameters
    ----------
    input : ndarray, shape (N, C_in, H, W), float32 or float64
    weight : ndarray, shape (C_in, C_out/groups, kh, kw), same dtype
    bias : ndarray, shape (C_out,), optional
    stride, padding, output_padding, dilation : int or (int, int)
        ``output_padding`` must be smaller than the stride or the dilation.
    groups : int

    Returns
    -------
    ndarray, shape (N, C_out, H_out, W_out) with
    ``H_out = (H-1)*stride - 2*padding + dilation*(kh-1) + output_padding + 1``.
    """
    geom, groups, bias, (ho, wo) = _check_transpose(input, weight, bias, stride, padding,
                                                    output_padding, groups, dilation)
    x = np.ascontiguousarray(input)
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    y = np.empty((input.shape[0], weight.shape[1] * groups, ho, wo), dtype=input.dtype)
    _fold_loop(x, wmat, geom, ho, wo, groups, y=y)
    _add_bias(y, bias)
    return y


def _check_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation):
    geom, groups, bias = _check_conv(input, weight, bias, stride, padding, dilation, groups,
                                     transposed=True)
    oph, opw = _pair(output_padding, "output_padding", 0)
    if not ((oph < geom.sh or oph < geom.dh) and (opw < geom.sw or opw < geom.dw)):
        raise ValueError(
            f"output_padding {(oph, opw)} must be smaller than either stride "
            f"{(geom.sh, geom.sw)} or dilation {(geom.dh, geom.dw)}")
    h, w = input.shape[2:]
    ho = (h - 1) * geom.sh - 2 * geom.ph + geom.dh * (geom.kh - 1) + oph + 1
    wo = (w - 1) * geom.sw - 2 * geom.pw + geom.dw * (geom.kw - 1) + opw + 1
    if ho <= 0 or wo <= 0:
        raise ValueError(
            f"output size ({ho}, {wo}) is not positive for input spatial size {(h, w)}, "
            f"kernel {(geom.kh, geom.kw)}, stride {(geom.sh, geom.sw)} and padding "
            f"{(geom.ph, geom.pw)}")
    return geom, groups, bias, (ho, wo)


def conv_transpose2d_backward(grad_output, input, weight, stride=1, padding=0, output_padding=0,
                              groups=1, dilation=1, needs=(True, True, True)):
    """Gradients of :func:`conv_transpose2d` with respect to (input, weight, bias).

    The input gradient is a convolution of ``grad_output`` with ``weight``; the
    weight gradient pairs ``input`` with the columns of ``grad_output``.
    """
    geom, groups, _, (ho, wo) = _check_transpose(input, weight, None, stride, padding,
                                                 output_padding, groups, dilation)
    _check_float(grad_output, "grad_output")
    _check_same_dtype(grad_output, input, "grad_output")
    n, _, h, w = input.shape
    expected = (n, weight.shape[1] * groups, ho, wo)
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have shape {expected}, got {grad_output.shape}")
    gout = np.ascontiguousarray(grad_output)
    wmat = np.ascontiguousarray(weight).reshape(weight.shape[0], -1)
    gx = np.empty(input.shape, dtype=input.dtype) if needs[0] else None
    b = np.ascontiguousarray(input) if needs[1] else None
    gw = None
    if needs[0] or needs[1]:
        gw = _unfold_loop(gout, wmat, geom, h, w, groups, y=gx, b=b)
    gw = gw.reshape(weight.shape) if needs[1] else None
    gb = gout.sum(axis=(0, 2, 3)) if needs[2] else None
    return gx, gw, gb
