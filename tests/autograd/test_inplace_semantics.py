"""PyTorch's in-place semantics: ``.data``, ``+=`` and the ``*_`` methods, the version
counter, leaves and graph tensors (issue 22, item 4)."""

import numpy as np
import pytest
from sandbox.gradcheck import gradcheck

import sandbox
from sandbox import nn


def test_data_is_a_detached_tensor_sharing_storage():
    p = nn.Linear(3, 2).weight
    d = p.data
    assert isinstance(d, sandbox.Tensor) and not d.requires_grad and d.grad_fn is None
    assert np.shares_memory(d.numpy(), p.numpy())
    d.zero_()
    assert not p.numpy().any() and p.requires_grad and p.is_leaf
    p.data.fill_(2.5)
    assert np.all(p.numpy() == 2.5)
    p.data.copy_(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(p.numpy(), np.arange(6.0).reshape(2, 3))
    assert p.data.numpy() is not None and np.shares_memory(p.data.numpy(), p.numpy())
    sandbox.manual_seed(0)
    p.data.normal_(0, 0.02)
    assert 0 < p.numpy().std() < 0.1 and p.dtype == np.float32
    p.data.uniform_(-0.1, 0.1)
    assert np.all(np.abs(p.numpy()) <= 0.1)


def test_spatial_transformer_tutorial_initialiser():
    # The first lines of PyTorch's spatial-transformer tutorial.
    fc_loc = nn.Sequential(nn.Linear(10, 32), nn.ReLU(True), nn.Linear(32, 6))
    fc_loc[2].weight.data.zero_()
    fc_loc[2].bias.data.copy_(sandbox.tensor([1, 0, 0, 0, 1, 0], dtype=sandbox.float32))
    out = fc_loc(sandbox.randn(4, 10))
    np.testing.assert_array_equal(out.numpy(), np.tile([1, 0, 0, 0, 1, 0], (4, 1)))


def test_data_assignment_replaces_the_array_and_bumps_the_version():
    p = sandbox.zeros(3, requires_grad=True)
    v = p._version
    p.data = sandbox.ones(3)
    assert p._version == v + 1 and np.all(p.numpy() == 1) and p.requires_grad
    p.data -= 0.5  # get, in-place sub, set: the optimisers' idiom
    np.testing.assert_array_equal(p.numpy(), [0.5] * 3)


def test_augmented_assignment_is_in_place():
    c = sandbox.zeros(3)
    d = c
    c += 1
    assert d is c and np.all(d.numpy() == 1)
    c *= 4
    c -= 1
    c /= 3
    np.testing.assert_array_equal(d.numpy(), [1.0, 1.0, 1.0])
    i = sandbox.tensor([7, -7])
    j = i
    i //= 2
    np.testing.assert_array_equal(j.numpy(), [3, -4])
    i %= 3
    np.testing.assert_array_equal(j.numpy(), [0, 2])


def test_every_in_place_method_bumps_the_version_and_returns_self():
    x = sandbox.tensor([-1.5, 0.25, 2.0])
    calls = [
        ("add_", (1.0,)), ("sub_", (0.5,)), ("mul_", (2.0,)), ("div_", (4.0,)),
        ("clamp_", (-0.5, 0.5)), ("abs_", ()), ("neg_", ()), ("exp_", ()), ("log_", ()),
        ("abs_", ()), ("sqrt_", ()), ("pow_", (2,)), ("relu_", ()), ("sigmoid_", ()), ("tanh_", ()),
        ("fill_", (3.0,)), ("zero_", ()), ("copy_", (np.ones(3),)), ("normal_", ()),
        ("uniform_", ()), ("floor_divide_", (1.0,)), ("remainder_", (0.5,)),
    ]  # fmt: skip
    for name, args in calls:
        v = x._version
        assert getattr(x, name)(*args) is x, name
        assert x._version == v + 1, name


def test_in_place_results_match_torch(torch):
    base = np.array([-1.5, 0.25, 2.0, -3.0], dtype=np.float32)
    for name, args in [("add_", (2.0,)), ("sub_", (0.5,)), ("mul_", (-2.0,)), ("div_", (4.0,)),
                       ("clamp_", (-1.0, 1.0)), ("abs_", ()), ("neg_", ()), ("fill_", (7.0,)),
                       ("zero_", ()), ("floor_divide_", (0.7,)), ("remainder_", (-0.7,))]:
        ours = getattr(sandbox.tensor(base), name)(*args)
        ref = getattr(torch.tensor(base), name)(*args)
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-6, err_msg=name)
    a = sandbox.tensor(base)
    a.add_(sandbox.tensor([1.0, 2, 3, 4]), alpha=-0.5)
    t = torch.tensor(base)
    t.add_(torch.tensor([1.0, 2, 3, 4]), alpha=-0.5)
    np.testing.assert_allclose(a.numpy(), t.numpy())


def test_manual_update_under_no_grad_trains_like_torch(torch):
    # Issue 22: `p -= lr * p.grad` under no_grad used to rebind p and never train.
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = x @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3
    w0 = rng.standard_normal((3, 1)).astype(np.float32) * 0.1

    def train(lib, as_tensor):
        w = as_tensor(w0.copy())
        w.requires_grad_(True)
        b = lib.zeros(1, requires_grad=True)
        xs, ys = as_tensor(x), as_tensor(y)
        params = (w, b)
        for _ in range(50):
            loss = ((xs @ w + b - ys) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                for p in params:
                    p -= 0.1 * p.grad
                    p.grad.zero_()
        return float(loss), w.detach().numpy()

    ours, w_ours = train(sandbox, sandbox.tensor)
    ref, w_ref = train(torch, torch.tensor)
    assert ours < 1e-3 and ours == pytest.approx(ref, rel=1e-2, abs=1e-6)
    np.testing.assert_allclose(w_ours, w_ref, rtol=1e-4, atol=1e-5)


def test_leaf_that_requires_grad_raises_torchs_error(torch):
    a = sandbox.ones(3, requires_grad=True)
    msg = "a leaf Variable that requires grad is being used in an in-place operation."
    for op in (lambda: a.__iadd__(1), lambda: a.mul_(2), lambda: a.zero_(),
               lambda: a.normal_(), lambda: a.__setitem__(0, 5.0)):
        with pytest.raises(RuntimeError, match=msg):
            op()
    assert a.is_leaf and np.all(a.numpy() == 1)
    with pytest.raises(RuntimeError, match=msg):
        t = torch.ones(3, requires_grad=True)
        t += 1
    with sandbox.no_grad():
        a += 1
        a[0] = 5.0
    np.testing.assert_array_equal(a.numpy(), [5.0, 2.0, 2.0])
    assert a.is_leaf and a.requires_grad


def _graph_case(lib, x0, w0, op):
    x = lib.tensor(x0, requires_grad=True)
    w = lib.tensor(w0, requires_grad=True)
    h = x * 2.0  # a non-leaf
    alias = h
    op(h, w)
    (alias * alias).sum().backward()
    return alias.detach().numpy(), x.grad.numpy(), None if w.grad is None else w.grad.numpy()


@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_", "clamp_", "copy_", "fill0_",
                                  "zero_", "sigmoid_", "tanh_", "abs_", "iadd", "imul", "pow_",
                                  "relu_"])
def test_in_place_on_a_graph_tensor_is_recorded_as_in_torch(torch, name):
    ops = {
        "add_": lambda h, w: h.add_(w, alpha=2.0),
        "sub_": lambda h, w: h.sub_(w),
        "mul_": lambda h, w: h.mul_(w),
        "div_": lambda h, w: h.div_(w),
        "clamp_": lambda h, w: h.clamp_(-1.0, 1.5),
        "copy_": lambda h, w: h.copy_(w),
        "fill0_": lambda h, w: h.fill_(w[0]),
        "zero_": lambda h, w: h.zero_(),
        "sigmoid_": lambda h, w: h.sigmoid_(),
        "tanh_": lambda h, w: h.tanh_(),
        "abs_": lambda h, w: h.abs_(),
        "iadd": lambda h, w: h.__iadd__(w),
        "imul": lambda h, w: h.__imul__(w),
        "pow_": lambda h, w: h.pow_(3),
        "relu_": lambda h, w: h.relu_(),
    }
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal(5)
    w0 = rng.standard_normal(5) + 3.0
    ours = _graph_case(sandbox, x0, w0, ops[name])
    ref = _graph_case(torch, x0, w0, ops[name])
    for a, b in zip(ours, ref, strict=True):
        if b is None:
            assert a is None or not np.any(a), name
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)


def test_in_place_on_a_graph_tensor_passes_gradcheck():
    def f(x, w):
        h = x * 1.0
        h.mul_(w)
        h += x
        h.clamp_(-2.0, 2.0)
        return h.exp()

    rng = np.random.default_rng(2)
    x = sandbox.tensor(rng.standard_normal(6) * 0.5, requires_grad=True)
    w = sandbox.tensor(rng.standard_normal(6), requires_grad=True)
    assert gradcheck(f, (x, w))


def test_leaf_without_grad_becomes_part_of_the_graph_when_the_operand_requires_grad(torch):
    for lib in (sandbox, torch):
        buf = lib.zeros(3, dtype=lib.float64)
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        buf.add_(w * w)
        assert buf.requires_grad and not buf.is_leaf
        buf.sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), [2.0, 4.0, 6.0])


def test_modifying_a_saved_tensor_raises_at_backward(torch):
    for lib in (sandbox, torch):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        y = x.exp()  # saves its output
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
    x = sandbox.tensor([0.5, 1.0], requires_grad=True)
    h = x * 1.0
    z = h * h  # saves h
    h.mul_(2)
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0"):
        z.sum().backward()


def test_detach_shares_the_version_counter_data_does_not(torch):
    x = sandbox.tensor([0.5, 1.0], requires_grad=True)
    y = x.sigmoid()
    y.detach().zero_()  # as torch: seen by autograd
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    x = sandbox.tensor([0.5, 1.0], requires_grad=True)
    y = x.sigmoid()
    v = y._version
    y.data.mul_(1.0)  # as torch: .data writes are not tracked
    assert y._version == v
    y.sum().backward()
    assert x.grad is not None


def test_result_dtype_must_fit_the_tensor(torch):
    i = sandbox.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        i += 0.5
    with pytest.raises(RuntimeError, match="result type Float"):
        i /= 2
    with pytest.raises(RuntimeError, match="can't be cast"):
        t = torch.tensor([1, 2])
        t += 0.5
    i.copy_(np.array([3.7, -1.2]))  # copy_ casts, as in torch
    np.testing.assert_array_equal(i.numpy(), [3, -1])
    f = sandbox.tensor([1.0, 2.0])
    f += sandbox.tensor([1.0, 1.0], dtype=sandbox.float64)
    assert f.dtype == np.float32


def test_in_place_into_a_reshaped_view_of_a_graph_tensor_is_refused():
    x = sandbox.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    h = x * 1.0
    v = h.reshape(4)
    with pytest.raises(RuntimeError, match="reshaped or permuted view"):
        v.add_(1.0)
    with sandbox.no_grad():
        v2 = h.reshape(4)
    assert not v2.requires_grad


def _view_writes(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
    w = lib.tensor([0.5, -1.5], dtype=lib.float64, requires_grad=True)
    h = x * 2.0
    h[0:2].mul_(w)          # in place into a view: recorded on h too
    h[1:] += x[1:]          # x[i] += v: a view written in place, then assigned back
    v = h[2:]
    v[0] = 10.0 * w[1]      # assignment into a view of a view
    v.sigmoid_()
    out = (h * h).sum() + v.sum()
    out.backward()
    return h.detach().numpy(), x.grad.numpy(), w.grad.numpy()


def test_in_place_into_an_indexing_view_is_recorded_on_the_base_as_torch(torch):
    for a, b in zip(_view_writes(sandbox), _view_writes(torch), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    w = sandbox.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w[0] += 1  # a view of a leaf that requires grad (torch refuses it too)
    with sandbox.no_grad():
        w[0] += 1
    np.testing.assert_array_equal(w.numpy(), [2.0, 2.0])


def test_shape_must_fit_in_place():
    x = sandbox.zeros(3)
    with pytest.raises(RuntimeError, match=r"shape \(2, 3\).*shape \(3,\)"):
        x.add_(sandbox.zeros(2, 3) + 1, alpha=2)
    with pytest.raises(RuntimeError, match="does not broadcast"):
        x.copy_(np.zeros((2, 3)))


def test_writing_over_the_saved_result_of_an_in_place_op_raises_as_torch(torch):
    for lib in (sandbox, torch):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        h = x * 1.0
        h.sigmoid_()  # its node saves the result, which is h now
        h.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            h.sum().backward()
    x = sandbox.tensor([0.5, -1.0], dtype=sandbox.float64, requires_grad=True)
    h = x * 1.0
    h.sigmoid_()
    (h * 3.0).sum().backward()  # no later write: the gradient of sigmoid
    s = 1 / (1 + np.exp(-x.numpy()))
    np.testing.assert_allclose(x.grad.numpy(), 3 * s * (1 - s))


def test_functional_inplace_activations_write_into_the_input_as_torch(torch):
    import sandbox.functional as F

    x0 = np.array([-1.0, 0.5, 2.0])
    for lib, fn in ((sandbox, F), (torch, torch.nn.functional)):
        x = lib.tensor(x0, requires_grad=True)
        h = x * 2.0
        out = fn.relu(h, inplace=True)
        assert out is h and not np.any(h.detach().numpy() < 0)
        out2 = fn.leaky_relu(x * 1.0, 0.1, inplace=True)
        (out * 3.0 + out2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [0.1, 7.0, 7.0])
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            fn.silu(lib.tensor(x0, requires_grad=True), inplace=True)


def test_in_place_into_a_base_whose_view_is_alive_is_refused():
    x = sandbox.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1.0
    v = h[0:2]  # its history would not see a write into h
    with pytest.raises(RuntimeError, match="indexing views x\\[i\\] are still in use"):
        h.mul_(2.0)
    del v
    h.mul_(2.0)  # no view left: fine
    h.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def _resnet_block(lib, x0, w0, inplace_twice=False):
    """conv -> batch norm -> ReLU(inplace=True) -> conv, as torchvision's BasicBlock
    writes it (the batch norm's output is a reshaped view in the sandbox)."""
    x = lib.tensor(x0, requires_grad=True)
    w = lib.tensor(w0, requires_grad=True)
    h = lib.nn.functional.conv2d(x, w, padding=1)
    h = lib.nn.functional.batch_norm(h, None, None, training=True)
    out = lib.nn.functional.relu(h, inplace=True)
    assert out is h
    if inplace_twice:
        h.add_(1.0)  # writes over the ReLU's saved output
    y = lib.nn.functional.conv2d(h, w, padding=1)
    y.sum().backward()
    return h.detach().numpy(), x.grad.numpy(), w.grad.numpy()


def test_in_place_relu_in_the_graph_writes_no_copy_and_trains_as_torch(torch, monkeypatch):
    """relu_ of a graph tensor writes into the tensor's own array without keeping (or
    copying back) its old value: ReLU's gradient needs only the output, which its node
    saves; values and gradients as torch's, and a later write over that output is
    refused at backward as in torch."""
    import sandbox.ops._inplace as inplace

    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((2, 3, 5, 5))
    w0 = rng.standard_normal((3, 3, 3, 3))
    copies = []
    with monkeypatch.context() as patch:
        general = inplace._apply
        patch.setattr(inplace, "_apply", lambda *a, **k: copies.append(a[1]) or general(*a, **k))
        ours = _resnet_block(sandbox, x0, w0)
    assert not copies  # the general path (copy of the old value, copy back) did not run
    for a, b in zip(ours, _resnet_block(torch, x0, w0), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    for lib in (sandbox, torch):
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _resnet_block(lib, x0, w0, inplace_twice=True)
    h = sandbox.tensor([0.5, -1.0, 2.0], requires_grad=True) * 1.0
    before = h.numpy()
    h.relu_()
    assert h.numpy() is before and h.grad_fn.name() == "ReluBackward"


def test_in_place_relu_keeps_the_version_rules(torch):
    """A node that saved the old value refuses its backward (as torch); the in-place
    ReLU is twice differentiable; a view of another tensor takes the general path."""
    from sandbox.gradcheck import gradgradcheck

    for lib in (sandbox, torch):
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        y = x.exp() - 1.5  # Sub saves nothing; exp saved its output, not y
        z = y * y  # saves y
        y.relu_()
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            (z + y).sum().backward()

    def f(x):
        h = x * x - 0.3
        h.relu_()
        return h * x

    x = sandbox.tensor(np.array([0.9, -0.2, 0.7, 1.3]), requires_grad=True)
    assert gradcheck(f, (x,)) and gradgradcheck(f, (x,))
    results = []
    for lib in (sandbox, torch):
        leaf = lib.tensor(np.array([[-1.0, 2.0], [3.0, -4.0]]), requires_grad=True)
        base = leaf * 1.0
        row = base[0]
        row.relu_()  # recorded on base, as any in-place write into an indexing view
        (base * base).sum().backward()
        results.append((base.detach().numpy(), row.detach().numpy(), leaf.grad.numpy()))
    for ours, theirs in zip(results[0], results[1], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(results[0][0], [[0.0, 2.0], [3.0, -4.0]])
    np.testing.assert_array_equal(results[0][2], [[0.0, 4.0], [6.0, -8.0]])


@pytest.mark.parametrize("write", ["iadd", "sub_", "relu_", "neg_", "abs_", "exp_", "sqrt_",
                                   "sigmoid_", "tanh_", "leaky_relu_"])
def test_in_place_writes_whose_gradient_needs_no_old_value_do_not_copy_it(write):
    """``out += identity`` (a ResNet block's), ``sub_`` and the unary writes whose node
    keeps its result, a sign or nothing take no more memory on a graph tensor than the
    out-of-place op (numpy reports its buffers to tracemalloc): no copy of the old value
    (1 MiB here) on top; gradients still flow to both operands."""
    import tracemalloc

    import sandbox.functional as F

    x = sandbox.tensor(np.ones((256, 1024), np.float32), requires_grad=True)  # 1 MiB
    w = sandbox.tensor(np.full((256, 1024), 2.0, np.float32), requires_grad=True)
    ops = {"iadd": lambda h: h.__iadd__(w), "sub_": lambda h: h.sub_(w)}
    for name in ("relu_", "neg_", "abs_", "exp_", "sqrt_", "sigmoid_", "tanh_"):
        ops[name] = getattr(sandbox.Tensor, name)
    ops["leaky_relu_"] = lambda h: F.leaky_relu(h, 0.1, inplace=True)
    out_of_place = {"iadd": lambda h: h + w, "sub_": lambda h: h - w,
                    "leaky_relu_": lambda h: F.leaky_relu(h, 0.1)}

    def peak(fn, h):
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            before = tracemalloc.get_traced_memory()[0]
            fn(h)
            return tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()

    plain = (out_of_place[write] if write in out_of_place
             else getattr(sandbox.Tensor, write.rstrip("_")))
    budget = peak(plain, x * 3.0)
    h = x * 3.0
    assert peak(ops[write], h) < budget + 0.5 * h.numpy().nbytes
    h.sum().backward()
    if write in ("iadd", "sub_", "relu_", "leaky_relu_"):  # slopes 1 and 1 (x > 0)
        np.testing.assert_array_equal(x.grad.numpy(), 3.0)
    if write in ("iadd", "sub_"):
        np.testing.assert_array_equal(w.grad.numpy(), 1.0 if write == "iadd" else -1.0)


def test_leaky_relu_saves_what_torch_saves(torch):
    """The out-of-place leaky ReLU keeps its input (a later write into its result is
    fine), leaky_relu_ its result (a later write into it is refused at backward), as in
    PyTorch; the gradients match."""
    import sandbox.functional as F

    for lib, fn in ((sandbox, F), (torch, torch.nn.functional)):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = fn.leaky_relu(x * 1.0, 0.1)
        y.add_(1.0)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.1, 1.0], rtol=1e-6)
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        h = x * 1.0
        fn.leaky_relu(h, 0.1, inplace=True)
        h.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            h.sum().backward()
