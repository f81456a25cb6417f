"""Regression tests against PyTorch (float64) for bugs found by differential fuzzing (issue 15).

Bugs 2-4 shared one cause: numpy returns a numpy *scalar*, not a 0-d array, for a
0-d result; the engine now keeps every 0-d value a 0-d ndarray
(:func:`sandbox.autograd._tensor.as_ndarray`).
"""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox.autograd.gradcheck import gradcheck, gradgradcheck
from tests.support.torch_parity import compare


@pytest.fixture(autouse=True)
def _torch(torch):
    return torch


# -- 1. setitem records the assignment ------------------------------------------------------
def test_setitem_value_gets_its_gradient(torch):
    """Bug 1: ``buf[1:3] = v`` left ``v.grad`` None."""

    def sb(v, x):
        buf = sandbox.zeros(4, dtype=np.float64)
        buf[1:3] = v
        return buf * x

    def th(v, x):
        buf = torch.zeros(4, dtype=torch.float64)
        buf[1:3] = v
        return buf * x

    compare(sb, th, [np.array([1.5, -2.0]), np.array([0.3, 0.7, -1.1, 2.0])], second=True)


def test_setitem_into_a_non_leaf_keeps_the_rest_of_its_gradient(torch):
    def sb(a, v):
        h = a * 2.0
        h[:, 1] = v  # broadcast (3,) -> column; the old column loses its gradient
        h[0] = v.sum()
        return h.exp()

    def th(a, v):
        h = a * 2.0
        h[:, 1] = v
        h[0] = v.sum()
        return h.exp()

    compare(sb, th, [np.random.default_rng(1).standard_normal((3, 4)) * 0.3, np.arange(3.0) / 4],
            second=True)


def test_setitem_with_a_mask_and_int_arrays(torch):
    mask = np.array([True, False, True, False, True])
    idx = np.array([3, 1])

    def sb(x, v, w):
        buf = sandbox.zeros(5, dtype=np.float64)
        buf[mask] = v
        buf[idx] = w
        return buf * x

    def th(x, v, w):
        buf = torch.zeros(5, dtype=torch.float64)
        buf[torch.from_numpy(mask)] = v
        buf[torch.from_numpy(idx)] = w
        return buf * x

    compare(sb, th, [np.linspace(-1, 1, 5), np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5])])


def test_setitem_outside_the_graph_stays_in_place():
    buf = sandbox.zeros(3, dtype=np.float64)
    view = buf.numpy()
    with sandbox.no_grad():
        buf[0] = sandbox.tensor(np.array(2.0), requires_grad=True)
    buf[1] = 3.0
    assert view.tolist() == [2.0, 3.0, 0.0] and buf.is_leaf and not buf.requires_grad


def test_setitem_into_a_leaf_that_requires_grad_is_refused():
    x = sandbox.tensor(np.zeros(3), requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        x[0] = 1.0


# -- 2. a 0-d tensor receiving three or more gradients --------------------------------------
def test_zero_d_fan_out_of_three(torch):
    """Bug 2: summing 0-d gradients gave a numpy scalar; the next in-place add raised."""
    compare(
        lambda x: (x.mean() * x).sum() + x.mean() * x.mean() + x.mean().exp(),
        lambda x: (x.mean() * x).sum() + x.mean() * x.mean() + x.mean().exp(),
        [np.array([0.5, -1.0, 2.0])],
        second=True,
    )
    compare(lambda s: s * s * s, lambda s: s * s * s, [np.array(0.7)], second=True)


def test_zero_d_leaf_accumulates_over_backward_calls():
    s = sandbox.tensor(np.array(0.5), requires_grad=True)
    for _ in range(3):
        (s * s + s).backward()
    assert isinstance(s.grad.numpy(), np.ndarray) and s.grad.item() == pytest.approx(6.0)


# -- 3. second derivatives of 0-d tensors ---------------------------------------------------
ZERO_D_OPS = {
    "reciprocal": lambda x: 1 / x,
    "exp": lambda x: x.exp(),
    "sqrt": lambda x: x.sqrt(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "rpow": lambda x: 2.0**x,
    "log": lambda x: x.log(),
    "softplus": lambda x: x.softplus(),
    "relu_sq": lambda x: x.relu() * x,
}


@pytest.mark.parametrize("name", sorted(ZERO_D_OPS))
def test_zero_d_second_derivatives(torch, name):
    """Bug 3: a saved 0-d output came back as a constant, losing a term of d2/dx2."""
    fn = ZERO_D_OPS[name]
    torch_fn = {"softplus": torch.nn.functional.softplus}.get(name, fn)
    compare(fn, torch_fn, [np.array(0.7)], second=True)


def test_zero_d_binary_second_derivatives(torch):
    compare(lambda a, b: a / b, lambda a, b: a / b, [np.array(0.7), np.array(1.3)], second=True)
    compare(lambda a, b: a**b, lambda a, b: a**b, [np.array(0.7), np.array(1.3)], second=True)


def test_zero_d_reciprocal_second_derivative_value():
    x = sandbox.tensor(np.array(0.7), requires_grad=True)
    (g,) = sandbox.autograd.grad(1 / x, x, create_graph=True)
    (gg,) = sandbox.autograd.grad(g, x)
    assert gg.item() == pytest.approx(2 / 0.7**3, rel=1e-12)  # 5.831, was 2.915


# -- 4. relu of a 0-d tensor ----------------------------------------------------------------
@pytest.mark.parametrize("value", [0.7, -0.7])
def test_zero_d_relu_and_leaky_relu(torch, value):
    """Bug 4: relu's saved 0-d output was a numpy scalar, whose ``.data`` is a memoryview."""
    compare(lambda x: x.relu(), lambda x: x.relu(), [np.array(value)])
    compare(
        lambda x: x.leaky_relu(0.1),
        lambda x: torch.nn.functional.leaky_relu(x, 0.1),
        [np.array(value)],
    )


# -- 5. every target ignored ----------------------------------------------------------------
@pytest.mark.parametrize("loss", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("weighted", [False, True])
def test_all_targets_ignored_gives_nan_loss_and_zero_gradient(torch, loss, weighted):
    """Bug 5: mean reduction over zero targets gave NaN gradients (torch: 0)."""
    target = np.full((3, 2), -100)
    weight = np.array([0.5, 2.0, 1.0, 1.5]) if weighted else None
    tw = None if weight is None else torch.from_numpy(weight)
    compare(
        lambda x: getattr(F, loss)(x, sandbox.tensor(target), weight=weight),
        lambda x: getattr(torch.nn.functional, loss)(x, torch.from_numpy(target), weight=tw),
        [np.random.default_rng(0).standard_normal((3, 4, 2))],
        second=True,
    )


# -- 6. unbatched probability target --------------------------------------------------------
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_unbatched_probability_target_gets_its_gradient(torch, smoothing):
    """Bug 6: a (C,) input with a float target that requires grad dropped the target's grad."""
    compare(
        lambda x, t: F.cross_entropy(x, t, label_smoothing=smoothing),
        lambda x, t: torch.nn.functional.cross_entropy(x, t, label_smoothing=smoothing),
        [np.array([0.3, -1.2, 2.0, 0.1]), np.array([0.1, 0.2, 0.3, 0.4])],
        second=True,
    )


# -- 7. logsumexp with an infinite maximum --------------------------------------------------
@pytest.mark.parametrize(
    "values",
    [[-np.inf, -np.inf], [np.inf, 1.0], [np.inf, np.inf], [-np.inf, 1.0], [1e308, 1e308]],
)
def test_logsumexp_with_infinities(torch, values):
    """Bug 7: an infinite max made ``x - max`` NaN (torch: -inf / +inf)."""
    x = np.array([values, [0.5, -0.5]])
    compare(lambda a: a.logsumexp(dim=1), lambda a: a.logsumexp(dim=1), [x])


def test_logsumexp_of_empty_is_minus_inf(torch):
    compare(lambda a: a.logsumexp(dim=1), lambda a: a.logsumexp(dim=1), [np.zeros((2, 0))])


# -- softplus(beta, threshold) --------------------------------------------------------------
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 1.0), (0.5, 3.0), (-1.5, 2.0)])
def test_softplus_beta_threshold_matches_torch(torch, beta, threshold):
    # Not exactly at beta * x == threshold: there torch's second derivative is 0 while
    # its first derivative is still the sigmoid's (we stay on the sigmoid side for both).
    x = np.concatenate([np.linspace(-30, 30, 24), [0.0, 0.4, 1.1, 2.2]])
    compare(
        lambda a: F.softplus(a, beta, threshold),
        lambda a: torch.nn.functional.softplus(a, beta, threshold),
        [x],
        second=True,
    )


def test_softplus_gradcheck():
    x = sandbox.tensor(np.array([-3.0, -0.4, 0.3, 1.7, 3.1]), requires_grad=True)
    for beta, threshold in [(1.0, 20.0), (2.0, 3.0), (0.5, 1.0)]:
        assert gradcheck(lambda a, b=beta, t=threshold: a.softplus(b, t), [x])
        assert gradgradcheck(lambda a, b=beta, t=threshold: a.softplus(b, t), [x])


def test_softplus_rejects_zero_beta():
    with pytest.raises(ValueError, match="beta"):
        F.softplus(sandbox.tensor([1.0]), beta=0)


# -- conv2d(padding="same" / "valid") -------------------------------------------------------
@pytest.mark.parametrize(
    "kernel,dilation", [((3, 3), 1), ((2, 4), 1), ((3, 2), (2, 3)), ((4, 4), 2), ((1, 1), 1)]
)
@pytest.mark.parametrize("mode", ["same", "valid"])
def test_conv2d_string_padding_matches_torch(torch, kernel, dilation, mode):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 9, 8))
    w = rng.standard_normal((6, 2, *kernel))
    compare(
        lambda a, b: F.conv2d(a, b, padding=mode, dilation=dilation, groups=2),
        lambda a, b: torch.nn.functional.conv2d(a, b, padding=mode, dilation=dilation, groups=2),
        [x, w],
    )


def test_conv2d_same_keeps_size_and_gradchecks():
    rng = np.random.default_rng(4)
    x = sandbox.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = sandbox.tensor(rng.standard_normal((3, 2, 2, 3)), requires_grad=True)
    assert F.conv2d(x, w, padding="same").shape == (1, 3, 5, 4)
    assert gradcheck(lambda a, b: F.conv2d(a, b, padding="same"), [x, w])


def test_conv2d_same_refuses_stride_and_bad_modes():
    x, w = sandbox.zeros(1, 1, 4, 4), sandbox.zeros(1, 1, 3, 3)
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, w, padding="same", stride=2)
    with pytest.raises(ValueError, match="padding must be"):
        F.conv2d(x, w, padding="full")
    with pytest.raises(ValueError, match="strided"):
        sandbox.nn.Conv2d(1, 1, 3, stride=(1, 2), padding="same")


def test_nn_conv2d_same_matches_torch(torch):
    layer = sandbox.nn.Conv2d(3, 4, (2, 3), padding="same", dtype=np.float64)
    ref = torch.nn.Conv2d(3, 4, (2, 3), padding="same", dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.weight.numpy()))
        ref.bias.copy_(torch.from_numpy(layer.bias.numpy()))
    x = np.random.default_rng(5).standard_normal((2, 3, 6, 5))
    np.testing.assert_allclose(
        layer(sandbox.tensor(x)).numpy(), ref(torch.from_numpy(x)).detach().numpy(), rtol=1e-10
    )
    assert "padding='same'" in repr(layer)


# -- found by tests/fuzz ------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((0,), 0), ((2, 0), 1), ((0, 3), 0), ((0, 3), 1)])
def test_mean_over_empty_dims(torch, shape, dim):
    """The backward divided by the element count 0 (ZeroDivisionError); torch: NaN, no error."""
    compare(lambda t: t.mean(dim=dim), lambda t: t.mean(dim=dim), [np.zeros(shape)], second=True)


def test_the_same_output_twice_in_grad_or_backward(torch):
    """Two outputs with the same node (x + y's backward returns one tensor for both inputs)
    counted that node's consumers twice, so the walk stopped before the leaves."""
    compare(lambda x, y: (x + y) ** 3, lambda x, y: (x + y) ** 3,
            [np.array([0.3, -0.2]), np.array([0.5, 0.1])], second=True)
    for lib, make in ((sandbox, sandbox.tensor), (torch, torch.tensor)):
        x = make(np.array([0.3, -0.2]), requires_grad=True)
        y = (x * x).sum()
        lib.autograd.backward([y, y])
        np.testing.assert_allclose(np.asarray(x.grad.numpy() if lib is sandbox else x.grad),
                                   [1.2, -0.8], rtol=1e-12)


@pytest.mark.parametrize("widths", [(0, 0), (1, 2)])
def test_pad_of_an_empty_dim(torch, widths):
    """pad refused a size-0 dim even with non-negative widths (torch pads it)."""
    compare(lambda t: F.pad(t, widths, value=0.5),
            lambda t: torch.nn.functional.pad(t, widths, value=0.5), [np.zeros((2, 0))])


def test_pow_mixed_second_derivative_at_exponent_zero_is_exact():
    """Found by tests/fuzz: torch differs here (it zeroes d(a**b)/da where b == 0, and so
    its derivative in b; torch's own gradgradcheck fails).  Ours matches finite differences."""
    a = sandbox.tensor(np.array([1.0, 0.7]), requires_grad=True)
    b = sandbox.tensor(np.array([0.0, 0.0]), requires_grad=True)
    assert gradgradcheck(lambda x, y: (x * x + 0.5) ** y, [a, b])


# -- found by tests/fuzz: a 1x1 transposed conv whose output_padding (allowed by the
# dilation) grows the plane took the pointwise shortcut, which assumes it does not -----
def test_conv_transpose_1x1_with_output_padding(torch):
    rng = np.random.default_rng(6)
    compare(
        lambda a, b: F.conv_transpose2d(a, b, stride=1, dilation=2, output_padding=1),
        lambda a, b: torch.nn.functional.conv_transpose2d(
            a, b, stride=1, dilation=2, output_padding=1
        ),
        [rng.standard_normal((1, 2, 3, 3)), rng.standard_normal((2, 2, 1, 1))],
    )
