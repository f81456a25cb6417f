"""Optimisers and schedulers against PyTorch's update rules, and state round trips."""

import numpy as np
import pytest

from sandbox import optim
from sandbox.nn import Parameter

SHAPES = [(3, 4), (5,), (2, 3, 2)]

OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=1e-3)),
    ("SGD", dict(lr=0.05, momentum=0.5, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.3, amsgrad=True)),
]


def _make(dtype, rng):
    values = [rng.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(6)]
    return values, grads


def _run_ours(name, kwargs, values, grads):
    params = [Parameter(v.copy()) for v in values]
    opt = getattr(optim, name)(params, **kwargs)
    for step_grads in grads:
        for p, g in zip(params, step_grads, strict=True):
            p.grad = Parameter(g.copy(), requires_grad=False)
        opt.step()
    return params, opt


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "kwargs"), OPTIMIZERS)
def test_optimizer_matches_torch(torch, name, kwargs, dtype):
    rng = np.random.default_rng(0)
    values, grads = _make(dtype, rng)
    params, _ = _run_ours(name, kwargs, values, grads)
    tparams = [torch.tensor(v.copy(), requires_grad=True) for v in values]
    topt = getattr(torch.optim, name)(tparams, **kwargs)
    for step_grads in grads:
        for p, g in zip(tparams, step_grads, strict=True):
            p.grad = torch.tensor(g)
        topt.step()
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-13, atol=1e-14)
    for ours, theirs in zip(params, tparams, strict=True):
        assert ours.numpy().dtype == dtype
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), **tol)


@pytest.mark.parametrize(("name", "kwargs"), OPTIMIZERS)
def test_state_dict_resume_is_exact(name, kwargs):
    rng = np.random.default_rng(1)
    values, grads = _make(np.float32, rng)
    full, _ = _run_ours(name, kwargs, values, grads)

    first, opt = _run_ours(name, kwargs, values, grads[:3])
    saved = opt.state_dict()
    resumed = [Parameter(p.numpy().copy()) for p in first]
    opt2 = getattr(optim, name)(resumed, **kwargs)
    opt2.load_state_dict(saved)
    for step_grads in grads[3:]:
        for p, g in zip(resumed, step_grads, strict=True):
            p.grad = Parameter(g.copy(), requires_grad=False)
        opt2.step()
    for a, b in zip(full, resumed, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_zero_grad_and_skips_params_without_grad():
    a, b = Parameter(np.ones(3, np.float32)), Parameter(np.ones(2, np.float32))
    opt = optim.SGD([a, b], lr=1.0)
    a.grad = Parameter(np.full(3, 2.0, np.float32), requires_grad=False)
    opt.step()
    np.testing.assert_array_equal(a.numpy(), -1.0)
    np.testing.assert_array_equal(b.numpy(), 1.0)
    opt.zero_grad()
    assert a.grad is None


def test_param_groups_have_their_own_options():
    a, b = Parameter(np.zeros(2, np.float32)), Parameter(np.zeros(2, np.float32))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 10.0}], lr=1.0)
    for p in (a, b):
        p.grad = Parameter(np.ones(2, np.float32), requires_grad=False)
    opt.step()
    np.testing.assert_array_equal(a.numpy(), -1.0)
    np.testing.assert_array_equal(b.numpy(), -10.0)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda p: optim.SGD([], lr=0.1), "empty parameter list"),
        (lambda p: optim.SGD([p], lr=-1), "lr must be"),
        (lambda p: optim.SGD([p], lr=0.1, nesterov=True), "nesterov"),
        (lambda p: optim.Adam([p], betas=(0.9, 1.5)), "betas"),
        (lambda p: optim.SGD([{"params": [p], "lrr": 1}]), "unknown option"),
        (lambda p: optim.SGD([p, p]), "more than one"),
        (lambda p: optim.StepLR(optim.SGD([p]), step_size=0), "step_size"),
        (lambda p: optim.CosineAnnealingLR(optim.SGD([p]), T_max=0), "T_max"),
        (
            lambda p: optim.OneCycleLR(optim.SGD([p], momentum=0.9), 0.1, total_steps=0),
            "total_steps",
        ),
    ],
)
def test_bad_arguments(call, match):
    p = Parameter(np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=match):
        call(p)


def test_optimizer_rejects_non_tensors():
    with pytest.raises(TypeError, match="only optimise Tensors"):
        optim.SGD([np.zeros(3)], lr=0.1)


def _lr_trace(opt, sched, steps):
    lrs = []
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    return lrs


@pytest.mark.parametrize(
    ("name", "kwargs", "steps"),
    [
        ("StepLR", dict(step_size=3, gamma=0.5), 10),
        ("CosineAnnealingLR", dict(T_max=7, eta_min=1e-4), 20),
        ("OneCycleLR", dict(max_lr=0.5, total_steps=25), 24),
        (
            "OneCycleLR",
            dict(max_lr=0.5, total_steps=25, anneal_strategy="linear", three_phase=True),
            24,
        ),
    ],
)
@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_scheduler_matches_torch(torch, name, kwargs, steps, opt_name):
    opt_kwargs = dict(lr=0.1, momentum=0.9) if opt_name == "SGD" else dict(lr=0.1)
    p = Parameter(np.zeros(2, np.float32))
    opt = getattr(optim, opt_name)([p], **opt_kwargs)
    sched = getattr(optim, name)(opt, **kwargs)
    ours = _lr_trace(opt, sched, steps)

    tp = torch.zeros(2, requires_grad=True)
    topt = getattr(torch.optim, opt_name)([tp], **opt_kwargs)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    theirs = _lr_trace(topt, tsched, steps)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    if name == "OneCycleLR":
        key = "momentum" if opt_name == "SGD" else "betas"
        assert opt.param_groups[0][key] == pytest.approx(topt.param_groups[0][key])


def test_scheduler_state_round_trip():
    p = Parameter(np.zeros(2, np.float32))
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    sched = optim.OneCycleLR(opt, max_lr=1.0, total_steps=20)
    _lr_trace(opt, sched, 5)
    state = sched.state_dict()
    opt_state = opt.state_dict()
    rest = _lr_trace(opt, sched, 10)

    p2 = Parameter(np.zeros(2, np.float32))
    opt2 = optim.SGD([p2], lr=0.1, momentum=0.9)
    sched2 = optim.OneCycleLR(opt2, max_lr=1.0, total_steps=20)
    opt2.load_state_dict(opt_state)
    sched2.load_state_dict(state)
    assert _lr_trace(opt2, sched2, 10) == rest


@pytest.mark.parametrize("three_phase", [False, True])
def test_one_cycle_works_for_every_step_count(three_phase):
    from sandbox import nn, optim

    params = list(nn.Conv2d(1, 1, 1).parameters())
    for total in range(1, 15):
        for pct in (0.0, 0.1, 0.2, 0.3, 0.5, 1.0):
            opt = optim.AdamW(params, lr=1e-3)
            sched = optim.OneCycleLR(opt, max_lr=1e-2, total_steps=total, pct_start=pct,
                                     three_phase=three_phase)
            rates = []
            for _ in range(total):
                rates.append(opt.param_groups[0]["lr"])
                sched.step()
            assert all(0 < r <= 1e-2 for r in rates), (total, pct, rates)
