"""Functional ops added for PyTorch code: pad modes, one_hot, adaptive pooling, layer and
instance norm, BCE/L1, inplace activations.  Float64 gradchecks and torch parity."""

import numpy as np
import pytest

import sandbox.functional as F
from sandbox import Tensor, no_grad
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck


def _pair(torch, x):
    return Tensor(x.copy(), requires_grad=True), torch.tensor(x.copy(), requires_grad=True)


def _same_forward_backward(torch, ours_fn, theirs_fn, *arrays, rtol=1e-12, atol=1e-12):
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    out, tout = ours_fn(*ours), theirs_fn(*theirs)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=atol)
    g = np.random.default_rng(9).standard_normal(out.shape)
    out.backward(Tensor(g))
    tout.backward(torch.tensor(g))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=atol)


X = np.random.default_rng(0).standard_normal((2, 3, 5, 6))


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("widths", [(2, 1, 3, 0), (-1, 2, 1, -2), (0, 0, -1, -1), (1, 1, 1, 1)])
def test_pad_modes_and_negative_widths_match_torch(torch, mode, widths):
    _same_forward_backward(torch, lambda a: F.pad(a, widths, mode=mode),
                           lambda a: torch.nn.functional.pad(a, widths, mode=mode), X)


def test_pad_constant_value_and_1d(torch):
    x = X[0]
    _same_forward_backward(torch, lambda a: F.pad(a, (2, 1), value=-3.0),
                           lambda a: torch.nn.functional.pad(a, (2, 1), value=-3.0), x)
    _same_forward_backward(torch, lambda a: F.pad(a, (2, 1), mode="reflect"),
                           lambda a: torch.nn.functional.pad(a, (2, 1), mode="reflect"), x)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes_gradcheck(mode):
    x = Tensor(np.random.default_rng(1).standard_normal((1, 2, 3, 4)), requires_grad=True)
    gradcheck(lambda a: F.pad(a, (2, 1, -1, 1), mode=mode), (x,))
    gradgradcheck(lambda a: F.pad(a, (1, 2, 2, 0), mode=mode), (x,))


def test_pad_errors_name_the_problem():
    x = Tensor(np.zeros((1, 1, 3, 3)))
    with pytest.raises(ValueError, match="reflect padding of 3"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="mode must be one of"):
        F.pad(x, (1, 1), mode="symmetric")
    with pytest.raises(ValueError, match="value= is only used"):
        F.pad(x, (1, 1), mode="replicate", value=1.0)
    with pytest.raises(TypeError, match="tuple of ints"):
        F.pad(x, (1.5, 1))


def test_one_hot_matches_torch_and_permutes_to_class_axis(torch):
    t = np.array([[[0, 2], [1, 1]], [[2, 0], [0, 1]]])
    ours = F.one_hot(Tensor(t), 4)
    theirs = torch.nn.functional.one_hot(torch.tensor(t), 4)
    assert ours.dtype == np.int64 and ours.shape == (2, 2, 2, 4)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    np.testing.assert_array_equal(ours.permute(0, 3, 1, 2).numpy(),
                                  theirs.permute(0, 3, 1, 2).numpy())
    np.testing.assert_array_equal(F.one_hot(Tensor(t)).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor(t)).numpy())
    with pytest.raises(ValueError, match="out of range"):
        F.one_hot(Tensor(t), 2)
    with pytest.raises(TypeError, match="integer"):
        F.one_hot(Tensor(t.astype(np.float64)), 3)


@pytest.mark.parametrize("size", [1, (3, 4), (None, 2), (5, 6), (7, 9), (5, 3)])
@pytest.mark.parametrize("batched", [True, False])
def test_adaptive_pools_match_torch(torch, size, batched):
    x = np.random.default_rng(2).standard_normal((2, 3, 5, 6) if batched else (3, 5, 6))
    _same_forward_backward(torch, lambda a: F.adaptive_avg_pool2d(a, size),
                           lambda a: torch.nn.functional.adaptive_avg_pool2d(a, size), x)
    _same_forward_backward(torch, lambda a: F.adaptive_max_pool2d(a, size),
                           lambda a: torch.nn.functional.adaptive_max_pool2d(a, size), x)
    _, idx = F.adaptive_max_pool2d(Tensor(x), size, return_indices=True)
    _, tidx = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), size, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


def test_adaptive_pools_gradcheck():
    x = Tensor(np.random.default_rng(3).standard_normal((1, 2, 5, 4)), requires_grad=True)
    gradcheck(lambda a: F.adaptive_avg_pool2d(a, (3, 3)), (x,))
    gradgradcheck(lambda a: F.adaptive_avg_pool2d(a, (2, 3)), (x,))
    for size in (1, (5, 2)):  # windows of one size: a mean over each
        gradgradcheck(lambda a, size=size: F.adaptive_avg_pool2d(a, size), (x,))
    gradcheck(lambda a: F.adaptive_max_pool2d(a, (2, 3)), (x,))


def test_layer_norm_and_instance_norm_match_torch(torch):
    x = np.random.default_rng(4).standard_normal((2, 3, 4, 5))
    w = np.random.default_rng(5).standard_normal((4, 5))
    b = np.random.default_rng(6).standard_normal((4, 5))
    _same_forward_backward(torch, lambda a, w_, b_: F.layer_norm(a, (4, 5), w_, b_),
                           lambda a, w_, b_: torch.nn.functional.layer_norm(a, (4, 5), w_, b_),
                           x, w, b)
    cw, cb = np.random.default_rng(7).standard_normal((2, 3))
    _same_forward_backward(
        torch, lambda a, w_, b_: F.instance_norm(a, weight=w_, bias=b_),
        lambda a, w_, b_: torch.nn.functional.instance_norm(a, weight=w_, bias=b_), x, cw, cb)


def test_instance_norm_running_stats_match_torch(torch):
    x = np.random.default_rng(8).standard_normal((2, 3, 4, 5))
    rm, rv = np.zeros(3), np.ones(3)
    trm, trv = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    F.instance_norm(Tensor(x), rm, rv, momentum=0.2)
    torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, momentum=0.2)
    np.testing.assert_allclose(rm, trm.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rv, trv.numpy(), rtol=1e-12)
    out = F.instance_norm(Tensor(x), rm, rv, use_input_stats=False)
    tout = torch.nn.functional.instance_norm(torch.tensor(x), trm, trv, use_input_stats=False)
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-12, atol=1e-12)


def test_norms_gradcheck():
    x = Tensor(np.random.default_rng(9).standard_normal((2, 2, 3, 3)), requires_grad=True)
    w = Tensor(np.random.default_rng(10).standard_normal(3), requires_grad=True)
    gradcheck(lambda a, w_: F.layer_norm(a, 3, w_, None), (x, w))
    gradcheck(lambda a: F.instance_norm(a), (x,))
    gradgradcheck(lambda a, w_: F.instance_norm(a, weight=w_), (x, Tensor(
        np.random.default_rng(11).standard_normal(2), requires_grad=True)))


def test_bce_and_l1_match_torch(torch):
    rng = np.random.default_rng(11)
    p = rng.uniform(0.05, 0.95, (3, 4))
    t = (rng.random((3, 4)) > 0.5).astype(np.float64)
    w = rng.random((3, 4))
    for reduction in ("mean", "sum", "none"):
        _same_forward_backward(
            torch, lambda a, r=reduction: F.binary_cross_entropy(a, t, w, reduction=r),
            lambda a, r=reduction: torch.nn.functional.binary_cross_entropy(
                a, torch.tensor(t), torch.tensor(w), reduction=r), p)
        _same_forward_backward(
            torch, lambda a, r=reduction: F.l1_loss(a, t, reduction=r),
            lambda a, r=reduction: torch.nn.functional.l1_loss(a, torch.tensor(t), reduction=r), p)
    # exact 0 and 1 probabilities: logs clamped at -100, as torch
    edge = np.array([0.0, 1.0, 0.5])
    tt = np.array([1.0, 0.0, 1.0])
    np.testing.assert_allclose(
        F.binary_cross_entropy(Tensor(edge), tt).item(),
        torch.nn.functional.binary_cross_entropy(torch.tensor(edge), torch.tensor(tt)).item())
    with pytest.raises(ValueError, match="probabilities"):
        F.binary_cross_entropy(Tensor(np.array([1.5])), np.array([1.0]))


def test_inplace_relu_writes_into_a_tensor_outside_the_graph(torch):
    x = np.array([-1.0, 2.0, -3.0])
    t = Tensor(x.copy())
    out = F.relu(t, inplace=True)
    assert out is t and t.numpy().tolist() == [0.0, 2.0, 0.0]
    with no_grad():
        u = Tensor(x.copy())
        assert F.leaky_relu(u, 0.1, inplace=True) is u
    np.testing.assert_allclose(u.numpy(), torch.nn.functional.leaky_relu(torch.tensor(x), 0.1))


def test_inplace_relu_in_the_graph_gives_torchs_values_and_gradients(torch):
    x = np.random.default_rng(12).standard_normal((3, 4))
    _same_forward_backward(torch, lambda a: F.relu(a * 2.0, inplace=True),
                           lambda a: torch.nn.functional.relu(a * 2.0, inplace=True), x)
    _same_forward_backward(torch, lambda a: F.leaky_relu(a * 2.0, 0.2, inplace=True),
                           lambda a: torch.nn.functional.leaky_relu(a * 2.0, 0.2, inplace=True), x)


def test_softmax_takes_dim_and_dtype(torch):
    x = np.random.default_rng(13).standard_normal((2, 3)).astype(np.float32)
    out = F.softmax(Tensor(x), dim=1, dtype=np.float64)
    tout = torch.nn.functional.softmax(torch.tensor(x), dim=1, dtype=torch.float64)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), tout.numpy(), rtol=1e-12)
    np.testing.assert_allclose(F.log_softmax(Tensor(x), 0).numpy(),
                               torch.nn.functional.log_softmax(torch.tensor(x), 0).numpy(),
                               rtol=1e-6)
    with pytest.raises(TypeError, match="give dim"):
        F.softmax(Tensor(x))


def test_bce_gradients_at_zero_and_one_are_torchs(torch):
    p = np.array([0.0, 1.0, 0.3, 1.0, 0.0])
    t = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    _same_forward_backward(torch, lambda a, b: F.binary_cross_entropy(a, b, reduction="sum"),
                           lambda a, b: torch.nn.functional.binary_cross_entropy(
                               a, b, reduction="sum"), p, t, rtol=1e-8)  # grads ~1e12 here


def test_bce_gradcheck():
    rng = np.random.default_rng(14)
    p = Tensor(rng.uniform(0.1, 0.9, (2, 3)), requires_grad=True)
    t = Tensor(rng.uniform(0, 1, (2, 3)), requires_grad=True)
    gradcheck(lambda a, b: F.binary_cross_entropy(a, b), (p, t))


def test_layer_norm_is_one_kernel_node_and_matches_torch_in_float32(torch):
    """layer_norm is one node (its row kernels, the elementwise affine included): values
    and gradients as torch's in float32, twice differentiable, an empty input as well."""
    from sandbox.autograd import graph

    rng = np.random.default_rng(15)
    x0 = (rng.standard_normal((4, 7, 6, 10)) * 3 + 2).astype(np.float32)
    w0, b0 = (rng.standard_normal((6, 10)).astype(np.float32) for _ in range(2))
    g0 = rng.standard_normal(x0.shape).astype(np.float32)
    x, w, b = (Tensor(a, requires_grad=True) for a in (x0, w0, b0))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x0, w0, b0))
    y = F.layer_norm(x, (6, 10), w, b)
    ty = torch.nn.functional.layer_norm(tx, (6, 10), tw, tb)
    assert "= LayerNormBackward(" in graph(y).text() and "Mul" not in graph(y).text()
    y.backward(Tensor(g0))
    ty.backward(torch.tensor(g0))
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    for ours, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-3, atol=1e-3)
    small = Tensor(rng.standard_normal((2, 3, 4)), requires_grad=True)
    gradgradcheck(lambda a: F.layer_norm(a, 4), (small,))
    assert F.layer_norm(Tensor(np.zeros((0, 4), np.float32)), 4).shape == (0, 4)


def test_layer_norm_gradients_float64_threads_and_errors(torch):
    """Every gradient (input, weight, bias) by finite differences and twice, against torch in
    float64 with and without the affine, one row of the whole input (no leading axis), the
    same bits for 1-3 threads, and a weight of the wrong shape named."""
    import sandbox

    rng = np.random.default_rng(16)
    x0 = rng.standard_normal((3, 5, 37)) * 2 + 1
    w0, b0 = rng.standard_normal(37), rng.standard_normal(37)
    x, w, b = (Tensor(a, requires_grad=True) for a in (x0, w0, b0))
    assert gradcheck(lambda a, w_, b_: F.layer_norm(a, 37, w_, b_), (x, w, b))
    assert gradgradcheck(lambda a, w_, b_: F.layer_norm(a, 37, w_, b_), (x, w, b))
    g0 = rng.standard_normal(x0.shape)
    for affine in (True, False):
        ours = [Tensor(a, requires_grad=True) for a in (x0, w0, b0)]
        theirs = [torch.tensor(a, requires_grad=True) for a in (x0, w0, b0)]
        args = (ours[1], ours[2]) if affine else (None, None)
        targs = (theirs[1], theirs[2]) if affine else (None, None)
        y = F.layer_norm(ours[0], (37,), *args)
        ty = torch.nn.functional.layer_norm(theirs[0], (37,), *targs)
        y.backward(Tensor(g0))
        ty.backward(torch.tensor(g0))
        np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
        for a, t in zip(ours if affine else ours[:1], theirs if affine else theirs[:1],
                        strict=True):
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-10,
                                       atol=1e-10)
    whole = Tensor(x0, requires_grad=True)  # every axis normalised: one row
    F.layer_norm(whole, x0.shape).sum().backward()
    np.testing.assert_allclose(whole.grad.numpy(), 0, atol=1e-12)
    runs = []
    big = rng.standard_normal((64, 300)).astype(np.float32)
    gb = rng.standard_normal((64, 300)).astype(np.float32)
    for n in (1, 2, 3):
        with sandbox.num_threads(n):
            xs, ws, bs = (Tensor(a, requires_grad=True) for a in
                          (big, big[0].copy(), big[1].copy()))
            F.layer_norm(xs, 300, ws, bs).backward(Tensor(gb))
            runs.append([t.grad.numpy().copy() for t in (xs, ws, bs)])
    for run in runs[1:]:
        for a, first in zip(run, runs[0], strict=True):
            np.testing.assert_array_equal(a, first)
    # a bias without a weight over two axes: its gradient has the normalised shape
    xs = Tensor(x0[:, :4], requires_grad=True)
    bs = Tensor(rng.standard_normal((4, 37)), requires_grad=True)
    txs, tbs = (torch.tensor(a.numpy(), requires_grad=True) for a in (xs, bs))
    F.layer_norm(xs, (4, 37), None, bs).backward(Tensor(g0[:, :4]))
    torch.nn.functional.layer_norm(txs, (4, 37), None, tbs).backward(torch.tensor(g0[:, :4]))
    for ours, theirs in ((xs, txs), (bs, tbs)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10,
                                   atol=1e-10)
    with pytest.raises(ValueError, match=r"weight must have the normalized shape \(37,\)"):
        F.layer_norm(x, 37, Tensor(np.ones(36)))
