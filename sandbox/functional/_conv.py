"""Differentiable convolutions and transposed convolutions, 2-D and 3-D.

Gradients of any order.  A convolution is bilinear in (input, weight), so each of
its gradients is again a convolution:

* input gradient of ``conv``: ``conv_transpose`` of the output gradient with the
  same weight (and the reverse for ``conv_transpose``);
* weight gradient: the ``*WeightGrad`` Functions, whose own backward is a ``conv``
  and a ``conv_transpose`` again.

Each op is one Function class (:class:`ConvNd`, :class:`ConvTransposeNd` and their
weight gradients) written once for every rank: the array ops of
:mod:`sandbox.array.conv` dispatch on ``ndim``.  The per-rank subclasses
(``Conv2d``, ``Conv3d`` ...) only give the graph nodes their names.  The wrappers
validate a call once (:func:`sandbox.array.conv.plan_conv`) and hand the plan to the
Function, which keeps it for the backward: a plain backward (``create_graph=False``)
calls the array kernels on that plan; only under ``create_graph=True`` are the
gradients built from these Functions.
"""

from __future__ import annotations

from typing import NamedTuple

from ..array import conv as _conv
from ..array._validate import ntuple
from ..autograd import Function, Tensor, is_grad_enabled
from ..runtime import overlap

__all__ = ["check_tensor", "conv2d", "conv3d", "conv_transpose2d", "conv_transpose3d",
           "string_padding"]


def check_tensor(x, name):
    """``x`` itself; TypeError unless it is a sandbox Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a sandbox.Tensor, got {type(x).__name__}")
    return x


def _array(t):
    return t.numpy() if isinstance(t, Tensor) else t


def _apply_conv(x, weight, bias, stride, padding, dilation, groups, nd):
    plan = _conv.plan_conv(x.numpy(), weight.numpy(), _array(bias), stride, padding, dilation,
                           groups, nd=nd)
    return _RANKS[nd].conv.apply(x, weight, bias, plan)


def _apply_transpose(x, weight, bias, stride, padding, output_padding, groups, dilation, nd):
    plan = _conv.plan_conv(x.numpy(), weight.numpy(), _array(bias), stride, padding, dilation,
                           groups, transposed=True, output_padding=output_padding, nd=nd)
    return _RANKS[nd].conv_transpose.apply(x, weight, bias, plan)


def _bias_axes(nd):
    return (0, *range(2, nd + 2))


def _keep(ctx, x, weight, bias, plan):
    """What the backward of a convolution needs: both operands and the forward's plan."""
    ctx.save_for_backward(x, weight)
    ctx.plan = plan
    ctx.has_bias = bias is not None


def _backward(ctx, grad, array_backward, input_grad, weight_grad):
    """The backward of :class:`ConvNd` and :class:`ConvTransposeNd` (``array_backward``,
    ``input_grad``, ``weight_grad``: that op's array backward, differentiable input
    gradient and weight-gradient Function)."""
    needs = ctx.needs_input_grad
    needs = (needs[0], needs[1], ctx.has_bias and needs[2])
    plan = ctx.plan
    if not is_grad_enabled():  # plain backward: the kernels, on arrays, on the plan
        x, weight = ctx.saved_arrays
        if ctx.defer and (needs[1] or needs[2]):
            # the input gradient here, for the next node; the weight and bias gradients
            # (which only their leaves read) beside this thread meanwhile
            later = overlap.submit(_parameter_grads, array_backward, grad, x, weight, needs,
                                   plan)
            gx = (array_backward(grad, x, weight, needs=(True, False, False), plan=plan)[0]
                  if needs[0] else None)
            return (gx, later.item(0) if needs[1] else None,
                    later.item(1) if needs[2] else None, None)
        gx, gw, gb = array_backward(grad, x, weight, needs=needs, plan=plan)
        return gx, gw, gb, None
    # create_graph: every gradient is a differentiable op again
    x, weight = ctx.saved_tensors
    gx = input_grad(grad, weight, x.shape, plan) if needs[0] else None
    gw = weight_grad.apply(x, grad, weight.numpy(), plan) if needs[1] else None
    gb = grad.sum(axis=_bias_axes(plan.nd)) if needs[2] else None
    return gx, gw, gb, None


def _parameter_grads(array_backward, grad, x, weight, needs, plan):
    """The weight and bias gradients of a convolution (``needs``: of the three)."""
    return array_backward(grad, x, weight, needs=(False, needs[1], needs[2]), plan=plan)[1:]


def _conv_input_grad(grad, weight, input_shape, plan):
    """``d/dx <conv(x, w), g>`` as a differentiable ``conv_transpose`` of ``g``."""
    s, p, d = plan.stride, plan.padding, plan.dilation
    k, out, size = weight.shape[2:], grad.shape[2:], input_shape[2:]
    # conv drops the last (size + 2p - d(k-1) - 1) % s inputs of each axis from its
    # windows; output_padding (always < stride) restores them in the transpose.
    op = tuple(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1 - (out[i] - 1) * s[i]
               for i in range(plan.nd))
    return _apply_transpose(grad, weight, None, s, p, op, plan.groups, d, plan.nd)


def _transpose_input_grad(grad, weight, input_shape, plan):
    """``d/dx <conv_transpose(x, w), g>`` as a differentiable ``conv`` of ``g``."""
    s, p, d = plan.stride, plan.padding, plan.dilation
    gx = _apply_conv(grad, weight, None, s, p, d, plan.groups, plan.nd)
    size = tuple(input_shape[2:])
    if gx.shape[2:] != size:  # output_padding >= stride: inputs no window reaches
        gx = gx[(slice(None), slice(None), *(slice(0, n) for n in size))]
    return gx


def _kind(plan):
    """``(name, input_grad)`` of a plan's op: ``"conv"`` or ``"conv_transpose"`` (its
    array ops in :mod:`sandbox.array.conv`, looked up at each call, and its
    :class:`_Rank` fields are named after it) and its differentiable input gradient."""
    if plan.transposed:
        return "conv_transpose", _transpose_input_grad
    return "conv", _conv_input_grad


class _Bilinear(Function):
    """``conv`` or ``conv_transpose`` (:class:`ConvNd`, :class:`ConvTransposeNd`) on a
    validated plan, which says which (:func:`_kind`)."""

    fresh_grads = True  # the array backward allocates every gradient it returns
    plain_backward_arrays = True  # outside create_graph, grad is an ndarray
    deferrable = (1, 2)  # the weight and bias gradients, when they go to leaves

    @staticmethod
    def forward(ctx, x, weight, bias, plan):
        _keep(ctx, x, weight, bias, plan)
        return getattr(_conv, _kind(plan)[0])(x, weight, bias, plan=plan)

    @staticmethod
    def backward(ctx, grad):
        name, input_grad = _kind(ctx.plan)
        return _backward(ctx, grad, getattr(_conv, f"{name}_backward"), input_grad,
                         getattr(_RANKS[ctx.plan.nd], f"{name}_weight_grad"))


class ConvNd(_Bilinear):
    """``y = conv(x, w, b)`` on a validated plan; backward through the column kernels."""


class ConvTransposeNd(_Bilinear):
    """``y = conv_transpose(x, w, b)``, the adjoint of the convolution in ``x``."""


class _WeightGrad(Function):
    """The weight gradient of a :class:`_Bilinear` op, bilinear in ``(x, g)``.

    ``weight`` (an array) only gives the kernels the weight's shape; ``plan`` is the
    convolution's.  Backward, for an incoming ``gg`` shaped like the weight: ``dx``
    is the op's input gradient of ``(g, gg)`` and ``dg`` the op itself on ``(x, gg)``.
    """

    @staticmethod
    def forward(ctx, x, grad, weight, plan):
        ctx.save_for_backward(x, grad)
        ctx.plan = plan
        array_backward = getattr(_conv, f"{_kind(plan)[0]}_backward")
        return array_backward(grad, x, weight, needs=(False, True, False), plan=plan)[1]

    @staticmethod
    def backward(ctx, gg):
        """``dx = input_grad(g, gg)`` and ``dg = op(x, gg)``: the two other bilinear forms."""
        x, grad = ctx.saved_tensors
        plan, needs = ctx.plan, ctx.needs_input_grad
        name, input_grad = _kind(plan)
        gx = input_grad(grad, gg, x.shape, plan) if needs[0] else None
        g_grad = getattr(_RANKS[plan.nd], name).apply(x, gg, None, plan) if needs[1] else None
        return gx, g_grad, None, None


class ConvNdWeightGrad(_WeightGrad):
    """``gw = d/dw <conv(x, w), g>``: ``dx = conv_transpose(g, gg)``, ``dg = conv(x, gg)``."""


class ConvTransposeNdWeightGrad(_WeightGrad):
    """``gw = d/dw <conv_transpose(x, w), g>``: ``dx = conv(g, gg)`` (cropped to ``x``),
    ``dg = conv_transpose(x, gg)``."""


# The graph names of each rank (Conv2dBackward, Conv3dWeightGradBackward ...).
class Conv2d(ConvNd):
    """2-D :class:`ConvNd`."""


class Conv3d(ConvNd):
    """3-D :class:`ConvNd`."""


class ConvTranspose2d(ConvTransposeNd):
    """2-D :class:`ConvTransposeNd`."""


class ConvTranspose3d(ConvTransposeNd):
    """3-D :class:`ConvTransposeNd`."""


class Conv2dWeightGrad(ConvNdWeightGrad):
    """2-D :class:`ConvNdWeightGrad`."""


class Conv3dWeightGrad(ConvNdWeightGrad):
    """3-D :class:`ConvNdWeightGrad`."""


class ConvTranspose2dWeightGrad(ConvTransposeNdWeightGrad):
    """2-D :class:`ConvTransposeNdWeightGrad`."""


class ConvTranspose3dWeightGrad(ConvTransposeNdWeightGrad):
    """3-D :class:`ConvTransposeNdWeightGrad`."""


class _Rank(NamedTuple):
    conv: type
    conv_transpose: type
    conv_weight_grad: type
    conv_transpose_weight_grad: type


_RANKS = {
    2: _Rank(Conv2d, ConvTranspose2d, Conv2dWeightGrad, ConvTranspose2dWeightGrad),
    3: _Rank(Conv3d, ConvTranspose3d, Conv3dWeightGrad, ConvTranspose3dWeightGrad),
}


def string_padding(padding, kernel_size, stride, dilation):
    """``F.pad`` widths (last axis first: ``(left, right, top, bottom[, front, back])``)
    for ``padding="same"`` or ``"valid"``, as torch; the rank is ``len(kernel_size)``.

    ``same`` keeps the spatial size (stride 1 only): ``dilation·(k - 1)`` in total per
    axis, the odd one on the right/bottom/back.
    """
    nd = len(kernel_size)
    if padding not in ("same", "valid"):
        what = {2: "a pair", 3: "a triple"}[nd]
        raise ValueError(f"padding must be an int, {what}, 'same' or 'valid', got {padding!r}")
    if padding == "valid":
        return (0,) * 2 * nd
    if ntuple(stride, "stride", 0, nd) != (1,) * nd:
        raise ValueError("padding='same' is not supported for strided convolutions (as PyTorch)")
    k, d = ntuple(kernel_size, "kernel_size", 1, nd), ntuple(dilation, "dilation", 0, nd)
    total = [d[i] * (k[i] - 1) for i in reversed(range(nd))]
    return tuple(w for t in total for w in (t // 2, t - t // 2))


def _string_padding(input, weight, padding, stride, dilation):
    """``input`` (padded explicitly if the widths are uneven) and the symmetric padding."""
    widths = string_padding(padding, weight.shape[2:], stride, dilation)
    before, after = widths[0::2], widths[1::2]
    if before != after:  # uneven: pad explicitly
        from ..ops import pad

        input = pad(input, widths)
        before = (0,) * len(before)
    return input, tuple(reversed(before))


def _tensor_conv(input, weight, bias, stride, padding, dilation, groups, nd):
    """:func:`conv2d` / :func:`conv3d`: Tensor operands, ``padding`` also a string."""
    check_tensor(input, "input")
    check_tensor(weight, "weight")
    if isinstance(padding, str):
        input, padding = _string_padding(input, weight, padding, stride, dilation)
    return _apply_conv(input, weight, bias, stride, padding, dilation, groups, nd)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution of Tensors, as ``torch.nn.functional.conv2d``.

    ``input`` (N, C_in, H, W), ``weight`` (C_out, C_in/groups, kh, kw), ``bias``
    (C_out,) or None; ``padding`` may also be ``"same"`` or ``"valid"``.  See
    :func:`sandbox.array.conv.conv` for the options.
    """
    return _tensor_conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of Tensors, as ``torch.nn.functional.conv3d``.

    ``input`` (N, C_in, D, H, W), ``weight`` (C_out, C_in/groups, kd, kh, kw), ``bias``
    (C_out,) or None; ``padding`` may also be ``"same"`` or ``"valid"``.  See
    :func:`sandbox.array.conv.conv` for the options.
    """
    return _tensor_conv(input, weight, bias, stride, padding, dilation, groups, 3)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution of Tensors, as ``torch.nn.functional.conv_transpose2d``.

    ``input`` (N, C_in, H, W), ``weight`` (C_in, C_out/groups, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.array.conv.conv_transpose` for the options.
    """
    return _apply_transpose(check_tensor(input, "input"), check_tensor(weight, "weight"), bias,
                            stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution of Tensors, as ``torch.nn.functional.conv_transpose3d``.

    ``input`` (N, C_in, D, H, W), ``weight`` (C_in, C_out/groups, kd, kh, kw), ``bias``
    (C_out,) or None.  See :func:`sandbox.array.conv.conv_transpose` for the options.
    """
    return _apply_transpose(check_tensor(input, "input"), check_tensor(weight, "weight"), bias,
                            stride, padding, output_padding, groups, dilation, 3)
