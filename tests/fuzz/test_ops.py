"""Fuzzing ``sandbox.ops`` against PyTorch (see the package docstring)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import sandbox
import sandbox.functional as F
from tests.support.torch_parity import compare

from . import FUZZ, draw_broadcast_partner, draw_shape, draw_values, th, to_torch_index

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _torch(torch):
    return torch


# ------------------------------------------------------------------------------ elementwise graphs
def _sb_softplus(beta, threshold):
    return lambda h: F.softplus(h, beta, threshold)


def _th_softplus(beta, threshold):
    return lambda h: th().nn.functional.softplus(h, beta, threshold)


UNARY = {
    "exp": (lambda h: h.exp(), lambda h: h.exp()),
    "tanh": (lambda h: h.tanh(), lambda h: h.tanh()),
    "sigmoid": (lambda h: h.sigmoid(), lambda h: h.sigmoid()),
    "relu": (lambda h: h.relu(), lambda h: h.relu()),
    "leaky_relu": (
        lambda h: F.leaky_relu(h, 0.2),
        lambda h: th().nn.functional.leaky_relu(h, 0.2),
    ),
    "softplus": (_sb_softplus(1.0, 20.0), _th_softplus(1.0, 20.0)),
    "softplus_b2_t1.5": (_sb_softplus(2.0, 1.5), _th_softplus(2.0, 1.5)),
    "abs": (lambda h: abs(h), lambda h: abs(h)),
    "neg": (lambda h: -h, lambda h: -h),
    "square": (lambda h: h * h, lambda h: h * h),
    "cube": (lambda h: h**3, lambda h: h**3),
    "sqrt_pos": (lambda h: (h * h + 0.5).sqrt(), lambda h: (h * h + 0.5).sqrt()),
    "log_pos": (lambda h: (h * h + 0.5).log(), lambda h: (h * h + 0.5).log()),
    "log1p_pos": (lambda h: (h * h).log1p(), lambda h: (h * h).log1p()),
    "recip": (lambda h: 1.0 / (h * h + 0.5), lambda h: 1.0 / (h * h + 0.5)),
    "rpow": (lambda h: 2.0**h, lambda h: 2.0**h),
    "clamp": (lambda h: h.clamp(-0.5, 0.5), lambda h: h.clamp(-0.5, 0.5)),
    "clamp_min": (lambda h: h.clamp(min=0.0), lambda h: h.clamp(min=0.0)),
    "scalar_ops": (lambda h: 1.5 - h / 2.0 + 0.3, lambda h: 1.5 - h / 2.0 + 0.3),
}

BINARY = {
    "add": (lambda h, o: h + o, lambda h, o: h + o),
    "sub": (lambda h, o: o - h, lambda h, o: o - h),
    "mul": (lambda h, o: h * o, lambda h, o: h * o),
    "div": (lambda h, o: h / (o * o + 0.5), lambda h, o: h / (o * o + 0.5)),
    "pow": (  # exponent >= 0.1: see DELIBERATE_DIFFERENCES["pow at exponent 0"]
        lambda h, o: (h * h + 0.5) ** (o * o + 0.1),
        lambda h, o: (h * h + 0.5) ** (o * o + 0.1),
    ),
    "where": (
        lambda h, o: sandbox.where(h > o, h, o * 2.0),
        lambda h, o: th().where(h > o, h, o * 2.0),
    ),
}


@FUZZ
@given(st.data())
def test_fuzz_elementwise_graphs(data):
    """Chains of unary and broadcasting binary ops, with fan-out (a leaf used again)."""
    shape = draw_shape(data)
    partner = draw_broadcast_partner(data, shape)
    kind = data.draw(st.sampled_from(["normal", "ties"]), label="values")
    a, b = draw_values(data, shape, kind), draw_values(data, partner, kind)
    steps = data.draw(
        st.lists(
            st.one_of(
                st.tuples(st.just("unary"), st.sampled_from(sorted(UNARY))),
                st.tuples(
                    st.just("binary"), st.sampled_from(sorted(BINARY)), st.sampled_from("abh")
                ),
            ),
            min_size=1,
            max_size=4,
        ),
        label="steps",
    )

    def program(side):
        def run(x, y):
            h = x
            for step in steps:
                if step[0] == "unary":
                    h = UNARY[step[1]][side](h)
                else:
                    other = {"a": x, "b": y, "h": h}[step[2]]
                    h = BINARY[step[1]][side](h, other)
            return h

        return run

    torch = th()
    with torch.no_grad(), np.errstate(all="ignore"):
        value = program(1)(torch.tensor(a), torch.tensor(b)).numpy()
    assume(np.isfinite(value).all())  # see DELIBERATE_DIFFERENCES["overflow"]
    compare(program(0), program(1), [a, b], second=True)


# ------------------------------------------------------------------------------ reductions
REDUCTIONS = {
    "sum": (lambda x, d, k: x.sum(dim=d, keepdim=k), lambda x, d, k: x.sum(dim=d, keepdim=k)),
    "mean": (lambda x, d, k: x.mean(dim=d, keepdim=k), lambda x, d, k: x.mean(dim=d, keepdim=k)),
    "amax": (lambda x, d, k: x.amax(dim=d, keepdim=k), lambda x, d, k: x.amax(dim=d, keepdim=k)),
    "amin": (lambda x, d, k: x.amin(dim=d, keepdim=k), lambda x, d, k: x.amin(dim=d, keepdim=k)),
    "max_dim": (  # torch's (values, indices) form: one dim; a tie's gradient goes to one index
        lambda x, d, k: x.max(dim=d, keepdim=k)[0],
        lambda x, d, k: x.max(dim=d, keepdim=k)[0],
    ),
    "var": (lambda x, d, k: x.var(dim=d, keepdim=k), lambda x, d, k: x.var(dim=d, keepdim=k)),
    "var0": (
        lambda x, d, k: x.var(dim=d, correction=0, keepdim=k),
        lambda x, d, k: x.var(dim=d, correction=0, keepdim=k),
    ),
    "logsumexp": (
        lambda x, d, k: x.logsumexp(dim=d, keepdim=k),
        lambda x, d, k: x.logsumexp(dim=d, keepdim=k),
    ),
}


@FUZZ
@given(st.data())
def test_fuzz_reductions_with_ties(data):
    name = data.draw(st.sampled_from(sorted(REDUCTIONS)), label="reduction")
    empty_ok = name in ("sum", "mean", "logsumexp")
    shape = draw_shape(data, min_dims=1, min_side=0 if empty_ok else 1)
    x = draw_values(data, shape, data.draw(st.sampled_from(["ties", "normal"]), label="values"))
    dims = data.draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    dim = tuple(dims) if len(dims) != 1 else dims[0]
    if dim == () or (name.startswith("var") and not dims):
        dim = tuple(range(len(shape)))  # all dims (torch reads dim=() as "all" only for some ops)
    if name == "max_dim":
        dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    keep = data.draw(st.booleans(), label="keepdim")
    sb, th = REDUCTIONS[name]
    # x * x first: a non-trivial second derivative, and ties between x and -x.
    compare(
        lambda t: sb(t * t, dim, keep) * 1.5, lambda t: th(t * t, dim, keep) * 1.5, [x], second=True
    )


# ------------------------------------------------------------------------------ softmax family
SOFTMAX = {
    "softmax": (lambda x, d: x.softmax(d), lambda x, d: x.softmax(d)),
    "log_softmax": (lambda x, d: x.log_softmax(d), lambda x, d: x.log_softmax(d)),
    "logsumexp": (lambda x, d: x.logsumexp(d), lambda x, d: x.logsumexp(d)),
}


@FUZZ
@given(st.data())
def test_fuzz_softmax_large_magnitudes_and_infinities(data):
    name = data.draw(st.sampled_from(sorted(SOFTMAX)), label="op")
    shape = draw_shape(data, min_dims=1, min_side=1)
    scale = data.draw(st.sampled_from([1.0, 1e3, 1e6, 1e300]), label="scale")
    x = draw_values(data, shape) * scale
    n_inf = data.draw(st.integers(0, 2), label="infinities")
    for _ in range(n_inf):
        pos = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
        x[pos] = data.draw(st.sampled_from([np.inf, -np.inf]), label="inf")
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    sb, th = SOFTMAX[name]
    finite = np.isfinite(x).all() and scale < 1e300
    with np.errstate(all="ignore"):
        compare(lambda t: sb(t, dim), lambda t: th(t, dim), [x], second=bool(finite))


# ------------------------------------------------------------------------------ indexing
def _draw_basic_index(data, shape):
    index = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "full", "none"]), label="index kind")
        if kind == "int" and n > 0:
            index.append(data.draw(st.integers(-n, n - 1), label="int"))
        elif kind == "slice":
            start = data.draw(st.integers(-n - 1, n + 1), label="start")
            stop = data.draw(st.integers(-n - 1, n + 1), label="stop")
            step = data.draw(st.integers(1, 2), label="step")  # torch: positive steps only
            index.append(slice(start, stop, step))
        elif kind == "none":
            index.extend([None, slice(None)])
        else:
            index.append(slice(None))
    if data.draw(st.booleans(), label="ellipsis") and index:
        index[-1] = Ellipsis
    return tuple(index)


@FUZZ
@given(st.data())
def test_fuzz_getitem(data):
    shape = draw_shape(data, min_dims=1, min_side=1)
    x = draw_values(data, shape)
    kind = data.draw(st.sampled_from(["basic", "int_array", "mask"]), label="index")
    if kind == "basic":
        index = _draw_basic_index(data, shape)
    elif kind == "int_array":  # one int array (repeats allowed: gradients accumulate)
        idx = np.array(data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), max_size=4)))
        index = (idx.astype(np.int64),) + (slice(None),) * data.draw(st.integers(0, len(shape) - 1))
    else:
        lead = data.draw(st.integers(1, len(shape)), label="mask dims")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="mask seed"))
        index = rng.random(shape[:lead]) < 0.5
    compare(lambda t: t[index] * 2.0, lambda t: t[to_torch_index(index)] * 2.0, [x], second=True)


@FUZZ
@given(st.data())
def test_fuzz_setitem(data):
    n = data.draw(st.integers(1, 5), label="length")
    m = data.draw(st.integers(1, 3), label="columns")
    kind = data.draw(st.sampled_from(["slice", "int_array", "mask", "int"]), label="index")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="index seed"))
    if kind == "slice":
        index = slice(data.draw(st.integers(0, n)), None)
    elif kind == "int_array":
        index = rng.permutation(n)[: data.draw(st.integers(0, n))].astype(np.int64)
    elif kind == "mask":
        index = rng.random(n) < 0.5
    else:
        index = data.draw(st.integers(-n, n - 1))
    target_shape = np.zeros((n, m))[index].shape
    value_shape = data.draw(st.sampled_from([target_shape, target_shape[-1:], ()]), label="v")
    base, value = draw_values(data, (n, m)), draw_values(data, value_shape)
    into_leaf_buffer = data.draw(st.booleans(), label="buffer")

    def program(lib, th_index):
        def run(a, v):
            h = lib.zeros((n, m), dtype=a.dtype) if into_leaf_buffer else a * 1.5
            h[th_index] = v
            return h * a

        return run

    torch = th()
    compare(program(sandbox, index), program(torch, to_torch_index(index)), [base, value],
            second=True)


# ------------------------------------------------------------------------------ matmul
@FUZZ
@given(st.data())
def test_fuzz_matmul(data):
    n, k, m = (data.draw(st.integers(1, 3), label="size") for _ in range(3))
    batch = draw_broadcast_partner(data, draw_shape(data, max_dims=2, min_side=1))
    other_batch = draw_broadcast_partner(data, batch)
    a_shape = data.draw(st.sampled_from([(k,), batch + (n, k)]), label="a")
    b_shape = data.draw(st.sampled_from([(k,), other_batch + (k, m)]), label="b")
    a, b = draw_values(data, a_shape), draw_values(data, b_shape)
    compare(lambda x, y: (x @ y) * 1.0, lambda x, y: (x @ y) * 1.0, [a, b], second=True)


# ------------------------------------------------------------------------------ shape ops
def _draw_shape_step(data, shape):
    """One shape op valid for ``shape``: (name, argument, resulting shape)."""
    nd = len(shape)
    choices = ["reshape", "unsqueeze", "cat", "stack", "pad"]
    if nd:
        choices += ["permute", "flatten", "squeeze", "expand", "transpose"]
    name = data.draw(st.sampled_from(choices), label="shape op")
    if name == "reshape":
        return name, (-1,), (int(np.prod(shape)),)
    if name == "unsqueeze":
        d = data.draw(st.integers(-nd - 1, nd), label="dim")
        d %= nd + 1
        return name, d, shape[:d] + (1,) + shape[d:]
    if name in ("cat", "stack"):
        d = data.draw(st.integers(0, nd if name == "stack" else max(nd - 1, 0)), label="dim")
        if name == "cat":
            if nd == 0:
                return "reshape", (1,), (1,)
            return name, d, shape[:d] + (2 * shape[d],) + shape[d + 1 :]
        return name, d, shape[:d] + (2,) + shape[d:]
    if name == "pad":
        if nd == 0:
            return "reshape", (1,), (1,)
        widths = (data.draw(st.integers(0, 2), label="l"), data.draw(st.integers(0, 2), label="r"))
        return name, widths, shape[:-1] + (shape[-1] + sum(widths),)
    if name == "permute":
        perm = tuple(data.draw(st.permutations(range(nd)), label="perm"))
        return name, perm, tuple(shape[p] for p in perm)
    if name == "flatten":
        s = data.draw(st.integers(0, nd - 1), label="start")
        e = data.draw(st.integers(s, nd - 1), label="end")
        return name, (s, e), shape[:s] + (int(np.prod(shape[s : e + 1])),) + shape[e + 1 :]
    if name == "squeeze":
        d = data.draw(st.integers(0, nd - 1), label="dim")
        return name, d, shape[:d] + shape[d + 1 :] if shape[d] == 1 else shape
    if name == "expand":
        out = tuple(3 if n == 1 and data.draw(st.booleans(), label="grow") else n for n in shape)
        return name, out, out
    d0, d1 = data.draw(st.integers(0, nd - 1), label="d0"), data.draw(st.integers(0, nd - 1))
    out = list(shape)
    out[d0], out[d1] = out[d1], out[d0]
    return name, (d0, d1), tuple(out)


def _apply_shape_step(lib, step, h):
    name, arg, _ = step
    if name == "reshape":
        return h.reshape(*arg)
    if name in ("unsqueeze", "squeeze"):
        return getattr(h, name)(arg)
    if name in ("cat", "stack"):
        return getattr(lib, name)([h, h * 2.0], arg)  # fan-out: h used twice
    if name == "pad":
        if lib is sandbox:
            return F.pad(h, arg, value=0.5)
        return lib.nn.functional.pad(h, arg, value=0.5)
    if name == "permute":
        return h.permute(*arg)
    if name == "flatten":
        return h.flatten(*arg)
    if name == "expand":
        return h.expand(*arg)
    return h.transpose(*arg)


@FUZZ
@given(st.data())
def test_fuzz_shape_ops(data):
    """Chains of reshape, permute, transpose, (un)squeeze, flatten, expand, cat, stack, pad."""
    shape = draw_shape(data)
    x = draw_values(data, shape)
    steps, current = [], shape
    for _ in range(data.draw(st.integers(1, 4), label="steps")):
        step = _draw_shape_step(data, current)
        steps.append(step)
        current = step[2]

    def program(lib):
        def run(t):
            h = t * t  # a non-trivial second derivative
            for step in steps:
                h = _apply_shape_step(lib, step, h)
            return h

        return run

    compare(program(sandbox), program(th()), [x], second=True)


# ------------------------------------------------------------------------------ engine features
@FUZZ
@given(st.data())
def test_fuzz_hooks_retain_graph_and_accumulation(data):
    """Two backward calls through a retained graph: ``.grad`` accumulates, a hook replaces
    an intermediate's gradient, ``retain_grad`` keeps it, a leaf hook sees each pass's sum."""
    shape = draw_shape(data, max_dims=2)
    a = draw_values(data, shape)
    b = draw_values(data, draw_broadcast_partner(data, shape))
    unary = data.draw(st.sampled_from(sorted(UNARY)), label="unary")
    scale = data.draw(st.sampled_from([0.5, 2.0, -1.0]), label="hook scale")

    def run(make, side):
        x, y = make(a), make(b)
        h = UNARY[unary][side](x * y)
        h.register_hook(lambda g: g * scale)
        h.retain_grad()
        x.register_hook(lambda g: g + 1.0)
        out = (h * y + h).sum()
        out.backward(retain_graph=True)
        out.backward()
        return [t.grad for t in (x, y, h)]

    torch = th()
    ours = run(lambda v: sandbox.tensor(v, requires_grad=True), 0)
    theirs = run(lambda v: torch.tensor(v, requires_grad=True), 1)
    for name, o, t in zip("xyh", ours, theirs, strict=True):
        np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-9, atol=1e-10, err_msg=name)
