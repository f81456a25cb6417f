"""Leaf gradients computed beside the walk (Function.deferrable, runtime.overlap): the
same bits as in turn, hooks, shared weights, errors, and the schedule's choice."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox import nn
from sandbox.autograd import Function, _schedule, grad
from sandbox.runtime import overlap


@pytest.fixture
def mode():
    """Set the overlap mode for a test (restored after); 2 threads."""
    before = overlap.mode()
    with sandbox.num_threads(2):
        yield overlap.set_mode
    overlap.set_mode(before)
    assert overlap._pending == 0


@pytest.fixture
def submits(monkeypatch):
    """Count the work handed to the side worker."""
    count = [0]
    submit = overlap.submit

    def counted(*args):
        count[0] += 1
        return submit(*args)

    monkeypatch.setattr(overlap, "submit", counted)
    return count


def _net(seed=0, dtype=np.float32):
    sandbox.manual_seed(seed)
    net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(16, 4, 1))
    return net.to(dtype) if dtype != np.float32 else net


def _grads(net, x):
    for p in net.parameters():
        p.grad = None
    _loss(net(x)).backward()
    return [p.grad.numpy().copy() for p in net.parameters()]


def _loss(y):
    return (y * y).mean()


def _input(shape=(4, 3, 24, 24), dtype=np.float32):
    return sandbox.from_numpy(np.random.default_rng(1).standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_same_bits_beside_in_turn_and_on_one_thread(mode, submits, dtype):
    net, x = _net(dtype=dtype), _input(dtype=dtype)
    mode("always")
    beside = _grads(net, x)
    assert submits[0] == 3  # the three convolutions' weight and bias gradients
    mode("off")
    in_turn = _grads(net, x)
    with sandbox.num_threads(1):
        mode("always")
        one_thread = _grads(net, x)
    assert submits[0] == 3  # nothing beside with one thread
    for a, b, c in zip(beside, in_turn, one_thread, strict=True):
        assert a.tobytes() == b.tobytes() == c.tobytes()


def test_a_training_loop_ends_with_the_same_weights(mode):
    def train():
        net, x = _net(), _input()
        opt = sandbox.optim.Adam(net.parameters(), lr=1e-2)
        for _ in range(3):
            opt.zero_grad()
            _loss(net(x)).backward()
            opt.step()
        return [p.numpy().copy() for p in net.parameters()]

    mode("always")
    beside = train()
    mode("off")
    for a, b in zip(beside, train(), strict=True):
        assert a.tobytes() == b.tobytes()


def test_a_leaf_hook_sees_the_summed_gradient_once(mode):
    net, x = _net(), _input()
    weight = net[3].weight
    seen = []
    weight.register_hook(lambda g: seen.append(g.numpy().copy()))
    mode("always")
    beside = _grads(net, x)
    mode("off")
    in_turn = _grads(net, x)
    assert len(seen) == 2 and seen[0].tobytes() == seen[1].tobytes()
    assert beside[3].tobytes() == in_turn[3].tobytes()


def test_a_weight_used_twice_sums_its_gradients_in_the_same_order(mode, submits):
    rng = np.random.default_rng(2)
    w = sandbox.from_numpy(rng.standard_normal((8, 8, 3, 3)).astype(np.float32))
    w.requires_grad_()
    x = sandbox.from_numpy(rng.standard_normal((2, 8, 16, 16)).astype(np.float32))

    def run():
        w.grad = None
        F.conv2d(F.conv2d(x, w, padding=1).relu(), w, padding=1).sum().backward()
        return w.grad.numpy().copy()

    mode("always")
    beside = run()
    assert submits[0] == 2
    mode("off")
    assert beside.tobytes() == run().tobytes()


def test_a_weight_made_by_another_op_is_not_deferred(mode, submits):
    rng = np.random.default_rng(3)
    v = sandbox.from_numpy(rng.standard_normal((4, 3, 3, 3))).requires_grad_()
    x = sandbox.from_numpy(rng.standard_normal((2, 3, 8, 8)))
    mode("always")
    F.conv2d(x, v * 2.0, padding=1).sum().backward()
    assert submits[0] == 0  # its gradient goes on to the multiplication's node
    beside = v.grad.numpy().copy()
    v.grad = None
    mode("off")
    F.conv2d(x, v * 2.0, padding=1).sum().backward()
    assert beside.tobytes() == v.grad.numpy().tobytes()


def test_grad_captures_with_work_beside(mode):
    net, x = _net(), _input()
    x.requires_grad_()
    mode("always")
    gx, gw = grad(_loss(net(x)), [x, net[0].weight])
    mode("off")
    hx, hw = grad(_loss(net(x)), [x, net[0].weight])
    assert gx.numpy().tobytes() == hx.numpy().tobytes()
    assert gw.numpy().tobytes() == hw.numpy().tobytes()


class _Fails(Function):
    plain_backward_arrays = True

    @staticmethod
    def forward(ctx, x):
        return x.copy()

    @staticmethod
    def backward(ctx, g):
        raise FloatingPointError("backward of _Fails")


def test_an_error_after_work_was_handed_beside_leaves_none_running(mode, submits):
    net, x = _net(), _input()
    mode("always")
    out = _Fails.apply(net[0](x)) + net[3](net[0](x)).sum()
    with pytest.raises(FloatingPointError, match="backward of _Fails"):
        out.sum().backward()
    assert submits[0] >= 1 and overlap._pending == 0
    assert net[0].weight.grad is None  # nothing accumulated


def test_an_error_in_the_work_beside_reaches_backward(mode, monkeypatch):
    import sandbox.functional._conv as conv_functions

    def broken(array_backward, grad_, x, weight, needs, plan):
        raise MemoryError("weight gradient")

    monkeypatch.setattr(conv_functions, "_parameter_grads", broken)
    net, x = _net(), _input()
    mode("always")
    with pytest.raises(MemoryError, match="weight gradient"):
        net(x).sum().backward()
    assert all(p.grad is None for p in net[0].parameters())


def test_the_schedule_runs_the_faster_way_and_probes_the_other():
    s = _schedule.Schedule()
    picks = []
    for _ in range(4):  # each way twice first
        picks.append(s.pick())
        s.record(picks[-1], 1.0 if picks[-1] else 2.0)
    assert sorted(picks) == [False, False, True, True]
    later = [s.pick() for _ in range(8 * _schedule.PROBE_EVERY)]
    assert later.count(False) == 2  # twice as slow: once in 4 * PROBE_EVERY passes
    s2 = _schedule.Schedule()
    for way in (True, False, True, False):
        s2.pick()
        s2.record(way, 1.1 if way else 1.0)
    near = [s2.pick() for _ in range(2 * _schedule.PROBE_EVERY)]
    assert near.count(True) == 2  # 10 % slower: once in PROBE_EVERY passes


def test_graphs_of_another_kind_keep_their_own_times():
    net, x = _net(), _input()
    a = _schedule.schedule_for(list(_order(net(x).sum())))
    b = _schedule.schedule_for(list(_order(net[0](x).sum())))
    assert a is not b
    assert a is _schedule.schedule_for(list(_order(net(x).sum())))


def _order(t):
    from sandbox.autograd._engine import _toposort

    return _toposort([t.grad_fn])


def test_a_single_layer_pass_is_not_timed_nor_run_beside_in_auto(mode, submits):
    net, x = _net(), _input()
    mode("auto")
    for _ in range(12):
        net[0].weight.grad = None
        (net[0](x) * 1.0).sum().backward()
    assert submits[0] == 0
    assert not _schedule.worth_timing(list(_order(net[0](x).sum())))
    assert _schedule.worth_timing(list(_order(net(x).sum())))
