"""Single-tap resizes (every output reads at most one input per axis) run as one
weighted gather; it must equal the separable passes (same products, up to the order
of the axes)."""

import numpy as np
import pytest

import sandbox
import sandbox.array.resample as R
from sandbox.array.resample import dispatch

# (input spatial, options, direction): all of these have single-tap tables.
CASES = [
    ((16, 12), dict(size=(8, 6), mode="bilinear"), "adjoint"),  # 2x bilinear down, backward
    ((20, 16), dict(size=(5, 4), mode="bilinear"), "adjoint"),  # 4x: unread inputs -> zeros
    ((5, 4), dict(size=(10, 12), mode="area"), "forward"),  # area upsampling
    ((12, 9), dict(size=(4, 3), mode="area"), "adjoint"),  # area downsampling, backward
    ((4, 6, 8), dict(size=(2, 3, 4), mode="trilinear"), "adjoint"),  # 3-D
]


def _run(x, in_size, opts, direction):
    if direction == "forward":
        return R.resize(x, **opts)
    return R.resize_adjoint(x, in_size, **opts)


def _input(in_size, opts, direction, dtype, rng):
    out_size = R.output_size(in_size, size=opts["size"], mode=opts["mode"])
    shape = in_size if direction == "forward" else out_size
    return rng.standard_normal((3, 4, *shape)).astype(dtype)


@pytest.mark.parametrize(("in_size", "opts", "direction"), CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_separable_passes(monkeypatch, in_size, opts, direction, dtype):
    rng = np.random.default_rng(0)
    x = _input(in_size, opts, direction, dtype, rng)
    x.flat[5] = np.nan  # NaN stays where the passes put it, unread outputs stay 0
    fast = _run(x, in_size, opts, direction)
    plan = dispatch.make_plan(in_size, opts["size"], None, opts["mode"], None, False, None)
    tables = dispatch.tables_for(plan, np.dtype(dtype), adjoint=direction == "adjoint")
    assert dispatch.apply_single_tap(np.ascontiguousarray(x), tables) is not None  # path taken
    monkeypatch.setattr(dispatch, "_single_tap_step", lambda *a: None)
    dispatch._schedule.cache_clear()  # routes are cached per shape
    ref = _run(x, in_size, opts, direction)
    dispatch._schedule.cache_clear()
    # Same products; the passes may apply the axes in another order (1-ulp differences).
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(fast, ref, rtol=4 * eps, atol=0)
    np.testing.assert_array_equal(fast == 0, ref == 0)


def test_bitwise_identical_for_any_thread_count():
    rng = np.random.default_rng(1)
    g = rng.standard_normal((8, 16, 32, 32)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            results.append(R.resize_adjoint(g, (64, 64), size=(32, 32), mode="bilinear"))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])


@pytest.mark.parametrize("shape", [(1, 1, 64, 64), (1, 3, 40, 48), (2, 1, 32, 30),
                                   (1, 2, 16, 18, 20)])
def test_few_planes_give_the_same_bits_for_any_thread_count(shape):
    # the route (gather or passes, which may round differently) depends on the shape only
    rng = np.random.default_rng(4)
    g = rng.standard_normal((*shape[:2], *(s // 2 for s in shape[2:]))).astype(np.float32)
    mode = "bilinear" if len(shape) == 4 else "trilinear"
    results = []
    for threads in (1, 2, 3, 8):
        with sandbox.num_threads(threads):
            results.append((R.resize_adjoint(g, shape[2:], scale_factor=0.5, mode=mode),
                            R.resize(g, scale_factor=0.5, mode="area")))
    for r in results[1:]:
        np.testing.assert_array_equal(r[0], results[0][0])
        np.testing.assert_array_equal(r[1], results[0][1])
