"""ONNX for :class:`~sandbox.nn.Warp` and :class:`~sandbox.nn.VecInt`: ``GridSample``.

The voxel displacement becomes grid_sample's normalised grid inside the graph: the
flow is moved to channels-last (``Transpose``), multiplied by a constant matrix that
both scales each axis and reverses the axis order to ``x, y(, z)`` (``MatMul``), and
the normalised identity grid is added (``Add``). Then one ``GridSample`` node.

What ONNX defines, and what ONNX Runtime 1.32 runs (checked here, CPU):

* ``GridSample``-16 (opsets 16-19) is 4-D only, with modes ``bilinear``, ``nearest``,
  ``bicubic``; ``GridSample``-20 is N-D with the modes renamed ``linear``, ``nearest``,
  ``cubic``. So a 2-D warp exports at the exporter's opset 18, a 3-D one needs
  ``opset=20``.
* ONNX Runtime refuses cubic ``GridSample`` on 5-D input ("Only support GridSample
  Cubic mode in 4-D cases"), and PyTorch has no 3-D bicubic either: a 3-D bicubic
  warp is refused here.
* Padding (zeros, border, reflection), ``align_corners`` and the rounding of
  ``nearest`` (half to even) are the same as the sandbox's.
"""

from __future__ import annotations

import numpy as np

from ..array.warp import identity_displacement, normaliser

_ONNX16_MODES = {"bilinear": "bilinear", "nearest": "nearest", "bicubic": "bicubic"}
_ONNX20_MODES = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}


def grid_sample_attributes(mode: str, padding_mode: str, align_corners: bool, spatial_dims: int,
                           opset: int, what: str) -> dict:
    """``GridSample``'s attributes, or a ValueError naming what would work instead."""
    if spatial_dims == 3 and opset < 20:
        raise ValueError(
            f"to_onnx cannot export {what} on volumes at opset {opset}: ONNX GridSample is "
            "4-D only before opset 20; pass opset=20 (or higher)"
        )
    if spatial_dims == 3 and mode == "bicubic":
        raise ValueError(
            f"to_onnx cannot export {what} with mode='bicubic' on volumes: ONNX Runtime runs "
            "cubic GridSample only on 4-D input (and PyTorch has no 3-D bicubic); export "
            "mode='bilinear' (trilinear) or mode='nearest', or keep the 3-D bicubic model in "
            "the sandbox"
        )
    names = _ONNX20_MODES if opset >= 20 else _ONNX16_MODES
    return dict(mode=names[mode], padding_mode=padding_mode, align_corners=int(align_corners))


def _grid(g, flow: str, spatial, align_corners: bool) -> str:
    """The normalised grid (N, *spatial, nd), last axis x, y(, z), for a voxel flow."""
    nd = len(spatial)
    scale, offset = normaliser(spatial, align_corners, np.float32)
    # channels-last flow (.., nd) @ M: output j (x first) = scale_k * flow_k, k = nd-1-j
    m = np.zeros((nd, nd), np.float32)
    for k in range(nd):
        m[k, nd - 1 - k] = scale[k]
    base = identity_displacement(spatial, np.float32) * scale.reshape((nd,) + (1,) * nd)
    base = base + offset.reshape((nd,) + (1,) * nd)
    base = np.moveaxis(base[::-1], 0, -1)[None]  # (1, *spatial, nd), x first
    last = g.node("Transpose", [flow], "flow_channels_last", perm=[0, *range(2, nd + 2), 1])
    scaled = g.node("MatMul", [last, g.const(m, "flow_scale")], "flow_scaled")
    return g.node("Add", [scaled, g.const(np.ascontiguousarray(base), "identity_grid")], "grid")


def emit_warp(g, image: str, flow: str, spatial, m, opset: int) -> str:
    """``GridSample(image, grid(flow))`` for a :class:`~sandbox.nn.Warp` ``m``."""
    attrs = grid_sample_attributes(m.mode, m.padding_mode, m.align_corners, len(spatial), opset,
                                   type(m).__name__)
    grid = _grid(g, flow, spatial, m.align_corners)
    return g.node("GridSample", [image, grid], "warp", **attrs)


def emit_vecint(g, velocity: str, spatial, m, opset: int) -> str:
    """Scaling and squaring: ``u = v / 2**steps``, then ``steps`` times ``u + warp(u, u)``."""
    attrs = grid_sample_attributes(m.mode, m.padding_mode, m.align_corners, len(spatial), opset,
                                   type(m).__name__)
    if m.steps == 0:
        return g.node("Identity", [velocity], "vecint")
    u = g.node("Mul", [velocity, g.const(np.array(2.0 ** -m.steps, np.float32), "vecint_scale")],
               "vecint_scaled")
    for _ in range(m.steps):
        warped = g.node("GridSample", [u, _grid(g, u, spatial, m.align_corners)], "vecint_warp",
                        **attrs)
        u = g.node("Add", [u, warped], "vecint_square")
    return u
