"""sandbox.resample against the float64 dense-matrix reference, and its identities.

Covers what PyTorch lacks (lanczos3/lanczos5/cubic without antialias, every
filter mode in 1-D and 3-D, align_corners with lanczos), the adjoint identity
<resize(x), g> = <x, adjoint(g)> for every mode, identity at the same size,
thread-count determinism, layouts, read-only inputs and NaN propagation.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import sandbox
from sandbox.array.resample import resize, resize_adjoint, weight_matrix
from sandbox.array.resample.reference import axis_matrix, reference_adjoint, reference_resize

FILTER_MODES = ["linear", "bicubic", "cubic", "lanczos3", "lanczos5"]
ALL_MODES = ["nearest", "nearest-exact", "area", *FILTER_MODES]

# (mode, align_corners, antialias) combinations that are valid
COMBOS = [(m, None, False) for m in ("nearest", "nearest-exact", "area")] + [
    (m, ac, aa) for m in FILTER_MODES for ac in (None, True) for aa in (False, True)
]

CASES = {  # per-axis (in, out, scale_factor for the scale spec)
    "up1.5": ((6, 7, 5), (9, 10, 7), (1.5, 1.5, 1.5)),
    "down0.37": ((11, 12, 13), (4, 4, 4), (0.37, 0.37, 0.37)),
    "mixed": ((5, 13, 6), (12, 4, 6), (2.5, 0.33, 1.0)),
    "out1": ((6, 5, 4), (1, 1, 1), (0.2, 0.25, 0.3)),
    "in1": ((1, 1, 1), (3, 2, 4), (3.0, 2.0, 4.0)),
}


def _matrices(mode, ins, outs, sfs, ac, aa):
    return [
        axis_matrix(mode, i, o, None if (sf is None or mode == "area") else sf, bool(ac), aa)
        for i, o, sf in zip(ins, outs, sfs, strict=True)
    ]


def _kw(mode, ac, aa):
    kw = {"mode": mode, "antialias": aa}
    if ac is not None:
        kw["align_corners"] = ac
    return kw


@pytest.mark.parametrize(("mode", "ac", "aa"), COMBOS)
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_dense_reference(mode, ac, aa, nd, case):
    ins, outs, sfs = (c[:nd] for c in CASES[case])
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 2, *ins))
    kw = _kw(mode, ac, aa)
    for spec in ("size", "scale"):
        if spec == "size":
            y = resize(x, size=outs, **kw)
            mats = _matrices(mode, ins, outs, (None,) * nd, ac, aa)
            args = {"size": outs}
        else:
            y = resize(x, scale_factor=sfs, **kw)
            outs_sf = tuple(int(np.floor(i * s)) for i, s in zip(ins, sfs, strict=True))
            mats = _matrices(mode, ins, outs_sf, sfs, ac, aa)
            args = {"scale_factor": sfs}
        np.testing.assert_allclose(y, reference_resize(x, mats), rtol=1e-10, atol=1e-12)
        g = rng.standard_normal(y.shape)
        gx = resize_adjoint(g, ins, **args, **kw)
        np.testing.assert_allclose(gx, reference_adjoint(g, mats), rtol=1e-10, atol=1e-12)
        # float32: float32 math, within float32 rounding of the data's magnitude
        y32 = resize(x.astype(np.float32), **args, **kw)
        assert y32.dtype == np.float32
        np.testing.assert_allclose(y32, reference_resize(x, mats), rtol=1e-5, atol=1e-5)
        g32 = resize_adjoint(g.astype(np.float32), ins, **args, **kw)
        assert g32.dtype == np.float32
        np.testing.assert_allclose(g32, reference_adjoint(g, mats), rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize(("mode", "ac", "aa"), COMBOS)
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_adjoint_identity(mode, ac, aa, nd):
    """<resize(x), g> == <x, resize_adjoint(g)>: the adjoint is the exact backward.

    The op is linear, so this is also the float64 finite-difference check of the
    backward: d<resize(x), g>/dx = adjoint(g) exactly.
    """
    rng = np.random.default_rng(nd)
    ins = (7, 5, 9)[:nd]
    x = rng.standard_normal((2, 3, *ins))
    for opts in ({"size": (4, 11, 9)[:nd]}, {"scale_factor": (1.7, 0.6, 1.0)[:nd]}):
        y = resize(x, **opts, **_kw(mode, ac, aa))
        g = rng.standard_normal(y.shape)
        gx = resize_adjoint(g, ins, **opts, **_kw(mode, ac, aa))
        np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, gx), rtol=1e-12)
        # central finite difference along a random direction (exact for a linear map)
        d = rng.standard_normal(x.shape)
        eps = 1e-3
        fp = np.vdot(resize(x + eps * d, **opts, **_kw(mode, ac, aa)), g)
        fm = np.vdot(resize(x - eps * d, **opts, **_kw(mode, ac, aa)), g)
        np.testing.assert_allclose((fp - fm) / (2 * eps), np.vdot(gx, d), rtol=1e-8)


@pytest.mark.parametrize(("mode", "ac", "aa"), COMBOS)
def test_same_size_is_identity(mode, ac, aa):
    """Resizing to the same size is the identity for every mode (antialias too:
    the axis is skipped, as in PyTorch)."""
    x = np.random.default_rng(0).standard_normal((1, 2, 6, 5, 4))
    y = resize(x, size=(6, 5, 4), **_kw(mode, ac, aa))
    g = resize_adjoint(x, (6, 5, 4), size=(6, 5, 4), **_kw(mode, ac, aa))
    if mode.startswith("lanczos") and not aa:
        # sinc at non-zero integers is ~1e-17 in floating point, not exactly 0
        np.testing.assert_allclose(y, x, rtol=0, atol=1e-14)
        np.testing.assert_allclose(g, x, rtol=0, atol=1e-14)
    else:
        np.testing.assert_array_equal(y, x)
        np.testing.assert_array_equal(g, x)


@given(
    nd=st.integers(1, 3),
    mode=st.sampled_from(ALL_MODES),
    aa=st.booleans(),
    ac=st.sampled_from([None, False, True]),
    ins=st.lists(st.integers(1, 12), min_size=3, max_size=3),
    outs=st.lists(st.integers(1, 12), min_size=3, max_size=3),
    sfs=st.lists(st.floats(0.3, 3.0), min_size=3, max_size=3),
    use_scale=st.booleans(),
    recompute=st.booleans(),
)
def test_hypothesis_against_reference(nd, mode, aa, ac, ins, outs, sfs, use_scale, recompute):
    if mode in ("nearest", "nearest-exact", "area"):
        aa, ac = False, None
    ins = tuple(ins[:nd])
    if use_scale:
        sfs = tuple(sfs[:nd])
        outs = tuple(int(np.floor(i * s)) for i, s in zip(ins, sfs, strict=True))
        if min(outs) < 1:
            return
        args = {"scale_factor": sfs, "recompute_scale_factor": recompute}
        kernel_sfs = (None,) * nd if recompute else sfs
    else:
        outs = tuple(outs[:nd])
        args = {"size": outs}
        kernel_sfs = (None,) * nd
    x = np.random.default_rng(sum(ins)).standard_normal((1, 2, *ins))
    mats = _matrices(mode, ins, outs, kernel_sfs, ac, aa)
    y = resize(x, **args, **_kw(mode, ac, aa))
    np.testing.assert_allclose(y, reference_resize(x, mats), rtol=1e-10, atol=1e-12)
    g = np.random.default_rng(1).standard_normal(y.shape)
    gx = resize_adjoint(g, ins, **args, **_kw(mode, ac, aa))
    np.testing.assert_allclose(gx, reference_adjoint(g, mats), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("mode", "ac", "aa"), COMBOS)
def test_bitwise_identical_for_any_thread_count(mode, ac, aa):
    rng = np.random.default_rng(5)
    shapes = [
        ((3, 4, 2000), (2600,)),
        ((2, 4, 64, 60), (97, 41)),
        ((1, 2, 12, 40, 30), (7, 61, 45)),
    ]
    previous = sandbox.get_num_threads()
    try:
        for shape, out in shapes:
            x = rng.standard_normal(shape).astype(np.float32)
            results = []
            for n in (1, 2, 3):
                sandbox.set_num_threads(n)
                y = resize(x, size=out, **_kw(mode, ac, aa))
                gx = resize_adjoint(y, shape[2:], size=out, **_kw(mode, ac, aa))
                results.append((y, gx))
            for y, gx in results[1:]:
                np.testing.assert_array_equal(y, results[0][0])
                np.testing.assert_array_equal(gx, results[0][1])
    finally:
        sandbox.set_num_threads(previous)


def test_noncontiguous_and_readonly_inputs():
    base = np.random.default_rng(2).standard_normal((3, 2, 9, 14))
    x = base.transpose(1, 0, 2, 3)[:, :, ::1, ::2]  # non-contiguous view
    expected = resize(np.ascontiguousarray(x), size=(5, 11), mode="bicubic")
    np.testing.assert_array_equal(resize(x, size=(5, 11), mode="bicubic"), expected)
    ro = np.ascontiguousarray(x)
    ro.setflags(write=False)
    np.testing.assert_array_equal(resize(ro, size=(5, 11), mode="bicubic"), expected)
    g = np.asfortranarray(np.ones((2, 3, 5, 11)))
    g.setflags(write=False)
    out = resize_adjoint(g, (9, 7), size=(5, 11), mode="bicubic")
    assert out.shape == (2, 3, 9, 7) and out.flags.c_contiguous


def test_nan_propagates_to_outputs_that_read_it():
    x = np.zeros((1, 1, 8, 8))
    x[0, 0, 3, 4] = np.nan
    for mode in ("nearest", "linear", "bicubic", "area", "lanczos3"):
        y = resize(x, size=(16, 16), mode=mode)
        m = weight_matrix(8, 16, mode=mode) if mode != "area" else weight_matrix(8, 16, mode="area")
        reads = np.outer(m[:, 3] != 0, m[:, 4] != 0)
        assert np.isnan(y[0, 0][reads]).all()
        assert np.isfinite(y[0, 0][~np.outer(m[:, 3] != 0, np.ones(16, bool))]).all()


def test_empty_batch_and_dtype_preserved():
    for dt in (np.float32, np.float64):
        y = resize(np.zeros((0, 3, 4, 4), dt), size=(6, 2), mode="bilinear")
        assert y.shape == (0, 3, 6, 2) and y.dtype == dt
        g = resize_adjoint(np.zeros((2, 0, 6, 2), dt), (4, 4), size=(6, 2), mode="bilinear")
        assert g.shape == (2, 0, 4, 4) and g.dtype == dt


def test_weight_matrix_rows_sum_to_one():
    for mode in ALL_MODES:
        for aa in (False, True) if mode in FILTER_MODES else (False,):
            m = weight_matrix(13, 5, mode=mode, antialias=aa)
            np.testing.assert_allclose(m.sum(axis=1), 1.0, rtol=1e-12)
