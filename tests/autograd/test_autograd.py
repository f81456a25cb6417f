"""Engine behaviour: Function/ctx contract, graph walk, grad modes, errors."""

import threading

import numpy as np
import pytest

import sandbox
from sandbox import autograd
from sandbox.autograd import (
    Function,
    Tensor,
    enable_grad,
    no_grad,
    once_differentiable,
    set_grad_enabled,
    unbroadcast,
)


class Exp(Function):  # the contract example from TEAM.md
    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


def leaf(shape=(3, 4), seed=0, dtype=np.float64):
    data = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return Tensor(data, requires_grad=True)


# ----------------------------------------------------------------------------- Function
def test_contract_example_forward_backward():
    x = leaf()
    y = Exp.apply(x)
    assert isinstance(y, Tensor) and y.grad_fn is not None and not y.is_leaf
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.numpy()))


def test_apply_records_only_when_needed():
    x = Tensor(np.ones(3))
    assert Exp.apply(x).grad_fn is None
    x.requires_grad = True
    with no_grad():
        y = Exp.apply(x)
    assert y.grad_fn is None and not y.requires_grad
    assert Exp.apply(x).grad_fn is not None


def test_needs_input_grad_and_non_tensor_args():
    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, a, b, factor, mode):
            seen["needs"] = ctx.needs_input_grad
            seen["types"] = (type(a), type(b), factor, mode)
            return a * b * factor

        @staticmethod
        def backward(ctx, grad):
            return grad, None, None, None

    a, b = leaf((2,)), Tensor(np.ones(2))
    Scale.apply(a, b, 3.0, "x")
    assert seen["needs"] == (True, False, False, False)
    assert seen["types"] == (np.ndarray, np.ndarray, 3.0, "x")


def test_saved_input_comes_back_as_the_input_tensor():
    got = {}

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, np.zeros(1), None)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            x, const, none = ctx.saved_tensors
            got["same"] = x
            got["const"] = const
            got["none"] = none
            return grad * x * 2.0

    x = leaf((3,))
    Square.apply(x).sum().backward()
    assert got["same"] is x
    assert isinstance(got["const"], Tensor) and got["const"].grad_fn is None
    assert got["none"] is None


def test_saved_output_is_in_the_graph_only_under_create_graph():
    x = leaf((4,))
    y = Exp.apply(x)
    (g,) = autograd.grad(y.sum(), x, create_graph=True)
    assert g.requires_grad  # d/dx (grad * y) flows through the saved output y
    (gg,) = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.exp(x.numpy()))
    y2 = Exp.apply(x)
    (g2,) = autograd.grad(y2.sum(), x)
    assert not g2.requires_grad


def test_multiple_outputs_missing_grad_is_zero():
    class Split(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0, x * 3.0

        @staticmethod
        def backward(ctx, g1, g2):
            assert isinstance(g1, Tensor) and isinstance(g2, Tensor)
            return g1 * 2.0 + g2 * 3.0

    x = leaf((3,))
    a, b = Split.apply(x)
    b.sum().backward()  # a gets no gradient: materialised as zeros
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, 3.0))


def test_integer_outputs_do_not_require_grad():
    class ArgAndMax(Function):
        @staticmethod
        def forward(ctx, x):
            return x.max(keepdims=True), np.array(x.argmax())

        @staticmethod
        def backward(ctx, g, gi):
            return None

    v, i = ArgAndMax.apply(leaf((5,)))
    assert v.requires_grad and not i.requires_grad and i.dtype.kind == "i"


# ----------------------------------------------------------------------------- the walk
def test_fan_out_accumulates():
    x = leaf((3,))
    y = x * x + x * 3.0 + x.exp()  # x used by four nodes
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy() + 3 + np.exp(x.numpy()))


def test_repeated_input_to_one_node():
    x = leaf((3,))
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy())


def test_leaf_grad_accumulates_across_backward_calls():
    x = leaf((2, 2))
    (x * 2.0).sum().backward()
    (x * 3.0).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 5.0))


def test_leaf_grads_are_fresh_writable_arrays():
    a, b = leaf((3,)), leaf((3,), seed=1)
    (a + b).sum().backward()  # the same (broadcast) array reaches both leaves
    assert a.grad.numpy() is not b.grad.numpy()
    assert a.grad.numpy().flags.writeable and a.grad.numpy().flags.c_contiguous
    a.grad.data += 1
    np.testing.assert_allclose(b.grad.numpy(), np.ones(3))


def test_retain_graph():
    x = leaf((3,))
    y = (x.exp() * 2.0).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 4 * np.exp(x.numpy()))
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()


def test_second_backward_through_shared_trunk_raises():
    x = leaf((3,))
    h = x.exp()
    (h * 2.0).sum().backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        (h * 3.0).sum().backward()


def test_deep_graph_has_no_recursion_limit():
    x = Tensor(np.zeros(2), requires_grad=True)
    y = x
    for _ in range(20_000):
        y = y + 1.0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(2))
    np.testing.assert_allclose(y.numpy(), np.full(2, 20_000.0))


def test_deep_graph_with_create_graph():
    x = Tensor(np.array([0.5]), requires_grad=True)
    y = x
    for _ in range(3_000):
        y = y * 1.0001
    (g,) = autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.numpy(), [1.0001**3000])


def test_diamond_graph_order():
    x = leaf((2,))
    a = x * 2.0
    b = a.exp()
    c = a * b  # a reaches c directly and through b
    c.sum().backward()
    xa = 2 * x.numpy()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.exp(xa) + xa * np.exp(xa)))


def test_non_leaf_grad_is_none_unless_retained():
    x = leaf((3,))
    h = x * 2.0
    k = x * 3.0
    k.retain_grad()
    (h * k).sum().backward()
    assert h.grad is None
    np.testing.assert_allclose(k.grad.numpy(), h.numpy())
    assert x.grad is not None


def test_backward_errors():
    with pytest.raises(RuntimeError, match="does not require grad"):
        Tensor(np.ones(2)).sum().backward()
    x = leaf((3,))
    with pytest.raises(RuntimeError, match="one-element"):
        (x * 2.0).backward()
    with pytest.raises(ValueError, match="shape"):
        (x * 2.0).backward(np.ones(4))
    y = x * 2.0
    y.backward(np.arange(3.0))
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.arange(3.0))


def test_backward_on_leaf_root():
    x = leaf((2,))
    x.backward(np.array([1.0, 2.0]))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0])


def test_wrong_gradient_shape_names_the_op():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum(axis=0)

        @staticmethod
        def backward(ctx, grad):
            return grad  # should be broadcast back to x's shape

    with pytest.raises(RuntimeError, match=r"BadBackward.*shape \(4,\).*input 0.*\(3, 4\)"):
        Bad.apply(leaf()).sum().backward()


def test_wrong_number_of_gradients():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    with pytest.raises(RuntimeError, match="TooManyBackward returned 2 gradients, expected 1"):
        TooMany.apply(leaf()).sum().backward()


def test_gradient_dtype_is_cast_to_the_input_dtype():
    class Upcast(Function):
        @staticmethod
        def forward(ctx, x):
            return x.copy()

        @staticmethod
        def backward(ctx, grad):
            return grad.numpy().astype(np.float64)

    x = leaf(dtype=np.float32)
    Upcast.apply(x).sum().backward()
    assert x.grad.dtype == np.float32


def test_float32_stays_float32():
    x = leaf(dtype=np.float32)
    y = ((x * 0.5 + 1.0) ** 2 / 3.0 - np.float64(2.0)).exp().mean()
    assert y.dtype == np.float32
    y.backward()
    assert x.grad.dtype == np.float32


# ----------------------------------------------------------------------------- autograd.grad
def test_grad_does_not_touch_dot_grad():
    x, w = leaf((3,)), leaf((3,), seed=1)
    (gx,) = autograd.grad((x * w).sum(), x)
    np.testing.assert_allclose(gx.numpy(), w.numpy())
    assert x.grad is None and w.grad is None


def test_grad_allow_unused():
    x, z = leaf((2,)), leaf((2,), seed=1)
    y = (x * 2.0).sum()
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = autograd.grad(y, [x, z], allow_unused=True)
    np.testing.assert_allclose(gx.numpy(), [2.0, 2.0])
    assert gz is None


def test_grad_with_respect_to_non_leaf_and_outputs_list():
    x = leaf((3,))
    h = x * 2.0
    y1, y2 = (h * h).sum(), h.sum()
    gh, gx = autograd.grad([y1, y2], [h, x], grad_outputs=[np.array(1.0), np.array(10.0)])
    np.testing.assert_allclose(gh.numpy(), 2 * h.numpy() + 10)
    np.testing.assert_allclose(gx.numpy(), 2 * (2 * h.numpy() + 10))


def test_grad_input_must_require_grad():
    x = leaf((2,))
    with pytest.raises(RuntimeError, match="input 1"):
        autograd.grad(x.sum(), [x, Tensor(np.ones(2))])


def test_grad_create_graph_second_and_third_derivative():
    x = leaf((3,))
    y = (x**3).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    (g2,) = autograd.grad(g.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy()**2)
    np.testing.assert_allclose(g2.numpy(), 6 * x.numpy())
    np.testing.assert_allclose(g3.numpy(), np.full(3, 6.0))


def test_backward_create_graph_keeps_graph_in_dot_grad():
    x = leaf((3,))
    (x**2).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(gg.numpy(), np.full(3, 2.0))


# ----------------------------------------------------------------------------- once_differentiable
class CubeKernel(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        assert type(grad) is np.ndarray and grad.flags.c_contiguous
        (x,) = ctx.saved_arrays
        (xt,) = ctx.saved_tensors
        assert isinstance(xt, Tensor)
        return 3 * x**2 * grad


def test_once_differentiable_first_order():
    x = leaf()
    CubeKernel.apply(x).sum().backward()  # sum's grad is a broadcast view: made contiguous
    np.testing.assert_allclose(x.grad.numpy(), 3 * x.numpy()**2)


def test_once_differentiable_second_order_raises():
    x = leaf((3,))
    (g,) = autograd.grad(CubeKernel.apply(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="CubeKernelBackward.*once_differentiable"):
        g.sum().backward()


# ----------------------------------------------------------------------------- grad modes
def test_no_grad_context_and_decorators():
    x = leaf((2,))
    with no_grad():
        assert not sandbox.is_grad_enabled()
        with enable_grad():
            assert (x * 2.0).requires_grad
        assert not (x * 2.0).requires_grad
    assert sandbox.is_grad_enabled()

    @no_grad()
    def f(t):
        return t * 2.0

    @no_grad
    def g(t):
        return t * 2.0

    assert not f(x).requires_grad and not g(x).requires_grad
    assert f.__name__ == "f"
    assert sandbox.is_grad_enabled()


def test_no_grad_restores_on_exception_and_nests():
    with pytest.raises(ValueError):
        with no_grad():
            raise ValueError
    assert sandbox.is_grad_enabled()
    ng = no_grad()
    with ng:
        with ng:
            pass
        assert not sandbox.is_grad_enabled()
    assert sandbox.is_grad_enabled()


def test_set_grad_enabled():
    with set_grad_enabled(False):
        assert not sandbox.is_grad_enabled()
    assert sandbox.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = []
    with no_grad():
        t = threading.Thread(target=lambda: seen.append(sandbox.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


# ----------------------------------------------------------------------------- Tensor basics
def test_tensor_dtype_rules():
    assert sandbox.tensor(1.5).dtype == np.float32
    assert sandbox.tensor([[1.0, 2.0]]).dtype == np.float32
    assert sandbox.tensor([1, 2]).dtype == np.int64
    assert sandbox.tensor(np.zeros(2)).dtype == np.float64
    assert sandbox.tensor(np.zeros(2, np.int32)).dtype == np.int32
    assert sandbox.tensor([1, 2], dtype=np.float64).dtype == np.float64
    assert sandbox.tensor([True]).dtype == bool
    with pytest.raises(TypeError, match="float"):
        sandbox.tensor([1, 2], requires_grad=True)
    with pytest.raises(TypeError, match="dtype"):
        sandbox.tensor(np.array([1j]))


def test_tensor_copies_but_Tensor_wraps():
    a = np.zeros(3)
    assert sandbox.tensor(a).numpy() is not a
    assert Tensor(a).numpy() is a


def test_data_setter_and_requires_grad_rules():
    x = leaf((2,))
    x.data = [1.0, 2.0]
    assert isinstance(x.numpy(), np.ndarray)
    with pytest.raises(TypeError, match="float"):
        x.data = np.array([1, 2])
    y = x * 2.0
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad = False
    z = Tensor(np.ones(2)).requires_grad_()
    assert z.requires_grad and z.is_leaf


def test_detach_numpy_item_and_metadata():
    x = leaf((2, 3))
    d = x.detach()
    assert d.numpy() is x.numpy() and not d.requires_grad and d.is_leaf
    assert x.numpy() is x.numpy()
    assert x.shape == (2, 3) and x.ndim == 2 and x.numel() == 6 and len(x) == 2
    assert x.size() == (2, 3) and x.size(1) == 3 and x.dtype == np.float64
    assert sandbox.tensor([[2.5]]).item() == 2.5
    with pytest.raises(ValueError, match="one element"):
        x.item()


def test_repr():
    assert repr(sandbox.tensor([1.0, 2.0])) == "tensor([1., 2.])"  # as PyTorch prints
    text = repr(sandbox.tensor([1.0], dtype=sandbox.float64))
    assert text == "tensor([1.], dtype=sandbox.float64)"
    x = sandbox.tensor([1.0], requires_grad=True)
    assert "requires_grad=True" in repr(x)
    assert "grad_fn=<MulBackward>" in repr(x * 2.0)


def test_ndarray_on_the_left_defers_to_tensor():
    x = leaf((3,))
    y = np.ones(3) * x + np.ones(3)
    assert isinstance(y, Tensor) and y.requires_grad
    z = np.ones(3) - x
    np.testing.assert_allclose(z.numpy(), 1 - x.numpy())


def test_comparisons_are_bool_and_not_differentiable():
    x = leaf((3,))
    m = x > 0
    assert m.dtype == bool and not m.requires_grad
    assert (x == x).numpy().all() and not (x != x).numpy().any()
    assert (~m).numpy().tolist() == (x.numpy() <= 0).tolist()


def test_setitem_writes_in_place_and_refuses_a_leaf_that_requires_grad():
    t = sandbox.zeros(3)
    t[1] = 5.0
    assert t.numpy().tolist() == [0.0, 5.0, 0.0]
    with pytest.raises(RuntimeError, match="in-place"):
        leaf((3,))[0] = 1.0


def test_unbroadcast_helper():
    g = np.ones((2, 3, 4))
    assert unbroadcast(g, (2, 3, 4)) is g
    np.testing.assert_allclose(unbroadcast(g, (3, 1)), np.full((3, 1), 8.0))
    np.testing.assert_allclose(unbroadcast(g, ()), 24.0)
    np.testing.assert_allclose(unbroadcast(g, (1, 1, 4)), np.full((1, 1, 4), 6.0))
    gt = Tensor(g, requires_grad=True)
    out = unbroadcast(gt, (3, 1))
    assert out.shape == (3, 1) and out.requires_grad
