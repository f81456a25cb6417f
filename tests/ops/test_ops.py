"""Every tensor op: float64 gradcheck, gradgradcheck, and forward/backward parity with torch."""

from dataclasses import dataclass, field

import numpy as np
import pytest

import sandbox
from sandbox import ops
from sandbox.autograd import Tensor
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck


@dataclass
class Case:
    name: str
    fn: object  # sandbox: (*Tensors) -> Tensor
    tfn: object  # torch: (*tensors) -> tensor, or None when torch has no such op
    shapes: list
    kind: str = "normal"  # input values: normal | positive | away (|x| >= 0.2, no ties)
    second: bool = True  # check second derivatives
    extra: dict = field(default_factory=dict)


def _idx(t):
    """numpy index arrays -> torch tensors (for the torch side of indexing cases)."""
    import torch

    return torch.as_tensor(t)


MASK = np.array([[True, False, True, True], [False, True, False, True], [True, True, False, False]])
COND = np.array([[True, False, True, False]])
IDX = np.array([2, 0, 2, 1])

CASES = [
    # arithmetic with broadcasting, scalars and ndarrays on either side
    Case("add", lambda a, b: a + b, lambda a, b: a + b, [(2, 3, 4), (3, 1)]),
    Case("sub", lambda a, b: a - b, lambda a, b: a - b, [(3, 1), (2, 3, 4)]),
    Case("mul", lambda a, b: a * b, lambda a, b: a * b, [(2, 3, 4), (4,)]),
    Case("div", lambda a, b: a / b, lambda a, b: a / b, [(2, 3), (2, 1)], "away"),
    Case("radd_rsub", lambda a: 2.0 - (1.5 + a), lambda a: 2.0 - (1.5 + a), [(3, 2)]),
    Case("rmul_rdiv", lambda a: 3.0 / (2.0 * a), lambda a: 3.0 / (2.0 * a), [(3, 2)], "away"),
    Case(
        "ndarray_operands",
        lambda a: np.arange(6.0).reshape(3, 2) * a + np.ones(2) - a / np.full(2, 4.0),
        lambda a: _idx(np.arange(6.0).reshape(3, 2)) * a + 1.0 - a / 4.0,
        [(3, 2)],
    ),
    Case("neg", lambda a: -a, lambda a: -a, [(2, 3)]),
    Case("pow_scalar", lambda a: a**3, lambda a: a**3, [(2, 3)]),
    Case("pow_frac", lambda a: a**1.5, lambda a: a**1.5, [(2, 3)], "positive"),
    Case("pow_neg", lambda a: a**-2, lambda a: a**-2, [(2, 3)], "away"),
    Case("pow_tensor", lambda a, b: a**b, lambda a, b: a**b, [(2, 3), (3,)], "positive"),
    Case("rpow", lambda a: 2.0**a, lambda a: 2.0**a, [(2, 3)]),
    Case("exp", lambda a: a.exp(), lambda a: a.exp(), [(2, 3)]),
    Case("log", lambda a: a.log(), lambda a: a.log(), [(2, 3)], "positive"),
    Case("log1p", lambda a: a.log1p(), lambda a: a.log1p(), [(2, 3)], "positive"),
    Case("sqrt", lambda a: a.sqrt(), lambda a: a.sqrt(), [(2, 3)], "positive"),
    Case("abs", lambda a: abs(a), lambda a: abs(a), [(2, 3)], "away"),
    Case("clamp", lambda a: a.clamp(-0.5, 0.7), lambda a: a.clamp(-0.5, 0.7), [(3, 4)], "away"),
    Case("clamp_min", lambda a: a.clamp(min=0.1), lambda a: a.clamp(min=0.1), [(3, 4)], "away"),
    Case("clone", lambda a: a.clone() * 2.0, lambda a: a.clone() * 2.0, [(3,)]),
    Case(
        "where",
        lambda a, b: sandbox.where(COND, a, b),
        lambda a, b: __import__("torch").where(_idx(COND), a, b),
        [(3, 4), (3, 1)],
    ),
    Case(
        "where_scalar",
        lambda a: sandbox.where(COND, a, 0.5),
        lambda a: __import__("torch").where(_idx(COND), a, 0.5),
        [(3, 4)],
    ),
    # activations
    Case("relu", lambda a: a.relu(), lambda a: a.relu(), [(3, 4)], "away"),
    Case(
        "leaky_relu",
        lambda a: ops.leaky_relu(a, 0.1),
        lambda a: __import__("torch").nn.functional.leaky_relu(a, 0.1),
        [(3, 4)],
        "away",
    ),
    Case("sigmoid", lambda a: a.sigmoid(), lambda a: a.sigmoid(), [(3, 4)]),
    Case("tanh", lambda a: a.tanh(), lambda a: a.tanh(), [(3, 4)]),
    Case(
        "softplus",
        lambda a: a.softplus(),
        lambda a: __import__("torch").nn.functional.softplus(a),
        [(3, 4)],
    ),
    Case("softmax", lambda a: a.softmax(1), lambda a: a.softmax(1), [(2, 3, 2)]),
    Case("log_softmax", lambda a: a.log_softmax(-1), lambda a: a.log_softmax(-1), [(3, 4)]),
    Case(
        "logsumexp",
        lambda a: a.logsumexp(dim=(0, 2)),
        lambda a: a.logsumexp(dim=(0, 2)),
        [(2, 3, 2)],
    ),
    Case(
        "logsumexp_keep",
        lambda a: a.logsumexp(dim=1, keepdim=True),
        lambda a: a.logsumexp(dim=1, keepdim=True),
        [(2, 3)],
    ),
    # reductions
    Case("sum_all", lambda a: a.sum(), lambda a: a.sum(), [(2, 3)]),
    Case("sum_axis", lambda a: a.sum(axis=1), lambda a: a.sum(dim=1), [(2, 3, 2)]),
    Case(
        "sum_tuple_keep",
        lambda a: a.sum(axis=(0, 2), keepdims=True),
        lambda a: a.sum(dim=(0, 2), keepdim=True),
        [(2, 3, 2)],
    ),
    Case(
        "sum_dim_kwarg",
        lambda a: a.sum(dim=-1, keepdim=True),
        lambda a: a.sum(dim=-1, keepdim=True),
        [(2, 3)],
    ),
    Case("mean_all", lambda a: a.mean(), lambda a: a.mean(), [(2, 3)]),
    Case("mean_axis", lambda a: a.mean(axis=(1, 2)), lambda a: a.mean(dim=(1, 2)), [(2, 3, 2)]),
    Case("max_all", lambda a: a.max(), lambda a: a.amax(), [(3, 4)]),
    Case("amax_axis", lambda a: a.amax(axis=1), lambda a: a.amax(dim=1), [(3, 4)]),
    Case(
        "amin_axis_keep",
        lambda a: a.amin(axis=0, keepdims=True),
        lambda a: a.amin(dim=0, keepdim=True),
        [(3, 4)],
    ),
    Case("var", lambda a: a.var(axis=1), lambda a: a.var(dim=1), [(3, 4)]),
    Case("var_biased_all", lambda a: a.var(correction=0), lambda a: a.var(correction=0), [(3, 4)]),
    # shapes
    Case(
        "reshape", lambda a: a.reshape(4, -1) * 1.0, lambda a: a.reshape(4, -1) * 1.0, [(2, 3, 2)]
    ),
    Case("view_tuple", lambda a: a.view((3, 4)), lambda a: a.view((3, 4)), [(2, 6)]),
    Case("flatten", lambda a: a.flatten(1), lambda a: a.flatten(1), [(2, 3, 2)]),
    Case("transpose", lambda a: a.transpose(0, 2), lambda a: a.transpose(0, 2), [(2, 3, 4)]),
    Case("permute", lambda a: a.permute(2, 0, 1), lambda a: a.permute(2, 0, 1), [(2, 3, 4)]),
    Case("T", lambda a: a.T, lambda a: a.permute(2, 1, 0), [(2, 3, 4)]),
    Case("mT", lambda a: a.mT, lambda a: a.mT, [(2, 3, 4)]),
    Case("squeeze", lambda a: a.squeeze(), lambda a: a.squeeze(), [(2, 1, 3, 1)]),
    Case("squeeze_dim", lambda a: a.squeeze(1), lambda a: a.squeeze(1), [(2, 1, 3)]),
    Case("unsqueeze", lambda a: a.unsqueeze(-1), lambda a: a.unsqueeze(-1), [(2, 3)]),
    Case("expand", lambda a: a.expand(2, 3, 4), lambda a: a.expand(2, 3, 4), [(3, 1)]),
    Case("expand_minus1", lambda a: a.expand(2, -1, 4), lambda a: a.expand(2, -1, 4), [(3, 1)]),
    Case("index_int_slice", lambda a: a[1, ::2], lambda a: a[1, ::2], [(3, 4)]),
    Case(
        "index_none_ellipsis", lambda a: a[None, ..., 1:], lambda a: a[None, ..., 1:], [(2, 3, 4)]
    ),
    Case("index_int_array_repeats", lambda a: a[IDX], lambda a: a[_idx(IDX)], [(3, 4)]),
    Case("index_mixed_arrays", lambda a: a[IDX, 1:3], lambda a: a[_idx(IDX), 1:3], [(3, 4)]),
    Case("index_bool_mask", lambda a: a[MASK], lambda a: a[_idx(MASK)], [(3, 4)]),
    Case("index_negative", lambda a: a[-1, -2], lambda a: a[-1, -2], [(3, 4)]),
    Case(
        "cat",
        lambda a, b: sandbox.cat([a, b], dim=1),
        lambda a, b: __import__("torch").cat([a, b], dim=1),
        [(2, 3), (2, 2)],
    ),
    Case(
        "cat_axis_kw",
        lambda a, b: sandbox.cat([a, b], axis=0),
        lambda a, b: __import__("torch").cat([a, b], dim=0),
        [(1, 3), (2, 3)],
    ),
    Case(
        "stack",
        lambda a, b: sandbox.stack([a, b], dim=-1),
        lambda a, b: __import__("torch").stack([a, b], dim=-1),
        [(2, 3), (2, 3)],
    ),
    Case(
        "pad",
        lambda a: ops.pad(a, (1, 2, 0, 1), value=0.5),
        lambda a: __import__("torch").nn.functional.pad(a, (1, 2, 0, 1), value=0.5),
        [(2, 2, 3)],
    ),
    # matmul
    Case("matmul_2d", lambda a, b: a @ b, lambda a, b: a @ b, [(3, 4), (4, 2)]),
    Case(
        "matmul_batched_broadcast",
        lambda a, b: a @ b,
        lambda a, b: a @ b,
        [(2, 1, 3, 4), (3, 4, 2)],
    ),
    Case("matmul_1d_2d", lambda a, b: a @ b, lambda a, b: a @ b, [(4,), (2, 4, 3)]),
    Case("matmul_2d_1d", lambda a, b: a @ b, lambda a, b: a @ b, [(2, 3, 4), (4,)]),
    Case("matmul_1d_1d", lambda a, b: a @ b, lambda a, b: a @ b, [(4,), (4,)]),
    Case(
        "rmatmul_ndarray",
        lambda a: np.ones((2, 3)) @ a,
        lambda a: _idx(np.ones((2, 3))) @ a,
        [(3, 2)],
    ),
    # dtype
    Case(
        "astype_roundtrip",
        lambda a: a.astype(np.float32).double() * 2.0,
        lambda a: a.float().double() * 2.0,
        [(3,)],
        extra={"eps": 1e-2, "atol": 1e-4},
    ),
    # torch.max/min forms (added after the rest so the float32 subset above is unchanged)
    Case("amax_tuple", lambda a: a.amax(dim=(0, 2)), lambda a: a.amax(dim=(0, 2)), [(2, 3, 4)]),
    Case("max_dim_values", lambda a: a.max(1).values, lambda a: a.max(1).values, [(3, 4)]),
    Case(
        "min_dim_keep_values",
        lambda a: a.min(dim=0, keepdim=True)[0],
        lambda a: a.min(dim=0, keepdim=True)[0],
        [(3, 4)],
    ),
    Case("maximum", lambda a, b: a.maximum(b), lambda a, b: a.maximum(b), [(3, 4), (4,)]),
    Case("minimum", lambda a, b: a.minimum(b), lambda a, b: a.minimum(b), [(3, 4), (3, 1)]),
]


def make_inputs(case, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for shape in case.shapes:
        x = rng.standard_normal(shape)
        if case.kind == "positive":
            x = np.abs(x) + 0.5
        elif case.kind == "away":
            x = np.sign(x) * (np.abs(x) + 0.2)
            x[x == 0] = 0.3
        out.append(Tensor(x, requires_grad=True))
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradcheck(case):
    assert gradcheck(case.fn, make_inputs(case), **case.extra)


@pytest.mark.parametrize("case", [c for c in CASES if c.second], ids=lambda c: c.name)
def test_gradgradcheck(case):
    assert gradgradcheck(case.fn, make_inputs(case), **case.extra)


@pytest.mark.parametrize("case", [c for c in CASES if c.tfn is not None], ids=lambda c: c.name)
def test_torch_parity(case, torch):
    ours = make_inputs(case, seed=1)
    theirs = [torch.tensor(t.numpy(), requires_grad=True) for t in ours]
    out, tout = case.fn(*ours), case.tfn(*theirs)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert out.shape == tuple(tout.shape)
    g = np.random.default_rng(2).standard_normal(out.shape)
    out.backward(g)
    tout.backward(torch.tensor(g))
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        np.testing.assert_allclose(
            a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=f"gradient of input {k}"
        )


@pytest.mark.parametrize("case", [c for c in CASES if c.tfn is not None][::3], ids=lambda c: c.name)
def test_torch_parity_float32(case, torch):
    ours = [Tensor(t.numpy().astype(np.float32), requires_grad=True) for t in make_inputs(case, 3)]
    theirs = [torch.tensor(t.numpy(), requires_grad=True) for t in ours]
    out, tout = case.fn(*ours), case.tfn(*theirs)
    if case.name not in ("ndarray_operands", "rmatmul_ndarray", "astype_roundtrip"):
        assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    for a, b in zip(ours, theirs, strict=True):
        assert a.grad.dtype == np.float32
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- stability
def test_softmax_family_is_stable_for_huge_logits(torch):
    x = np.array([[1000.0, -1000.0, 0.0], [-1e4, -1e4 + 1, -1e4 + 2]], np.float32)
    for name in ("softmax", "log_softmax"):
        ours = getattr(Tensor(x), name)(1).numpy()
        theirs = getattr(torch.tensor(x), name)(1).numpy()
        assert np.all(np.isfinite(ours))
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(
        Tensor(x).logsumexp(dim=1).numpy(), torch.tensor(x).logsumexp(dim=1).numpy(), rtol=1e-6
    )
    s = Tensor(np.array([-800.0, 0.0, 800.0])).sigmoid().numpy()
    np.testing.assert_allclose(s, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(Tensor(np.array([-800.0, 800.0])).softplus().numpy(), [0.0, 800.0])


def test_relu_gradient_at_zero_is_zero_like_torch(torch):
    x = Tensor(np.array([-1.0, 0.0, 1.0]), requires_grad=True)
    x.relu().sum().backward()
    assert x.grad.numpy().tolist() == [0.0, 0.0, 1.0]


def test_max_ties_share_gradient(torch):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    ours, theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours.amax(axis=1).sum().backward()
    theirs.amax(dim=1).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())


# ------------------------------------------------------------ non-differentiable helpers
def test_argmax_argmin_and_creation_helpers():
    x = sandbox.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    assert x.argmax(axis=1).numpy().tolist() == [1, 0]
    assert sandbox.argmax(x).item() == 3
    assert x.argmin(dim=0).dtype == np.int64
    assert sandbox.zeros(2, 3).shape == (2, 3) and sandbox.zeros((2, 3)).dtype == np.float32
    assert sandbox.ones(2).numpy().tolist() == [1.0, 1.0]
    assert sandbox.full((2,), 3.0).numpy().tolist() == [3.0, 3.0]
    assert sandbox.zeros_like(x).shape == x.shape
    assert sandbox.ones_like(np.zeros(2, np.float64)).dtype == np.float64
    assert sandbox.randn(3, 4, rng=np.random.default_rng(0)).dtype == np.float32
    assert 0 <= sandbox.rand(5).numpy().min() and sandbox.rand(5).numpy().max() < 1
    assert sandbox.arange(3).dtype == np.int64 and sandbox.arange(0.0, 1.0, 0.5).dtype == np.float32
    assert sandbox.randn(2, requires_grad=True).requires_grad
    assert x.long().dtype == np.int64 and x.double().dtype == np.float64
    assert x.float() is x


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda a, b: a + b, r"add: shapes \(2, 3\) and \(4,\)"),
        (lambda a, b: a * b, r"mul: shapes \(2, 3\) and \(4,\)"),
        (lambda a, b: a / b, r"div: shapes"),
        (lambda a, b: a - b, r"sub: shapes"),
        (lambda a, b: a @ b, r"matmul: shapes \(2, 3\) and \(4,\)"),
        (lambda a, b: sandbox.cat([a, b.reshape(1, 4)]), r"cat: shapes \(2, 3\), \(1, 4\)"),
        (lambda a, b: sandbox.stack([a, a.T]), r"stack: all tensors must have the same shape"),
        (lambda a, b: a.reshape(4, 2), r"reshape: cannot reshape shape \(2, 3\) into \(4, 2\)"),
        (lambda a, b: a.expand(4, 3), r"expand: cannot broadcast shape \(2, 3\) to \(4, 3\)"),
        (lambda a, b: a.permute(0, 0), r"permute: \(0, 0\) is not a permutation"),
        (lambda a, b: a.sum(axis=2), r"sum: axis 2 is out of range"),
        (lambda a, b: a.softmax(3), r"softmax: axis 3 is out of range"),
        (lambda a, b: sandbox.where(np.ones(4, bool), a, 0.0), r"where: shapes"),
        (lambda a, b: ops.pad(a, (1,)), r"pad: expected an even number"),
        (lambda a, b: ops.pad(a, (-2, -1)), r"pad: widths \(-2, -1\) leave nothing of dim 1"),
        (lambda a, b: ops.pad(a, (3, 1), mode="reflect"), r"pad: reflect padding of 3 needs"),
        (lambda a, b: ops.pad(a, (1, 1), mode="wrap"), r"pad: mode must be one of"),
        (lambda a, b: a.clamp(), r"clamp: give at least one"),
    ],
)
def test_shape_errors_name_the_op(call, match):
    a = Tensor(np.ones((2, 3)), requires_grad=True)
    b = Tensor(np.ones(4))
    with pytest.raises(ValueError, match=match):
        call(a, b)


def test_index_error_names_the_shape():
    with pytest.raises(IndexError, match=r"getitem.*\(2, 3\)"):
        Tensor(np.ones((2, 3)))[5]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_is_stable_and_within_ulps_of_the_exact_value(dtype, torch):
    """The stable sigmoid (``e^x / (1 + e^x)`` below 0) on the kernels' own exp: within
    4 ulps of a long-double reference, the special values exact (signed zeros give 0.5,
    infinities 0 and 1, NaN stays NaN, huge negative inputs underflow to 0), and torch's
    within rounding."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(5000) * 6, rng.uniform(-120, 40, 5000),
                        [np.nan, -0.0, 0.0, np.inf, -np.inf, -800.0, 800.0, -1e-45]])
    x = x.astype(dtype)
    got = Tensor(x).sigmoid().numpy()
    assert got.dtype == dtype
    wide = x.astype(np.longdouble)
    with np.errstate(over="ignore"):
        want = (1 / (1 + np.exp(-wide))).astype(np.float64)
    normal = np.abs(want) >= np.finfo(dtype).tiny  # subnormal results: ulps do not apply
    ulps = np.abs(got[normal] - want[normal]) / np.spacing(want[normal].astype(dtype))
    assert ulps.max() <= 4
    np.testing.assert_array_equal(got[-8:-1], np.array([np.nan, 0.5, 0.5, 1, 0, 0, 1], dtype))
    np.testing.assert_allclose(got, torch.sigmoid(torch.tensor(x)).numpy(), rtol=1e-6,
                               atol=1e-30)
