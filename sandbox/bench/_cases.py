"""The benchmark cases: a registry of named pieces of work with an optional PyTorch twin.

Names are ``group/variant/shape/direction`` so that ``--filter`` can pick
families by substring or glob, e.g. ``resize/bicubic*``, ``*/bwd``, ``conv2d``.

* ``resize/<mode>/<a|b|c|d>/<fwd|bwd>``: :func:`sandbox.resample.resize` and
  :func:`~sandbox.resample.resize_adjoint` on float32 input at the standard shapes
  (a) (8,64,64,64)→128², (b) (4,32,128,128)→256², (c) (8,64,128,128)→64²,
  (d) (8,32,60,60)→90².  PyTorch's backward is ``torch.autograd.grad`` on a
  retained graph (the backward alone).
* ``conv2d/<cin>-<cout>@<hw>/<fwd|bwd>``, ``max_pool2d/<c>@<hw>/...``,
  ``batch_norm/<c>@<hw>/...``: the array-level layer ops at the shapes of a
  UNet (depth 4, base width 16, batch 8, 64×64 input).
* ``unet-step/<mode>``: one full training step (forward, cross-entropy,
  backward, Adam) of that UNet with the given decoder upsampling.
* ``conv-layer/<cin>-<cout>@<hw>`` and ``unet-classic/<mode>/<size>``: the
  classic UNet workload (:mod:`._cases_classic`); ``conv-autograd/...`` and
  ``unet-user/<mode>/<size>``: the same written as PyTorch users write it
  (:mod:`._cases_user`).
* ``resize3d/<variant>/<fwd|bwd>``, ``conv3d-layer/<cin>-<cout>@<d>`` and
  ``unet3d-step/<mode>``: the volume workload (:mod:`._cases_3d`).
* ``grid_sample/<2d|3d>/<mode>-<padding>/b<1|8>/<fwd|bwd>``: grid sampling and its
  two gradients (:mod:`._cases_grid`).

``--quick`` builds every case at a small shape (same names) for a smoke run.
"""

from __future__ import annotations

import fnmatch
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass
class Work:
    """A built case: the callables to time and what they move.

    Attributes
    ----------
    ours : callable
        Runs our work once; returns its outputs (an ndarray or a tuple of them).
    theirs : callable or None
        The same work in PyTorch (returns tensors), or None.
    nbytes : int or None
        Minimal bytes read plus written by one call (for effective GB/s).
    shape : str
        Human-readable description of the sizes.
    torch_note : str or None
        Why ``theirs`` is None, when it is.
    flops : int or None
        Floating-point operations of one call (for GFLOP/s and the SGEMM fraction).
    peak : callable or None
        ``peak() -> (ours_bytes, torch_bytes or None)``: the case's own peak-memory
        measurement of both libraries (used instead of tracemalloc on ``ours``).
    baseline : callable or None
        The same work through a lower layer of the sandbox (the array API under a public
        API call), timed in the same rounds as ``ours`` so that their ratio, what the
        upper layer costs, is paired.
    """

    ours: Callable[[], object]
    theirs: Callable[[], object] | None
    nbytes: int | None
    shape: str
    torch_note: str | None = None
    flops: int | None = None
    peak: Callable[[], tuple[int, int | None]] | None = None
    baseline: Callable[[], object] | None = None


@dataclass(frozen=True)
class Case:
    """A named benchmark case.

    Attributes
    ----------
    name : str
        Unique name, ``group/variant/.../direction``.
    group : str
        ``resize``, ``conv2d``, ``max_pool2d``, ``batch_norm``, ``unet-step``,
        ``conv-layer``, ``unet-classic``, ``conv-autograd``, ``unet-user``,
        ``resize3d``, ``conv3d-layer``, ``unet3d-step`` or ``grid_sample``.
    build : callable
        ``build(quick, torch) -> Work``; ``torch`` is the module or None.
    rtol : float
        Relative tolerance of the output checksums (see :mod:`._compare`).
    max_repeat : int or None
        Cap on the timed repeats (for long cases).
    min_sample : float or None
        Seconds each timed sample lasts at least, for a case whose ratio must resolve
        a few percent (the suite's ``min_sample`` when that is longer).
    """

    name: str
    group: str
    build: Callable[[bool, object], Work]
    rtol: float = 1e-5
    max_repeat: int | None = None
    min_sample: float | None = None


def _rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def _normal(rng, shape) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


# --------------------------------------------------------------------------- resampling

# variant name -> (our mode, options, PyTorch mode or None when PyTorch lacks it)
RESIZE_VARIANTS = {
    "nearest": ("nearest", {}, "nearest"),
    "nearest-exact": ("nearest-exact", {}, "nearest-exact"),
    "bilinear": ("bilinear", {}, "bilinear"),
    "bilinear-ac": ("bilinear", {"align_corners": True}, "bilinear"),
    "bilinear-aa": ("bilinear", {"antialias": True}, "bilinear"),
    "bicubic": ("bicubic", {}, "bicubic"),
    "bicubic-aa": ("bicubic", {"antialias": True}, "bicubic"),
    "lanczos3": ("lanczos3", {}, None),
    "lanczos3-aa": ("lanczos3", {"antialias": True}, "lanczos"),
    "area": ("area", {}, "area"),
}

# shape key -> ((N, C, H, W), (H_out, W_out)), full and --quick
RESIZE_SHAPES = {
    "a": ((8, 64, 64, 64), (128, 128)),
    "b": ((4, 32, 128, 128), (256, 256)),
    "c": ((8, 64, 128, 128), (64, 64)),
    "d": ((8, 32, 60, 60), (90, 90)),
}
RESIZE_QUICK = {
    "a": ((1, 4, 16, 16), (32, 32)),
    "b": ((1, 2, 32, 32), (64, 64)),
    "c": ((1, 4, 32, 32), (16, 16)),
    "d": ((1, 2, 20, 20), (30, 30)),
}


def _torch_resize_kwargs(torch_mode: str, opts: dict) -> dict:
    if torch_mode in ("nearest", "nearest-exact", "area"):
        return {}
    return {"align_corners": opts.get("align_corners"), "antialias": opts.get("antialias", False)}


def torch_resize_call(torch, x, g, size, mode: str, kwargs: dict):
    """PyTorch's side of a resize case: ``interpolate(x)``, or with an output gradient
    ``g`` its input gradient (the graph built once, so only the backward is timed)."""
    interp = torch.nn.functional.interpolate
    if g is None:
        tx = torch.from_numpy(x)

        def forward():
            with torch.no_grad():
                return interp(tx, size=size, mode=mode, **kwargs)

        return forward
    tx = torch.from_numpy(x).requires_grad_(True)
    ty = interp(tx, size=size, mode=mode, **kwargs)
    tg = torch.from_numpy(g)

    def backward():
        return torch.autograd.grad(ty, tx, tg, retain_graph=True)[0]

    return backward


def resize_work(name, in_shape, out_size, mode, opts, backward, torch, torch_mode,
                torch_kwargs, no_twin) -> Work:
    """The work of a resize case (2-D or 3-D): ``resize`` of seeded data to
    ``out_size``, or with ``backward`` its adjoint, against PyTorch.

    Parameters
    ----------
    name, in_shape, out_size : str, tuple, tuple
        Case name (seeds the data), ``(N, C, *spatial)`` in, spatial size out.
    mode, opts, backward : str, dict, bool
        The sandbox's mode and options; time the adjoint instead of the forward.
    torch, torch_mode, torch_kwargs : module or None, str or None, dict
        PyTorch (None: the sandbox side only), its mode (None: no twin) and options.
    no_twin : str
        The note when there is PyTorch but no twin.

    Returns
    -------
    Work
    """
    from ..array.resample import resize, resize_adjoint

    rng = _rng(name)
    x = _normal(rng, in_shape)
    out_shape = (*in_shape[:2], *out_size)
    desc = f"{in_shape}->{out_size}"
    if backward:
        g = _normal(rng, out_shape)

        def ours():
            return resize_adjoint(g, in_shape[2:], size=out_size, mode=mode, **opts)
    else:

        def ours():
            return resize(x, size=out_size, mode=mode, **opts)

    nbytes = x.nbytes + 4 * int(np.prod(out_shape))
    if torch is None or torch_mode is None:
        note = None if torch is None else no_twin
        return Work(ours, None, nbytes, desc, note)
    theirs = torch_resize_call(torch, x, g if backward else None, out_size, torch_mode,
                               torch_kwargs)
    return Work(ours, theirs, nbytes, desc)


def _resize_case(variant: str, key: str, backward: bool) -> Case:
    name = f"resize/{variant}/{key}/{'bwd' if backward else 'fwd'}"
    mode, opts, torch_mode = RESIZE_VARIANTS[variant]

    def build(quick, torch):
        in_shape, out_hw = (RESIZE_QUICK if quick else RESIZE_SHAPES)[key]
        return resize_work(name, in_shape, out_hw, mode, opts, backward, torch, torch_mode,
                           _torch_resize_kwargs(torch_mode, opts), "PyTorch has no such mode")

    return Case(name, "resize", build)


# --------------------------------------------------------------------------- layers

# UNet (depth 4, base width 16, batch 8, 64x64): (C_in, C_out, H=W) of 3x3 convolutions,
# encoder levels 0..4 plus the first decoder convolution of the top level (after concat).
CONV_SHAPES = [(3, 16, 64), (16, 16, 64), (32, 32, 32), (64, 64, 16), (128, 128, 8),
               (256, 256, 4), (32, 16, 64)]
POOL_SHAPES = [(16, 64), (32, 32), (64, 16), (128, 8)]  # (C, H=W) entering each Down
NORM_SHAPES = [(16, 64), (64, 16), (256, 4)]
BATCH = 8


def _quick_chw(c: int, hw: int) -> tuple[int, int]:
    return max(c // 8, 2), max(hw // 4, 2)


def _conv_case(cin: int, cout: int, hw: int, backward: bool) -> Case:
    name = f"conv2d/{cin}-{cout}@{hw}/{'bwd' if backward else 'fwd'}"

    def build(quick, torch):
        from ..array.conv import conv2d, conv2d_backward

        n, ci, co, s = BATCH, cin, cout, hw
        if quick:
            n, (ci, s), co = 2, _quick_chw(cin, hw), max(cout // 8, 2)
        rng = _rng(name)
        x = _normal(rng, (n, ci, s, s))
        w = _normal(rng, (co, ci, 3, 3)) * np.float32((2.0 / (9 * ci)) ** 0.5)
        g = _normal(rng, (n, co, s, s))
        desc = f"x{x.shape} w{w.shape}"
        if backward:

            def ours():
                return conv2d_backward(g, x, w, padding=1, needs=(True, True, False))[:2]
        else:

            def ours():
                return conv2d(x, w, padding=1)

        nbytes = x.nbytes + w.nbytes + g.nbytes + (x.nbytes + w.nbytes if backward else 0)
        if torch is None:
            return Work(ours, None, nbytes, desc)
        conv = torch.nn.functional.conv2d
        tx, tw = torch.from_numpy(x), torch.from_numpy(w)
        if backward:
            tx.requires_grad_(True)
            tw.requires_grad_(True)
            ty, tg = conv(tx, tw, padding=1), torch.from_numpy(g)

            def theirs():
                return torch.autograd.grad(ty, (tx, tw), tg, retain_graph=True)
        else:

            def theirs():
                with torch.no_grad():
                    return conv(tx, tw, padding=1)

        return Work(ours, theirs, nbytes, desc)

    return Case(name, "conv2d", build)


def _pool_case(c: int, hw: int, backward: bool) -> Case:
    name = f"max_pool2d/{c}@{hw}/{'bwd' if backward else 'fwd'}"

    def build(quick, torch):
        from ..array.pool import max_pool2d, max_pool2d_backward

        n, (ch, s) = (2, _quick_chw(c, hw)) if quick else (BATCH, (c, hw))
        rng = _rng(name)
        x = _normal(rng, (n, ch, s, s))
        y, idx = max_pool2d(x, 2)
        g = _normal(rng, y.shape)
        desc = f"{x.shape} k2 s2"
        if backward:

            def ours():
                return max_pool2d_backward(g, idx, x.shape)

            nbytes = g.nbytes + idx.nbytes + x.nbytes
        else:

            def ours():
                return max_pool2d(x, 2)[0]

            nbytes = x.nbytes + y.nbytes + idx.nbytes
        if torch is None:
            return Work(ours, None, nbytes, desc)
        pool = torch.nn.functional.max_pool2d
        tx = torch.from_numpy(x)
        if backward:
            tx.requires_grad_(True)
            ty, tg = pool(tx, 2), torch.from_numpy(g)

            def theirs():
                return torch.autograd.grad(ty, tx, tg, retain_graph=True)[0]
        else:

            def theirs():
                with torch.no_grad():
                    return pool(tx, 2)

        return Work(ours, theirs, nbytes, desc)

    return Case(name, "max_pool2d", build)


def _norm_case(c: int, hw: int, backward: bool) -> Case:
    name = f"batch_norm/{c}@{hw}/{'bwd' if backward else 'fwd'}"

    def build(quick, torch):
        from ..array.norm import batch_norm, batch_norm_backward

        n, (ch, s) = (2, _quick_chw(c, hw)) if quick else (BATCH, (c, hw))
        rng = _rng(name)
        x = _normal(rng, (n, ch, s, s))
        w = 1 + 0.1 * _normal(rng, (ch,))
        b = 0.1 * _normal(rng, (ch,))
        g = _normal(rng, x.shape)
        rm, rv = np.zeros(ch, np.float32), np.ones(ch, np.float32)
        _, mean, invstd = batch_norm(x, rm, rv, w, b, training=True)
        desc = f"{x.shape} training"
        if backward:

            def ours():
                return batch_norm_backward(g, x, mean, invstd, w, training=True)

            nbytes = 3 * x.nbytes
        else:

            def ours():
                return batch_norm(x, rm, rv, w, b, training=True)[0]

            nbytes = 2 * x.nbytes
        if torch is None:
            return Work(ours, None, nbytes, desc)
        bn = torch.nn.functional.batch_norm
        tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
        trm, trv = torch.zeros(ch), torch.ones(ch)
        if backward:
            for t in (tx, tw, tb):
                t.requires_grad_(True)
            ty, tg = bn(tx, trm, trv, tw, tb, training=True), torch.from_numpy(g)

            def theirs():
                return torch.autograd.grad(ty, (tx, tw, tb), tg, retain_graph=True)
        else:

            def theirs():
                with torch.no_grad():
                    return bn(tx, trm, trv, tw, tb, training=True)

        return Work(ours, theirs, nbytes, desc)

    return Case(name, "batch_norm", build)


# --------------------------------------------------------------------------- training step

UNET_MODES = ("bilinear", "nearest", "bicubic")


def _unet_case(mode: str) -> Case:
    name = f"unet-step/{mode}"

    def build(quick, torch):
        from sandbox import nn

        from ..runtime.rng import manual_seed
        from ._cases_classic import torch_training_step, training_step

        depth, width, n, s = (2, 4, 2, 16) if quick else (4, 16, BATCH, 64)
        manual_seed(0)
        model = nn.UNet(3, 3, depth=depth, base_width=width, upsample=mode)
        rng = _rng(name)
        x = _normal(rng, (n, 3, s, s))
        y = rng.integers(0, 3, size=(n, s, s))
        desc = f"UNet depth {depth} width {width}, batch {x.shape}"
        theirs = None
        if torch is not None:
            from ..interop import to_torch

            theirs = torch_training_step(torch, to_torch(model), x, y)
        ours = training_step(model, x, y)
        return Work(ours, theirs, None, desc)

    # The first step's logits, loss and a gradient go through ~20 BLAS layers: allow more.
    return Case(name, "unet-step", build, rtol=1e-4, max_repeat=5)


# --------------------------------------------------------------------------- registry

def all_cases() -> list[Case]:
    """Every case, in run order (cheap groups first, the training steps last)."""
    cases = []
    for variant in RESIZE_VARIANTS:
        for key in RESIZE_SHAPES:
            for backward in (False, True):
                cases.append(_resize_case(variant, key, backward))
    for backward in (False, True):
        cases += [_conv_case(ci, co, hw, backward) for ci, co, hw in CONV_SHAPES]
        cases += [_pool_case(c, hw, backward) for c, hw in POOL_SHAPES]
        cases += [_norm_case(c, hw, backward) for c, hw in NORM_SHAPES]
    cases += [_unet_case(mode) for mode in UNET_MODES]
    from ._cases_3d import volume_cases
    from ._cases_classic import classic_cases
    from ._cases_grid import grid_cases
    from ._cases_user import user_cases

    return cases + classic_cases() + user_cases() + volume_cases() + grid_cases()


def select(cases: list[Case], patterns) -> list[Case]:
    """Cases whose name matches any pattern (a glob if it has ``*?[``, else a substring).

    Parameters
    ----------
    cases : list of Case
    patterns : list of str or None
        None or empty selects everything; each entry may hold comma-separated patterns.
    """
    pats = [p.strip() for item in (patterns or []) for p in item.split(",") if p.strip()]
    if not pats:
        return list(cases)

    def matches(name: str, pat: str) -> bool:
        if any(ch in pat for ch in "*?["):
            return fnmatch.fnmatchcase(name, pat)
        return pat in name

    return [c for c in cases if any(matches(c.name, p) for p in pats)]
