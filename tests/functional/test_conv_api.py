"""The autograd path of the convolutions and pooling: one validation per call, the
forward's plan reused by the backward, leaf gradients not copied, Functions per op."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox.array import conv as array_conv
from sandbox.array import pool as array_pool
from sandbox.functional import _conv, _pool

CONV_CASES = [  # (functional op, array backward, input shape, weight shape, kwargs)
    (F.conv2d, "conv_backward", (2, 4, 6, 7), (6, 2, 3, 3), dict(padding=1, groups=2)),
    (F.conv3d, "conv_backward", (2, 3, 4, 5, 6), (4, 3, 3, 2, 3), dict(stride=(1, 2, 1))),
    (F.conv_transpose2d, "conv_transpose_backward", (2, 4, 5, 5), (4, 3, 3, 3),
     dict(stride=2, output_padding=1)),
    (F.conv_transpose3d, "conv_transpose_backward", (1, 2, 3, 4, 3), (2, 3, 2, 2, 2),
     dict(stride=2)),
]


def _spy(monkeypatch, module, name, record):
    real = getattr(module, name)

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        record.append((name, kwargs, result))
        return result

    monkeypatch.setattr(module, name, spy)


@pytest.mark.parametrize("op, backward, xs, ws, kwargs", CONV_CASES,
                         ids=lambda v: getattr(v, "__name__", ""))
def test_one_plan_per_call_and_the_backward_reuses_it(op, backward, xs, ws, kwargs, rng,
                                                      monkeypatch):
    calls = []
    _spy(monkeypatch, array_conv, "plan_conv", calls)
    _spy(monkeypatch, array_conv, backward, calls)
    x = sandbox.tensor(rng.standard_normal(xs), requires_grad=True)
    w = sandbox.tensor(rng.standard_normal(ws), requires_grad=True)
    b = sandbox.tensor(rng.standard_normal(ws[1] * kwargs.get("groups", 1) if "transpose"
                                           in op.__name__ else ws[0]), requires_grad=True)
    y = op(x, w, b, **kwargs)
    y.backward(np.cos(y.numpy()))
    assert [c[0] for c in calls] == ["plan_conv", backward]
    plan = calls[0][2]
    assert calls[1][1]["plan"] is plan  # the forward's plan, not a second validation
    gx, gw, gb = calls[1][2]
    # fresh kernel outputs become the leaves' gradients as they are (no copy)
    assert x.grad.numpy() is gx and gb is b.grad.numpy()
    assert np.shares_memory(w.grad.numpy(), gw)
    assert x.grad.numpy().flags.c_contiguous and x.grad.numpy().flags.writeable
    assert plan.nd == len(xs) - 2


def test_a_leaf_gradient_is_still_summed_in_place_and_the_seed_left_alone(rng):
    x = sandbox.tensor(rng.standard_normal((1, 2, 5, 5)), requires_grad=True)
    w = sandbox.tensor(rng.standard_normal((3, 2, 3, 3)), requires_grad=True)
    g = rng.standard_normal((1, 3, 5, 5))
    seed = g.copy()
    F.conv2d(x, w, padding=1).backward(g)
    first = x.grad.numpy().copy()
    kept = x.grad.numpy()
    F.conv2d(x, w, padding=1).backward(g)
    np.testing.assert_array_equal(x.grad.numpy(), 2 * first)
    assert x.grad.numpy() is kept  # accumulated into the first gradient
    np.testing.assert_array_equal(g, seed)


def test_functions_without_fresh_gradients_still_copy_for_leaves(rng):
    """An op whose backward passes its incoming gradient on (here ``+``) must not make
    two leaves share one array, nor hand the caller's seed to a leaf."""
    a = sandbox.tensor(rng.standard_normal(4), requires_grad=True)
    b = sandbox.tensor(rng.standard_normal(4), requires_grad=True)
    g = np.ones(4)
    (a + b).backward(g)
    assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
    assert not np.shares_memory(a.grad.numpy(), g)
    a.grad.data += 1
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(4))


@pytest.mark.parametrize("op, array_op, nd", [
    (F.max_pool2d, "max_pool_backward", 2), (F.max_pool3d, "max_pool_backward", 3),
    (F.avg_pool2d, "avg_pool_backward", 2), (F.avg_pool3d, "avg_pool_backward", 3),
])
def test_pooling_validates_once_and_leaf_gradients_are_not_copied(op, array_op, nd, rng,
                                                                   monkeypatch):
    calls, plans = [], []
    _spy(monkeypatch, array_pool, array_op, calls)
    _spy(monkeypatch, array_pool, "plan_avg_pool", plans)
    x = sandbox.tensor(rng.standard_normal((2, 3) + (4,) * nd), requires_grad=True)
    op(x, 2).sum().backward()
    assert len(calls) == 1 and calls[0][1]["nd"] == nd
    assert x.grad.numpy() is calls[0][2]
    if array_op == "avg_pool_backward":  # validated once, in the forward
        assert len(plans) == 1 and calls[0][1]["plan"] is plans[0][2]


def test_one_function_class_per_op_with_rank_names():
    assert issubclass(_conv.Conv2d, _conv.ConvNd) and issubclass(_conv.Conv3d, _conv.ConvNd)
    assert issubclass(_pool.MaxPool3d, _pool.MaxPool)
    assert _conv.Conv3d.forward is _conv.Conv2d.forward  # one implementation
    x = sandbox.tensor(np.ones((1, 1, 3, 3, 3)), requires_grad=True)
    w = sandbox.tensor(np.ones((1, 1, 2, 2, 2)), requires_grad=True)
    assert F.conv3d(x, w).grad_fn.name() == "Conv3dBackward"
    assert F.max_pool2d(x[0], 2).grad_fn.name() == "MaxPool2dBackward"
