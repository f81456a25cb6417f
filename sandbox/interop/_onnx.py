"""``to_onnx``: write a sandbox model as an ONNX graph (opset 18, dynamic batch size).

The exporter walks the module tree.  Alongside each ONNX node it runs the
sandbox layer itself on a batch of one (eval mode), so every intermediate
shape is the sandbox's own, and the resampling matrices are built for exactly
those sizes.  Spatial sizes are therefore fixed to ``example_shape``; the batch
size is a symbolic dimension ``batch``.  Batch norm is exported in eval mode
(running statistics).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import functional as F
from .. import nn
from ..autograd import Tensor, no_grad
from ..nn import _unet
from ..runtime.optional import require
from ._onnx_resample import emit_resample
from ._onnx_warp import emit_vecint, emit_warp

RESIZE_POLICIES = ("auto", "matmul")


def _per_axis(value, n: int) -> list[int]:
    """``value`` (an int or a sequence) as a list of ``n`` ints, one per spatial axis."""
    return [int(v) for v in value] if isinstance(value, tuple | list) else [int(value)] * n


class _Graph:
    """Collects nodes and constant initializers with unique names."""

    def __init__(self, onnx):
        self.onnx = onnx
        self.nodes = []
        self.initializers = []
        self._count = 0

    def _name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, array: np.ndarray, hint: str) -> str:
        name = self._name(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op: str, inputs: list, hint: str, **attrs) -> str:
        out = self._name(hint)
        self.nodes.append(self.onnx.helper.make_node(op, inputs, [out], name=out, **attrs))
        return out


class _Value:
    """An ONNX tensor name with the sandbox's value for a batch of one."""

    def __init__(self, name: str, array: np.ndarray):
        self.name = name
        self.array = array


def _run(fn, *arrays) -> np.ndarray:
    with no_grad():
        return fn(*(Tensor(a) for a in arrays)).numpy()


# --------------------------------------------------------------------- layers
def _conv(g, m, v):
    w = g.const(m.weight.numpy().astype(np.float32), "weight")
    inputs = [v.name, w] + ([g.const(m.bias.numpy().astype(np.float32), "bias")]
                            if m.bias is not None else [])
    if m.padding_mode != "zeros" or isinstance(m.padding, str):
        raise ValueError(
            f"to_onnx cannot export {type(m).__name__} with padding={m.padding!r}, "
            f"padding_mode={m.padding_mode!r}: it exports int or tuple zero padding "
            "(padding_mode='zeros')")
    pads = list(m.padding)  # ONNX: every axis's start, then every axis's end
    attrs = dict(kernel_shape=list(m.kernel_size), strides=list(m.stride),
                 pads=pads + pads, dilations=list(m.dilation), group=m.groups)
    if isinstance(m, nn.ConvTranspose2d | nn.ConvTranspose3d):
        return g.node("ConvTranspose", inputs, "conv_transpose",
                      output_padding=list(m.output_padding), **attrs)
    return g.node("Conv", inputs, "conv", **attrs)


def _linear(g, m, v):
    weight = g.const(m.weight.numpy().T.astype(np.float32), "weight")
    y = g.node("MatMul", [v.name, weight], "linear")
    if m.bias is not None:
        y = g.node("Add", [y, g.const(m.bias.numpy().astype(np.float32), "bias")], "linear_bias")
    return y


def _channel_affine(g, y, weight, bias, channels, rank):
    """``y * weight + bias`` with per-channel vectors broadcast over the spatial axes."""
    if weight is None:
        return y
    shape = (channels,) + (1,) * (rank - 2)
    y = g.node("Mul", [y, g.const(weight.numpy().astype(np.float32).reshape(shape), "scale")],
               "affine_scale")
    return g.node("Add", [y, g.const(bias.numpy().astype(np.float32).reshape(shape), "shift")],
                  "affine_shift")


def _batch_norm(g, m, v):
    c = m.num_features
    if m.track_running_stats:  # eval mode: the running statistics
        scale = m.weight.numpy() if m.weight is not None else np.ones(c)
        shift = m.bias.numpy() if m.bias is not None else np.zeros(c)
        inputs = [v.name] + [g.const(np.asarray(a, np.float32), n) for a, n in (
            (scale, "bn_scale"), (shift, "bn_shift"), (m.running_mean, "bn_mean"),
            (m.running_var, "bn_var"))]
        return g.node("BatchNormalization", inputs, "batch_norm", epsilon=m.eps)
    # No running statistics: even in eval mode the batch's own statistics are used.
    rank = v.array.ndim
    axes = g.const(np.array([0, *range(2, rank)], np.int64), "bn_axes")
    mean = g.node("ReduceMean", [v.name, axes], "bn_mean", keepdims=1)
    centred = g.node("Sub", [v.name, mean], "bn_centred")
    var = g.node("ReduceMean", [g.node("Mul", [centred, centred], "bn_sq"), axes], "bn_var",
                 keepdims=1)
    eps = g.const(np.array(m.eps, np.float32), "bn_eps")
    std = g.node("Sqrt", [g.node("Add", [var, eps], "bn_var_eps")], "bn_std")
    y = g.node("Div", [centred, std], "bn_normalised")
    return _channel_affine(g, y, m.weight, m.bias, c, rank)


def _group_norm(g, m, v):
    groups = m.num_groups
    grouped = g.node("Reshape", [v.name, g.const(np.array([0, groups, -1], np.int64), "gn_shape")],
                     "gn_grouped")
    ones = g.const(np.ones(groups, np.float32), "gn_ones")
    zeros = g.const(np.zeros(groups, np.float32), "gn_zeros")
    normed = g.node("InstanceNormalization", [grouped, ones, zeros], "gn_normalised",
                    epsilon=m.eps)
    y = g.node("Reshape", [normed, g.node("Shape", [v.name], "gn_input_shape")], "gn_ungrouped")
    return _channel_affine(g, y, m.weight, m.bias, m.num_channels, v.array.ndim)


def _max_pool(g, m, v):
    n = v.array.ndim - 2
    pads = _per_axis(m.padding, n)
    return g.node("MaxPool", [v.name], "max_pool", kernel_shape=_per_axis(m.kernel_size, n),
                  strides=_per_axis(m.stride, n), pads=pads + pads,
                  dilations=_per_axis(m.dilation, n), ceil_mode=int(m.ceil_mode))


def _avg_pool(g, m, v):
    n = v.array.ndim - 2
    pads = _per_axis(m.padding, n)
    kernel = _per_axis(m.kernel_size, n)
    if m.divisor_override is not None and m.ceil_mode:
        raise ValueError(
            f"to_onnx cannot export {type(m).__name__} with both divisor_override and "
            "ceil_mode=True (ONNX AveragePool has no divisor override); use one of them"
        )
    include_pad = m.count_include_pad or m.divisor_override is not None
    y = g.node("AveragePool", [v.name], "avg_pool", kernel_shape=kernel,
               strides=_per_axis(m.stride, n), pads=pads + pads, ceil_mode=int(m.ceil_mode),
               count_include_pad=int(include_pad))
    if m.divisor_override is not None:  # every window is whole: mean * k / divisor = sum / divisor
        factor = np.array(np.prod(kernel) / m.divisor_override, np.float32)
        y = g.node("Mul", [y, g.const(factor, "divisor")], "avg_pool_divisor")
    return y


def _upsample(g, m, v, out, policy):
    factors = None
    if m.scale_factor is not None and not m.recompute_scale_factor and m.mode != "area":
        sf = m.scale_factor
        factors = tuple(sf) if isinstance(sf, tuple | list) else (sf,) * (v.array.ndim - 2)
    return emit_resample(g, v.name, v.array.shape, out.shape[2:], m.mode, m.align_corners,
                         m.antialias, factors, policy)


_SIMPLE = {
    nn.Conv2d: _conv,
    nn.ConvTranspose2d: _conv,
    nn.Linear: _linear,
    nn.BatchNorm2d: _batch_norm,
    nn.GroupNorm: _group_norm,
    nn.MaxPool2d: _max_pool,
    nn.AvgPool2d: _avg_pool,
    nn.Conv3d: _conv,
    nn.ConvTranspose3d: _conv,
    nn.BatchNorm3d: _batch_norm,
    nn.MaxPool3d: _max_pool,
    nn.AvgPool3d: _avg_pool,
    nn.ReLU: lambda g, m, v: g.node("Relu", [v.name], "relu"),
    nn.LeakyReLU: lambda g, m, v: g.node("LeakyRelu", [v.name], "leaky_relu",
                                         alpha=m.negative_slope),
}
_PASS_THROUGH = (nn.Identity, nn.Dropout, nn.Dropout2d)  # eval mode: the identity


# ------------------------------------------------------------------- emitter
def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


class _Exporter:
    def __init__(self, onnx, policy, opset=18):
        self.g = _Graph(onnx)
        self.policy = policy
        self.opset = opset

    def relu(self, v):
        return _Value(self.g.node("Relu", [v.name], "relu"), np.maximum(v.array, 0))

    def child(self, m, name: str, v: _Value, where: str) -> _Value:
        """Emit sub-module ``name`` of ``m`` (``where`` is ``m``'s dotted path)."""
        return self.emit(m._modules[name], v, _join(where, name))

    def emit(self, m, v: _Value, where: str) -> _Value:
        kind = type(m)
        if kind in _PASS_THROUGH:
            return v
        if kind in _SIMPLE or kind is nn.Upsample:
            out = _run(m, v.array)
            if kind is nn.Upsample:
                return _Value(_upsample(self.g, m, v, out, self.policy), out)
            return _Value(_SIMPLE[kind](self.g, m, v), out)
        if kind is nn.Sequential:
            for key in m._modules:
                v = self.child(m, key, v, where)
            return v
        if kind is _unet.ConvBlock:
            v = self.relu(self.child(m, "norm1", self.child(m, "conv1", v, where), where))
            return self.relu(self.child(m, "norm2", self.child(m, "conv2", v, where), where))
        if kind is _unet.Down:
            return self.child(m, "block", self.child(m, "pool", v, where), where)
        if kind is nn.UNet:
            return self.unet(m, v, where)
        if kind is nn.VecInt:
            return _Value(emit_vecint(self.g, v.name, v.array.shape[2:], m, self.opset),
                          _run(m, v.array))
        raise TypeError(
            f"to_onnx cannot export {kind.__name__}{f' (at {where!r})' if where else ''}: "
            "it exports the layers of sandbox.nn, Sequential, the UNet, VecInt and (on its "
            "own, with two inputs) Warp"
        )

    def up(self, m, v: _Value, skip: _Value, where: str) -> _Value:
        v = self.child(m, "up", v, where)
        size = skip.array.shape[2:]
        if m.mode == "transposed":
            missing = [s - n for s, n in zip(size, v.array.shape[2:], strict=True)]
            if any(missing):  # odd sizes: pad to the skip's size, as the sandbox does
                before, after = [d // 2 for d in missing], [d - d // 2 for d in missing]
                pads = tuple(w for b, a in zip(before[::-1], after[::-1], strict=True)
                             for w in (b, a))  # F.pad: last axis first
                array = _run(lambda t: F.pad(t, pads), v.array)
                onnx_pads = np.array([0, 0, *before, 0, 0, *after], np.int64)
                v = _Value(self.g.node("Pad", [v.name, self.g.const(onnx_pads, "pads")], "pad"),
                           array)
        else:
            array = _run(lambda t: F.interpolate(t, size=tuple(size), mode=m.mode,
                                                 align_corners=m.align_corners,
                                                 antialias=m.antialias), v.array)
            name = emit_resample(self.g, v.name, v.array.shape, size, m.mode, m.align_corners,
                                 m.antialias, None, self.policy)
            v = _Value(name, array)
        joined = _Value(self.g.node("Concat", [skip.name, v.name], "concat", axis=1),
                        np.concatenate([skip.array, v.array], axis=1))
        return self.child(m, "block", joined, where)

    def unet(self, m, v: _Value, where: str) -> _Value:
        skips = [self.child(m, "inc", v, where)]
        downs = _join(where, "downs")
        for i in range(len(m.downs)):
            skips.append(self.child(m.downs, str(i), skips[-1], downs))
        v = skips.pop()
        ups = _join(where, "ups")
        for i, up in enumerate(m.ups):
            v = self.up(up, v, skips.pop(), _join(ups, str(i)))
        return self.child(m, "head", v, where)


def _check_warp_shapes(example_shape):
    """``((N, C, *spatial), (N, nd, *spatial))`` for a Warp's image and flow."""
    from ..array.warp import check_flow

    ok = (isinstance(example_shape, tuple | list) and len(example_shape) == 2
          and all(isinstance(s, tuple | list) and len(s) in (4, 5) and all(
              isinstance(n, int | np.integer) and not isinstance(n, bool) and n > 0 for n in s)
              for s in example_shape))
    if not ok:
        raise ValueError(
            "example_shape for a Warp must be the shapes of its two inputs, ((N, C, H, W), "
            f"(N, 2, H, W)) or ((N, C, D, H, W), (N, 3, D, H, W)), got {example_shape!r}"
        )
    image, flow = (tuple(int(n) for n in s) for s in example_shape)
    check_flow(flow, image, name="flow")
    return image, flow


def _check_shape(example_shape, module):
    shape = tuple(example_shape) if isinstance(example_shape, tuple | list) else None
    if (shape is None or not 3 <= len(shape) <= 5
            or not all(isinstance(s, int | np.integer) and not isinstance(s, bool) and s > 0
                       for s in shape)):
        raise ValueError(
            "example_shape must be the input's shape (N, C, H, W) (or (N, C, L), "
            f"(N, C, D, H, W)) as positive ints, got {example_shape!r}"
        )
    if isinstance(module, nn.UNet) and (len(shape) != 2 + module.spatial_dims
                                        or shape[1] != module.in_channels):
        axes = "H, W" if module.spatial_dims == 2 else "D, H, W"
        raise ValueError(
            f"example_shape for this UNet must be (N, {module.in_channels}, {axes}), got {shape}"
        )
    return tuple(int(s) for s in shape)


def to_onnx(module, example_shape, path, *, resize: str = "auto", opset: int = 18) -> Path:
    """Write ``module`` (eval mode) as an ONNX model that ONNX Runtime runs.

    Parameters
    ----------
    module : sandbox.nn.Module
        A :class:`~sandbox.nn.UNet` (2-D or ``spatial_dims=3``), a layer of
        :mod:`sandbox.nn` or a ``Sequential`` of them, with float32 weights.
        :class:`~sandbox.nn.VecInt` and :class:`~sandbox.nn.Warp` export to ONNX
        ``GridSample`` (volumes need ``opset=20``; 3-D bicubic is refused, ONNX Runtime
        lacks it). A ``Warp`` is exported on its own, as a graph of two inputs,
        ``input`` and ``flow``.
    example_shape : tuple of int
        The input shape, e.g. ``(1, 3, 128, 128)``, or ``(1, 1, 32, 32, 32)`` for a
        volume (3-D resampling is exported as per-axis ``MatMul``).  The batch size is a
        dynamic dimension; the spatial sizes are fixed to these. For a ``Warp``, the
        pair of shapes ``(image_shape, flow_shape)``.
    path : str or os.PathLike
        Destination ``.onnx`` file (its folder is created).
    resize : {"auto", "matmul"}
        ``"auto"`` maps resampling to ONNX ``Resize`` wherever that is exact and
        to per-axis ``MatMul`` with the sandbox's weight matrices elsewhere;
        ``"matmul"`` always uses the matrices.
    opset : int
        ONNX opset, at least 18 (``Resize`` with ``antialias`` and ``axes``).

    Returns
    -------
    pathlib.Path

    Notes
    -----
    The model is checked with ``onnx.checker.check_model(full_check=True)`` before
    it is written.  The module's train/eval flags are restored afterwards.
    """
    onnx = require("onnx", "to_onnx")
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a sandbox.nn.Module, got {type(module).__name__}")
    if resize not in RESIZE_POLICIES:
        raise ValueError(f"resize must be one of {RESIZE_POLICIES}, got {resize!r}")
    if isinstance(opset, bool) or not isinstance(opset, int) or opset < 18:
        raise ValueError(f"opset must be an int >= 18 (Resize with antialias), got {opset!r}")
    warp = type(module) is nn.Warp
    shapes = _check_warp_shapes(example_shape) if warp else (_check_shape(example_shape, module),)
    if any(p.dtype != np.float32 for p in module.parameters()):
        raise ValueError(
            "to_onnx exports float32 models (ONNX Runtime's CPU Conv has no float64 kernel); "
            "export a float32 copy, e.g. copy.deepcopy(model).float()"
        )
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        exporter = _Exporter(onnx, resize, opset)
        names = ("input", "flow")[:len(shapes)]
        values = [_Value(n, np.zeros((1, *s[1:]), np.float32))
                  for n, s in zip(names, shapes, strict=True)]
        if warp:
            image, flow = values
            y = _Value(emit_warp(exporter.g, "input", "flow", shapes[0][2:], module, opset),
                       _run(module, image.array, flow.array))
        else:
            y = exporter.emit(module, values[0], "")
    finally:
        for m, training in modes:
            object.__setattr__(m, "training", training)
    g = exporter.g
    if y.name == "input":  # the model is the identity
        y = _Value(g.node("Identity", ["input"], "output"), y.array)
    helper = onnx.helper
    graph = helper.make_graph(
        g.nodes, f"sandbox_{type(module).__name__}",
        [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, ["batch", *s[1:]])
         for n, s in zip(names, shapes, strict=True)],
        [helper.make_tensor_value_info(y.name, onnx.TensorProto.FLOAT,
                                       ["batch", *(int(s) for s in y.array.shape[1:])])],
        initializer=g.initializers,
    )
    opsets = [helper.make_opsetid("", opset)]
    from .._version import __version__

    model = helper.make_model(graph, opset_imports=opsets, producer_name="sandbox",
                              producer_version=__version__,
                              ir_version=helper.find_min_ir_version_for(opsets))
    onnx.checker.check_model(model, full_check=True)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def run_onnx(path, x: np.ndarray, *more: np.ndarray) -> np.ndarray:
    """Run an ONNX file with ONNX Runtime (CPU) on float32 arrays; return the first output.

    ``x`` feeds the graph's first input; ``more`` the next ones in order (a Warp's flow).
    """
    ort = require("onnxruntime", "run_onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    arrays = (x, *more)
    if len(arrays) != len(names):
        raise ValueError(f"{path} takes {len(names)} input(s) ({', '.join(names)}), "
                         f"got {len(arrays)} array(s)")
    feed = {n: np.ascontiguousarray(a, dtype=np.float32)
            for n, a in zip(names, arrays, strict=True)}
    return session.run(None, feed)[0]
