"""sandbox.array.copy and .arith: the threaded concatenation, contiguous copy and sum are
numpy's, byte for byte."""

import numpy as np
import pytest

import sandbox
from sandbox.array import arith
from sandbox.array import copy as copy_mod
from sandbox.array.arith import add
from sandbox.array.copy import concatenate, contiguous, copy


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8, np.bool_])
@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_equals_numpy_for_every_axis_and_dtype(dtype, axis):
    rng = np.random.default_rng(axis)
    shape = [4, 3, 64, 65]
    parts = []
    for k in (2, 5):  # large enough for the threaded copy
        s = list(shape)
        s[axis] = k
        parts.append((rng.standard_normal(s) * 10).astype(dtype))
    want = np.concatenate(parts, axis=axis)
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            got = concatenate(parts, axis)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("width", [65536, 3 * 65536 + 1000, 100])
def test_a_long_row_is_copied_in_pieces(width):
    """A batch-1 concatenation has one row an input (a 16-channel 64x64 map: 256 KiB);
    the row copy cuts rows into 64 KiB pieces shared among the threads: numpy's bytes for
    1-3 threads, the last piece short or not, at an offset into the destination."""
    from sandbox._C import _elementwise

    rng = np.random.default_rng(width)
    src = rng.integers(0, 256, (2, width), dtype=np.uint8)
    for threads in (1, 2, 3):
        dst = np.zeros((2, width + 7), np.uint8)
        _elementwise.copy_rows(src, dst, 5, threads)
        np.testing.assert_array_equal(dst[:, 5:5 + width], src)
        assert not dst[:, :5].any() and not dst[:, 5 + width:].any()
    parts = [rng.standard_normal((1, 16, 64, 64)).astype(np.float32),
             rng.standard_normal((1, 13, 64, 64)).astype(np.float32)]
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            got = concatenate(parts, 1)
        np.testing.assert_array_equal(got, np.concatenate(parts, 1))


def test_non_contiguous_mixed_and_bad_inputs_take_numpy():
    a = np.arange(2 * 8 * 300 * 300, dtype=np.float32).reshape(2, 8, 300, 300)
    b = a[:, :, ::2]  # not contiguous
    np.testing.assert_array_equal(concatenate([b, b], 1), np.concatenate([b, b], 1))
    mixed = [a[:, :1], a[:, :1].astype(np.float64)]
    np.testing.assert_array_equal(concatenate(mixed, 1), np.concatenate(mixed, 1))
    with pytest.raises(ValueError):
        concatenate([a, a[:, :, :5]], 1)


def _strided_cases():
    rng = np.random.default_rng(7)
    big = rng.standard_normal((4, 24, 64, 65)).astype(np.float32)
    yield big[:, 8:]  # a concatenation gradient's part: the row copy
    yield big[:, :5]
    yield big[1:3, 3:21, :, :]
    yield big[::-1, 4:]  # rows at a negative stride
    yield big[:, 2:, 1:]  # rows of rows: the leading axes do not fold (numpy)
    yield big[:, :, :, ::2]  # no contiguous run at all (numpy)
    yield big.transpose(0, 1, 3, 2)
    yield big.astype(np.float64)[:, 16:]
    yield (big > 0)[:, 3:]  # any dtype
    yield big[:1, 1:, :2, :2]  # small: numpy
    yield big[:, 3:3]  # empty


@pytest.mark.parametrize("case", range(11))
def test_contiguous_equals_ascontiguousarray(case):
    a = list(_strided_cases())[case]
    want = np.ascontiguousarray(a)
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            got = contiguous(a)
        assert got.flags.c_contiguous and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
        assert not np.shares_memory(got, a)


def _first_shapes(monkeypatch, module, name):
    """The shape of the first argument of every call of ``module.name``."""
    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *args: calls.append(args[0].shape) or real(*args))
    return calls


def test_contiguous_takes_the_row_copy_for_a_concatenation_part(monkeypatch):
    calls = _first_shapes(monkeypatch, copy_mod._elementwise, "copy_rows")
    g = np.zeros((8, 48, 64, 64), dtype=np.float32)
    contiguous(g[:, 16:])
    assert calls == [(8, 32 * 64 * 64 * 4)]
    contiguous(g[:, :, :, ::2])  # not rows: numpy's copy
    assert len(calls) == 1


def test_contiguous_returns_a_contiguous_array_itself():
    a = np.ones((3, 4), dtype=np.float32)
    assert contiguous(a) is a


@pytest.mark.parametrize("shape, dtype", [
    ((8, 16, 64, 64), np.float32),  # 2 MiB: 64 KiB blocks on every thread
    ((3, 70001), np.float64),  # a tail after the whole blocks
    ((5, 7), np.float32),  # small: numpy's copy
    ((0, 4), np.float32),
])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_copy_is_a_new_array_with_the_same_bytes(shape, dtype, threads):
    """copy() always returns a new C-contiguous array, byte for byte numpy's copy, on any
    thread count (the leaf's copy of a gradient it may not keep)."""
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    previous = sandbox.get_num_threads()
    sandbox.set_num_threads(threads)
    try:
        b = copy(a)
    finally:
        sandbox.set_num_threads(previous)
    assert b is not a and not np.shares_memory(a, b) and b.flags.c_contiguous
    assert b.tobytes() == a.tobytes()
    strided = np.asfortranarray(a)
    c = copy(strided)
    assert c is not strided and c.flags.c_contiguous and c.tobytes() == a.tobytes()


@pytest.mark.parametrize("op", ["add", "mul"])
def test_a_leaf_owns_its_gradient_of_a_sum_and_a_product(op):
    """x + x hands the leaf the seed twice (copied, then added into the copy); x * x two
    new products (kept, then added): either way .grad is the right sum and shares no
    memory with the seed, which stays as it was."""
    a = np.random.default_rng(1).standard_normal((8, 16, 64, 64)).astype(np.float32)
    seed = np.random.default_rng(2).standard_normal(a.shape).astype(np.float32)
    kept = seed.copy()
    x = sandbox.tensor(a, requires_grad=True)
    y = x + x if op == "add" else x * x
    y.backward(sandbox.from_numpy(seed))
    expected = seed + seed if op == "add" else seed * a + seed * a
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    assert not np.shares_memory(x.grad.numpy(), seed)
    np.testing.assert_array_equal(seed, kept)


def _sum_cases():
    rng = np.random.default_rng(3)
    big = rng.standard_normal((8, 48, 64, 64)).astype(np.float32)
    other = rng.standard_normal((8, 32, 64, 64)).astype(np.float32)
    yield big[:, 16:], other  # a skip connection's two gradients: the row kernel
    yield other, big[:, :32]
    yield big[:, :32], big[:, 16:]  # both strided
    yield big[:, :, 1:], big[:, :, :-1]  # rows of another length
    yield big[:, :, :, ::2], big[:, :, :, 1::2]  # no contiguous rows: numpy
    yield big.astype(np.float64)[:, 8:], big.astype(np.float64)[:, :40]
    yield other[:1, :2], other[1:2, :2]  # small: numpy
    yield other, other.astype(np.float64)  # mixed dtypes: numpy's promotion


@pytest.mark.parametrize("case", range(8))
@pytest.mark.parametrize("in_place", [False, True])
def test_add_equals_numpy(case, in_place):
    a, b = list(_sum_cases())[case]
    want = a + b
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            if in_place:
                if want.dtype != a.dtype:
                    continue
                out = np.array(a)
                got = add(out, b, out=out)
                assert got is out
            else:
                got = add(a, b)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_add_takes_the_row_kernel_for_a_strided_gradient(monkeypatch):
    calls = []
    real = arith._elementwise.arith_rows
    monkeypatch.setattr(arith._elementwise, "arith_rows",
                        lambda op, *args: calls.append((op, args[0].shape)) or real(op, *args))
    g = np.ones((8, 48, 64, 64), dtype=np.float32)
    got = add(g[:, 16:], np.ones((8, 32, 64, 64), dtype=np.float32))
    assert calls == [(arith._elementwise.ADD, (8, 32 * 64 * 64))] and np.all(got == 2)


@pytest.mark.parametrize("ufunc", [np.add, np.subtract, np.multiply, np.true_divide])
@pytest.mark.parametrize("case", range(8))
def test_binary_equals_numpy_bitwise(ufunc, case):
    """Each operation on every thread gives numpy's bits (signed zeros, infinities and
    NaN included: division by the zeros below), in place into either operand too;
    operands the kernel does not take (broadcasting, small, mixed dtypes) go to numpy."""
    a, b = list(_sum_cases())[case]
    a, b = np.array(a), np.array(b)
    if b.dtype.kind == "f" and b.size > 4:
        b.reshape(-1)[:3] = [0.0, -0.0, np.inf]
    with np.errstate(all="ignore"):
        want = ufunc(a, b)
        for threads in (1, 2, 3):
            with sandbox.num_threads(threads):
                got = arith.binary(ufunc, a, b)
                np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
                if want.dtype == a.dtype and want.shape == a.shape:
                    out = np.array(a)
                    assert arith.binary(ufunc, out, b, out=out) is out
                    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))
    assert arith.binary(np.maximum, a[:1], a[:1]).shape == a[:1].shape  # not one of the four


def test_tensor_arithmetic_takes_the_threaded_kernel(monkeypatch):
    """``a * b`` of large same-shape tensors, and its backward's products, run the row
    kernel; a broadcast operand takes numpy's."""
    from sandbox import Tensor

    ops = []
    real = arith._elementwise.arith_rows
    monkeypatch.setattr(arith._elementwise, "arith_rows",
                        lambda op, *args: ops.append(op) or real(op, *args))
    rng = np.random.default_rng(0)
    a = Tensor(rng.standard_normal((8, 16, 64, 64)).astype(np.float32), requires_grad=True)
    b = Tensor(rng.standard_normal((8, 16, 64, 64)).astype(np.float32), requires_grad=True)
    y = a * b
    np.testing.assert_array_equal(y.numpy(), a.numpy() * b.numpy())
    y.backward(Tensor(np.ones(y.shape, np.float32)))
    np.testing.assert_array_equal(a.grad.numpy(), b.numpy())
    assert ops == [arith._elementwise.MUL] * 3  # the forward, then one product each
    ops.clear()
    (a * Tensor(np.float32(2.0))).numpy()
    assert ops == []


@pytest.mark.parametrize("values, shape", [
    ((8, 16, 1, 1), (8, 16, 64, 64)),  # a global average pool's gradient, expanded
    ((1, 16, 1, 1), (8, 16, 64, 64)),  # a leading axis broadcast too
    ((3, 1), (3, 200001)),  # rows longer than a block, with a tail
    ((1,), (600, 700)),  # one value everywhere (a whole-array mean's gradient)
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_contiguous_fills_a_broadcast_on_every_thread(values, shape, dtype, monkeypatch):
    """A broadcast whose trailing axes repeat one value (the gradient of a mean or a sum
    over them) is filled by rows on every thread, equal to numpy's copy."""
    calls = _first_shapes(monkeypatch, copy_mod._elementwise, "fill_rows")
    v = np.random.default_rng(2).standard_normal(values).astype(dtype)
    a = np.broadcast_to(v, shape)
    want = np.ascontiguousarray(a)
    for threads in (1, 2, 3):
        with sandbox.num_threads(threads):
            got, new = contiguous(a), copy(a)
        for out in (got, new):
            assert out.flags.c_contiguous and out.dtype == want.dtype
            np.testing.assert_array_equal(out, want)
    assert len(calls) == 6
    contiguous(np.broadcast_to(v.astype(np.int32), shape))  # another dtype: numpy's copy
    contiguous(np.broadcast_to(np.ones((1, 64, 64), dtype), (8, 64, 64)))  # not trailing
    strided = np.ones((8, 16, 64, 2), dtype)[..., :1]  # a trailing 1, nothing repeated
    np.testing.assert_array_equal(contiguous(strided), np.ascontiguousarray(strided))
    assert len(calls) == 6
