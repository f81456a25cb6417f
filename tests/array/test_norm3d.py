"""batch_norm / group_norm on 5-D (N, C, D, H, W) volumes: torch parity, gradients, threads.

The array ops view any (N, C, ...) input as (N, C, L), so volumes need no code of
their own; these tests pin that down.
"""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox.array import norm
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck

SHAPE = (3, 4, 3, 5, 6)


def _tol(dtype):
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_5d_torch_parity(training, dtype, rng, torch):
    c = SHAPE[1]
    x = (rng.standard_normal(SHAPE) * 2 + 1).astype(dtype)
    w, b = rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)
    rm, rv = rng.standard_normal(c).astype(dtype), (rng.random(c) + 0.5).astype(dtype)
    trm, trv = torch.tensor(rm), torch.tensor(rv)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    sx, sw, sb = (sandbox.Tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.batch_norm(tx, trm, trv, tw, tb, training, 0.1, 1e-5)
    sy = F.batch_norm(sx, rm, rv, sw, sb, training, 0.1, 1e-5)
    gy = rng.standard_normal(SHAPE).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **_tol(dtype))
    np.testing.assert_allclose(rm, trm.numpy(), **_tol(dtype))
    np.testing.assert_allclose(rv, trv.numpy(), **_tol(dtype))
    for s_t, t_t in ((sx, tx), (sw, tw), (sb, tb)):
        np.testing.assert_allclose(s_t.grad.numpy(), t_t.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_norm_5d_torch_parity(groups, dtype, rng, torch):
    c = SHAPE[1]
    x = (rng.standard_normal(SHAPE) * 2 - 1).astype(dtype)
    w, b = rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    sx, sw, sb = (sandbox.Tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.group_norm(tx, groups, tw, tb, 1e-5)
    sy = F.group_norm(sx, groups, sw, sb, 1e-5)
    gy = rng.standard_normal(SHAPE).astype(dtype)
    ty.backward(torch.tensor(gy))
    (sy * sandbox.Tensor(gy)).sum().backward()
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), **_tol(dtype))
    for s_t, t_t in ((sx, tx), (sw, tw), (sb, tb)):
        np.testing.assert_allclose(s_t.grad.numpy(), t_t.grad.numpy(), **_tol(dtype))


@pytest.mark.parametrize("kind", ["batch", "group"])
def test_gradcheck_and_gradgradcheck_5d(kind, rng):
    args = (sandbox.Tensor(rng.standard_normal((2, 2, 2, 3, 2)), requires_grad=True),
            sandbox.Tensor(rng.standard_normal(2), requires_grad=True),
            sandbox.Tensor(rng.standard_normal(2), requires_grad=True))

    def op(x, w, b):
        if kind == "batch":
            return F.batch_norm(x, None, None, w, b, training=True)
        return F.group_norm(x, 2, w, b)

    assert gradcheck(op, args)
    assert gradgradcheck(op, args)


def test_5d_bitwise_identical_for_any_thread_count(rng):
    x = rng.standard_normal((2, 3, 9, 17, 15)).astype(np.float32)
    gy = rng.standard_normal(x.shape).astype(np.float32)
    results = []
    for nt in (1, 2, 3):
        with sandbox.num_threads(nt):
            y, mean, invstd = norm.batch_norm(x, None, None, training=True)
            grads = norm.batch_norm_backward(gy, x, mean, invstd, training=True)
            gy2, gmean, ginvstd = norm.group_norm(x, 3)
            ggrads = norm.group_norm_backward(gy, x, gmean, ginvstd, 3)
        results.append((y, mean, invstd, *grads[:1], gy2, *ggrads[:1]))
    for other in results[1:]:
        for u, v in zip(results[0], other, strict=True):
            assert np.array_equal(u, v)
