"""The Cython Adam kernel equals the numpy update bitwise, for any thread count."""

import numpy as np
import pytest

import sandbox
from sandbox import nn, optim
from sandbox.optim import _optimizer


def _params(dtype, rng):
    shapes = [(64, 33, 3, 3), (64,), (5000,)]  # one large enough to run in parallel
    params = []
    for shape in shapes:
        p = nn.Parameter(rng.standard_normal(shape).astype(dtype))
        params.append(p)
    return params


def _run(cls, kwargs, dtype, fused, monkeypatch, threads=2, steps=3):
    rng = np.random.default_rng(0)
    params = _params(dtype, rng)
    opt = cls(params, **kwargs)
    with monkeypatch.context() as mp:
        if not fused:
            mp.setattr(_optimizer, "_kernel_takes", lambda *a: False)
        with sandbox.num_threads(threads):
            for _ in range(steps):
                for p in params:
                    p.grad = sandbox.Tensor(rng.standard_normal(p.numpy().shape).astype(dtype))
                opt.step()
    states = [(s["exp_avg"], s["exp_avg_sq"]) for s in opt.state.values()]
    return [p.numpy() for p in params], states


CONFIGS = [
    (optim.Adam, {"lr": 1e-2}),
    (optim.Adam, {"lr": 1e-2, "weight_decay": 0.1, "maximize": True, "betas": (0.8, 0.9)}),
    (optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1, "eps": 1e-3}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("cls", "kwargs"), CONFIGS)
def test_fused_adam_equals_numpy_bitwise(cls, kwargs, dtype, monkeypatch):
    calls = []
    real = _optimizer._fused_adam
    monkeypatch.setattr(_optimizer, "_fused_adam", lambda *a: calls.append(1) or real(*a))
    fused_p, fused_s = _run(cls, kwargs, dtype, True, monkeypatch)
    assert calls  # the kernel really ran
    ref_p, ref_s = _run(cls, kwargs, dtype, False, monkeypatch)
    for a, b in zip(fused_p, ref_p, strict=True):
        assert a.dtype == dtype
        np.testing.assert_array_equal(a, b)
    for (m, v), (m_ref, v_ref) in zip(fused_s, ref_s, strict=True):
        np.testing.assert_array_equal(m, m_ref)
        np.testing.assert_array_equal(v, v_ref)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_adam_is_bitwise_identical_for_any_thread_count(dtype, monkeypatch):
    runs = [_run(optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}, dtype, True, monkeypatch,
                 threads=t) for t in (1, 2, 3)]
    for params, states in runs[1:]:
        for a, b in zip(params, runs[0][0], strict=True):
            np.testing.assert_array_equal(a, b)
        for (m, v), (m0, v0) in zip(states, runs[0][1], strict=True):
            np.testing.assert_array_equal(m, m0)
            np.testing.assert_array_equal(v, v0)


def test_non_contiguous_or_amsgrad_falls_back_to_numpy(monkeypatch):
    p = nn.Parameter(np.ones((4, 6), np.float32))
    p.grad = sandbox.Tensor(np.ones((6, 4), np.float32).T)  # a non-contiguous gradient
    opt = optim.Adam([p], lr=0.1)
    grad = p.grad.numpy().astype(np.float32, copy=False)
    state = {"step": 1, "exp_avg": np.zeros((4, 6), np.float32),
             "exp_avg_sq": np.zeros((4, 6), np.float32)}
    assert not _optimizer._kernel_takes(p.numpy(), grad, state["exp_avg"], state["exp_avg_sq"])
    opt.step()
    np.testing.assert_allclose(p.numpy(), 1 - 0.1, rtol=1e-6)  # first Adam step moves by lr
    q = nn.Parameter(np.ones(3))
    q.grad = sandbox.Tensor(np.ones(3))
    ams = optim.Adam([q], lr=0.1, amsgrad=True)
    monkeypatch.setattr(_optimizer, "_fused_adam", lambda *a: pytest.fail("kernel used"))
    ams.step()
    np.testing.assert_allclose(q.numpy(), 0.9)


def test_adam_update_validates_its_arrays():
    from sandbox.array.optim import adam_update

    a = np.zeros(4, np.float32)
    kw = dict(step=1, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8)
    with pytest.raises(ValueError, match="one float dtype and shape"):
        adam_update(a, np.zeros(4), a.copy(), a.copy(), **kw)
    with pytest.raises(ValueError, match="one float dtype and shape"):
        adam_update(a, np.zeros(8, np.float32)[::2], a.copy(), a.copy(), **kw)
    with pytest.raises(ValueError, match="step must be a positive integer"):
        adam_update(a, a.copy(), a.copy(), a.copy(), **{**kw, "step": 0})
    p, g = np.ones(4, np.float32), np.ones(4, np.float32)
    adam_update(p, g, np.zeros(4, np.float32), np.zeros(4, np.float32), **kw)
    np.testing.assert_allclose(p, 0.9, rtol=1e-6)  # the first step moves by lr


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_update_many_is_adam_update_on_each(dtype):
    """One call over several parameters (blocks of all of them in one parallel loop)
    gives each the bits of its own adam_update; mixed dtypes and bad arrays are refused."""
    from sandbox.array.optim import adam_update, adam_update_many

    rng = np.random.default_rng(3)
    sizes = (7, 16384, 40000, 1)  # blocks of 16384: parameters end mid-block and on one
    arrays = [[rng.standard_normal(n).astype(dtype) for _ in range(4)] for n in sizes]
    for quad in arrays:
        quad[3] = np.abs(quad[3])
    kw = dict(step=3, lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-6, weight_decay=0.05,
              decoupled=True, maximize=True)
    one = [[a.copy() for a in quad] for quad in arrays]
    for quad in one:
        adam_update(*quad, **kw)
    many = [[a.copy() for a in quad] for quad in arrays]
    with sandbox.num_threads(3):
        adam_update_many(*zip(*many, strict=True), **kw)
    for a, b in zip(sum(many, []), sum(one, []), strict=True):
        np.testing.assert_array_equal(a, b)
    other = [a.astype(np.float32 if dtype == np.float64 else np.float64) for a in arrays[0]]
    with pytest.raises(ValueError, match="all of one dtype"):
        adam_update_many(*zip(arrays[1], other, strict=True), **kw)
    with pytest.raises(ValueError, match="step must be a positive integer"):
        adam_update_many(*zip(*arrays, strict=True), **{**kw, "step": 0})
