"""PyTorch parity of sandbox.resample: forward and backward, every option PyTorch has.

Our ``lanczos3`` with ``antialias=True`` is PyTorch's ``lanczos``.  Documented
PyTorch quirks (where PyTorch's backward is not the adjoint of its forward, and
its antialias defect for output width 1) are tested separately at the end.
"""

import numpy as np
import pytest

from sandbox.array.resample import resize, resize_adjoint
from sandbox.array.resample.reference import axis_matrix, reference_resize

# (per-axis input sizes, size spec, scale spec) for a 3-axis prototype; 1-D/2-D use a prefix
CASES = {
    "up2": ((5, 5, 5), (10, 10, 10), (2.0, 2.0, 2.0)),
    "up1.5": ((6, 6, 6), (9, 9, 9), (1.5, 1.5, 1.5)),
    "down0.5": ((10, 10, 10), (5, 5, 5), (0.5, 0.5, 0.5)),
    "down0.37": ((11, 11, 11), (4, 4, 4), (0.37, 0.37, 0.37)),
    "same": ((7, 7, 7), (7, 7, 7), (1.0, 1.0, 1.0)),
    "out1": ((6, 6, 6), (1, 1, 1), (0.2, 0.2, 0.2)),
    "in1": ((1, 1, 1), (4, 4, 4), (4.0, 4.0, 4.0)),
    "nonsquare": ((5, 8, 6), (10, 4, 9), (2.0, 0.5, 1.5)),
}

# (our mode, torch mode, spatial dims, align_corners choices, antialias choices)
CONFIGS = [
    ("nearest", "nearest", (1, 2, 3), (None,), (False,)),
    ("nearest-exact", "nearest-exact", (1, 2, 3), (None,), (False,)),
    ("linear", "linear", (1,), (None, False, True), (False,)),
    ("bilinear", "bilinear", (2,), (None, False, True), (False, True)),
    ("trilinear", "trilinear", (3,), (None, False, True), (False,)),
    ("bicubic", "bicubic", (2,), (None, False, True), (False, True)),
    ("lanczos3", "lanczos", (2,), (None, False), (True,)),
    ("area", "area", (1, 2, 3), (None,), (False,)),
]

PARAMS = [
    pytest.param(mode, tmode, nd, ac, aa, case, id=f"{mode}-{nd}d-ac{ac}-aa{aa}-{case}")
    for mode, tmode, nds, acs, aas in CONFIGS
    for nd in nds
    for ac in acs
    for aa in aas
    for case in CASES
]


def _kwargs(case, spec, nd, ac, aa):
    ins, sizes, scales = CASES[case]
    kw = {"antialias": aa}
    if ac is not None:
        kw["align_corners"] = ac
    if spec == "size":
        kw["size"] = tuple(sizes[:nd])
    else:
        kw["scale_factor"] = tuple(scales[:nd])
        if spec == "recompute":
            kw["recompute_scale_factor"] = True
    return ins[:nd], kw


def _aa_width1_defect(aa, out_shape):
    # PyTorch 2.13 antialias is wrong when the output width is 1 and the height is > 1.
    return aa and out_shape[-1] == 1 and len(out_shape) >= 4 and out_shape[-2] > 1


@pytest.mark.torch
@pytest.mark.parametrize(("mode", "tmode", "nd", "ac", "aa", "case"), PARAMS)
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_forward_backward_match_torch(torch, mode, tmode, nd, ac, aa, case, dt):
    """Every size spec (size, scale_factor, scale_factor + recompute) in one test."""
    for spec in ("size", "scale", "recompute"):
        _check_torch(torch, mode, tmode, nd, ac, aa, case, spec, dt)


def _check_torch(torch, mode, tmode, nd, ac, aa, case, spec, dt):
    import torch.nn.functional as F

    ins, kw = _kwargs(case, spec, nd, ac, aa)
    rng = np.random.default_rng(list(CASES).index(case) + 10 * nd)
    x = rng.standard_normal((2, 3, *ins)).astype(dt)
    xt = torch.tensor(x, requires_grad=True)
    yt = F.interpolate(xt, mode=tmode, **kw)
    y = resize(x, mode=mode, **kw)
    assert y.dtype == x.dtype and y.shape == tuple(yt.shape)
    g = rng.standard_normal(y.shape).astype(dt)
    (gt,) = torch.autograd.grad(yt, xt, torch.tensor(g))
    gx = resize_adjoint(g, ins, mode=mode, **kw)
    assert gx.dtype == x.dtype and gx.shape == x.shape
    tol = dict(rtol=1e-10, atol=1e-10) if dt == "float64" else dict(rtol=1e-5, atol=1e-5)
    if not _aa_width1_defect(aa, y.shape):
        np.testing.assert_allclose(y, yt.detach().numpy(), **tol)
    np.testing.assert_allclose(gx, gt.numpy(), **tol)


# ------------------------------------------------------------------ PyTorch quirks
@pytest.mark.torch
def test_antialias_output_width_1_matches_reference_not_torch(torch):
    """PyTorch 2.13 antialias with output width 1: every row equals the first (oracle defect)."""
    import torch.nn.functional as F

    x = np.random.default_rng(0).standard_normal((1, 1, 5, 3))
    for mode, tmode in (("bilinear", "bilinear"), ("bicubic", "bicubic"), ("lanczos3", "lanczos")):
        ours = resize(x, size=(10, 1), mode=mode, antialias=True)
        mats = [axis_matrix(mode, 5, 10, antialias=True), axis_matrix(mode, 3, 1, antialias=True)]
        np.testing.assert_allclose(ours, reference_resize(x, mats), rtol=1e-12, atol=1e-12)
        theirs = F.interpolate(torch.tensor(x), size=(10, 1), mode=tmode, antialias=True).numpy()
        if np.allclose(theirs, ours):
            pytest.skip("PyTorch fixed the antialias width-1 defect")
        np.testing.assert_array_equal(theirs, np.broadcast_to(theirs[:, :, :1], theirs.shape))


@pytest.mark.torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_nearest_shortcuts_match_torch_backward(torch, nd):
    """out == in (or 2*in) with a scale_factor that is not 1 (or 2).

    PyTorch's backward (all dims) and its small 2-D forward use the index
    shortcuts o and o >> 1; its 1-D/3-D forward uses floor(o / scale_factor).
    We use the shortcuts everywhere so that the backward is the adjoint.
    """
    import torch.nn.functional as F

    for n_in, sf in ((4, 1.2), (5, 2.1)):
        shape = (1, 2, *([3] * (nd - 1)), n_in)
        sfs = (1.0,) * (nd - 1) + (sf,)
        x = np.random.default_rng(1).standard_normal(shape)
        xt = torch.tensor(x, requires_grad=True)
        yt = F.interpolate(xt, scale_factor=sfs, mode="nearest")
        g = np.random.default_rng(2).standard_normal(tuple(yt.shape))
        (gt,) = torch.autograd.grad(yt, xt, torch.tensor(g))
        np.testing.assert_allclose(resize_adjoint(g, shape[2:], scale_factor=sfs), gt.numpy())
        y = resize(x, scale_factor=sfs)
        if nd == 2:
            np.testing.assert_allclose(y, yt.detach().numpy())
        np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, gt.numpy()), rtol=1e-12)


@pytest.mark.torch
def test_same_size_with_scale_factor_follows_torch_forward(torch):
    """in == out but scale_factor != 1: bicubic resamples, antialias skips the axis.

    PyTorch's backward special-cases these differently from its forward (bicubic
    backward copies, antialias backward resamples); ours is the exact adjoint.
    """
    import torch.nn.functional as F

    x = np.random.default_rng(3).standard_normal((1, 2, 4, 4))
    g = np.random.default_rng(4).standard_normal((1, 2, 4, 4))
    for mode, aa in (("bicubic", False), ("bilinear", True), ("bicubic", True)):
        y = resize(x, scale_factor=1.2, mode=mode, antialias=aa)
        yt = F.interpolate(torch.tensor(x), scale_factor=1.2, mode=mode, antialias=aa)
        np.testing.assert_allclose(y, yt.numpy(), rtol=1e-12, atol=1e-12)
        gx = resize_adjoint(g, (4, 4), scale_factor=1.2, mode=mode, antialias=aa)
        np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, gx), rtol=1e-12)
