"""Resampling in an ONNX graph: ``Resize`` where it is exact, else per-axis ``MatMul``.

``Resize`` (opset 18) is used only where its definition gives the sandbox's
result for these sizes:

* ``nearest`` (PyTorch's legacy rule): ``asymmetric`` coordinates, ``floor``;
* ``nearest-exact``: ``half_pixel`` coordinates, ``round_prefer_ceil``;
  for both, only when the ONNX index formula, evaluated in float32 *and*
  float64, picks exactly the sandbox's source pixels (a few size pairs sit on a
  rounding edge, and runtimes may compute in either precision);
* ``bilinear`` and ``bicubic`` (Keys, A = -0.75, border replicated), with
  ``half_pixel`` or ``align_corners`` coordinates (PyTorch's sizes-given
  coordinates are ``half_pixel``, also for an output size of 1);
* ``bilinear`` and ``bicubic`` with ``antialias`` and without ``align_corners``:
  ``antialias=1, exclude_outside=1`` (and A = -0.5 for bicubic, as PyTorch);
* 4-D inputs only, and a sampling step equal to ``in / out`` (a size, or a
  recomputed or exact scale factor).

Everything else (``area``, ``cubic``, the Lanczos modes, antialias with
``align_corners``, the cases above that fail their check, 1-D and 3-D inputs)
is what it is here: a separable linear map.  Each axis becomes one ``MatMul``
with the constant matrix :func:`sandbox.resample.weight_matrix` returns, i.e.
the same weights the sandbox's kernels apply.
"""

from __future__ import annotations

import numpy as np

from ..array.resample import MODES, check_options, weight_matrix

_MODES_FOR = {"nearest": "nearest", "nearest-exact": "nearest-exact"}


def _source_index(mode: str, n_in: int, n_out: int, ft) -> np.ndarray:
    """ONNX ``Resize``'s nearest source index per output pixel, computed in float type ``ft``."""
    o = np.arange(n_out, dtype=ft)
    scale = ft(n_out) / ft(n_in)
    if mode == "nearest":  # asymmetric, floor
        x = np.floor(o / scale)
    else:  # half_pixel, round_prefer_ceil
        x = np.floor((o + ft(0.5)) / scale - ft(0.5) + ft(0.5))
    return np.clip(x.astype(np.int64), 0, n_in - 1)


def _nearest_agrees(mode: str, n_in: int, n_out: int, scale_factor) -> bool:
    ours = weight_matrix(n_in, n_out, mode=mode, scale_factor=scale_factor, dtype=np.float32)
    if not np.all((ours == 0) | (ours == 1)) or not np.all(ours.sum(axis=1) == 1):
        return False
    picked = ours.argmax(axis=1)
    return all(
        np.array_equal(_source_index(mode, n_in, n_out, ft), picked)
        for ft in (np.float32, np.float64)
    )


def resize_attributes(mode, align_corners, antialias, in_sizes, out_sizes, scale_factors):
    """The ``Resize`` attributes that reproduce this resampling exactly, or None.

    Parameters
    ----------
    mode : str
        A sandbox mode name (any alias).
    align_corners, antialias :
        The sandbox options.
    in_sizes, out_sizes : tuple of int
        Spatial sizes.
    scale_factors : tuple of (float or None)
        Per axis, the scale factor whose inverse is the sampling step, or None
        when the step is ``in / out``.
    """
    canon = check_options(mode, align_corners, antialias)
    if len(in_sizes) != 2:
        return None
    for n_in, n_out, sf in zip(in_sizes, out_sizes, scale_factors, strict=True):
        if sf is not None and float(sf) != n_out / n_in:
            return None
    if canon in _MODES_FOR:
        axes = zip(in_sizes, out_sizes, scale_factors, strict=True)
        if not all(_nearest_agrees(canon, a, b, sf) for a, b, sf in axes):
            return None
        if canon == "nearest":
            return {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                    "nearest_mode": "floor"}
        return {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
                "nearest_mode": "round_prefer_ceil"}
    if canon not in ("linear", "bicubic") or (antialias and align_corners):
        return None
    attrs = {
        "mode": "linear" if canon == "linear" else "cubic",
        "coordinate_transformation_mode": "align_corners" if align_corners else "half_pixel",
    }
    if canon == "bicubic":
        attrs["cubic_coeff_a"] = -0.5 if antialias else -0.75
    if antialias:
        attrs["antialias"] = 1
        attrs["exclude_outside"] = 1
    return attrs


def emit_resample(graph, x: str, in_shape, out_sizes, mode, align_corners=None,
                  antialias=False, scale_factors=None, policy="auto") -> str:
    """Add the nodes that resample ``x`` (shape ``in_shape``) to ``out_sizes``; return the output.

    ``policy`` is ``"auto"`` (``Resize`` where exact, see the module docstring) or
    ``"matmul"`` (always the per-axis matrices).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {' | '.join(MODES)}; got {mode!r}")
    in_sizes = tuple(int(s) for s in in_shape[2:])
    out_sizes = tuple(int(s) for s in out_sizes)
    scale_factors = scale_factors or (None,) * len(in_sizes)
    attrs = None
    if policy == "auto":
        attrs = resize_attributes(mode, align_corners, antialias, in_sizes, out_sizes,
                                  scale_factors)
    if attrs is not None:
        sizes = graph.const(np.array(out_sizes, np.int64), "resize_sizes")
        return graph.node("Resize", [x, "", "", sizes], "resize", axes=[2, 3], **attrs)
    rank = len(in_shape)
    source = x
    shape = [int(s) for s in in_shape[1:]]  # channel and spatial sizes (batch is dynamic)
    for axis in reversed(range(len(in_sizes))):
        n_in, n_out, sf = in_sizes[axis], out_sizes[axis], scale_factors[axis]
        matrix = weight_matrix(n_in, n_out, mode=mode, scale_factor=sf, align_corners=align_corners,
                               antialias=antialias, dtype=np.float32)
        if n_in == n_out and np.array_equal(matrix, np.eye(n_in, dtype=np.float32)):
            continue  # the identity: nothing to do on this axis
        full_axis = axis + 2
        if full_axis == rank - 1:  # last axis: x @ Mᵀ
            x = graph.node("MatMul", [x, graph.const(matrix.T.copy(), "resample_w")], "resample")
        elif full_axis == rank - 2:  # second to last: M @ x (broadcast over batch, channels)
            x = graph.node("MatMul", [graph.const(matrix, "resample_h"), x], "resample")
        else:  # an earlier axis (depth of a 5-D input): fold the later axes, M @ x, unfold
            keep = [0] * full_axis  # 0 = copy that dimension (batch stays dynamic)
            folded = graph.const(np.array([*keep, n_in, -1], np.int64), "fold")
            x = graph.node("Reshape", [x, folded], "fold")
            x = graph.node("MatMul", [graph.const(matrix, "resample_d"), x], "resample")
            tail = shape[full_axis:]  # sizes after this axis (already resampled)
            unfolded = graph.const(np.array([*keep, n_out, *tail], np.int64), "unfold")
            x = graph.node("Reshape", [x, unfolded], "unfold")
        shape[full_axis - 1] = n_out
    if x == source:
        x = graph.node("Identity", [x], "resample")
    return x
