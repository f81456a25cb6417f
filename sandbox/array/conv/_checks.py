"""Argument checks and output-size arithmetic of the convolutions, for 2-D and 3-D.

Everything here is plain Python on shapes.  :func:`plan_conv` validates a call
once and returns a :class:`ConvPlan` (the rank, the geometry, the groups and the
output size); the public ops of :mod:`sandbox.array.conv` make one per call, and
the differentiable Functions keep the forward's plan for their backward, so a
training step validates each convolution once.
"""

from __future__ import annotations

from typing import NamedTuple

from .._validate import (
    PlanCache,
    check_float,
    check_groups,
    check_ndim,
    check_same_dtype,
    ntuple,
)

__all__ = [
    "ConvPlan",
    "Geometry",
    "check_grad_output",
    "conv2d_output_size",
    "conv3d_output_size",
    "conv_out",
    "conv_transpose2d_output_size",
    "conv_transpose3d_output_size",
    "plan_conv",
    "transpose_out",
]

#: spatial rank -> (input layout, weight layout of conv, of conv_transpose)
_LAYOUTS = {
    2: ("(N, C, H, W)", "(C_out, C_in/groups, kh, kw)", "(C_in, C_out/groups, kh, kw)"),
    3: ("(N, C, D, H, W)", "(C_out, C_in/groups, kd, kh, kw)",
        "(C_in, C_out/groups, kd, kh, kw)"),
}


class Geometry(NamedTuple):
    """Kernel size, stride, padding and dilation (rows, columns) of a 2-D convolution."""

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


class ConvPlan(NamedTuple):
    """A validated convolution call: what its forward and backward run on.

    ``geom`` is the kernel size, stride, padding and dilation, ``nd`` ints each (a
    :class:`Geometry` in 2-D, 12 ints in 3-D); ``out_size`` the spatial output size.
    """

    nd: int
    transposed: bool
    geom: tuple
    groups: int
    out_size: tuple
    #: ``output_padding`` (transposed convolutions only)
    output_padding: tuple = ()

    @property
    def kernel(self) -> tuple:
        """The kernel size, ``nd`` ints."""
        return tuple(self.geom[:self.nd])

    @property
    def stride(self) -> tuple:
        return tuple(self.geom[self.nd:2 * self.nd])

    @property
    def padding(self) -> tuple:
        return tuple(self.geom[2 * self.nd:3 * self.nd])

    @property
    def dilation(self) -> tuple:
        return tuple(self.geom[3 * self.nd:4 * self.nd])


def conv_out(size: int, k: int, s: int, p: int, d: int) -> int:
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def transpose_out(size: int, k: int, s: int, p: int, op: int, d: int) -> int:
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def conv2d_output_size(h, w, kernel_size, stride=1, padding=0, dilation=1) -> tuple[int, int]:
    """Spatial output size of :func:`conv2d` (PyTorch's formula)."""
    return conv_output_size((h, w), kernel_size, stride, padding, dilation)


def conv3d_output_size(size, kernel_size, stride=1, padding=0, dilation=1) -> tuple[int, ...]:
    """Spatial output size ``(do, ho, wo)`` of :func:`conv3d` for input ``size`` (D, H, W)."""
    return conv_output_size(tuple(size), kernel_size, stride, padding, dilation)


def conv_output_size(size, kernel_size, stride=1, padding=0, dilation=1) -> tuple[int, ...]:
    """Spatial output size of a convolution of input ``size`` (one int per axis)."""
    nd = len(size)
    k, s = ntuple(kernel_size, "kernel_size", 1, nd), ntuple(stride, "stride", 1, nd)
    p, d = ntuple(padding, "padding", 0, nd), ntuple(dilation, "dilation", 1, nd)
    return tuple(conv_out(*args) for args in zip(size, k, s, p, d, strict=True))


def conv_transpose2d_output_size(h, w, kernel_size, stride=1, padding=0, output_padding=0,
                                 dilation=1) -> tuple[int, int]:
    """Spatial output size of :func:`conv_transpose2d` (PyTorch's formula)."""
    return conv_transpose_output_size((h, w), kernel_size, stride, padding, output_padding,
                                      dilation)


def conv_transpose3d_output_size(size, kernel_size, stride=1, padding=0, output_padding=0,
                                 dilation=1) -> tuple[int, ...]:
    """Spatial output size of :func:`conv_transpose3d` for input ``size`` (D, H, W)."""
    return conv_transpose_output_size(tuple(size), kernel_size, stride, padding,
                                      output_padding, dilation)


def conv_transpose_output_size(size, kernel_size, stride=1, padding=0, output_padding=0,
                               dilation=1) -> tuple[int, ...]:
    """Spatial output size of a transposed convolution of input ``size``."""
    nd = len(size)
    k, s = ntuple(kernel_size, "kernel_size", 1, nd), ntuple(stride, "stride", 1, nd)
    p, d = ntuple(padding, "padding", 0, nd), ntuple(dilation, "dilation", 1, nd)
    op = ntuple(output_padding, "output_padding", 0, nd)
    return tuple(transpose_out(*args) for args in zip(size, k, s, p, op, d, strict=True))


def _check_bias(bias, channels: int, ref):
    if bias is None:
        return
    check_float(bias, "bias")
    check_same_dtype(bias, ref, "bias")
    if bias.shape != (channels,):
        raise ValueError(f"bias must have shape ({channels},), got {bias.shape}")


def _rank(input, nd):
    """The spatial rank: ``nd`` if given (2 or 3), else from ``input.ndim`` (4 or 5)."""
    if nd is not None:
        check_ndim(input, "input", nd + 2, _LAYOUTS[nd][0])
        return nd
    if input.ndim not in (4, 5):
        raise ValueError(f"input must be 4-D {_LAYOUTS[2][0]} or 5-D {_LAYOUTS[3][0]}, "
                         f"got shape {input.shape}")
    return input.ndim - 2


def _channels(input, weight, groups, transposed) -> int:
    """Check the channel counts against ``groups``; return the output channels."""
    c_in = input.shape[1]
    if transposed:
        if weight.shape[0] != c_in:
            raise ValueError(
                f"weight of shape {weight.shape} expects {weight.shape[0]} input channels "
                f"(weight.shape[0]), but input of shape {input.shape} has {c_in}")
        if c_in % groups:
            raise ValueError(f"groups={groups} must divide the input channels ({c_in})")
        return weight.shape[1] * groups
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
    return c_out


# Plans of validated calls (11.5 us of checks a call on the AMD EPYC family 23 VM, timeit),
# keyed by the operands' types, shapes and dtypes and the options; only options that are
# plain ints or tuples of plain ints are keyed (so True never finds the plan of 1), any
# other request is validated every time.
_PLANS = PlanCache(512)


def _plain(value) -> bool:
    return type(value) is int or (type(value) is tuple and all(type(v) is int for v in value))


def _plan_key(input, weight, bias, stride, padding, dilation, groups, transposed,
              output_padding, nd):
    if not (_plain(stride) and _plain(padding) and _plain(dilation) and _plain(groups)
            and _plain(output_padding) and (nd is None or type(nd) is int)):
        return None
    try:
        b = None if bias is None else (type(bias), bias.shape, bias.dtype)
        return (type(input), input.shape, input.dtype, type(weight), weight.shape,
                weight.dtype, b, stride, padding, dilation, groups, transposed is True,
                output_padding, nd)
    except AttributeError:  # not arrays: the checks say what is wrong
        return None


def plan_conv(input, weight, bias, stride, padding, dilation, groups, *, transposed=False,
              output_padding=0, nd=None) -> ConvPlan:
    """Validate a convolution (or, with ``transposed``, a transposed convolution) call.

    ``nd`` (2 or 3) fixes the spatial rank; None takes it from ``input.ndim``.  Raises
    TypeError/ValueError naming the argument; returns the :class:`ConvPlan` (the same
    one for a repeated request: the checks run once per shapes, dtypes and options).
    """
    key = _plan_key(input, weight, bias, stride, padding, dilation, groups, transposed,
                    output_padding, nd)
    found = None if key is None else _PLANS.get(key)
    if found is not None:
        return found
    found = _plan_conv(input, weight, bias, stride, padding, dilation, groups, transposed,
                       output_padding, nd)
    if key is not None:
        _PLANS.put(key, found)
    return found


def _plan_conv(input, weight, bias, stride, padding, dilation, groups, transposed,
               output_padding, nd) -> ConvPlan:
    check_float(input, "input")
    check_float(weight, "weight")
    check_same_dtype(weight, input, "weight")
    nd = _rank(input, nd)
    check_ndim(weight, "weight", nd + 2, _LAYOUTS[nd][2 if transposed else 1])
    groups = check_groups(groups)
    s, p = ntuple(stride, "stride", 1, nd), ntuple(padding, "padding", 0, nd)
    d = ntuple(dilation, "dilation", 1, nd)
    k = weight.shape[2:]
    if min(k) < 1:
        raise ValueError(f"weight kernel size must be positive, got {k}")
    geom = Geometry(*k, *s, *p, *d) if nd == 2 else (*k, *s, *p, *d)
    _check_bias(bias, _channels(input, weight, groups, transposed), input)
    size = input.shape[2:]
    if not transposed:
        out = tuple([(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd)])
        if min(out) <= 0:
            raise ValueError(
                f"output size {out} is not positive: input spatial size {size} (padded by "
                f"{p}) is smaller than the dilated kernel "
                f"{tuple(d[i] * (k[i] - 1) + 1 for i in range(nd))}")
        return ConvPlan(nd, False, geom, groups, out)
    op = ntuple(output_padding, "output_padding", 0, nd)
    if not all(op[i] < s[i] or op[i] < d[i] for i in range(nd)):
        raise ValueError(
            f"output_padding {op} must be smaller than either stride {s} or dilation {d}")
    out = tuple([transpose_out(size[i], k[i], s[i], p[i], op[i], d[i]) for i in range(nd)])
    if min(out) <= 0:
        raise ValueError(
            f"output size {out} is not positive for input spatial size {size}, kernel "
            f"{k}, stride {s} and padding {p}")
    return ConvPlan(nd, True, geom, groups, out, op)


def check_grad_output(grad_output, input, expected) -> None:
    """``grad_output`` must be a float array of the input's dtype and the forward's shape."""
    check_float(grad_output, "grad_output")
    check_same_dtype(grad_output, input, "grad_output")
    if grad_output.shape != expected:
        raise ValueError(f"grad_output must have shape {expected}, got {grad_output.shape}")
