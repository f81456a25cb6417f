"""``max``/``min`` as torch: the value, a named ``(values, indices)`` pair, or elementwise."""

import numpy as np
import pytest

import sandbox
from sandbox import Tensor


def test_max_dim_returns_named_values_indices_pair(torch):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5))
    for dim in (0, 1, -1):
        for keep in (False, True):
            ours = Tensor(x).max(dim, keepdim=keep)
            theirs = torch.tensor(x).max(dim, keepdim=keep)
            assert type(ours).__name__ == "max" and ours._fields == ("values", "indices")
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
            np.testing.assert_array_equal(ours.indices.numpy(), theirs.indices.numpy())
            assert ours.indices.dtype == np.int64
            values, indices = Tensor(x).min(dim=dim, keepdim=keep)
            tv, ti = torch.tensor(x).min(dim=dim, keepdim=keep)
            np.testing.assert_array_equal(values.numpy(), tv.numpy())
            np.testing.assert_array_equal(indices.numpy(), ti.numpy())


def test_unpacking_max_1_gives_predictions_with_batch_of_two(torch):
    # The silent bug this fixes: ``_, pred = out.max(1)`` used to unpack the batch.
    logits = np.random.default_rng(1).standard_normal((2, 3, 4, 4))
    _, pred = Tensor(logits).max(1)
    _, tpred = torch.tensor(logits).max(1)
    assert pred.shape == (2, 4, 4)
    np.testing.assert_array_equal(pred.numpy(), tpred.numpy())


def test_max_ties_pick_first_index_and_gradient_goes_there(torch):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    ours, theirs = Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    v, i = ours.max(dim=1)
    tv, ti = theirs.max(dim=1)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    (v * Tensor(np.array([1.0, 2.0]))).sum().backward()
    (tv * torch.tensor([1.0, 2.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


def test_max_propagates_nan_like_torch(torch):
    x = np.array([[1.0, np.nan, 3.0], [0.0, 5.0, np.nan]])
    v, i = Tensor(x).max(1)
    tv, ti = torch.tensor(x).max(1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    assert np.isnan(Tensor(x).max().item()) and np.isnan(torch.tensor(x).max().item())


def test_full_and_elementwise_forms(torch):
    a = np.random.default_rng(2).standard_normal((3, 4))
    b = np.random.default_rng(3).standard_normal((4,))
    assert Tensor(a).max().shape == () and Tensor(a).max().item() == a.max()
    assert sandbox.min(Tensor(a)).item() == torch.min(torch.tensor(a)).item()
    np.testing.assert_array_equal(
        sandbox.max(Tensor(a), Tensor(b)).numpy(),
        torch.max(torch.tensor(a), torch.tensor(b)).numpy(),
    )
    np.testing.assert_array_equal(
        sandbox.min(Tensor(a), Tensor(b)).numpy(),
        torch.min(torch.tensor(a), torch.tensor(b)).numpy(),
    )


def test_max_rejects_several_dims_and_points_to_amax():
    with pytest.raises(TypeError, match="amax"):
        Tensor(np.zeros((2, 3))).max(dim=(0, 1))
    with pytest.raises(ValueError, match="size 0"):
        Tensor(np.zeros((2, 0))).max(1)
