"""The dedicated nearest / nearest-exact kernels against the generic weighted passes."""

import numpy as np
import pytest

import sandbox
import sandbox.array.resample as R
from sandbox.array.resample import dispatch

SHAPES = [
    ((3, 4, 7), (12,)),  # 1-D up, non-integer
    ((3, 4, 9), (4,)),  # 1-D down
    ((2, 5, 6, 7), (12, 14)),  # 2-D exact 2x
    ((2, 5, 6, 7), (9, 10)),  # 2-D non-integer up
    ((2, 5, 13, 11), (5, 4)),  # 2-D down
    ((2, 3, 4, 5, 6), (6, 3, 9)),  # 3-D mixed
    ((4, 2, 1, 5), (3, 1)),  # input size 1 and output size 1
]


@pytest.fixture(autouse=True)
def _fresh_schedules():
    """Routes are cached per shape: start and leave every test with none cached."""
    dispatch._schedule.cache_clear()
    yield
    dispatch._schedule.cache_clear()


def _generic(monkeypatch):
    """Route every later resize through the generic weighted passes."""
    monkeypatch.setattr(dispatch, "_nearest_steps", lambda *a, **k: None)
    dispatch._schedule.cache_clear()


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize(("shape", "size"), SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matches_generic_path(monkeypatch, mode, shape, size, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal((*shape[:2], *size)).astype(dtype)
    fast_y = R.resize(x, size=size, mode=mode)
    fast_gx = R.resize_adjoint(g, shape[2:], size=size, mode=mode)
    assert (
        dispatch.apply_nearest(
            x, dispatch.make_plan(shape[2:], size, None, mode, None, False, None), adjoint=False
        )
        is not None
    )  # the fast path really ran
    _generic(monkeypatch)
    np.testing.assert_array_equal(fast_y, R.resize(x, size=size, mode=mode))
    ref = R.resize_adjoint(g, shape[2:], size=size, mode=mode)
    np.testing.assert_allclose(
        fast_gx,
        ref,
        rtol=1e-6 if dtype == np.float32 else 1e-14,
        atol=1e-6 if dtype == np.float32 else 1e-14,
    )


@pytest.mark.parametrize(("shape", "size"), SHAPES[2:4])
def test_bitwise_identical_for_any_thread_count(shape, size):
    rng = np.random.default_rng(1)
    big = (8, 16, *shape[2:])  # enough work to run in parallel
    x = rng.standard_normal(big).astype(np.float32)
    g = rng.standard_normal((*big[:2], *size)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            results.append(
                (
                    R.resize(x, size=size, mode="nearest"),
                    R.resize_adjoint(g, big[2:], size=size, mode="nearest"),
                )
            )
    for y, gx in results[1:]:
        np.testing.assert_array_equal(y, results[0][0])
        np.testing.assert_array_equal(gx, results[0][1])


def test_adjoint_identity_and_unread_rows_are_zero():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 9, 8))
    g = rng.standard_normal((2, 3, 4, 3))  # downsampling: some input rows/cols unread
    y = R.resize(x, size=(4, 3), mode="nearest")
    gx = R.resize_adjoint(g, (9, 8), size=(4, 3), mode="nearest")
    np.testing.assert_allclose(np.vdot(y, g), np.vdot(x, gx), rtol=1e-12)
    unread_rows = sorted(
        set(range(9))
        - set(
            dispatch.index_maps(
                dispatch.tables_for(
                    dispatch.make_plan((9, 8), (4, 3), None, "nearest", None, False, None),
                    np.dtype(np.float64),
                    adjoint=False,
                ),
            )[0]
        )
    )
    assert unread_rows and np.all(gx[:, :, unread_rows, :] == 0)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize(("shape", "scale"), [
    ((1, 3, 40, 40), 3), ((3, 1, 33, 47), 3), ((1, 2, 64, 64), 2), ((1, 3, 20, 30, 30), 1.7),
    ((2, 2, 9, 8), 2), ((1, 1, 50, 50), 3),
])
def test_few_planes_give_the_same_bits_for_any_thread_count(mode, shape, scale):
    # 1-7 planes: with the route once chosen by planes per thread, 2 threads took the
    # generic passes where 1 took the nearest kernel, and the adjoint's sums differed
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape).astype(np.float32)
    results = []
    for threads in (1, 2, 3, 8):
        with sandbox.num_threads(threads):
            y = R.resize(x, scale_factor=scale, mode=mode)
            g = np.random.default_rng(3).standard_normal(y.shape).astype(np.float32)
            results.append((y, R.resize_adjoint(g, shape[2:], scale_factor=scale, mode=mode)))
    for y, gx in results[1:]:
        np.testing.assert_array_equal(y, results[0][0])
        np.testing.assert_array_equal(gx, results[0][1])
