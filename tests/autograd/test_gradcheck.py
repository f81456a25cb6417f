"""gradcheck / gradgradcheck: they pass on correct rules and fail (clearly) on wrong ones."""

import numpy as np
import pytest

from sandbox.autograd import Function, Tensor, once_differentiable
from sandbox.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck


def inputs(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(Tensor(rng.standard_normal(s) + 1.5, requires_grad=True) for s in shapes)


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x * x * 3.0


class WrongCube(Cube):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x * x * 3.03  # 1 % too large


class DetachedCube(Cube):
    """Right first derivative, but the saved input is detached: second derivative lost."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * Tensor(3.0 * x.numpy()**2)


class TwoInTwoOut(Function):
    """(a * b, a + b) with a wrong gradient only for output 1 w.r.t. input 1."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, g0, g1):
        a, b = ctx.saved_tensors
        return g0 * b + g1, g0 * a + g1 * 1.1


@pytest.mark.parametrize("fast_mode", [False, True])
def test_passes_on_correct_backward(fast_mode):
    assert gradcheck(Cube.apply, inputs((3, 4)), fast_mode=fast_mode)
    assert gradcheck(
        lambda a, b: (a * b[:1]).tanh() @ b.T, inputs((2, 3), (4, 3)), fast_mode=fast_mode
    )


@pytest.mark.parametrize("fast_mode", [False, True])
def test_fails_on_wrong_backward(fast_mode):
    x = inputs((3, 4))
    with pytest.raises(
        GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"
    ):
        gradcheck(WrongCube.apply, x, fast_mode=fast_mode)
    assert gradcheck(WrongCube.apply, x, fast_mode=fast_mode, raise_exception=False) is False


def test_message_names_output_input_and_location():
    a, b = inputs((2, 3), (2, 3))
    with pytest.raises(GradcheckError) as info:
        gradcheck(TwoInTwoOut.apply, (a, b))
    msg = str(info.value)
    assert "output 1 with respect to input 1" in msg
    assert "max abs error" in msg and "numerical" in msg and "analytical" in msg
    assert "input 1 index (" in msg


def test_inputs_without_grad_and_non_tensor_args_are_passed_through():
    a, b = inputs((3,), (3,))
    b.requires_grad = False
    assert gradcheck(lambda x, y, k: x * y * k, (a, b, 2.0))


def test_coarse_eps_fails():
    x = inputs((5,))
    assert gradcheck(lambda t: t**4, x)
    with pytest.raises(GradcheckError):
        gradcheck(lambda t: t**4, x, eps=0.1)


def test_warns_for_float32_inputs():
    x = Tensor(np.linspace(1.0, 2.0, 4).astype(np.float32), requires_grad=True)
    with pytest.warns(UserWarning, match="Input #0 .*not a double precision"):
        gradcheck(lambda t: t * 2.0, (x,), eps=1e-2, atol=1e-3)


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input"):
        gradcheck(lambda t: t * 2.0, (Tensor(np.ones(2)),))


def test_nondeterministic_backward():
    rng = np.random.default_rng(0)

    class Noisy(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0

        @staticmethod
        def backward(ctx, grad):
            return grad * (2.0 + 1e-9 * rng.standard_normal())

    x = inputs((3,))
    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(Noisy.apply, x)
    assert gradcheck(Noisy.apply, x, nondet_tol=1e-6)


def test_inputs_are_restored():
    (x,) = inputs((2, 3))
    before = x.numpy().copy()
    gradcheck(Cube.apply, (x,))
    gradcheck(Cube.apply, (x,), fast_mode=True)
    np.testing.assert_array_equal(x.numpy(), before)


def test_non_contiguous_input():
    base = np.random.default_rng(1).standard_normal((4, 3)) + 2.0
    x = Tensor(base.T, requires_grad=True)  # a transposed (F-ordered) view
    assert gradcheck(lambda t: (t * t).sum(axis=0), (x,))


def test_gradgradcheck_passes_and_catches_lost_second_derivative():
    x = inputs((4,))
    assert gradgradcheck(Cube.apply, x)
    assert gradgradcheck(Cube.apply, x, fast_mode=True)
    assert gradcheck(DetachedCube.apply, x)  # first order is right
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradgradcheck(DetachedCube.apply, x)


def test_gradgradcheck_with_given_grad_outputs_and_two_outputs():
    a, b = inputs((2, 2), (2, 2))
    go = tuple(Tensor(np.full((2, 2), v), requires_grad=True) for v in (0.5, -1.0))
    assert gradgradcheck(lambda x, y: (x * y * y, (x * y).exp()), (a, b), go)
    with pytest.raises(ValueError, match="grad_outputs"):
        gradgradcheck(lambda x, y: x * y, (a, b), go)


def test_gradgradcheck_through_once_differentiable_raises():
    class KernelCube(Cube):
        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_arrays
            return 3.0 * x**2 * grad

    x = inputs((3,))
    assert gradcheck(KernelCube.apply, x)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        gradgradcheck(KernelCube.apply, x)
