"""Cases of the volume workload: 3-D resampling, the 3-D UNet's convolutions and its step.

* ``resize3d/<variant>/<fwd|bwd>``: :func:`sandbox.resample.resize` and
  :func:`~sandbox.resample.resize_adjoint` on float32 ``(N, C, D, H, W)`` input,
  every 3-D mode of the sandbox.  Upsampling variants go (2, 16, 32³) → 64³ (the
  top decoder level of a width-16 3-D UNet on 64³ volumes); the downsampling ones
  (``area`` and the antialiased filters) go (2, 16, 64³) → 32³.  PyTorch is timed
  where its ``interpolate`` has the mode on 5-D input (nearest, nearest-exact,
  trilinear, area); it has no 3-D bicubic, no Lanczos and no antialias in 3-D.
* ``conv3d-layer/<cin>-<cout>@<d>``: every 3×3×3 convolution shape of
  ``UNet(1, 4, depth=3, base_width=16, spatial_dims=3)`` on 32³ volumes (batch 2,
  padding 1, no bias): forward, input gradient and weight gradient in one call,
  with GFLOP/s and the fraction of the machine's SGEMM peak.
* ``unet3d-step/<mode>``: one training step (forward, cross-entropy, backward,
  Adam) of that UNet, batch 2 × 1 × 32³.  The PyTorch twin is
  :func:`sandbox.interop.to_torch` of the same model (same weights) where PyTorch
  has the mode in 3-D; the other modes run sandbox-only.  Peak memory: growth of
  the resident set over the first three steps, each library in a fresh process.

``--quick`` shrinks channels, batch and voxels (same names).
"""

from __future__ import annotations

import numpy as np

from ._cases import Case, Work, _normal, _rng, resize_work

# variant -> (our mode, options, PyTorch's 5-D mode or None, downsampling?)
RESIZE3D_VARIANTS = {
    "nearest": ("nearest", {}, "nearest", False),
    "nearest-exact": ("nearest-exact", {}, "nearest-exact", False),
    "trilinear": ("trilinear", {}, "trilinear", False),
    "trilinear-ac": ("trilinear", {"align_corners": True}, "trilinear", False),
    "bicubic": ("bicubic", {}, None, False),
    "cubic": ("cubic", {}, None, False),
    "lanczos3": ("lanczos3", {}, None, False),
    "lanczos5": ("lanczos5", {}, None, False),
    "area": ("area", {}, "area", True),
    "trilinear-aa": ("trilinear", {"antialias": True}, None, True),
    "bicubic-aa": ("bicubic", {"antialias": True}, None, True),
    "lanczos3-aa": ("lanczos3", {"antialias": True}, None, True),
}

# (N, C, small side, large side), full and --quick: up = small -> large, down = large -> small
RESIZE3D_SHAPE = (2, 16, 32, 64)
RESIZE3D_QUICK = (1, 2, 8, 16)

# The 3-D UNet of the conv and step cases: UNet(1, 4, depth=3, base_width=16, spatial_dims=3).
UNET3D = dict(in_channels=1, num_classes=4, depth=3, base_width=16)
UNET3D_QUICK = dict(in_channels=1, num_classes=4, depth=2, base_width=4)
UNET3D_BATCH, UNET3D_SIZE = 2, 32
UNET3D_MODES = ("trilinear", "nearest", "bicubic", "lanczos3")

# (C_in, C_out, D=H=W) of every 3x3x3 convolution of that UNet on 32^3 volumes: the
# encoder blocks, then the first convolution of each decoder block (after the
# concatenation); the decoders' second convolutions repeat encoder shapes.
CONV3D_LAYERS = [(1, 16, 32), (16, 16, 32), (16, 32, 16), (32, 32, 16), (32, 64, 8), (64, 64, 8),
                 (64, 128, 4), (128, 128, 4), (128, 64, 8), (64, 32, 16), (32, 16, 32)]


def conv3d_flops(n: int, cin: int, cout: int, d: int, passes: int = 3) -> int:
    """Direct-convolution FLOPs of a 3×3×3 convolution on ``d³``: ``2·N·Cout·Cin·27·d³`` per pass.

    ``passes=3`` counts the forward, the input gradient and the weight gradient.
    """
    return passes * 2 * n * cout * cin * 27 * d**3


# --------------------------------------------------------------------------- resampling

def _resize3d_case(variant: str, backward: bool) -> Case:
    name = f"resize3d/{variant}/{'bwd' if backward else 'fwd'}"
    mode, opts, torch_mode, down = RESIZE3D_VARIANTS[variant]

    def build(quick, torch):
        n, c, small, large = RESIZE3D_QUICK if quick else RESIZE3D_SHAPE
        side_in, side_out = (large, small) if down else (small, large)
        in_shape, out_size = (n, c, side_in, side_in, side_in), (side_out,) * 3
        kw = {"align_corners": opts.get("align_corners")} if torch_mode == "trilinear" else {}
        return resize_work(name, in_shape, out_size, mode, opts, backward, torch, torch_mode, kw,
                           "PyTorch has no such mode in 3-D")

    return Case(name, "resize3d", build)


# --------------------------------------------------------------------------- convolutions

def conv3d_layer_shape(cin: int, cout: int, d: int, quick: bool) -> tuple[int, int, int, int]:
    """``(batch, C_in, C_out, side)`` of the ``conv3d-layer/<cin>-<cout>@<d>`` case."""
    if quick:
        return 2, max(cin // 8, 1), max(cout // 8, 2), max(d // 4, 2)
    return UNET3D_BATCH, cin, cout, d


def _conv3d_layer_case(cin: int, cout: int, d: int) -> Case:
    name = f"conv3d-layer/{cin}-{cout}@{d}"

    def build(quick, torch):
        from ..array.conv import conv3d, conv3d_backward

        n, ci, co, s = conv3d_layer_shape(cin, cout, d, quick)
        rng = _rng(name)
        x = _normal(rng, (n, ci, s, s, s))
        w = _normal(rng, (co, ci, 3, 3, 3)) * np.float32((2.0 / (27 * ci)) ** 0.5)
        g = _normal(rng, (n, co, s, s, s))

        def ours():
            y = conv3d(x, w, padding=1)
            gx, gw, _ = conv3d_backward(g, x, w, padding=1, needs=(True, True, False))
            return y, gx, gw

        desc = f"x{x.shape} w{w.shape} fwd+dx+dw"
        flops = conv3d_flops(n, ci, co, s)
        nbytes = 2 * (x.nbytes + w.nbytes + g.nbytes)  # read x, w, g; write y, dx, dw
        if torch is None:
            return Work(ours, None, nbytes, desc, flops=flops)
        tx, tw, tg = (torch.from_numpy(a) for a in (x, w, g))
        backward = torch.ops.aten.convolution_backward
        one, zero = [1, 1, 1], [0, 0, 0]

        def theirs():
            with torch.no_grad():
                y = torch.nn.functional.conv3d(tx, tw, padding=1)
                gx, gw, _ = backward(tg, tx, tw, None, one, one, one, False, zero, 1,
                                     [True, True, False])
            return y, gx, gw

        return Work(ours, theirs, nbytes, desc, flops=flops)

    return Case(name, "conv3d-layer", build)


# --------------------------------------------------------------------------- training step

def build_unet3d_step(name: str, mode: str, quick: bool, torch=None,
                      libs=("sandbox", "torch")) -> dict:
    """Training-step callables of the 3-D UNet and its PyTorch twin, with identical weights.

    Parameters
    ----------
    name, mode, torch, libs
        As for :func:`~sandbox.bench._cases_classic.build_classic_step`.
    quick : bool
        A small UNet, batch and volume.

    Returns
    -------
    dict
        ``{"sandbox": step, "torch": step or None, "desc": str, "torch_note": str or None}``
        (steps only for ``libs``); ``"torch"`` is None, with the reason in
        ``"torch_note"``, when PyTorch has no twin for ``mode`` in 3-D.  Each step
        returns its logits, loss and the first convolution's weight gradient.
    """
    import sandbox
    from sandbox import nn

    from ._cases_classic import torch_training_step, training_step

    arch = UNET3D_QUICK if quick else UNET3D
    n, s = (2, 8) if quick else (UNET3D_BATCH, UNET3D_SIZE)
    sandbox.manual_seed(0)
    model = nn.UNet(**arch, upsample=mode, spatial_dims=3)
    rng = _rng(name)
    x = _normal(rng, (n, arch["in_channels"], s, s, s))
    y = rng.integers(0, arch["num_classes"], size=(n, s, s, s))
    built = {"desc": f"UNet3d depth {arch['depth']} width {arch['base_width']}, "
                     f"batch {x.shape}", "torch": None, "torch_note": None}
    if "torch" in libs:
        from ..interop import to_torch

        try:
            tmodel = to_torch(model)  # before our first step: the same initial weights
        except ValueError:
            built["torch_note"] = f"PyTorch has no 3-D {mode}"
        else:
            built["torch"] = torch_training_step(torch, tmodel, x, y)
    if "sandbox" in libs:
        built["sandbox"] = training_step(model, x, y)
    return built


def unet3d_step_peak_rss(lib: str, name: str, mode: str, quick: bool, threads: int,
                         steps: int = 3) -> int:
    """In this process: growth of the peak resident set over ``steps`` 3-D UNet steps, in bytes."""
    from ._cases_classic import rss_growth
    from ._env import optional_torch, set_threads

    torch = optional_torch() if lib == "torch" else None
    set_threads(threads, torch)
    return rss_growth(build_unet3d_step(name, mode, quick, torch, libs=(lib,))[lib], steps)


def _unet3d_case(mode: str) -> Case:
    name = f"unet3d-step/{mode}"

    def build(quick, torch):
        from ._cases_classic import peak_in_subprocess

        libs = ("sandbox",) if torch is None else ("sandbox", "torch")
        built = build_unet3d_step(name, mode, quick, torch, libs=libs)
        here = "sandbox.bench._cases_3d"

        def peak():
            ours = peak_in_subprocess(here, "unet3d_step_peak_rss",
                                      ("sandbox", name, mode, quick), "sandbox")
            theirs = None
            if built["torch"] is not None:
                theirs = peak_in_subprocess(here, "unet3d_step_peak_rss",
                                            ("torch", name, mode, quick), "torch")
            return ours, theirs

        return Work(built["sandbox"], built["torch"], None, built["desc"], built["torch_note"],
                    peak=peak)

    # The step's outputs go through ~20 GEMMs and batch norms: allow float32 reordering.
    return Case(name, "unet3d-step", build, rtol=1e-4, max_repeat=5)


def volume_cases() -> list[Case]:
    """3-D resampling, then the conv3d-layer table, then the 3-D UNet steps."""
    cases = [_resize3d_case(variant, backward) for variant in RESIZE3D_VARIANTS
             for backward in (False, True)]
    cases += [_conv3d_layer_case(ci, co, d) for ci, co, d in CONV3D_LAYERS]
    return cases + [_unet3d_case(mode) for mode in UNET3D_MODES]
