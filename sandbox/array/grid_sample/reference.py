"""The straightforward numpy reference of grid sampling (the tests' oracle).

Written from PyTorch 2.13's rules (docs/design.md, "Grid sampling"), vectorised
over points but with no cleverness: per spatial axis the taps of every output
point (index, validity, weight and the weight's derivative with respect to the
normalised grid value), then a loop over the tap combinations that gathers
(forward), pushes with ``np.add.at`` (input gradient) or accumulates the
derivative of the weights times the tap values (grid gradient).

No validation: call it through :mod:`sandbox.array.grid_sample` or with checked
arguments.
"""

from __future__ import annotations

import itertools

import numpy as np

A = -0.75  # Keys' cubic convolution parameter of PyTorch's bicubic


def _cubic_weights(t):
    """Weights of the taps floor(u) - 1 ... floor(u) + 2 at fraction ``t``, d/dt, d2/dt2."""
    def near(x):  # |x| <= 1
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    def dnear(x):
        return (3 * (A + 2) * x - 2 * (A + 3)) * x

    def dfar(x):
        return (3 * A * x - 10 * A) * x + 8 * A

    def ddnear(x):
        return 6 * (A + 2) * x - 2 * (A + 3)

    def ddfar(x):
        return 6 * A * x - 10 * A

    s = 1 - t
    w = [far(t + 1), near(t), near(s), far(s + 1)]
    dw = [dfar(t + 1), dnear(t), -dnear(s), -dfar(s + 1)]
    ddw = [ddfar(t + 1), ddnear(t), ddnear(s), ddfar(s + 1)]
    return w, dw, ddw


def _reflect(u, size, align_corners):
    """Reflect ``u`` into the mirror bounds; also d(result)/du (+1 or -1)."""
    lo, span = (0.0, size - 1.0) if align_corners else (-0.5, float(size))
    if span <= 0:
        return np.zeros_like(u), np.zeros_like(u)
    v = u - u.dtype.type(lo)
    sign = np.where(v < 0, -1, 1).astype(u.dtype)
    v = np.abs(v)
    extra = np.fmod(v, u.dtype.type(span))
    even = np.fmod(np.floor(v / u.dtype.type(span)), 2) == 0
    out = np.where(even, extra + u.dtype.type(lo), u.dtype.type(span) - extra + u.dtype.type(lo))
    return out, np.where(even, sign, -sign)


def _clip(u, size):
    """Clip into [0, size - 1]; the derivative is 0 on and beyond the bounds."""
    inside = (u > 0) & (u < size - 1)
    out = np.where(u > 0, np.minimum(u, u.dtype.type(size - 1)), 0).astype(u.dtype)
    return out, inside.astype(u.dtype)


def pad_coordinate(u, size, padding_mode, align_corners):
    """The padded coordinate and its derivative (PyTorch's compute_coordinates)."""
    if padding_mode == "zeros":
        return u, np.ones_like(u)
    d = np.ones_like(u)
    if padding_mode == "reflection":
        u, d = _reflect(u, size, align_corners)
    u, inside = _clip(u, size)
    return u, d * inside


def axis_taps(g, size, mode, padding_mode, align_corners):
    """Per-tap (index, valid, weight, dweight/dg, d2weight/dg2) for one axis of length ``size``.

    Bilinear weights are piecewise linear in g (padding included), so their second
    derivative is 0 away from the kinks; nearest's derivatives are 0.
    """
    dt = g.dtype.type
    scale = dt((size - 1) / 2) if align_corners else dt(size / 2)
    u = (g + 1) * scale if align_corners else (g + 1) * scale - dt(0.5)
    if mode == "bicubic":  # padding acts on each tap's integer coordinate
        base = np.floor(u)
        w, dw, ddw = _cubic_weights(u - base)
        taps = []
        for k in range(4):
            j = base + dt(k - 1)
            if padding_mode == "zeros":
                valid = (j >= 0) & (j < size)
            else:
                j, _ = pad_coordinate(j, size, padding_mode, align_corners)
                valid = np.ones(j.shape, bool)
            idx = np.where(valid, j, 0).astype(np.int64)
            taps.append((idx, valid, w[k], dw[k] * scale, ddw[k] * scale * scale))
        return taps
    u, d = pad_coordinate(u, size, padding_mode, align_corners)
    if mode == "nearest":
        j = np.rint(u)  # round half to even, as std::nearbyint
        valid = (j >= 0) & (j < size)
        one = np.ones_like(u)
        zero = np.zeros_like(u)
        return [(np.where(valid, j, 0).astype(np.int64), valid, one, zero, zero)]
    base = np.floor(u)
    t = u - base
    taps = []
    for k, (wk, sk) in enumerate(((1 - t, -1), (t, 1))):
        j = base + dt(k)
        valid = (j >= 0) & (j < size)
        taps.append((np.where(valid, j, 0).astype(np.int64), valid, wk, dt(sk) * d * scale,
                     np.zeros_like(u)))
    return taps


def _combos(input_shape, grid, mode, padding_mode, align_corners, hessian=False):
    """Yield (flat index (N, P), valid, weight, [dweight/dg_k for grid component k],
    [[d2weight/dg_k dg_j]] or None) per tap combination."""
    spatial = input_shape[2:]
    nd = len(spatial)
    g = grid.reshape(grid.shape[0], int(np.prod(grid.shape[1:-1])), nd)
    # grid component k addresses spatial axis nd - 1 - k (x is the last axis)
    per_axis = [axis_taps(g[..., nd - 1 - a], spatial[a], mode, padding_mode, align_corners)
                for a in range(nd)]
    strides = [int(np.prod(spatial[a + 1:])) for a in range(nd)]
    for combo in itertools.product(*per_axis):
        flat = sum(tap[0] * strides[a] for a, tap in enumerate(combo))
        valid = np.logical_and.reduce([tap[1] for tap in combo])
        weight = np.where(valid, np.prod([tap[2] for tap in combo], axis=0), 0)
        dweights = []
        for k in range(nd):
            a = nd - 1 - k
            factors = [tap[3] if b == a else tap[2] for b, tap in enumerate(combo)]
            dweights.append(np.where(valid, np.prod(factors, axis=0), 0))
        hess = None
        if hessian:  # k == j: the axis's second derivative; else both first derivatives
            hess = [[np.where(valid, np.prod([tap[4 if b == nd - 1 - k == nd - 1 - j else
                                              3 if b in (nd - 1 - k, nd - 1 - j) else 2]
                                          for b, tap in enumerate(combo)], axis=0), 0)
                     for j in range(nd)] for k in range(nd)]
        yield flat, valid, weight, dweights, hess


def _gather(xf, flat, valid):
    vals = np.take_along_axis(xf, flat[:, None, :], axis=2)
    return np.where(valid[:, None, :], vals, 0)


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Reference forward: (N, C, *in) sampled at grid (N, *out, nd) -> (N, C, *out)."""
    n, c = input.shape[:2]
    xf = input.reshape(n, c, int(np.prod(input.shape[2:])))
    out = np.zeros((n, c, int(np.prod(grid.shape[1:-1]))), input.dtype)
    for flat, valid, weight, _, _ in _combos(input.shape, grid, mode, padding_mode, align_corners):
        out += weight[:, None, :] * _gather(xf, flat, valid)
    return out.reshape(n, c, *grid.shape[1:-1])


def grid_sample_backward(grad_output, input, grid, mode="bilinear", padding_mode="zeros",
                         align_corners=False, input_grad=True, grid_grad=True):
    """Reference gradients ``(grad_input or None, grad_grid or None)``."""
    n, c = input.shape[:2]
    nd = input.ndim - 2
    xf = input.reshape(n, c, int(np.prod(input.shape[2:])))
    gy = grad_output.reshape(n, c, int(np.prod(grad_output.shape[2:])))
    gx = np.zeros_like(xf) if input_grad else None
    gg = np.zeros((n, gy.shape[2], nd), input.dtype) if grid_grad else None
    for flat, valid, weight, dweights, _ in _combos(input.shape, grid, mode, padding_mode,
                                                    align_corners):
        if input_grad:  # the push: the adjoint of the gather
            rows = np.arange(n)[:, None, None]
            chans = np.arange(c)[None, :, None]
            np.add.at(gx, (rows, chans, flat[:, None, :]), weight[:, None, :] * gy)
        if grid_grad and mode != "nearest":
            vals = _gather(xf, flat, valid)
            for k in range(nd):
                gg[..., k] += (gy * vals).sum(axis=1) * dweights[k]
    return (None if gx is None else gx.reshape(input.shape),
            None if gg is None else gg.reshape(grid.shape))


def grid_grad_backward(ggg, grad_output, input, grid, mode="bilinear", padding_mode="zeros",
                       align_corners=False, needs=(True, True, True)):
    """Backward of the grid gradient gg = d/dgrid <gy, S(grid) x> (double backward).

    With ``E_p = sum_k ggg[p, k] dW/dg_k`` per tap: to gy, sampling x with the weights
    E; to x, pushing gy with E; to the grid, sum_c gy sum_k ggg[p, k] d2W/dg_k dg_j x.
    Returns ``(d_grad_output, d_input, d_grid)``, None where ``needs`` says so.
    """
    n, c = input.shape[:2]
    nd = input.ndim - 2
    xf = input.reshape(n, c, int(np.prod(input.shape[2:])))
    gy = grad_output.reshape(n, c, int(np.prod(grad_output.shape[2:])))
    gk = ggg.reshape(n, gy.shape[2], nd)
    d_gy = np.zeros_like(gy) if needs[0] else None
    d_x = np.zeros_like(xf) if needs[1] else None
    d_g = np.zeros_like(gk) if needs[2] else None
    for flat, valid, _, dweights, hess in _combos(input.shape, grid, mode, padding_mode,
                                                  align_corners, hessian=needs[2]):
        e = sum(gk[..., k] * dweights[k] for k in range(nd))  # (N, P)
        vals = _gather(xf, flat, valid)
        if needs[0]:
            d_gy += e[:, None, :] * vals
        if needs[1]:
            rows = np.arange(n)[:, None, None]
            chans = np.arange(c)[None, :, None]
            np.add.at(d_x, (rows, chans, flat[:, None, :]), e[:, None, :] * gy)
        if needs[2]:
            gv = (gy * vals).sum(axis=1)
            for j in range(nd):
                d_g[..., j] += gv * sum(gk[..., k] * hess[k][j] for k in range(nd))
    return (None if d_gy is None else d_gy.reshape(grad_output.shape),
            None if d_x is None else d_x.reshape(input.shape),
            None if d_g is None else d_g.reshape(grid.shape))


def affine_grid(theta, size, align_corners=False):
    """Reference affine grid: theta (N, nd, nd + 1), size (N, C, *spatial) -> (N, *spatial, nd)."""
    spatial = tuple(size[2:])
    nd = len(spatial)
    axes = []
    for s in spatial:
        if s == 1:
            axes.append(np.zeros(1, theta.dtype))
        else:
            base = np.linspace(-1, 1, s, dtype=theta.dtype)
            axes.append(base if align_corners else base * theta.dtype.type((s - 1) / s))
    mesh = np.meshgrid(*axes, indexing="ij")
    # homogeneous base points in x, y(, z) order: reverse the tensor axes
    base = np.stack([*mesh[::-1], np.ones(spatial, theta.dtype)], axis=-1)
    out = base.reshape(-1, nd + 1) @ np.swapaxes(theta, 1, 2)
    return out.reshape(theta.shape[0], *spatial, nd)
