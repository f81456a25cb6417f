"""RMSprop and the schedulers added for PyTorch code, step by step against PyTorch."""

import numpy as np
import pytest

import sandbox
from sandbox import Tensor, nn, optim

SHAPES = [(3, 4), (5,)]


def _params(torch):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s) for s in SHAPES]
    ours = [nn.Parameter(a.copy()) for a in init]
    theirs = [torch.nn.Parameter(torch.tensor(a.copy())) for a in init]
    return ours, theirs


def _run(torch, make_ours, make_theirs, steps=6):
    ours, theirs = _params(torch)
    opt, topt = make_ours(ours), make_theirs(theirs)
    rng = np.random.default_rng(1)
    for _ in range(steps):
        for p, tp in zip(ours, theirs, strict=True):
            g = rng.standard_normal(p.shape)
            p.grad, tp.grad = Tensor(g.copy()), torch.tensor(g.copy())
        opt.step()
        topt.step()
    for p, tp in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-12, atol=1e-14)
    return opt, topt


@pytest.mark.parametrize("options", [
    {},
    {"lr": 0.05, "alpha": 0.9, "eps": 1e-6},
    {"momentum": 0.9},
    {"centered": True},
    {"centered": True, "momentum": 0.5, "weight_decay": 0.1},
    {"maximize": True, "weight_decay": 0.01},
    {"foreach": True},
])
def test_rmsprop_matches_torch(torch, options):
    _run(torch, lambda p: optim.RMSprop(p, **options), lambda p: torch.optim.RMSprop(p, **options))


def test_foreach_and_friends_are_accepted(torch):
    _run(torch, lambda p: optim.SGD(p, lr=0.1, momentum=0.9, foreach=True),
         lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=True))
    _run(torch, lambda p: optim.Adam(p, lr=0.01, foreach=False, fused=None),
         lambda p: torch.optim.Adam(p, lr=0.01, foreach=False))
    _run(torch, lambda p: optim.AdamW(p, lr=0.01, foreach=True),
         lambda p: torch.optim.AdamW(p, lr=0.01, foreach=True))


def test_step_with_closure_returns_its_loss():
    p = nn.Parameter(np.ones(2))
    opt = optim.RMSprop([p])

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 2.0


def test_rmsprop_state_dict_round_trip_through_save(tmp_path):
    p = nn.Parameter(np.ones((2, 2)))
    opt = optim.RMSprop([p], momentum=0.9, centered=True)
    p.grad = Tensor(np.full((2, 2), 0.5))
    opt.step()
    sandbox.save(opt.state_dict(), tmp_path / "opt.npz")
    q = nn.Parameter(np.ones((2, 2)))
    other = optim.RMSprop([q], momentum=0.9, centered=True)
    other.load_state_dict(sandbox.load(tmp_path / "opt.npz"))
    state = other.state[id(q)]
    np.testing.assert_array_equal(state["square_avg"], opt.state[id(p)]["square_avg"])
    assert state["step"] == 1


def _lrs(torch, make_ours, make_theirs, epochs=12, metrics=None):
    ours, theirs = _params(torch)
    opt = optim.SGD([{"params": ours[:1]}, {"params": ours[1:], "lr": 0.5}], lr=0.1)
    topt = torch.optim.SGD([{"params": theirs[:1]}, {"params": theirs[1:], "lr": 0.5}], lr=0.1)
    sched, tsched = make_ours(opt), make_theirs(topt)
    got, want = [], []
    for epoch in range(epochs):
        opt.step()
        topt.step()
        if metrics is None:
            sched.step()
            tsched.step()
        else:
            sched.step(metrics[epoch])
            tsched.step(metrics[epoch])
        got.append(sched.get_last_lr())
        want.append(tsched.get_last_lr())
    np.testing.assert_allclose(got, want, rtol=1e-14)
    return sched


def test_multistep_exponential_lambda_match_torch(torch):
    S, TS = optim.lr_scheduler, torch.optim.lr_scheduler
    _lrs(torch, lambda o: S.MultiStepLR(o, [2, 5, 5, 9], gamma=0.5),
         lambda o: TS.MultiStepLR(o, [2, 5, 5, 9], gamma=0.5))
    _lrs(torch, lambda o: S.ExponentialLR(o, 0.9), lambda o: TS.ExponentialLR(o, 0.9))
    _lrs(torch, lambda o: S.LambdaLR(o, lambda e: 1 / (1 + e)),
         lambda o: TS.LambdaLR(o, lambda e: 1 / (1 + e)))
    sched = _lrs(torch, lambda o: S.LambdaLR(o, [lambda e: 0.9**e, lambda e: 1.0 - 0.05 * e]),
                 lambda o: TS.LambdaLR(o, [lambda e: 0.9**e, lambda e: 1.0 - 0.05 * e]))
    assert "lr_lambdas" not in sched.state_dict()


@pytest.mark.parametrize("options", [
    {"patience": 2},
    {"mode": "max", "factor": 0.5, "patience": 1, "cooldown": 2},
    {"threshold_mode": "abs", "threshold": 0.05, "patience": 0, "min_lr": [0.02, 0.3]},
    {"factor": 0.3, "patience": 1, "min_lr": 0.01, "eps": 1e-3},
])
def test_reduce_lr_on_plateau_matches_torch(torch, options):
    metrics = [1.0, 0.9, 0.95, 0.95, 0.9, 0.96, 0.97, 0.5, 0.5, 0.5, 0.51, 0.49, 0.6, 0.7, 0.8]
    _lrs(torch, lambda o: optim.lr_scheduler.ReduceLROnPlateau(o, **options),
         lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o, **options),
         epochs=len(metrics), metrics=metrics)


def test_plateau_arguments_are_checked():
    opt = optim.SGD([nn.Parameter(np.ones(1))], lr=0.1)
    with pytest.raises(ValueError, match="factor"):
        optim.ReduceLROnPlateau(opt, factor=1.5)
    with pytest.raises(ValueError, match="mode"):
        optim.ReduceLROnPlateau(opt, mode="lowest")
