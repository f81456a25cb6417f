"""The convolutions' float32 GEMMs (``sandbox.array._gemm``, ``pyx/sgemm_avx512.h``,
``pyx/sgemm_avx2.h``).

Each kernel is checked against numpy in float64 over shapes that hit every edge of
its blocking (partial 12-row / 32-column and 4-row / 24-column tiles, K longer than
one 256 block, more rows than one MC block, more columns than one NC block, K = 0
and 1), every operand layout (transposed views, rows adjacent in memory, strided
slices), accumulation, the dot-product form, batched points, and bitwise
reproducibility (tile positions, thread counts).
"""

import os

import numpy as np
import pytest

from sandbox._C import _gemm as kernel
from sandbox.array import _gemm

needs_avx512 = pytest.mark.skipif(not kernel.available(), reason="CPU without AVX-512")
needs_avx2 = pytest.mark.skipif(not kernel.avx2_available(), reason="CPU without AVX2+FMA")
#: the packed and the dot form of each kernel, skipped where the CPU cannot run it
KERNELS = [pytest.param((kernel.matmul, kernel.matmul_dot), marks=needs_avx512, id="avx512"),
           pytest.param((kernel.matmul_avx2, kernel.matmul_dot_avx2), marks=needs_avx2,
                        id="avx2")]


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
          (16, 16, 16), (64, 2304, 64), (3, 1000, 2), (7, 0, 9), (4, 9, 24), (5, 1, 25),
          (97, 260, 1030)]


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("a_layout", ["rows", "cols"])
@pytest.mark.parametrize("b_layout", ["rows", "cols"])
def test_packed_kernel_matches_float64(kernels, m, k, n, a_layout, b_layout, rng):
    matmul = kernels[0]
    a = _operand(rng, (2, m, k), a_layout)
    b = _operand(rng, (2, k, n), b_layout)
    out = np.full((2, m, n), np.nan, dtype=np.float32)
    assert matmul(a, b, out) is None  # it raises MemoryError when it cannot run
    _check(out, a, b)
    base = rng.standard_normal((2, m, n)).astype(np.float32)
    acc = base.copy()
    assert matmul(a, b, acc, True) is None  # it raises MemoryError when it cannot run
    _check(acc, a, b, base.astype(np.float64))


@pytest.mark.parametrize("kernels", KERNELS)
def test_packed_kernel_reads_strided_views(kernels, rng):
    """Slices with steps along both axes of A and B, and an output with a padded row
    stride (only its column stride must be 1)."""
    matmul = kernels[0]
    a = rng.standard_normal((2, 60, 90)).astype(np.float32)[:, ::2, 1::3]   # (2, 30, 30)
    b = rng.standard_normal((2, 70, 100)).astype(np.float32)[:, 5:65:2, ::2]  # (2, 30, 50)
    big = np.full((2, 30, 64), np.nan, np.float32)
    out = big[:, :, 7:57]
    assert matmul(a, b, out) is None
    _check(out, a, b)
    assert np.isnan(big[:, :, :7]).all() and np.isnan(big[:, :, 57:]).all()


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (4, 16, 4), (5, 17, 3), (16, 4096, 9), (9, 33, 70),
                                   (7, 8, 5), (3, 0, 4)])
def test_dot_form_matches_float64(kernels, m, k, n, rng):
    dot = kernels[1]
    a = rng.standard_normal((3, m, k)).astype(np.float32)
    bt = rng.standard_normal((3, n, k)).astype(np.float32)
    out = np.full((3, m, n), np.nan, dtype=np.float32)
    dot(a, bt, out)
    _check(out, a, bt.swapaxes(-1, -2))
    base = out.copy()
    dot(a, bt, out, True)
    np.testing.assert_allclose(out, 2 * base, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernels", KERNELS)
def test_results_do_not_depend_on_where_a_tile_starts(kernels, rng):
    """Each C element is the same sum in the same order wherever it falls in the
    blocking: the rows of a product equal the product of those rows, packed or read in
    place (the kernel itself, whatever SANDBOX_GEMM selects for the convolutions); and
    so do the columns, and a block of the dot form."""
    matmul, dot = kernels
    a = rng.standard_normal((1, 50, 700)).astype(np.float32)
    b = rng.standard_normal((1, 700, 90)).astype(np.float32)
    full = np.empty((1, 50, 90), np.float32)
    assert matmul(a, b, full) is None  # it raises MemoryError when it cannot run
    part = np.empty((1, 37, 90), np.float32)
    assert matmul(a[:, 13:], b, part) is None  # it raises MemoryError when it cannot run
    assert np.array_equal(full[:, 13:], part)
    cols = np.empty((1, 50, 61), np.float32)
    assert matmul(a, b[:, :, 29:], cols) is None
    assert np.array_equal(full[:, :, 29:], cols)
    adjacent = np.ascontiguousarray(a.swapaxes(1, 2)).swapaxes(1, 2)  # rows adjacent: in place
    again = np.empty_like(full)
    assert matmul(adjacent, b, again) is None  # it raises MemoryError when it cannot run
    assert np.array_equal(full, again)
    bt = np.ascontiguousarray(b.swapaxes(1, 2))
    d_full, d_part = np.empty((1, 50, 90), np.float32), np.empty((1, 45, 83), np.float32)
    dot(a, bt, d_full)
    dot(a[:, 5:], bt[:, 7:], d_part)
    assert np.array_equal(d_full[:, 5:, 7:], d_part)


@pytest.mark.parametrize("kernels", KERNELS)
@pytest.mark.parametrize("m", [1, 4, 8, 12, 13, 22])
@pytest.mark.parametrize("n", [1, 5, 8, 13, 16, 32, 40, 56, 64])
@pytest.mark.parametrize("a_layout", ["rows", "cols"])
def test_narrow_last_panels_give_the_full_tiles_bits(kernels, m, n, a_layout, rng):
    """Products whose last panel of B has at most 16 columns (a Winograd point's 32
    tiles on 4x4 maps) run narrow micro-kernels (4 x 16, 8 x 8 over two panels of A,
    4 x 8): every element is the full 4 x 24 tile's sum, bit for bit, whatever the rows,
    packed or read in place (k <= 64 reads B in place too), and added into C."""
    matmul = kernels[0]
    for k in (40, 300):
        a = _operand(rng, (1, m, k), a_layout)
        b = rng.standard_normal((1, k, 72)).astype(np.float32)  # 3 full panels
        full = np.empty((1, m, 72), np.float32)
        assert matmul(a, b, full) is None  # it raises MemoryError when it cannot run
        part = np.full((1, m, n), np.nan, np.float32)
        assert matmul(a, b[:, :, 72 - n:], part) is None
        assert np.array_equal(full[:, :, 72 - n:], part)
        full_acc = rng.standard_normal((1, m, 72)).astype(np.float32)
        acc = full_acc[:, :, 72 - n:].copy()
        assert matmul(a, b, full_acc, True) is None
        assert matmul(a, b[:, :, 72 - n:], acc, True) is None
        assert np.array_equal(full_acc[:, :, 72 - n:], acc)
        _check(part, a, b[:, :, 72 - n:])


@pytest.mark.parametrize("kernels", KERNELS)
def test_results_do_not_depend_on_the_thread_count(kernels, rng):
    """A batch of products (the Winograd points) on 1, 2 and 3 threads: bitwise equal."""
    matmul, dot = kernels
    a = rng.standard_normal((7, 40, 300)).astype(np.float32)
    b = rng.standard_normal((7, 300, 75)).astype(np.float32)
    base = rng.standard_normal((7, 40, 75)).astype(np.float32)
    results = []
    for threads in (1, 2, 3):
        out, acc, dots = np.empty_like(base), base.copy(), np.empty_like(base)
        matmul(a, b, out, num_threads=threads)
        matmul(a, b, acc, True, threads)
        dot(a, np.ascontiguousarray(b.swapaxes(1, 2)), dots, num_threads=threads)
        results.append((out, acc, dots))
    for other in results[1:]:
        for x, y in zip(results[0], other, strict=True):
            assert np.array_equal(x, y)


@needs_avx512
@needs_avx2
def test_avx2_packed_products_equal_the_avx512_ones(rng):
    """Both kernels sum every element in one FMA chain per block of 256 k, the blocks
    added to C in order: their packed products are bitwise equal (the dot forms sum in
    16 and 8 lanes and may differ in the last bits)."""
    for m, k, n in [(13, 5, 33), (150, 600, 70), (97, 260, 1030)]:
        a = rng.standard_normal((2, m, k)).astype(np.float32)
        b = rng.standard_normal((2, n, k)).astype(np.float32).swapaxes(1, 2)
        base = rng.standard_normal((2, m, n)).astype(np.float32)
        x512, x2 = base.copy(), base.copy()
        kernel.matmul(a, b, x512, True)
        kernel.matmul_avx2(a, b, x2, True)
        assert np.array_equal(x512, x2)


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
    # the default: the AVX-512 kernel where the CPU has it, else the AVX2 one (a CPU
    # with AVX2 and FMA but no AVX-512), else BLAS; what $SANDBOX_ISA / $SANDBOX_GEMM say
    # where they are set (a run of the suite on another path)
    if "SANDBOX_ISA" in os.environ or "SANDBOX_GEMM" in os.environ:
        expected = simd.from_environment(os.environ).gemm
    elif kernel.available():
        expected = "avx512"
    else:
        expected = "avx2" if simd.avx2_gemm_available() else "blas"
    assert _gemm.backend() == expected


@needs_avx2
@pytest.mark.parametrize("shape", [(40, 300, 50), (16, 256, 16), (4, 16, 40)])
def test_public_matmul_runs_the_avx2_kernel_when_selected(shape, rng):
    """``gemm="avx2"``: float32 products go to the AVX2 kernel (packed or dot form by the
    same size rules as the AVX-512 one, BLAS below them), and ``lhs`` leaves A as it is."""
    from sandbox.runtime import simd

    m, k, n = shape
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32).T
    out = np.empty((m, n), np.float32)
    with simd.using(isa="avx2", gemm="avx2"):  # whatever path $SANDBOX_ISA put in force
        assert _gemm.backend() == "avx2"
        _gemm.matmul(a, b, out)
        assert _gemm.lhs(a) is a
    want = np.empty((1, m, n), np.float32)
    if k >= 2 * min(m, n):
        kernel.matmul_dot_avx2(a[None], np.ascontiguousarray(b.T)[None], want)
    elif m >= 8 and k >= 8:
        kernel.matmul_avx2(a[None], b[None], want)
    else:
        np.matmul(a, b, out=want[0])
    assert np.array_equal(out, want[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("groups, rows, k, n", [(32, 1, 9, 500), (4, 8, 36, 100), (3, 5, 7, 9)])
@pytest.mark.parametrize("trans_a", [False, True])
@pytest.mark.parametrize("trans_b", [False, True])
def test_grouped_matmul_batches_the_groups_with_the_loops_bits(dtype, groups, rows, k, n,
                                                               trans_a, trans_b):
    """Contiguous operands take one batched call (a depthwise convolution's groups), with
    the bits of one matmul call a group, and the product's values."""
    from sandbox.array._gemm import grouped_matmul, matmul

    rng = np.random.default_rng(groups + rows)
    a = rng.standard_normal((groups * (k if trans_a else rows), rows if trans_a else k))
    b = rng.standard_normal((groups * (n if trans_b else k), k if trans_b else n))
    a, b = a.astype(dtype), b.astype(dtype)
    batched = np.empty((groups * rows, n), dtype)
    grouped_matmul(a, b, batched, groups, trans_a, trans_b)
    looped = np.empty_like(batched)
    ra, rb = a.shape[0] // groups, b.shape[0] // groups
    for g in range(groups):
        ag, bg = a[g * ra:(g + 1) * ra], b[g * rb:(g + 1) * rb]
        matmul(ag.T if trans_a else ag, bg.T if trans_b else bg,
               looped[g * rows:(g + 1) * rows])
    np.testing.assert_array_equal(batched, looped)
    want = np.concatenate([
        (a.reshape(groups, -1, a.shape[1])[i].T if trans_a else
         a.reshape(groups, -1, a.shape[1])[i]).astype(np.float64)
        @ (b.reshape(groups, -1, b.shape[1])[i].T if trans_b else
           b.reshape(groups, -1, b.shape[1])[i]).astype(np.float64)
        for i in range(groups)])
    np.testing.assert_allclose(batched, want, rtol=1e-4, atol=1e-4)
