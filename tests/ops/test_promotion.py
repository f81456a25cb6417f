"""PyTorch's type promotion, checked against torch over a table of dtypes and ops
(issue 22, item 5): one ``result_type`` serves every binary op."""

import numpy as np
import pytest

import sandbox

DTYPES = ["bool", "uint8", "int32", "int64", "float32", "float64"]
SCALARS = [True, 3, -2, 2.5]

BINARY = {
    "add": lambda lib, a, b: a + b,
    "sub": lambda lib, a, b: a - b,
    "mul": lambda lib, a, b: a * b,
    "truediv": lambda lib, a, b: a / b,
    "floordiv": lambda lib, a, b: a // b,
    "mod": lambda lib, a, b: a % b,
    "lt": lambda lib, a, b: a < b,
    "eq": lambda lib, a, b: a == b,
    "ge": lambda lib, a, b: a >= b,
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "where": lambda lib, a, b: lib.where(lib.tensor([True, False, True]), a, b),
}
UNARY = ["exp", "sqrt", "log", "sigmoid", "tanh", "log1p", "abs", "neg"]


def _values(dtype):
    if dtype == "bool":
        return np.array([True, False, True])
    if dtype == "uint8":
        return np.array([3, 7, 250], dtype=dtype)
    if "int" in dtype:
        return np.array([3, -7, 5], dtype=dtype)
    return np.array([1.5, -2.25, 4.0], dtype=dtype)


def _skip(torch, op, a, b):
    """Combinations torch itself refuses (bool arithmetic, integer division by zero)."""
    kinds = {np.asarray(v).dtype.kind for v in (a, b)}
    if op in ("sub",) and kinds <= {"b"}:
        return True
    if op in ("floordiv", "mod") and np.any(np.asarray(b) == 0) and "f" not in kinds:
        return True
    return op in ("floordiv", "mod") and kinds <= {"b"}


def _run(torch, op, a, b, a_scalar=False, b_scalar=False):
    ta = a if a_scalar else torch.tensor(a)
    tb = b if b_scalar else torch.tensor(b)
    sa = a if a_scalar else sandbox.tensor(a)
    sb = b if b_scalar else sandbox.tensor(b)
    try:
        ref = BINARY[op](torch, ta, tb)
    except (RuntimeError, TypeError):
        return None
    ours = BINARY[op](sandbox, sa, sb)
    return ours, ref


def _same(ours, ref, what):
    ref_dtype = str(ref.dtype).replace("torch.", "")
    assert str(ours.dtype) == ref_dtype, what
    np.testing.assert_allclose(ours.numpy().astype(np.float64), ref.numpy().astype(np.float64),
                               rtol=1e-6, atol=1e-6, err_msg=what)


pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # x / 0 and the like


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("da", DTYPES)
def test_tensor_tensor_pairs_match_torch(torch, op, da):
    for db in DTYPES:
        a, b = _values(da), _values(db)
        if _skip(torch, op, a, b):
            continue
        got = _run(torch, op, a, b)
        if got is not None:
            _same(*got, f"{da} {op} {db}")


@pytest.mark.parametrize("op", sorted(set(BINARY) - {"maximum"}))
@pytest.mark.parametrize("da", DTYPES)
def test_tensor_scalar_pairs_match_torch(torch, op, da):
    for s in SCALARS:
        a = _values(da)
        for swap in (False, True):
            args = (s, a) if swap else (a, s)
            if _skip(torch, op, *args):
                continue
            got = _run(torch, op, *args, a_scalar=swap, b_scalar=not swap)
            if got is not None:
                _same(*got, f"{args[0]!r} {op} {args[1]!r} ({da})")


def test_zero_dim_tensors_do_not_upcast_dimensioned_ones(torch):
    for da, db in [("float32", "float64"), ("int32", "int64"), ("uint8", "int64"),
                   ("int32", "float64"), ("bool", "int32")]:
        a = _values(da)
        b0 = _values(db)[0]
        ours = sandbox.tensor(a) + sandbox.tensor(b0)
        ref = torch.tensor(a) + torch.tensor(b0)
        _same(ours, ref, f"{da} + 0-d {db}")


@pytest.mark.parametrize("name", UNARY)
def test_float_math_of_integers_gives_the_default_float(torch, name):
    for d in DTYPES:
        a = np.abs(_values(d)) if d != "bool" else _values(d)
        try:
            ref = getattr(torch.tensor(a), name)()
        except RuntimeError:
            continue
        ours = getattr(sandbox.tensor(a), name)()
        _same(ours, ref, f"{name}({d})")


def test_the_default_dtype_decides_python_floats_and_int_division(torch):
    sandbox.set_default_dtype(sandbox.float64)
    try:
        i = sandbox.tensor([1, 2])
        assert (i * 0.5).dtype == np.float64 and (i / 2).dtype == np.float64
        assert i.exp().dtype == np.float64 and sandbox.full((2,), 3.0).dtype == np.float64
        assert (sandbox.tensor([1.0], dtype=sandbox.float32) * 2.5).dtype == np.float32
    finally:
        sandbox.set_default_dtype(sandbox.float32)
    assert (sandbox.tensor([1, 2]) / 2).dtype == np.float32


def test_examples_from_the_issue(torch):
    i = sandbox.tensor([1, 2, 3])
    assert i.dtype == np.int64
    assert (i * 0.5).dtype == np.float32 and (i / 2).dtype == np.float32
    assert (i + sandbox.tensor([1.0, 2, 3])).dtype == np.float32
    assert i.exp().dtype == np.float32 and i.sqrt().dtype == np.float32
    assert (sandbox.tensor(np.int32([1])) + 3).dtype == np.int32
    assert (sandbox.tensor([1.0]) * 2.5).dtype == np.float32
    assert (sandbox.tensor([True]) + 3).dtype == np.int64
    assert sandbox.full((2,), 3).dtype == np.int64
    assert sandbox.full((2,), 3.0).dtype == np.float32
    assert sandbox.full((2,), True).dtype == np.bool_
    assert sandbox.result_type(sandbox.tensor([1]), 2.5) == np.float32
    assert sandbox.promote_types(np.int64, np.float32) == np.float32


def test_uint8_image_divided_by_255_feeds_conv2d(torch):
    import sandbox.functional as F

    img = np.random.default_rng(0).integers(0, 256, (1, 1, 8, 8), dtype=np.uint8)
    x = sandbox.tensor(img) / 255
    assert x.dtype == np.float32
    w = sandbox.randn(2, 1, 3, 3)
    out = F.conv2d(x, w, padding=1)
    ref = torch.nn.functional.conv2d(torch.tensor(img) / 255, torch.tensor(w.numpy()), padding=1)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-4, atol=1e-5)


def test_promotion_keeps_gradients_flowing_to_the_wider_operand(torch):
    a = sandbox.tensor([1.0, 2.0], requires_grad=True)  # float32
    b = sandbox.tensor([3.0, 4.0], dtype=sandbox.float64, requires_grad=True)
    out = a * b
    assert out.dtype == np.float64
    out.sum().backward()
    assert a.grad.dtype == np.float32 and b.grad.dtype == np.float64
    np.testing.assert_allclose(a.grad.numpy(), [3.0, 4.0])
    np.testing.assert_allclose(b.grad.numpy(), [1.0, 2.0])


def test_cat_and_stack_promote_as_torch(torch):
    for da, db in [("int64", "float32"), ("int32", "bool"), ("float32", "float64"),
                   ("uint8", "int32")]:
        a, b = _values(da), _values(db)
        for name in ("cat", "stack"):
            ours = getattr(sandbox, name)([sandbox.tensor(a), sandbox.tensor(b)])
            ref = getattr(torch, name)([torch.tensor(a), torch.tensor(b)])
            _same(ours, ref, f"{name}({da}, {db})")
    x = sandbox.tensor([1.0, 2.0], requires_grad=True)
    y = sandbox.cat([x, sandbox.tensor([3.0], dtype=sandbox.float64)])
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == np.float32 and x.grad.numpy().tolist() == [1.0, 1.0]
