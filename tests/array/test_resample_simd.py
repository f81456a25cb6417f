"""The AVX-512 forms of the resize's passes (the last axis 16 rows at a time, the outer
axes' row sums 16 floats a vector) give the scalar loops' bits."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox._C import _resample
from sandbox.array.resample import dispatch, resize, resize_adjoint
from sandbox.array.resample._options import make_plan
from sandbox.runtime import simd

needs_avx512 = pytest.mark.skipif(_resample.isa_available() != 2,
                                  reason="the CPU has no AVX-512F")


def test_isa_available_follows_the_cpu():
    flags = simd.cpu().flags
    assert _resample.isa_available() == (2 if "avx512f" in flags else 1 if "avx2" in flags
                                         else 0)


def _last_table(mode, in_sizes, scale, adjoint):
    plan = make_plan(in_sizes, None, scale, mode, None, False, None, lead=0)
    return dispatch.tables_for(plan, np.dtype(np.float32), adjoint)[-1]


@pytest.mark.parametrize("isa", [2, 1])  # 16 rows (AVX-512), 8 rows (AVX2)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos3", "area"])
@pytest.mark.parametrize("length,scale", [(4, 2), (16, 2), (23, 1.7), (40, 0.5), (100, 3),
                                          (256, 0.75)])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_row_blocks_match_the_scalar_loop(isa, mode, length, scale, adjoint, threads):
    """Bit for bit, on row counts around the blocks of 16, 8 and 4, lengths that are not
    multiples of 16 or 8 (the transposes' masked tails), signed zeros, infinities, NaN."""
    if _resample.isa_available() < isa:
        pytest.skip("the CPU lacks this pass's instructions")
    rng = np.random.default_rng(length + int(10 * scale) + adjoint)
    t = _last_table(mode, (length,), scale, adjoint)
    n_in = length if not adjoint else t.n_in
    for rows in (8, 16, 37, 53):
        x = rng.standard_normal((rows, n_in)).astype(np.float32)
        x[0, 0], x[1, -1], x[2, n_in // 2] = -0.0, np.inf, np.nan
        x[3] = -0.0
        scalar = np.empty((rows, t.start.size), np.float32)
        blocked = np.empty_like(scalar)
        _resample.apply_last(x, scalar, t.start, t.ntap, t.weights, threads, 0)
        _resample.apply_last(x, blocked, t.start, t.ntap, t.weights, threads, isa)
        np.testing.assert_array_equal(blocked.view(np.int32), scalar.view(np.int32))


@needs_avx512
@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "lanczos3", "area", "nearest"])
@pytest.mark.parametrize("length,scale", [(4, 2), (23, 1.7), (40, 0.5), (9, 3)])
@pytest.mark.parametrize("adjoint", [False, True])
@pytest.mark.parametrize("width", [1, 16, 21, 40])  # whole vectors and masked tails
def test_row_sums_match_the_scalar_loop(mode, length, scale, adjoint, width):
    """apply_mid bit for bit: tap counts 0-8 (odd and even), signed zeros, inf, NaN."""
    rng = np.random.default_rng(length + width + adjoint)
    t = _last_table(mode, (length,), scale, adjoint)
    x = rng.standard_normal((3, t.n_in, width)).astype(np.float32)
    x[0, 0, 0], x[1, -1, -1], x[2, t.n_in // 2, 0] = -0.0, np.inf, np.nan
    x[0, 1] = -0.0
    scalar = np.empty((3, t.start.size, width), np.float32)
    vector = np.empty_like(scalar)
    _resample.apply_mid(x, scalar, t.start, t.ntap, t.weights, 2, 0)
    _resample.apply_mid(x, vector, t.start, t.ntap, t.weights, 2, 2)
    np.testing.assert_array_equal(vector.view(np.int32), scalar.view(np.int32))


def test_rows_longer_than_the_scratch_limit_give_the_scalar_bits():
    """Rows over SB_RS16_MAX_LEN inputs, asked for every vector form: the same values."""
    t = _last_table("bilinear", (300,), 2, False)  # 300 > SB_RS16_MAX_LEN inputs
    x = np.random.default_rng(0).standard_normal((32, 300)).astype(np.float32)
    a, b = (np.empty((32, t.start.size), np.float32) for _ in range(2))
    _resample.apply_last(x, a, t.start, t.ntap, t.weights, 2, 0)
    for isa in (1, 2):
        _resample.apply_last(x, b, t.start, t.ntap, t.weights, 2, isa)
        np.testing.assert_array_equal(a, b)


def test_every_simd_path_gives_the_same_resize():
    """The route does not depend on the SIMD path, and neither do the values."""
    x = np.random.default_rng(1).standard_normal((2, 8, 12, 20)).astype(np.float32)
    g = np.random.default_rng(2).standard_normal((2, 8, 24, 40)).astype(np.float32)
    results = []
    for path in [p for p in ("avx512", "avx2", "portable") if p in simd.supported_paths()]:
        with simd.using(isa=path):
            assert dispatch.simd_code() == {"avx512": 2, "avx2": 1, "portable": 0}[path]
            results.append((resize(x, scale_factor=2, mode="bicubic"),
                            resize_adjoint(g, (12, 20), scale_factor=2, mode="bicubic")))
    for got in results[1:]:
        for a, b in zip(got, results[0], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("isa", [2, 1])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("sizes", [((60, 60), (90, 90)), ((5, 7), (13, 20)), ((30, 40), (50, 17)),
                                   ((3, 100), (4, 300))])
@pytest.mark.parametrize("threads", [1, 2])
def test_nearest_adjoint_row_blocks_match_the_scalar_loop(isa, mode, sizes, threads):
    """The nearest adjoint's column sums by blocks of 16 / 8 input rows: bit for bit the
    scalar ranges, on input row counts around the blocks, ranges of 0-3 columns, rows
    longer than the pass takes (300), signed zeros (0 + -0 is +0), infinities, NaN."""
    if _resample.isa_available() < isa:
        pytest.skip("the CPU lacks this pass's instructions")
    in_size, out_size = sizes
    rng = np.random.default_rng(sum(in_size) + sum(out_size))
    g = rng.standard_normal((2, 3, *out_size)).astype(np.float32)
    g[0, 0, 0, :2], g[0, 1, 1, -1], g[1, 2, 2, 3] = -0.0, np.inf, np.nan
    g[1, 0, 5 % out_size[0]] = -0.0
    plan = make_plan(in_size, out_size, None, mode, None, False, None, lead=6, itemsize=4)
    step = dispatch._nearest_steps(g.shape, g.dtype, plan, True)
    x = g.reshape(step.in_view)
    scalar, blocked = (np.empty(step.out_view, np.float32) for _ in range(2))
    step.kernel(x, scalar, *step.args, threads, 0)
    step.kernel(x, blocked, *step.args, threads, isa)
    np.testing.assert_array_equal(blocked.view(np.int32), scalar.view(np.int32))
    reference = np.zeros((6, *in_size))  # every (output, input) pair the forward reads
    fwd_rows, fwd_cols = dispatch.index_maps(dispatch.tables_for(plan, g.dtype, False))
    np.add.at(reference, (slice(None), fwd_rows[:, None], fwd_cols[None, :]),
              g.reshape(6, *out_size).astype(np.float64))
    finite = np.isfinite(reference)
    np.testing.assert_allclose(blocked.reshape(reference.shape)[finite], reference[finite],
                               rtol=1e-5, atol=1e-5)
