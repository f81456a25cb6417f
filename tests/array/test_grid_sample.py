"""Array-level grid sampling: the numpy reference against PyTorch, the kernels against
the reference, thread-count determinism, and every validation message."""

import itertools

import numpy as np
import pytest

import sandbox
from sandbox.array import grid_sample as gs
from sandbox.array.grid_sample import reference

from ..support.grid_points import safe_grid

MODES = ("nearest", "bilinear", "bicubic")
PADDINGS = ("zeros", "border", "reflection")
SHAPES = {2: ((2, 3, 4, 5), (3, 4)), 3: ((2, 2, 3, 4, 5), (2, 3, 2))}
ALL = list(itertools.product((2, 3), MODES, PADDINGS, (False, True)))


def _case(rng, nd, ac, dtype=np.float64, n=None):
    in_shape, out = SHAPES[nd]
    if n is not None:
        in_shape = (n, *in_shape[1:])
    x = rng.standard_normal(in_shape).astype(dtype)
    g = safe_grid(rng, in_shape[0], out, in_shape[2:], ac, dtype=dtype)
    gy = rng.standard_normal((*in_shape[:2], *out)).astype(dtype)
    return x, g, gy


@pytest.mark.parametrize("nd,mode,padding,ac", ALL)
def test_reference_matches_torch(torch, nd, mode, padding, ac):
    if nd == 3 and mode == "bicubic":
        pytest.skip("PyTorch 2.13 has no 3-D bicubic (gradcheck covers it)")
    rng = np.random.default_rng(abs(hash((nd, mode, padding, ac))) % 2**32)
    x, g, gy = _case(rng, nd, ac)
    opts = dict(mode=mode, padding_mode=padding, align_corners=ac)
    tx = torch.tensor(x, requires_grad=True)
    tg = torch.tensor(g, requires_grad=True)
    ty = torch.nn.functional.grid_sample(tx, tg, **opts)
    ty.backward(torch.tensor(gy))
    y = reference.grid_sample(x, g, mode, padding, ac)
    gx, gg = reference.grid_sample_backward(gy, x, g, mode, padding, ac)
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gg, tg.grad.numpy(), rtol=1e-12, atol=1e-11)
    # the public functions (kernels) agree as well
    np.testing.assert_allclose(gs.grid_sample(x, g, **opts), y, rtol=1e-12, atol=1e-13)


def test_reference_special_points_match_torch(torch):
    """Exact pixel centres, edges and reflection lines: PyTorch's one-sided conventions."""
    x = np.arange(20.0).reshape(1, 1, 4, 5) ** 1.5
    u = np.array([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.5, 4.0, 4.5, 5.0, 6.0])
    for ac in (False, True):
        s = 5
        gx_ = 2 * u / (s - 1) - 1 if ac else (2 * u + 1) / s - 1
        g = np.stack(np.broadcast_arrays(gx_[None, :], np.full((3, 1), 0.1)), -1)[None]
        for mode, padding in itertools.product(MODES, PADDINGS):
            tx = torch.tensor(x, requires_grad=True)
            tg = torch.tensor(g, requires_grad=True)
            ty = torch.nn.functional.grid_sample(tx, tg, mode=mode, padding_mode=padding,
                                                 align_corners=ac)
            gy = np.ones(ty.shape)
            ty.backward(torch.tensor(gy))
            for fwd, bwd in ((reference.grid_sample, reference.grid_sample_backward),
                             (_kernel_fwd, _kernel_bwd)):
                y = fwd(x, g, mode, padding, ac)
                dx, dg = bwd(gy, x, g, mode, padding, ac)
                np.testing.assert_allclose(y, ty.detach().numpy(), atol=1e-12)
                np.testing.assert_allclose(dx, tx.grad.numpy(), atol=1e-12)
                np.testing.assert_allclose(dg, tg.grad.numpy(), atol=1e-10)


def _kernel_fwd(x, g, mode, padding, ac):
    return gs.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=ac)


def _kernel_bwd(gy, x, g, mode, padding, ac, **kw):
    return gs.grid_sample_backward(gy, x, g, mode=mode, padding_mode=padding,
                                   align_corners=ac, **kw)


@pytest.mark.parametrize("nd,mode,padding,ac", ALL)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kernels_match_reference(nd, mode, padding, ac, dtype):
    """Random shapes incl. batch 1, points far outside the input, both dtypes."""
    rng = np.random.default_rng(abs(hash((nd, mode, padding, ac, str(dtype)))) % 2**32)
    for _ in range(2):
        n, c = int(rng.integers(1, 3)), int(rng.integers(1, 4))
        spatial = tuple(int(s) for s in rng.integers(1, 6, nd))
        out = tuple(int(s) for s in rng.integers(1, 5, nd))
        x = rng.standard_normal((n, c, *spatial)).astype(dtype)
        g = rng.uniform(-2.5, 2.5, (n, *out, nd)).astype(dtype)
        gy = rng.standard_normal((n, c, *out)).astype(dtype)
        tol = dict(rtol=1e-11, atol=1e-11) if dtype == np.float64 else dict(rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(_kernel_fwd(x, g, mode, padding, ac),
                                   reference.grid_sample(x, g, mode, padding, ac), **tol)
        got = _kernel_bwd(gy, x, g, mode, padding, ac)
        want = reference.grid_sample_backward(gy, x, g, mode, padding, ac)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == dtype
            np.testing.assert_allclose(a, b, **tol)
        gx_only = _kernel_bwd(gy, x, g, mode, padding, ac, grid_grad=False)
        gg_only = _kernel_bwd(gy, x, g, mode, padding, ac, input_grad=False)
        assert gx_only[1] is None and gg_only[0] is None
        np.testing.assert_array_equal(gx_only[0], got[0])
        np.testing.assert_allclose(gg_only[1], got[1], **tol)


@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("ac", [False, True])
@pytest.mark.parametrize("nd", [2, 3])
def test_blocked_paths_match_reference(nd, padding, ac):
    """Several blocks of 256 points, a mix of inside points, edge points and points
    reflected more than once (those take the per-point path inside a block)."""
    rng = np.random.default_rng(int(ac) + 2 * PADDINGS.index(padding) + 6 * nd)
    spatial, out = ((6, 7), (20, 31)) if nd == 2 else ((3, 4, 5), (4, 10, 15))
    x = rng.standard_normal((2, 3, *spatial))
    g = rng.uniform(-3, 3, (2, *out, nd))
    g[:, ::2] = rng.uniform(-0.8, 0.8, g[:, ::2].shape)  # half of the first axis inside
    gy = rng.standard_normal((2, 3, *out))
    for mode in ("nearest", "bilinear"):
        np.testing.assert_allclose(_kernel_fwd(x, g, mode, padding, ac),
                                   reference.grid_sample(x, g, mode, padding, ac),
                                   rtol=1e-12, atol=1e-13)
        want = reference.grid_sample_backward(gy, x, g, mode, padding, ac)
        for kw in ({}, {"input_grad": False}, {"grid_grad": False}):
            got = _kernel_bwd(gy, x, g, mode, padding, ac, **kw)
            for a, b in zip(got, want, strict=True):
                if a is not None:
                    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_isa_available_reports_only_the_avx512_pass():
    """2 (the ``isa`` code of the AVX-512F passes) on a CPU with AVX-512F, else 0: no
    other level exists."""
    from sandbox._C import _grid_sample
    from sandbox.runtime import simd

    assert _grid_sample.isa_available() == (2 if "avx512f" in simd.cpu().flags else 0)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("ac", [False, True])
def test_simd_paths_give_the_portable_bits(mode, padding, ac):
    """The 2-D float32 AVX-512 and AVX2 passes (forward, push and grid gradient, the push's
    keys) and the bicubic blocks against the portable loops, bit for bit, on inside points,
    edge points (some taps outside), points reflected more than once, NaN and huge
    coordinates; and against the reference."""
    from sandbox.array.grid_sample._dispatch import simd_code
    from sandbox.runtime import simd

    rng = np.random.default_rng(11 + MODES.index(mode) + 3 * PADDINGS.index(padding) + 9 * ac)
    # 2: the push in slabs (its keys; nearest: by channel planes); 4: a task per sample
    for n in (2, 4) if mode == "bilinear" else (2,):
        x = rng.standard_normal((n, 3, 9, 11)).astype(np.float32)
        g = rng.uniform(-1.3, 1.3, (n, 25, 23, 2)).astype(np.float32)  # 575 points: 3 blocks
        g[:, :4] = rng.uniform(-6, 6, g[:, :4].shape)  # reflected more than once
        g[0, 5, :3] = [[np.nan, 0.2], [1e30, 0.1], [-0.3, -1e30]]
        g[1, 6, :2] = [[-1.0, 1.0], [1.0, -1.0]]  # on the corners
        gy = rng.standard_normal((n, 3, 25, 23)).astype(np.float32)
        want = reference.grid_sample(x, g, mode, padding, ac)
        paths = [p for p in ("avx512", "avx2", "portable") if p in simd.supported_paths()]
        results = []
        for path in paths:
            with simd.using(isa=path):
                assert simd_code() == {"avx512": 2, "avx2": 1, "portable": 0}[path]
                results.append((_kernel_fwd(x, g, mode, padding, ac),
                                *_kernel_bwd(gy, x, g, mode, padding, ac),
                                _kernel_bwd(gy, x, g, mode, padding, ac, input_grad=False)[1]))
        for got in results[1:]:
            for a, b in zip(got, results[0], strict=True):
                np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(results[0][0], want, rtol=1e-4, atol=1e-4)
        finite = np.isfinite(g).all(axis=-1) & (np.abs(g) < 1e3).all(axis=-1)
        want_gx, want_gg = reference.grid_sample_backward(gy, x, g, mode, padding, ac)
        np.testing.assert_allclose(results[0][1], want_gx, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(results[0][2][finite], want_gg[finite], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("ac", [False, True])
def test_simd_paths_give_the_portable_bits_3d(mode, padding, ac):
    """The 3-D float32 AVX-512 passes (grid_simd3d.h) and the AVX2 passes (grid_avx2.h) against
    the portable blocks, bit for bit: a batch of 2 (the push in slabs) and of 5 (a task
    per sample), points inside, at the edges, reflected more than once, NaN and huge;
    and against the reference."""
    from sandbox.runtime import simd

    rng = np.random.default_rng(31 + PADDINGS.index(padding) + 3 * ac + 7 * (mode == "nearest"))
    cases = ((2, (3, 6, 7, 5), (5, 9, 11), 1.3), (5, (2, 4, 5, 6), (4, 6, 7), 3.5))
    for n, shape, out, lim in cases:
        x = rng.standard_normal((n, *shape)).astype(np.float32)
        g = rng.uniform(-lim, lim, (n, *out, 3)).astype(np.float32)
        g[0, 0, 0, 0] = np.nan
        g[0, 0, 1, 1, 1] = 1e30
        g[0, 1, 0, 0] = [-1, 1, -1]
        gy = rng.standard_normal((n, shape[0], *out)).astype(np.float32)
        results = []
        paths = [p for p in ("avx512", "avx2", "portable") if p in simd.supported_paths()]
        assert len(paths) >= 2 or "avx2" not in simd.cpu().flags
        for path in paths:
            with simd.using(isa=path):
                results.append((_kernel_fwd(x, g, mode, padding, ac),
                                *_kernel_bwd(gy, x, g, mode, padding, ac),
                                _kernel_bwd(gy, x, g, mode, padding, ac, input_grad=False)[1]))
        for got in results[1:]:
            for a, b in zip(got, results[0], strict=True):
                np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(results[0][0], reference.grid_sample(x, g, mode, padding, ac),
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nd,mode", [(2, "bilinear"), (2, "bicubic"), (2, "nearest"),
                                     (3, "bilinear"), (3, "bicubic"), (3, "nearest")])
def test_thread_count_does_not_change_any_bit(nd, mode):
    """Forward, push and grid gradient at 1, 2 and 3 threads, batch 1 and 3 (each sample
    shared among the threads, in slabs) and 5 (a task per sample).  The nearest push runs
    by (sample, channel) planes where there are at least as many as threads, else in
    slabs (batch 1 at 3 threads): both must give the same bits."""
    from sandbox._C import _grid_sample

    assert 3 < _grid_sample.per_sample_batch <= 5
    from sandbox.array.grid_sample._dispatch import push_slabs

    assert push_slabs(np.zeros((1, 2, 12, 13))) == (4, 3)  # 2 even slabs, then 1 odd
    rng = np.random.default_rng(7)
    for n in (1, 3, 5):  # 5: the push's one-task-per-sample path
        spatial = (12, 13) if nd == 2 else (6, 7, 8)
        out = (70, 90) if nd == 2 else (14, 15, 16)
        x = rng.standard_normal((n, 2, *spatial)).astype(np.float32)
        g = rng.uniform(-1.2, 1.2, (n, *out, nd)).astype(np.float32)
        gy = rng.standard_normal((n, 2, *out)).astype(np.float32)
        results = []
        previous = sandbox.get_num_threads()
        try:
            for threads in (1, 2, 3):
                sandbox.set_num_threads(threads)
                results.append((_kernel_fwd(x, g, mode, "zeros", False),
                                *_kernel_bwd(gy, x, g, mode, "zeros", False)))
        finally:
            sandbox.set_num_threads(previous)
        for other in results[1:]:
            for a, b in zip(results[0], other, strict=True):
                np.testing.assert_array_equal(a, b)
        # the slabbed push still gives the reference's sums
        want = (reference.grid_sample(x, g, mode, "zeros", False),
                *reference.grid_sample_backward(gy, x, g, mode, "zeros", False))
        for a, b in zip(results[0], want, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nearest_grid_gradient_is_zero(nd, dtype):
    """The kernel writes nearest's zero grid gradient into uninitialised memory on each of
    its routes: with the push's offsets (as many planes as threads), on its own (fewer),
    and without an input gradient."""
    rng = np.random.default_rng(3)
    previous = sandbox.get_num_threads()
    try:
        for n, c, threads in ((2, 3, 2), (1, 1, 2), (1, 1, 1)):
            sandbox.set_num_threads(threads)
            x, g, gy = _case(rng, nd, False, dtype, n=n)
            x, gy = x[:, :c].copy(), gy[:, :c].copy()
            for padding, input_grad in (("zeros", True), ("reflection", True),
                                        ("border", False)):
                np.full(g.shape, np.nan, dtype)  # freed: the next array of its size may reuse it
                gx, gg = _kernel_bwd(gy, x, g, "nearest", padding, False, input_grad=input_grad)
                assert gg.shape == g.shape and gg.dtype == dtype
                assert not gg.any() and not np.isnan(gg).any()
                if input_grad:
                    want = reference.grid_sample_backward(gy, x, g, "nearest", padding, False)[0]
                    np.testing.assert_allclose(gx, want, rtol=1e-5, atol=1e-5)
    finally:
        sandbox.set_num_threads(previous)


def test_push_is_the_adjoint():
    """<S x, y> = <x, S^T y> for every mode and padding, 3-D tricubic included."""
    rng = np.random.default_rng(5)
    for nd, mode, padding in itertools.product((2, 3), MODES, PADDINGS):
        x, _, gy = _case(rng, nd, False)
        g = rng.uniform(-1.5, 1.5, (x.shape[0], *gy.shape[2:], nd))
        lhs = np.vdot(_kernel_fwd(x, g, mode, padding, False), gy)
        rhs = np.vdot(x, _kernel_bwd(gy, x, g, mode, padding, False, grid_grad=False)[0])
        assert lhs == pytest.approx(rhs, rel=1e-12)


def test_nan_grid_values():
    """NaN reads as a dropped tap (zeros) or the first pixel (border, reflection)."""
    x = np.arange(1.0, 13.0).reshape(1, 1, 3, 4)
    g = np.full((1, 1, 1, 2), np.nan)
    for nd in (2, 3):
        xs = x if nd == 2 else x[:, :, None]
        gs_ = g if nd == 2 else np.full((1, 1, 1, 1, 3), np.nan)
        for mode, padding in itertools.product(("nearest", "bilinear"), PADDINGS):
            want = 0.0 if padding == "zeros" else 1.0
            for fwd in (_kernel_fwd, reference.grid_sample):
                assert fwd(xs, gs_, mode, padding, False).item() == want


def test_empty_batch_and_empty_grid():
    x = np.zeros((0, 2, 3, 4))
    assert _kernel_fwd(x, np.zeros((0, 2, 2, 2)), "bilinear", "zeros", False).shape == (0, 2, 2, 2)
    x = np.ones((1, 2, 3, 4))
    y = _kernel_fwd(x, np.zeros((1, 0, 5, 2)), "bicubic", "border", True)
    assert y.shape == (1, 2, 0, 5)
    gx, gg = _kernel_bwd(np.zeros((1, 2, 0, 5)), x, np.zeros((1, 0, 5, 2)), "bilinear", "zeros",
                         False)
    assert not gx.any() and gg.shape == (1, 0, 5, 2)


# ------------------------------------------------------------------------- validation

def _good():
    return np.zeros((1, 2, 3, 4)), np.zeros((1, 5, 6, 2))


@pytest.mark.parametrize("kwargs,exc,message", [
    (dict(mode="trilinear"), ValueError, "mode must be one of 'nearest', 'bilinear' or 'bicubic'"),
    (dict(mode=None), ValueError, "mode must be one of"),
    (dict(padding_mode="constant"), ValueError,
     "padding_mode must be one of 'zeros', 'border' or 'reflection'"),
    (dict(align_corners=None), TypeError, "align_corners must be True or False"),
])
def test_bad_options(kwargs, exc, message):
    x, g = _good()
    with pytest.raises(exc, match=message):
        gs.grid_sample(x, g, **kwargs)
    with pytest.raises(exc, match=message):
        gs.grid_sample_backward(np.zeros((1, 2, 5, 6)), x, g, **kwargs)


@pytest.mark.parametrize("x,g,exc,message", [
    ([[1.0]], np.zeros((1, 5, 6, 2)), TypeError, "input must be a numpy.ndarray"),
    (np.zeros((1, 2, 3, 4), np.int64), np.zeros((1, 5, 6, 2)), TypeError,
     "input must have dtype float32 or float64"),
    (np.zeros((2, 3, 4)), np.zeros((2, 5, 2)), ValueError, "input must be 4-D"),
    (np.zeros((1, 2, 3, 4)), np.zeros((1, 5, 6, 2), np.float32), TypeError,
     "grid dtype float32 does not match input dtype float64"),
    (np.zeros((1, 2, 3, 4)), np.zeros((1, 5, 6, 3)), ValueError,
     r"grid must be \(N, H_out, W_out, 2\) for a 4-D input"),
    (np.zeros((1, 2, 3, 4, 5)), np.zeros((1, 5, 6, 2)), ValueError,
     r"grid must be \(N, D_out, H_out, W_out, 3\) for a 5-D input"),
    (np.zeros((1, 2, 3, 4)), np.zeros((2, 5, 6, 2)), ValueError,
     "grid batch size 2 does not match input batch size 1"),
    (np.zeros((1, 2, 0, 4)), np.zeros((1, 5, 6, 2)), ValueError, "non-empty spatial axes"),
    (np.zeros((1, 2, 3, 4)), "grid", TypeError, "grid must be a numpy.ndarray"),
])
def test_bad_arrays(x, g, exc, message):
    with pytest.raises(exc, match=message):
        gs.grid_sample(x, g)


def test_bad_grad_output():
    x, g = _good()
    with pytest.raises(ValueError, match=r"grad_output must have the output's shape \(1, 2, 5"):
        gs.grid_sample_backward(np.zeros((1, 2, 5, 5)), x, g)
    with pytest.raises(TypeError, match="grad_output dtype float32 does not match"):
        gs.grid_sample_backward(np.zeros((1, 2, 5, 6), np.float32), x, g)


def test_memory_limit_refuses_huge_grids():
    x = np.zeros((1, 1, 2, 2))
    g = np.broadcast_to(np.zeros((), np.float64), (1, 4096, 4096, 2))
    previous = sandbox.set_memory_limit("64M")
    try:
        with pytest.raises(MemoryError, match="more than the memory limit of 64 MB"):
            gs.grid_sample(x, g)
        with pytest.raises(ValueError, match="sandbox.set_memory_limit"):
            gy = np.broadcast_to(np.zeros((), np.float64), (1, 1, 4096, 4096))
            gs.grid_sample_backward(gy, x, g)
    finally:
        sandbox.set_memory_limit(previous)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("n", [1, 5])  # slabs (or nearest planes), a task per sample
def test_push_zeroes_its_own_gradient(mode, n):
    """The kernels zero the input gradient themselves (the wrapper hands them np.empty):
    memory that held NaN just before still gives the reference's push."""
    from sandbox.array.grid_sample import _dispatch

    class _NaNEmpty:
        """numpy, with an ``empty`` whose float arrays hold NaN: memory that held anything."""

        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(shape, dtype=float, **kwargs):
            out = np.empty(shape, dtype, **kwargs)
            if out.dtype.kind == "f":
                out.fill(np.nan)
            return out

    rng = np.random.default_rng(21)
    x = rng.standard_normal((n, 3, 10, 12))
    g = rng.uniform(-1.1, 1.1, (n, 7, 9, 2))
    gy = rng.standard_normal((n, 3, 7, 9))
    want = reference.grid_sample_backward(gy, x, g, mode, "zeros", False)[0]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_dispatch, "np", _NaNEmpty())
        got = _kernel_bwd(gy, x, g, mode, "zeros", False)[0]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def test_a_cached_plan_still_validates():
    """Plans are cached by shapes, dtypes and options (and their types): a request that
    equals a cached one but would fail a check still fails it."""
    x, g = _good()
    gs.grid_sample(x, g, align_corners=True)  # caches this request's plan
    with pytest.raises(TypeError, match="align_corners must be True or False"):
        gs.grid_sample(x, g, align_corners=1)  # 1 == True, but not a bool

    class _Lookalike:  # shape and dtype of x, but not an ndarray
        shape, dtype, ndim = x.shape, x.dtype, x.ndim

    with pytest.raises(TypeError, match="input must be a numpy.ndarray"):
        gs.grid_sample(_Lookalike(), g)
    with pytest.raises(ValueError, match="mode must be one of"):
        gs.grid_sample(x, g, mode=["nearest"])  # unhashable: validated, not looked up
    assert gs.plan(x, g, "bilinear", "zeros", True) is gs.plan(x, g, "bilinear", "zeros", True)


def test_the_memory_check_runs_after_the_plan_is_cached():
    x, g = np.zeros((1, 1, 2, 2)), np.zeros((1, 64, 64, 2))
    gs.grid_sample(x, g)
    previous = sandbox.set_memory_limit(1024)
    try:
        with pytest.raises(MemoryError, match="more than the memory limit"):
            gs.grid_sample(x, g)
    finally:
        sandbox.set_memory_limit(previous)


def test_outputs_start_apart_from_the_arrays_their_kernels_read():
    """The forward's output and the input gradient start 2 KiB away, modulo 4 KiB, from
    the input and the output gradient (no 4K aliasing between the stores and the loads
    at the same index); C-contiguous, of the right shape and dtype."""
    from sandbox._C._grid_sample import page_offset

    from sandbox.array.grid_sample import _dispatch

    for dtype in (np.float32, np.float64):
        x = np.ones((1, 4, 64, 64), dtype)
        out = _dispatch._empty_apart((1, 4, 64, 64), dtype, x)
        assert out.shape == x.shape and out.dtype == dtype and out.flags.c_contiguous
        assert (page_offset(out) - page_offset(x)) % 4096 == _dispatch._APART
        small = _dispatch._empty_apart((2, 3), dtype, x)
        assert small.shape == (2, 3) and small.dtype == dtype
    x = np.random.default_rng(0).standard_normal((1, 4, 64, 64)).astype(np.float32)
    g = np.zeros((1, 64, 64, 2), np.float32)
    y = gs.grid_sample(x, g, mode="nearest", padding_mode="zeros", align_corners=False)
    assert (page_offset(y) - page_offset(x)) % 4096 == _dispatch._APART
    gx, _ = gs.grid_sample_backward(y, x, g, mode="nearest", padding_mode="zeros",
                                    align_corners=False)
    assert (page_offset(gx) - page_offset(y)) % 4096 == _dispatch._APART
