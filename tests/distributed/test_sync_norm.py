"""Synchronised batch norm on 2 in-process ranks = batch norm on the whole batch."""

import numpy as np
import pytest

from sandbox import nn
from sandbox.autograd import Tensor
from sandbox.distributed import SyncBatchNorm, VirtualRanks, convert_sync_batchnorm


@pytest.mark.parametrize("shape", [(6, 3, 5, 4), (4, 2, 3, 3, 3)])
def test_sync_batch_norm_is_batch_norm_of_the_global_batch(rng, shape):
    x = rng.standard_normal(shape) * 3 + 1
    gy = rng.standard_normal(shape)
    channels = shape[1]
    weight, bias = rng.standard_normal(channels), rng.standard_normal(channels)

    def layer(cls, *args):
        m = cls(channels, *args, dtype=np.float64)
        m.weight.numpy()[...] = weight
        m.bias.numpy()[...] = bias
        return m

    whole = layer(nn.BatchNorm2d if len(shape) == 4 else nn.BatchNorm3d)
    xt = Tensor(x, requires_grad=True)
    (whole(xt) * Tensor(gy)).sum().backward()

    half = shape[0] // 2

    def rank(comm):
        mine = slice(half * comm.rank, half * (comm.rank + 1))
        m = layer(SyncBatchNorm, comm)
        xr = Tensor(x[mine], requires_grad=True)
        y = m(xr)
        (y * Tensor(gy[mine])).sum().backward()
        return y.numpy(), xr.grad.numpy(), m.weight.grad.numpy(), m.bias.grad.numpy(), m.running_var

    out = VirtualRanks(2).run(rank)
    np.testing.assert_allclose(np.concatenate([o[0] for o in out]),
                               _forward(whole, x, shape),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.concatenate([o[1] for o in out]), xt.grad.numpy(),
                               rtol=1e-10, atol=1e-12)
    # Parameter gradients are each rank's share: their sum is the whole batch's.
    np.testing.assert_allclose(out[0][2] + out[1][2], whole.weight.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(out[0][3] + out[1][3], whole.bias.grad.numpy(), rtol=1e-10)
    for o in out:  # the running statistics saw the global batch on every rank
        np.testing.assert_allclose(o[4], whole.running_var, rtol=1e-12)


def _forward(whole, x, shape):
    """The whole-batch layer's training output (without touching its statistics again)."""
    import copy

    return copy.deepcopy(whole)(Tensor(x)).numpy()


def test_convert_keeps_parameters_buffers_and_names():
    model = nn.UNet(1, 2, depth=2, base_width=4)
    before = dict(model.state_dict())
    params = [id(p) for p in model.parameters()]
    convert_sync_batchnorm(model, comm=None)
    kinds = {type(m).__name__ for m in model.modules()}
    assert "SyncBatchNorm" in kinds and "BatchNorm2d" not in kinds
    assert [id(p) for p in model.parameters()] == params
    after = model.state_dict()
    assert list(after) == list(before)
    for k in before:
        assert np.asarray(after[k]) is np.asarray(before[k]) or np.array_equal(after[k], before[k])


def _central_differences(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        up = f(x)
        x[i] = old - eps
        down = f(x)
        x[i] = old
        g[i] = (up - down) / (2 * eps)
    return g


def _two_rank_gradient(layer_loss, x):
    """(sum of the ranks' losses, d/dx) with rank r taking half r of the batch of ``x``."""
    half = x.shape[0] // 2

    def rank(comm):
        xr = Tensor(x[half * comm.rank : half * (comm.rank + 1)], requires_grad=True)
        loss = layer_loss(comm, xr)
        loss.backward()
        return loss.item(), xr.grad.numpy()

    out = VirtualRanks(2).run(rank)
    return sum(o[0] for o in out), np.concatenate([o[1] for o in out])


def test_sync_batch_norm_gradient_by_central_differences(rng):
    x = rng.standard_normal((4, 2, 3, 3))
    gy = rng.standard_normal(x.shape)
    half = 2

    def layer_loss(comm, xr):
        m = SyncBatchNorm(2, comm, dtype=np.float64)
        m.weight.numpy()[...] = [1.5, -0.5]
        sl = slice(half * comm.rank, half * (comm.rank + 1))
        return (m(xr) * Tensor(gy[sl])).sum()

    _, analytic = _two_rank_gradient(layer_loss, x)
    numeric = _central_differences(lambda v: _two_rank_gradient(layer_loss, v)[0], x.copy())
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)


def test_global_dice_gradient_by_central_differences(rng):
    from sandbox.distributed import distributed_loss

    logits = rng.standard_normal((4, 3, 3, 3))
    masks = rng.integers(0, 3, (4, 3, 3))

    def layer_loss(comm, xr):  # every rank's loss is the global Dice: half of it each
        sl = slice(2 * comm.rank, 2 * comm.rank + 2)
        return distributed_loss("dice", xr, masks[sl], 3, comm) * 0.5

    total, analytic = _two_rank_gradient(layer_loss, logits)
    numeric = _central_differences(lambda v: _two_rank_gradient(layer_loss, v)[0],
                                   logits.copy())
    # The backward of the sum over ranks adds the ranks' halves: each rank gets the whole
    # gradient of its own inputs.
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-9)

    from sandbox.functional import dice_loss

    assert total == pytest.approx(dice_loss(Tensor(logits), masks).item(), rel=1e-12)
