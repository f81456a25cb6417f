"""The convolutions' float32 GEMM (``sandbox.array._gemm``, ``pyx/sgemm_avx512.h``).

Checked against numpy in float64 over shapes that hit every edge of the blocking
(partial 12-row and 32-column tiles, K longer than one 256 block, K = 0), every
operand layout (transposed views, rows adjacent in memory), accumulation, the
dot-product form, batched points, and bitwise reproducibility.
"""

import numpy as np
import pytest

from sandbox._C import _gemm as kernel
from sandbox.array import _gemm

needs_avx512 = pytest.mark.skipif(not kernel.available(), reason="CPU without AVX-512")


def _operand(rng, shape, layout):
    """A float32 array of ``shape`` (.., rows, cols) stored row-major or with rows adjacent."""
    if layout == "rows":
        return rng.standard_normal(shape).astype(np.float32)
    flipped = rng.standard_normal((*shape[:-2], shape[-1], shape[-2])).astype(np.float32)
    return flipped.swapaxes(-1, -2)


def _check(got, a, b, base=None):
    exact = np.matmul(a.astype(np.float64), b.astype(np.float64))
    if base is not None:
        exact = exact + base
    scale = max(1.0, float(np.abs(exact).max(initial=0.0)))
    k = a.shape[-1]
    np.testing.assert_allclose(got, exact, rtol=0, atol=4e-7 * scale * max(1, np.sqrt(k)))


SHAPES = [(1, 1, 1), (12, 7, 32), (13, 5, 33), (25, 300, 65), (144, 256, 64), (150, 600, 70),
          (16, 16, 16), (64, 2304, 64), (3, 1000, 2), (7, 0, 9)]


@needs_avx512
@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("a_layout", ["rows", "cols"])
@pytest.mark.parametrize("b_layout", ["rows", "cols"])
def test_packed_kernel_matches_float64(m, k, n, a_layout, b_layout, rng):
    a = _operand(rng, (2, m, k), a_layout)
    b = _operand(rng, (2, k, n), b_layout)
    out = np.full((2, m, n), np.nan, dtype=np.float32)
    assert kernel.matmul(a, b, out) is None  # it raises MemoryError when it cannot run
    _check(out, a, b)
    base = rng.standard_normal((2, m, n)).astype(np.float32)
    acc = base.copy()
    assert kernel.matmul(a, b, acc, True) is None  # it raises MemoryError when it cannot run
    _check(acc, a, b, base.astype(np.float64))


@needs_avx512
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (4, 16, 4), (5, 17, 3), (16, 4096, 9), (9, 33, 70)])
def test_dot_form_matches_float64(m, k, n, rng):
    a = rng.standard_normal((3, m, k)).astype(np.float32)
    bt = rng.standard_normal((3, n, k)).astype(np.float32)
    out = np.full((3, m, n), np.nan, dtype=np.float32)
    kernel.matmul_dot(a, bt, out)
    _check(out, a, bt.swapaxes(-1, -2))
    base = out.copy()
    kernel.matmul_dot(a, bt, out, True)
    np.testing.assert_allclose(out, 2 * base, rtol=1e-6, atol=1e-6)


@needs_avx512
def test_results_do_not_depend_on_where_a_tile_starts(rng):
    """Each C element is the same sum in the same order wherever it falls in the
    blocking: the rows of a product equal the product of those rows, packed or read in
    place (the kernel itself, whatever SANDBOX_GEMM selects for the convolutions)."""
    a = rng.standard_normal((1, 50, 700)).astype(np.float32)
    b = rng.standard_normal((1, 700, 90)).astype(np.float32)
    full = np.empty((1, 50, 90), np.float32)
    assert kernel.matmul(a, b, full) is None  # it raises MemoryError when it cannot run
    part = np.empty((1, 37, 90), np.float32)
    assert kernel.matmul(a[:, 13:], b, part) is None  # it raises MemoryError when it cannot run
    assert np.array_equal(full[:, 13:], part)
    adjacent = np.ascontiguousarray(a.swapaxes(1, 2)).swapaxes(1, 2)  # rows adjacent: in place
    again = np.empty_like(full)
    assert kernel.matmul(adjacent, b, again) is None  # it raises MemoryError when it cannot run
    assert np.array_equal(full, again)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_public_matmul_any_dtype_and_layout(dtype, rng):
    a = rng.standard_normal((40, 30)).astype(dtype)
    b = rng.standard_normal((50, 30)).astype(dtype).T
    out = np.empty((40, 50), dtype)
    _gemm.matmul(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    _gemm.matmul(a, b, out, accumulate=True)
    np.testing.assert_allclose(out, 2 * (a.astype(np.float64) @ b), rtol=1e-5, atol=1e-5)
    assert _gemm.lhs(a).shape == a.shape
    np.testing.assert_array_equal(_gemm.lhs(a), a)


def test_grouped_matmul_matches_blocks(rng):
    a = rng.standard_normal((6, 8)).astype(np.float32)
    b = rng.standard_normal((10, 8)).astype(np.float32)
    out = np.empty((6, 5), np.float32)
    _gemm.grouped_matmul(a, b, out, groups=2, trans_b=True)
    np.testing.assert_allclose(out[:3], a[:3] @ b[:5].T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[3:], a[3:] @ b[5:].T, rtol=1e-5, atol=1e-5)


def test_transpose_kernel(rng):
    src = rng.standard_normal((3, 45, 70)).astype(np.float32)
    dst = np.empty((3, 70, 45), np.float32)
    kernel.transpose(src, dst)
    assert np.array_equal(dst, src.swapaxes(1, 2))


def test_backend_env_switch(monkeypatch):
    """``SANDBOX_GEMM`` (read once, by sandbox.runtime.simd) and ``simd.using(gemm=...)``
    choose the convolutions' float32 GEMM."""
    from sandbox.runtime import simd

    assert simd.from_environment({"SANDBOX_GEMM": "blas"}).gemm == "blas"
    with pytest.raises(ValueError, match="SANDBOX_GEMM must be one of auto, avx512, avx2, "
                                         "blas"):
        simd.from_environment({"SANDBOX_GEMM": "fastest"})
    with simd.using(gemm="blas"):
        assert _gemm.backend() == "blas"
    assert _gemm.backend() == ("avx512" if kernel.available() else "blas")
