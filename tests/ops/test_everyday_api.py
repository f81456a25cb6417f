"""The everyday PyTorch API of issue 22, item 5: values, gradients (float64 gradcheck)
and forward+backward parity with torch."""

import numpy as np
import pytest
from sandbox.gradcheck import gradcheck, gradgradcheck

import sandbox
import sandbox.functional as F
from sandbox import nn

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 5))
V = RNG.permutation(12).reshape(3, 4) * 0.37 - 2.0  # distinct values: no ties to order

#: name -> (function of (lib, *tensors) returning one tensor, input arrays)
CASES = {
    "t": (lambda lib, a: a.t(), [A]),
    "t_1d": (lambda lib, a: a.t(), [A[0]]),
    "repeat": (lambda lib, a: a.repeat(2, 1, 3), [A]),
    "std": (lambda lib, a: a.std(), [A]),
    "std_dim": (lambda lib, a: a.std(dim=1, keepdim=True), [A]),
    "std_unbiased_false": (lambda lib, a: lib.std(a, 0, False), [A]),
    "std_correction0": (lambda lib, a: a.std(dim=0, correction=0), [A]),
    "norm": (lambda lib, a: a.norm(), [A]),
    "norm_dim": (lambda lib, a: lib.norm(a, dim=1), [A]),
    "norm_p1": (lambda lib, a: a.norm(p=1, dim=0), [A]),
    "norm_p3": (lambda lib, a: a.norm(p=3), [A]),
    "norm_inf": (lambda lib, a: a.norm(p=float("inf"), dim=1), [V]),
    "topk": (lambda lib, a: a.topk(2, dim=1).values, [V]),
    "topk_smallest": (lambda lib, a: lib.topk(a, 2, dim=0, largest=False).values, [V]),
    "sort": (lambda lib, a: a.sort(dim=1).values, [V]),
    "sort_desc": (lambda lib, a: lib.sort(a, dim=0, descending=True).values, [V]),
    "round": (lambda lib, a: a.round() + a, [A * 3]),
    "chunk": (lambda lib, a: a.chunk(3, dim=1)[1] * 2.0, [A]),
    "split": (lambda lib, a: lib.cat(a.split([1, 3], dim=1)[::-1], 1), [A]),
    "split_int": (lambda lib, a: lib.split(a, 2, dim=0)[1], [A]),
    "flip": (lambda lib, a: a.flip(0, 1), [A]),
    "flip_fn": (lambda lib, a: lib.flip(a, (1,)), [A]),
    "einsum_mm": (lambda lib, a, b: lib.einsum("ij,jk->ik", a, b), [A, B]),
    "einsum_sum": (lambda lib, a: lib.einsum("ij->", a), [A]),
    "einsum_outer": (lambda lib, a, b: lib.einsum("i,j", a, b), [A[0], B[0]]),
    "einsum_ellipsis": (lambda lib, a, b: lib.einsum("...j,jk->...k", a, b), [A, B]),
    "einsum_bilinear": (lambda lib, a, b, c: lib.einsum("ij,jk,ik->i", a, b, c),
                        [A, B, RNG.standard_normal((3, 5))]),
    "einsum_trace_other": (lambda lib, a, b: lib.einsum("ii,ij->j", a, b),
                           [RNG.standard_normal((4, 4)), B]),
    "log1p": (lambda lib, a: a.log1p(), [np.abs(A)]),
    "remainder": (lambda lib, a, b: a % b, [A * 3, np.abs(A) + 0.5]),
    "remainder_scalar": (lambda lib, a: a % -1.5, [A * 3]),
    "gelu": (lambda lib, a: (F if lib is sandbox else lib.nn.functional).gelu(a), [A]),
    "gelu_tanh": (lambda lib, a: (F if lib is sandbox else lib.nn.functional).gelu(
        a, approximate="tanh"), [A]),
    "silu": (lambda lib, a: (F if lib is sandbox else lib.nn.functional).silu(a), [A]),
    "erf": (lambda lib, a: a.erf(), [A]),
    "abs_": (lambda lib, a: (a * 1.0).abs_(), [A]),
}
NOT_TWICE = {"einsum_trace_other"}  # a repeated subscript: no gradient for that operand


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_forward_and_backward(torch, name):
    fn, arrays = CASES[name]
    ours = [sandbox.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    if name == "einsum_trace_other":
        ours[0].requires_grad_(False)
        theirs[0].requires_grad_(False)
    out, ref = fn(sandbox, *ours), fn(torch, *theirs)
    assert tuple(out.shape) == tuple(ref.shape) and str(out.dtype) == "float64"
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    cot = RNG.standard_normal(out.shape)
    out.backward(sandbox.tensor(cot))
    ref.backward(torch.tensor(cot))
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if b.grad is None:
            assert a.grad is None or not a.grad.numpy().any()
            continue
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11,
                                   err_msg=f"gradient of input {k}")


@pytest.mark.parametrize("name", sorted(set(CASES) - NOT_TWICE))
def test_gradcheck_float64(name):
    fn, arrays = CASES[name]
    inputs = [sandbox.tensor(a, requires_grad=True) for a in arrays]
    assert gradcheck(lambda *xs: fn(sandbox, *xs), inputs)


@pytest.mark.parametrize("name", ["repeat", "norm_dim", "topk", "sort", "flip", "einsum_mm",
                                  "gelu", "gelu_tanh", "silu", "std_dim", "remainder"])
def test_second_derivatives(name):
    fn, arrays = CASES[name]
    inputs = [sandbox.tensor(a, requires_grad=True) for a in arrays]
    assert gradgradcheck(lambda *xs: fn(sandbox, *xs), inputs)


def test_norm_of_zero_has_gradient_zero_as_torch(torch):
    for lib in (sandbox, torch):
        z = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        z.norm().backward()
        np.testing.assert_array_equal(z.grad.numpy(), [0.0, 0.0, 0.0])


def test_indices_and_named_results_match_torch(torch):
    for name in ("sort", "topk"):
        ours = getattr(sandbox.tensor(V), name)(*(() if name == "sort" else (3,)))
        ref = getattr(torch.tensor(V), name)(*(() if name == "sort" else (3,)))
        assert type(ours).__name__ == name and ours._fields == ("values", "indices")
        np.testing.assert_array_equal(ours.indices.numpy(), ref.indices.numpy())
        assert ours.indices.dtype == np.int64
    ties = np.array([2.0, 1.0, 2.0, 1.0, 2.0])
    s = sandbox.tensor(ties).sort(descending=True, stable=True)
    r = torch.tensor(ties).sort(descending=True, stable=True)
    np.testing.assert_array_equal(s.indices.numpy(), r.indices.numpy())
    s = sandbox.tensor(ties).sort(stable=True)
    r = torch.tensor(ties).sort(stable=True)
    np.testing.assert_array_equal(s.indices.numpy(), r.indices.numpy())


def test_unique_matches_torch(torch):
    x = np.array([[3, 1, 3], [2, 1, 3]])
    for kw in ({}, {"return_inverse": True}, {"return_counts": True},
               {"return_inverse": True, "return_counts": True}, {"dim": 0}):
        ours = sandbox.tensor(x).unique(**kw)
        ref = torch.unique(torch.tensor(x), **kw)
        ours, ref = (ours, ref) if isinstance(ref, tuple) else ((ours,), (ref,))
        assert len(ours) == len(ref)
        for a, b in zip(ours, ref, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=str(kw))
            assert str(a.dtype) == str(b.dtype).replace("torch.", "")


def test_one_argument_where_and_floor_semantics(torch):
    x = np.array([[0, 3, 0], [-1, 0, 2]])
    ours, ref = sandbox.where(sandbox.tensor(x)), torch.where(torch.tensor(x))
    assert isinstance(ours, tuple) and len(ours) == 2
    for a, b in zip(ours, ref, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    ints = np.array([-7, -6, 5, 7])
    for d in (2, -3, np.array([3, -2, 4, -5])):
        td = d if isinstance(d, int) else torch.tensor(d)
        sd = d if isinstance(d, int) else sandbox.tensor(d)
        np.testing.assert_array_equal((sandbox.tensor(ints) // sd).numpy(),
                                      (torch.tensor(ints) // td).numpy())
        np.testing.assert_array_equal((sandbox.tensor(ints) % sd).numpy(),
                                      (torch.tensor(ints) % td).numpy())
    f = np.array([-7.5, -0.5, 5.25])
    np.testing.assert_allclose((sandbox.tensor(f) // 2).numpy(), (torch.tensor(f) // 2).numpy())
    np.testing.assert_allclose((7 % sandbox.tensor(f)).numpy(), (7 % torch.tensor(f)).numpy())
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        sandbox.tensor([1, 2]) // 0
    x = sandbox.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="floor_divide is not implemented"):
        (x // 2).sum().backward()


def test_round_matches_torch(torch):
    x = np.array([0.5, 1.5, 2.5, -0.5, 1.2345, -2.71828])
    np.testing.assert_array_equal(sandbox.round(sandbox.tensor(x)).numpy(),
                                  torch.round(torch.tensor(x)).numpy())
    np.testing.assert_allclose(sandbox.tensor(x).round(decimals=2).numpy(),
                               torch.tensor(x).round(decimals=2).numpy())


def test_chunk_and_split_sizes_match_torch(torch):
    x = np.arange(7.0)
    for n in (1, 2, 3, 4, 6, 7, 9):
        ours = [c.shape for c in sandbox.tensor(x).chunk(n)]
        assert ours == [tuple(c.shape) for c in torch.tensor(x).chunk(n)], n
    for s in (1, 2, 3, 7, 10):
        ours = [c.shape for c in sandbox.tensor(x).split(s)]
        assert ours == [tuple(c.shape) for c in torch.tensor(x).split(s)], s
    with pytest.raises(ValueError, match="add up to 7"):
        sandbox.tensor(x).split([3, 3])
    with pytest.raises(ValueError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
        sandbox.zeros(2, 2, 2).t()


def test_gelu_and_silu_modules_match_torch(torch):
    x = RNG.standard_normal((2, 5)).astype(np.float32)
    for ours, ref in [(nn.GELU(), torch.nn.GELU()), (nn.GELU("tanh"), torch.nn.GELU("tanh")),
                      (nn.SiLU(), torch.nn.SiLU())]:
        np.testing.assert_allclose(ours(sandbox.tensor(x)).numpy(),
                                   ref(torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-7)
        assert repr(ours) == repr(ref)
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        F.gelu(sandbox.zeros(2), approximate="fast")


def test_tensor_constructor_forms_match_torch(torch):
    for args in [(2, 3), (4,), ([1, 2],), ([1.5, 2.0],), ([[True, False]],), ()]:
        ours, ref = sandbox.Tensor(*args), torch.Tensor(*args)
        assert ours.shape == tuple(ref.shape) and ours.dtype == np.float32, args
        if args and isinstance(args[0], list):
            np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    arr = np.arange(3, dtype=np.int32)
    assert sandbox.Tensor(arr).numpy() is arr  # an ndarray is wrapped, not copied
    assert sandbox.tensor([1, 2]).dtype == np.int64
    with pytest.raises(TypeError, match="Tensor\\(\\*sizes\\) takes Python ints"):
        sandbox.Tensor(2, 3.5)


REPR_CASES = [
    [1.0, 2.0, 3.0], [0.1, 2.5], [1e-5, 1e5], [[1.0, 2.0], [3.0, 4.0]], 3.5, [],
    [float("nan"), 1.0, float("inf")], [123456789.0, 1.0], list(np.arange(30.0) / 7),
    [1, 2, 3], [True, False], np.zeros((0, 3), np.float32), np.int32([1, 2]),
    np.float64([1.5, -2.0]), np.arange(2000, dtype=np.float32).reshape(40, 50) / 7,
    RNG.standard_normal((2, 3, 4)).astype(np.float32),
]


@pytest.mark.parametrize("k", range(len(REPR_CASES)))
def test_repr_matches_torch(torch, k):
    data = REPR_CASES[k]
    if not isinstance(data, np.ndarray):
        data = np.asarray(data, np.float32 if np.asarray(data).dtype == np.float64 else None)
    ours = repr(sandbox.tensor(data))
    ref = repr(torch.tensor(data)).replace("torch.", "sandbox.")
    if "dtype=" in ref and len(ours) != len(ref):  # "sandbox." is longer: may wrap earlier
        ours, ref = " ".join(ours.split()), " ".join(ref.split())
    assert ours == ref
    assert str(sandbox.tensor(data)) == ours or " ".join(str(sandbox.tensor(data)).split()) == ours


def test_repr_suffixes_match_torch(torch):
    ours = sandbox.tensor([1.0, 2.0], requires_grad=True)
    ref = torch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(ours) == repr(ref) == "tensor([1., 2.], requires_grad=True)"
    assert repr(ours * 2) == "tensor([2., 4.], grad_fn=<MulBackward>)"
    assert repr(ref * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert str(sandbox.tensor(0.25)) == str(torch.tensor(0.25)) == "tensor(0.2500)"
