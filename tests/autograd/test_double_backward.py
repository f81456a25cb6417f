"""Second (and third) derivatives through conv, conv_transpose, pooling and the norms.

Each case runs ``gradgradcheck`` in float64 and is compared with PyTorch: the first
gradient, a Hessian-vector product, the gradient of the squared gradient norm and,
for the linear ops, a third derivative.  The plain backward must still call the
array kernels.
"""

from dataclasses import dataclass, field

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox.array import conv as array_conv
from sandbox.array import norm as array_norm
from sandbox.array import pool as array_pool
from sandbox.autograd import Tensor, grad
from sandbox.autograd.gradcheck import gradgradcheck


def _bn_relu(lib, *args, **kwargs):
    """Our fused op, or PyTorch's relu(batch_norm(...))."""
    if hasattr(lib.F, "batch_norm_relu"):
        return lib.F.batch_norm_relu(*args, **kwargs)
    return lib.F.relu(lib.F.batch_norm(*args, **kwargs))


@dataclass
class Case:
    """``fn(lib, *inputs)``; ``lib.F`` is sandbox.functional or torch.nn.functional."""

    name: str
    fn: object
    shapes: tuple
    distinct: bool = False  # max pooling: no ties, and no near-ties within the FD step
    extra: dict = field(default_factory=dict)  # gradgradcheck options
    third: bool = False  # linear in each input: also compare a third derivative with torch


def _running(lib):
    """Fresh running statistics (mean, var) for batch_norm, in lib's own type."""
    return lib.const(np.array([0.1, -0.2, 0.3])), lib.const(np.array([0.5, 1.5, 2.0]))


CASES = [
    Case("conv2d stride (1,2) pad 1 bias",
         lambda lib, x, w, b: lib.F.conv2d(x, w, b, stride=(1, 2), padding=1),
         ((2, 2, 5, 4), (3, 2, 3, 2), (3,)), third=True),
    Case("conv2d groups 2 dilation 2",
         lambda lib, x, w: lib.F.conv2d(x, w, padding=2, dilation=2, groups=2),
         ((1, 4, 5, 5), (2, 2, 3, 3)), third=True),
    Case("conv2d stride 2 drops rows, pad (0,1)",
         lambda lib, x, w, b: lib.F.conv2d(x, w, b, stride=2, padding=(0, 1)),
         ((1, 2, 6, 5), (2, 2, 3, 2), (2,)), third=True),
    Case("conv2d 1x1 groups 3",
         lambda lib, x, w: lib.F.conv2d(x, w, groups=3),
         ((2, 3, 3, 3), (6, 1, 1, 1)), third=True),
    Case("conv2d 3x3 pad 1, fast-mode check",
         lambda lib, x, w: lib.F.conv2d(x, w, padding=1),
         ((1, 4, 8, 8), (4, 4, 3, 3)), extra={"fast_mode": True}, third=True),
    Case("conv_transpose2d stride 2 dilation 2 groups 2",
         lambda lib, x, w: lib.F.conv_transpose2d(x, w, stride=2, padding=1, dilation=2,
                                                  groups=2),
         ((1, 4, 3, 2), (4, 1, 2, 2)), third=True),
    Case("conv_transpose2d stride 2 output_padding 1 bias",
         lambda lib, x, w, b: lib.F.conv_transpose2d(x, w, b, stride=2, padding=1,
                                                     output_padding=1),
         ((1, 2, 3, 3), (2, 3, 3, 3), (3,))),
    Case("conv_transpose2d output_padding >= stride (dilation 3)",
         lambda lib, x, w: lib.F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=2,
                                                  dilation=3),
         ((1, 2, 3, 3), (2, 2, 3, 3))),
    Case("conv_transpose2d groups 2 stride (2,3)",
         lambda lib, x, w, b: lib.F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0),
                                                     output_padding=(1, 2), groups=2),
         ((1, 4, 3, 3), (4, 1, 2, 3), (2,))),
    Case("max_pool2d 2x2",
         lambda lib, x: lib.F.max_pool2d(x, 2),
         ((1, 2, 4, 4),), distinct=True, third=True),
    Case("max_pool2d overlapping k3 s2 pad 1",
         lambda lib, x: lib.F.max_pool2d(x, 3, stride=2, padding=1),
         ((2, 1, 5, 5),), distinct=True, third=True),
    Case("max_pool2d dilation ceil_mode 3-D input",
         lambda lib, x: lib.F.max_pool2d(x, (2, 3), stride=(1, 2), dilation=(2, 1),
                                         ceil_mode=True),
         ((2, 5, 6),), distinct=True, third=True),
    Case("avg_pool2d k3 s2 pad 1",
         lambda lib, x: lib.F.avg_pool2d(x, 3, stride=2, padding=1),
         ((1, 2, 5, 5),), third=True),
    Case("avg_pool2d ceil_mode count_include_pad=False",
         lambda lib, x: lib.F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False),
         ((2, 1, 6, 5),), third=True),
    Case("avg_pool2d divisor_override 3-D input",
         lambda lib, x: lib.F.avg_pool2d(x, 2, divisor_override=3),
         ((2, 4, 6),), third=True),
    Case("batch_norm train affine",
         lambda lib, x, w, b: lib.F.batch_norm(x, *_running(lib), w, b, training=True),
         ((3, 3, 2, 2), (3,), (3,))),
    Case("batch_norm train no affine, 2-D input",
         lambda lib, x: lib.F.batch_norm(x, None, None, training=True, eps=1e-3),
         ((5, 3),)),
    Case("batch_norm train weight only, 3-D input",
         lambda lib, x, w: lib.F.batch_norm(x, *_running(lib), w, None, training=True),
         ((2, 3, 4), (3,))),
    Case("batch_norm eval affine",
         lambda lib, x, w, b: lib.F.batch_norm(x, *_running(lib), w, b, training=False),
         ((3, 3, 2, 2), (3,), (3,)), third=True),
    Case("batch_norm eval no affine",
         lambda lib, x: lib.F.batch_norm(x, *_running(lib), training=False),
         ((2, 3, 2, 3),)),
    Case("batch_norm_relu train affine",
         lambda lib, x, w, b: _bn_relu(lib, x, *_running(lib), w, b, training=True),
         ((3, 3, 2, 2), (3,), (3,))),
    Case("batch_norm_relu eval affine",
         lambda lib, x, w, b: _bn_relu(lib, x, *_running(lib), w, b, training=False),
         ((3, 3, 2, 2), (3,), (3,)), third=True),
    Case("group_norm 2 groups affine",
         lambda lib, x, w, b: lib.F.group_norm(x, 2, w, b),
         ((2, 4, 2, 3), (4,), (4,)), third=True),
    Case("group_norm 1 group no affine",
         lambda lib, x: lib.F.group_norm(x, 1, eps=1e-3),
         ((2, 3, 3, 2),)),
    Case("group_norm per channel, 3-D input",
         lambda lib, x, w, b: lib.F.group_norm(x, 3, w, b),
         ((2, 3, 4), (3,), (3,))),
]


class _Sandbox:
    F = F

    @staticmethod
    def const(a):
        return a.copy()


def _arrays(case, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for k, shape in enumerate(case.shapes):
        if case.distinct and k == 0:  # well-separated distinct values
            n = int(np.prod(shape))
            out.append(rng.permutation(n).reshape(shape) * 0.1 + 0.01 * rng.random(shape))
        else:
            out.append(rng.standard_normal(shape))
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gradgradcheck(case):
    inputs = tuple(Tensor(a, requires_grad=True) for a in _arrays(case))
    assert gradgradcheck(lambda *xs: case.fn(_Sandbox, *xs), inputs, **case.extra)


def _derivatives(lib, case, arrays, autograd_grad, third=False):
    """First gradient, Hessian-vector product, grad of |grad|^2 (and a 3rd derivative).

    ``lib.tensor(a, requires_grad)`` makes a tensor; the loss is ``sum(r * y**3)`` so
    that every order of derivative is non-zero.
    """
    rng = np.random.default_rng(7)
    xs = [lib.tensor(a, True) for a in arrays]
    y = case.fn(lib, *xs)
    r = lib.tensor(rng.standard_normal(y.shape), False)
    loss = (r * y * y * y).sum()
    g = autograd_grad(loss, xs, create_graph=True)
    v = [lib.tensor(rng.standard_normal(a.shape), False) for a in arrays]
    gv = sum((gi * vi).sum() for gi, vi in zip(g, v, strict=True))
    hvp = autograd_grad(gv, xs, create_graph=third, retain_graph=True)
    gnorm = sum((gi * gi).sum() for gi in g)
    ggn = autograd_grad(gnorm, xs, retain_graph=True)
    out = {"grad": g, "hvp": hvp, "grad of |grad|^2": ggn}
    if third:
        u = [lib.tensor(rng.standard_normal(a.shape), False) for a in arrays]
        hu = sum((hi * ui).sum() for hi, ui in zip(hvp, u, strict=True) if hi is not None)
        out["third"] = autograd_grad(hu, xs)
    return out


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_second_derivatives_match_torch(case, torch):
    _compare_with_torch(case, torch)


def _compare_with_torch(case, torch):
    class Torch:
        F = torch.nn.functional

        @staticmethod
        def const(a):
            return torch.tensor(a)

        @staticmethod
        def tensor(a, requires_grad):
            return torch.tensor(a, requires_grad=requires_grad)

    class Sandbox(_Sandbox):
        @staticmethod
        def tensor(a, requires_grad):
            return Tensor(a.copy(), requires_grad=requires_grad)

    def torch_grad(out, xs, **kw):
        return torch.autograd.grad(out, xs, allow_unused=True, **kw)

    def sandbox_grad(out, xs, **kw):
        return grad(out, xs, allow_unused=True, **kw)

    arrays = _arrays(case)
    ours = _derivatives(Sandbox, case, arrays, sandbox_grad, case.third)
    theirs = _derivatives(Torch, case, arrays, torch_grad, case.third)
    assert ours.keys() == theirs.keys()
    for what in ours:
        for k, (a, b) in enumerate(zip(ours[what], theirs[what], strict=True)):
            a = np.zeros(arrays[k].shape) if a is None else a.numpy()
            b = np.zeros(arrays[k].shape) if b is None else b.detach().numpy()
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10,
                                       err_msg=f"{what}, input {k}")


def test_batch_norm_training_third_derivative_matches_torch_composite(torch):
    """torch's own batch_norm gets third derivatives wrong (its double backward is not
    differentiable in the batch statistics); compare with batch norm written in torch ops."""
    case = next(c for c in CASES if c.name == "batch_norm train affine")

    def composite(x, running_mean, running_var, w, b, training):
        mean = x.mean(dim=(0, 2, 3), keepdim=True)
        var = ((x - mean) ** 2).mean(dim=(0, 2, 3), keepdim=True)
        return (x - mean) / torch.sqrt(var + 1e-5) * w.view(1, -1, 1, 1) + b.view(1, -1, 1, 1)

    class Torch:
        F = type("F", (), {"batch_norm": staticmethod(composite)})

        @staticmethod
        def const(a):
            return torch.tensor(a)

        @staticmethod
        def tensor(a, requires_grad):
            return torch.tensor(a, requires_grad=requires_grad)

    class Sandbox(_Sandbox):
        @staticmethod
        def tensor(a, requires_grad):
            return Tensor(a.copy(), requires_grad=requires_grad)

    arrays = _arrays(case)
    ours = _derivatives(Sandbox, case, arrays, grad, third=True)
    theirs = _derivatives(Torch, case, arrays, torch.autograd.grad, third=True)
    for what in ours:
        for k, (a, b) in enumerate(zip(ours[what], theirs[what], strict=True)):
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-10,
                                       err_msg=f"{what}, input {k}")


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name.startswith("conv_transpose2d") and not c.third],
    ids=lambda c: c.name)
def test_conv_transpose_third_derivatives_by_finite_differences(case):
    """torch cannot take a third derivative through conv_transpose2d with output_padding;
    gradgradcheck of the gradient checks ours against finite differences instead."""
    inputs = tuple(Tensor(a, requires_grad=True) for a in _arrays(case))

    def gradient(*xs):
        y = case.fn(_Sandbox, *xs)
        return grad((y * y * y).sum(), xs, create_graph=True)

    assert gradgradcheck(gradient, inputs, fast_mode=True)


def test_winograd_path_double_backward(monkeypatch, torch):
    """With the Winograd thresholds lowered, the plain backward takes the Winograd kernels;
    the create_graph path (conv_transpose2d and the weight-grad Function) agrees with it
    and its second derivatives match torch."""
    monkeypatch.setattr(array_conv.TUNING, "winograd_min_channels", 1)
    monkeypatch.setattr(array_conv.TUNING, "winograd_min_pixels", 1)
    monkeypatch.setattr(array_conv.TUNING, "winograd_min_batch_pixels", 1)
    monkeypatch.setattr(array_conv.TUNING, "winograd_min_pixels_input_grad", 1)
    monkeypatch.setattr(array_conv.TUNING, "winograd_min_channels_weight_grad", 1)
    calls = _count_calls(monkeypatch, array_conv.winograd, "winograd_conv3x3")
    wgrad_calls = _count_calls(monkeypatch, array_conv.winograd, "winograd_weight_grad")
    case = Case("conv2d winograd", lambda lib, x, w: lib.F.conv2d(x, w, padding=1),
                ((1, 2, 4, 5), (3, 2, 3, 3)), third=True)
    arrays = _arrays(case)
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    plain = grad((case.fn(_Sandbox, *xs) ** 2).sum(), xs)
    assert len(calls) == 2 and len(wgrad_calls) == 1  # forward, input grad; weight grad
    graphed = grad((case.fn(_Sandbox, *xs) ** 2).sum(), xs, create_graph=True)
    for a, b in zip(plain, graphed, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)
    assert gradgradcheck(lambda *t: case.fn(_Sandbox, *t), tuple(xs))
    _compare_with_torch(case, torch)


def _count_calls(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls.append(name)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


@pytest.mark.parametrize(
    "module, kernel, op, shapes",
    [
        (array_conv, "conv_backward", lambda x, w: F.conv2d(x, w, padding=1),
         ((1, 2, 4, 4), (3, 2, 3, 3))),
        (array_conv, "conv_transpose_backward",
         lambda x, w: F.conv_transpose2d(x, w, stride=2), ((1, 2, 3, 3), (2, 3, 2, 2))),
        (array_pool, "max_pool_backward", lambda x: F.max_pool2d(x, 2), ((1, 2, 4, 4),)),
        (array_pool, "avg_pool_backward", lambda x: F.avg_pool2d(x, 2), ((1, 2, 4, 4),)),
        (array_norm, "batch_norm_backward",
         lambda x, w: F.batch_norm(x, None, None, w, training=True), ((2, 3, 2, 2), (3,))),
        (array_norm, "batch_norm_relu_backward",
         lambda x, w: F.batch_norm_relu(x, None, None, w, training=True), ((2, 3, 2, 2), (3,))),
        (array_norm, "group_norm_backward", lambda x, w: F.group_norm(x, 3, w),
         ((2, 3, 2, 2), (3,))),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_plain_backward_calls_the_kernel_and_create_graph_agrees(monkeypatch, module, kernel,
                                                                 op, shapes):
    rng = np.random.default_rng(3)
    xs = [Tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    calls = _count_calls(monkeypatch, module, kernel)
    plain = grad((op(*xs) ** 2).sum(), xs)
    assert calls == [kernel]
    assert not any(g.requires_grad for g in plain)
    graphed = grad((op(*xs) ** 2).sum(), xs, create_graph=True)
    assert all(g.requires_grad for g in graphed)
    for a, b in zip(plain, graphed, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in CASES if not c.distinct], ids=lambda c: c.name)
def test_plain_backward_takes_a_non_contiguous_gradient(case):
    """The plain backward hands the incoming gradient to the kernels as it comes."""
    rng = np.random.default_rng(4)
    arrays = _arrays(case)
    xs = [Tensor(a, requires_grad=True) for a in arrays]
    y = case.fn(_Sandbox, *xs)
    r = rng.standard_normal(y.shape[::-1])
    strided = grad((y.permute(*reversed(range(y.ndim))) * Tensor(r)).sum(), xs)
    ys = case.fn(_Sandbox, *xs)
    direct = grad((ys * Tensor(np.ascontiguousarray(r.transpose()))).sum(), xs)
    for a, b in zip(strided, direct, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize(
    "op",
    [
        lambda x, w: F.conv2d(x, w, padding=1),
        lambda x, w: F.conv_transpose2d(x, w, padding=1),
        lambda x, w: F.max_pool2d(x * w.sum(), 2),
        lambda x, w: F.avg_pool2d(x * w.sum(), 2),
        lambda x, w: F.batch_norm(x, None, None, w.sum(axis=(1, 2, 3))[:2], training=True),
        lambda x, w: F.group_norm(x, 1, w.sum(axis=(1, 2, 3))[:2]),
    ],
    ids=["conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "batch_norm", "group_norm"],
)
def test_float32_second_derivatives_stay_float32(op):
    rng = np.random.default_rng(5)
    x = sandbox.tensor(rng.standard_normal((2, 2, 4, 4)).astype(np.float32), requires_grad=True)
    w = sandbox.tensor(rng.standard_normal((2, 2, 3, 3)).astype(np.float32), requires_grad=True)
    gx, gw = grad((op(x, w) ** 2).sum(), (x, w), create_graph=True)
    hx, hw = grad((gx * gx).sum() + (gw * gw).sum(), (x, w))
    for t in (gx, gw, hx, hw):
        assert t.dtype == np.float32
        assert np.isfinite(t.numpy()).all()


def test_gradient_penalty_through_a_small_network_matches_torch(torch):
    """A WGAN-GP style penalty: d/dθ |d out / d x|^2 through every op at once."""
    rng = np.random.default_rng(11)
    arrays = {
        "x": rng.standard_normal((2, 2, 8, 8)),
        "w1": rng.standard_normal((4, 2, 3, 3)) * 0.5,
        "b1": rng.standard_normal(4),
        "g1": 1 + 0.1 * rng.standard_normal(4),
        "w2": rng.standard_normal((4, 2, 3, 3)) * 0.5,
        "g2": 1 + 0.1 * rng.standard_normal(4),
        "b2": rng.standard_normal(4),
        "w3": rng.standard_normal((4, 2, 2, 2)) * 0.5,
    }

    def net(Fn, p, running):
        h = Fn.conv2d(p["x"], p["w1"], p["b1"], padding=1)
        h = Fn.batch_norm(h, *running, p["g1"], None, training=True)
        h = Fn.max_pool2d(h.tanh(), 2)
        h = Fn.conv2d(h, p["w2"], stride=1, padding=1, groups=2)
        h = Fn.group_norm(h, 2, p["g2"], p["b2"])
        h = Fn.avg_pool2d(h.tanh(), 2, ceil_mode=True)
        h = Fn.conv_transpose2d(h, p["w3"], stride=2, groups=2)
        return (h * h).mean()

    def run(Fn, make, autograd_grad, running):
        p = {k: make(a) for k, a in arrays.items()}
        out = net(Fn, p, running)
        (gx,) = autograd_grad(out, [p["x"]], create_graph=True)
        penalty = (gx * gx).sum()
        names = [k for k in arrays if k != "x"]
        return dict(zip(names, autograd_grad(penalty, [p[k] for k in names]), strict=True))

    ours = run(F, lambda a: Tensor(a.copy(), requires_grad=True), grad,
               (np.zeros(4), np.ones(4)))
    theirs = run(torch.nn.functional, lambda a: torch.tensor(a, requires_grad=True),
                 torch.autograd.grad, (torch.zeros(4).double(), torch.ones(4).double()))
    for name in ours:
        np.testing.assert_allclose(ours[name].numpy(), theirs[name].numpy(), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def test_max_pool_gather_is_the_adjoint_of_the_scatter():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 3, 5, 6))
    _, idx = array_pool.max_pool2d(x, 3, 2, 1, ceil_mode=True)
    g = rng.standard_normal(idx.shape)
    u = rng.standard_normal(x.shape)
    scattered = array_pool.max_pool2d_backward(g, idx, x.shape)
    gathered = array_pool.max_pool2d_gather(u, idx)
    assert gathered.shape == idx.shape
    np.testing.assert_allclose(np.sum(scattered * u), np.sum(g * gathered), rtol=1e-12)
    np.testing.assert_array_equal(array_pool.max_pool2d_gather(x, idx),
                                  array_pool.max_pool2d(x, 3, 2, 1, ceil_mode=True)[0])


def test_max_pool_gather_validation():
    with pytest.raises(TypeError, match="input must have dtype float32 or float64"):
        array_pool.max_pool2d_gather(np.zeros((1, 4, 4), np.int32), np.zeros((1, 2, 2), np.int64))
    with pytest.raises(ValueError, match="indices shape .* leading dims of input"):
        array_pool.max_pool2d_gather(np.zeros((1, 4, 4)), np.zeros((2, 2, 2), np.int64))
