"""The core walk's data model: Node and Context apart, Edge tuples, one gradient form."""

import numpy as np

import sandbox
from sandbox.autograd import Context, Function, Tensor, grad
from sandbox.autograd._node import Edge, Node


def test_the_node_holds_fn_context_and_edges():
    x = sandbox.tensor(np.ones(3), requires_grad=True)
    h = x.exp()
    y = h * 2.0
    node = y.grad_fn
    assert isinstance(node, Node) and isinstance(node._ctx, Context)
    assert node._fn.__name__ == "Mul" and node.name() == "MulBackward"
    (e, none) = node._next
    assert none is None  # the Python number needs no gradient
    assert isinstance(e, Edge) and isinstance(e, tuple) and e == (h.grad_fn, 0)
    assert h.grad_fn._next[0] is x  # a leaf is its own edge
    assert not any(isinstance(v, np.ndarray) for v in vars(node).values())  # scratch is on ctx


def test_a_kernel_backward_gets_arrays_a_tensor_backward_tensors():
    seen = []

    class Twice(Function):
        plain_backward_arrays = True

        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, g):
            seen.append(type(g))
            return 2 * g

    class Thrice(Function):
        @staticmethod
        def forward(ctx, x):
            return 3 * x

        @staticmethod
        def backward(ctx, g):
            seen.append(type(g))
            return 3 * g

    x = sandbox.tensor(np.arange(3.0), requires_grad=True)
    Thrice.apply(Twice.apply(x)).sum().backward()
    assert seen == [Tensor, np.ndarray]
    np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 6.0))
    seen.clear()
    (g,) = grad(Thrice.apply(Twice.apply(x)).sum(), x, create_graph=True)
    assert seen == [Tensor, Tensor]  # under create_graph every backward gets Tensors
    np.testing.assert_array_equal(g.numpy(), np.full(3, 6.0))


def _copy_op(backward, fresh_grads):
    """A kernel-style Function whose forward copies its input and whose plain backward is
    ``backward(g)`` (arrays in and out), declaring ``fresh_grads`` as given."""

    class CopyOp(Function):
        plain_backward_arrays = True

        @staticmethod
        def forward(ctx, x):
            return x.copy()

    CopyOp.fresh_grads = fresh_grads
    CopyOp.backward = staticmethod(lambda ctx, g: backward(g))
    return CopyOp


def test_fresh_gradients_are_kept_by_a_leaf_others_copied():
    out = {}

    def fresh(g):
        out["fresh"] = g * 1.0
        return out["fresh"]

    def passed(g):
        out["passed"] = g
        return g

    Fresh, Passed = _copy_op(fresh, fresh_grads=True), _copy_op(passed, fresh_grads=False)

    a = sandbox.tensor(np.ones(4), requires_grad=True)
    b = sandbox.tensor(np.ones(4), requires_grad=True)
    (Fresh.apply(a).sum() + Passed.apply(b).sum()).backward()
    assert a.grad.numpy() is out["fresh"]
    assert b.grad.numpy() is not out["passed"]  # may be shared: the leaf owns a copy
    np.testing.assert_array_equal(b.grad.numpy(), np.ones(4))


def test_fan_in_is_summed_without_touching_a_shared_gradient():
    rng = np.random.default_rng(0)
    x = sandbox.tensor(rng.standard_normal((5, 7)), requires_grad=True)
    h = x * 1.0
    total = h + h + h + h  # Add passes its gradient on unchanged: four uses share g
    g = rng.standard_normal((5, 7))
    kept = g.copy()
    total.backward(g)
    np.testing.assert_array_equal(g, kept)  # the seed was not added into in place
    np.testing.assert_array_equal(x.grad.numpy(), 4 * g)


def test_a_leaf_sums_its_gradients_before_its_grad_gets_them(monkeypatch):
    """As PyTorch's AccumulateGrad: a leaf used twice gets the sum of its two gradients
    in one new array, neither copied first (``a + a``: one pass over the data, not a
    copy and an add), and the gradients it received are left untouched."""
    from sandbox.autograd import _engine

    copies = []
    copy = _engine._copy_array
    monkeypatch.setattr(_engine, "_copy_array", lambda a: copies.append(a) or copy(a))
    rng = np.random.default_rng(1)
    a = sandbox.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    g = rng.standard_normal((3, 4))
    kept = g.copy()
    (a + a).backward(g)
    assert copies == []
    np.testing.assert_array_equal(g, kept)
    np.testing.assert_array_equal(a.grad.numpy(), 2 * kept)
    (a + a).backward(g)  # into the .grad it has: the sum, then one add
    np.testing.assert_array_equal(a.grad.numpy(), 4 * kept)
    b = sandbox.tensor(rng.standard_normal(4), requires_grad=True)
    gb = rng.standard_normal(4)
    (b + 0.0).backward(gb)  # one gradient the leaf may not keep (the seed): copied
    assert len(copies) == 1 and copies[0] is gb and b.grad.numpy() is not gb
    np.testing.assert_array_equal(b.grad.numpy(), gb)


def test_a_read_only_fresh_gradient_is_summed_into_a_new_array():
    """A Function that declares fresh gradients but returns a read-only array: a leaf that
    gets two of them sums into a new array instead of writing into the first."""

    def read_only(g):
        out = g * 2.0
        out.setflags(write=False)
        return out

    ReadOnly = _copy_op(read_only, fresh_grads=True)

    a = sandbox.tensor(np.ones(5), requires_grad=True)
    (ReadOnly.apply(a) + ReadOnly.apply(a)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full(5, 4.0))


def test_outputs_without_a_gradient_get_zeros_an_integer_one_a_broadcast_zero():
    """A multi-output op whose outputs did not all receive a gradient: a floating one gets
    writable zeros of its shape, an integer one (max pooling's indices: no gradient ever
    reaches it) a read-only stride-0 zero of its shape and dtype, not an array of its
    size.  Max pooling's gradient is unchanged by it."""
    seen = {}

    class Split(Function):
        plain_backward_arrays = True

        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3, np.arange(x.size).reshape(x.shape)

        @staticmethod
        def backward(ctx, g, g_unused, g_index):
            seen.update(unused=g_unused, index=g_index)
            return 2 * g

    x = sandbox.tensor(np.ones((4, 5)), requires_grad=True)
    a, _, index = Split.apply(x)
    assert index.grad_fn is None  # an integer output is not attached to the graph
    a.sum().backward()
    assert seen["unused"].shape == (4, 5) and seen["unused"].flags.writeable
    assert not seen["unused"].any()
    z = seen["index"]
    assert z.shape == (4, 5) and z.dtype == index.dtype and z.strides == (0, 0)
    assert not z.flags.writeable and not z.any()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 5), 2.0))

    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 3, 8, 8))
    t = sandbox.tensor(data, requires_grad=True)
    sandbox.nn.functional.max_pool2d(t, 2).sum().backward()
    want = (data == data.reshape(2, 3, 4, 2, 4, 2).max(axis=(3, 5)).repeat(2, 2).repeat(2, 3))
    np.testing.assert_array_equal(t.grad.numpy(), want.astype(float))
