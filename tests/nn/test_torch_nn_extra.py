"""nn modules added for PyTorch code (losses, activations, norms, adaptive pooling), gradient
clipping and Module.to(device/dtype), compared with PyTorch in float64."""

import numpy as np
import pytest

import sandbox
import sandbox.nn as nn
from sandbox import Tensor

RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((2, 3, 4, 5))
LABELS = RNG.integers(0, 3, (2, 4, 5))
PROBS = RNG.uniform(0.05, 0.95, (2, 3, 4, 5))
BINARY = (RNG.random((2, 3, 4, 5)) > 0.5).astype(np.float64)


def _check(torch, ours, theirs, x, target, ttarget=None, rtol=1e-12):
    a, b = Tensor(x.copy(), requires_grad=True), torch.tensor(x.copy(), requires_grad=True)
    out = ours(a, target)
    tout = theirs(b, torch.tensor(target) if ttarget is None else ttarget)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=rtol, atol=1e-14)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=rtol, atol=1e-14)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_loss_modules_match_torch(torch, reduction):
    tnn = torch.nn
    w = np.array([0.2, 1.0, 3.0])
    _check(torch, nn.CrossEntropyLoss(reduction=reduction),
           tnn.CrossEntropyLoss(reduction=reduction), LOGITS, LABELS)
    _check(torch, nn.CrossEntropyLoss(weight=w, ignore_index=1, reduction=reduction,
                                      label_smoothing=0.1),
           tnn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=1, reduction=reduction,
                                label_smoothing=0.1), LOGITS, LABELS)
    _check(torch, nn.NLLLoss(reduction=reduction), tnn.NLLLoss(reduction=reduction),
           LOGITS, LABELS)
    pw = np.array([2.0, 1.0, 0.5]).reshape(3, 1, 1)
    _check(torch, nn.BCEWithLogitsLoss(pos_weight=pw, reduction=reduction),
           tnn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw), reduction=reduction),
           LOGITS, BINARY)
    _check(torch, nn.BCELoss(reduction=reduction), tnn.BCELoss(reduction=reduction),
           PROBS, BINARY)
    _check(torch, nn.MSELoss(reduction=reduction), tnn.MSELoss(reduction=reduction),
           LOGITS, PROBS)
    _check(torch, nn.L1Loss(reduction=reduction), tnn.L1Loss(reduction=reduction),
           LOGITS, PROBS)


def test_loss_module_arguments_and_errors():
    assert "weight" in nn.CrossEntropyLoss(weight=np.ones(3)).state_dict()
    with pytest.raises(TypeError, match="reduction="):
        nn.MSELoss(size_average=True)
    with pytest.raises(ValueError, match="reduction must be"):
        nn.BCELoss(reduction="avg")


def test_activation_modules_match_torch(torch):
    x = RNG.standard_normal((2, 3, 4))
    pairs = [
        (nn.ReLU(inplace=True), torch.nn.ReLU(inplace=True)),
        (nn.LeakyReLU(0.2, inplace=True), torch.nn.LeakyReLU(0.2, inplace=True)),
        (nn.Sigmoid(), torch.nn.Sigmoid()),
        (nn.Tanh(), torch.nn.Tanh()),
        (nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
        (nn.LogSoftmax(dim=-1), torch.nn.LogSoftmax(dim=-1)),
        (nn.Flatten(), torch.nn.Flatten()),
    ]
    for ours, theirs in pairs:
        a, b = Tensor(x.copy(), requires_grad=True), torch.tensor(x.copy(), requires_grad=True)
        out, tout = ours(a * 1.0), theirs(b * 1.0)
        np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12,
                                   err_msg=repr(ours))
        g = RNG.standard_normal(out.shape)
        out.backward(Tensor(g))
        tout.backward(torch.tensor(g))
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-15)
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"


def _copy_weights(ours, theirs):
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})


def test_norm_and_pool_modules_match_torch(torch):
    x = RNG.standard_normal((2, 3, 6, 5))
    pairs = [
        (nn.LayerNorm([6, 5]), torch.nn.LayerNorm([6, 5], dtype=torch.float64)),
        (nn.InstanceNorm2d(3), torch.nn.InstanceNorm2d(3)),
        (nn.InstanceNorm2d(3, affine=True, track_running_stats=True),
         torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True, dtype=torch.float64)),
        (nn.AdaptiveAvgPool2d((2, 3)), torch.nn.AdaptiveAvgPool2d((2, 3))),
        (nn.AdaptiveMaxPool2d(1), torch.nn.AdaptiveMaxPool2d(1)),
    ]
    for ours, theirs in pairs:
        ours.double()
        with torch.no_grad():
            for p in theirs.parameters():
                p.uniform_(0.5, 1.5)
        _copy_weights(ours, theirs)
        for mode in ("train", "eval"):
            getattr(ours, mode)()
            getattr(theirs, mode)()
            out, tout = ours(Tensor(x)), theirs(torch.tensor(x))
            np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=f"{ours!r} {mode}")
        for k, v in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[k], v.numpy(), rtol=1e-12)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_matches_torch(torch, norm_type, max_norm):
    grads = [RNG.standard_normal((3, 4)), RNG.standard_normal(5)]
    ours = [nn.Parameter(np.zeros_like(g)) for g in grads]
    theirs = [torch.nn.Parameter(torch.zeros(g.shape, dtype=torch.float64)) for g in grads]
    for p, tp, g in zip(ours, theirs, grads, strict=True):
        p.grad = Tensor(g.copy())
        tp.grad = torch.tensor(g.copy())
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type=norm_type, foreach=True)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type, foreach=True)
    np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-12)
    for p, tp in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)
    nn.utils.clip_grad_value_(ours, 0.1)
    torch.nn.utils.clip_grad_value_(theirs, 0.1)
    for p, tp in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-12)


def test_clip_grad_norm_nonfinite_error():
    p = nn.Parameter(np.zeros(2))
    p.grad = Tensor(np.array([np.inf, 1.0]))
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)


def test_module_to_device_and_dtype():
    m = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    assert m.to("cpu") is m and m.cpu() is m
    m.to(sandbox.device("cpu"), sandbox.float64)
    assert all(p.dtype == np.float64 for p in m.parameters())
    m.to(device="cpu", dtype=sandbox.float32)
    assert m[1].running_mean.dtype == np.float32
    m.to(Tensor(np.zeros(1)))  # a tensor's dtype
    assert m[0].weight.dtype == np.float64
    for bad in (lambda: m.to("cuda"), lambda: m.to("cuda:1"), lambda: m.cuda(),
                lambda: m.to(device="mps")):
        with pytest.raises(ValueError, match="CPU only"):
            bad()
    with pytest.raises(TypeError, match="float32 or float64"):
        m.to(sandbox.long)


def test_nn_functional_is_sandbox_functional():
    import sandbox.nn.functional as F1

    from sandbox.nn import functional as F2

    assert F1 is F2 is sandbox.functional


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "zeros"])
def test_conv2d_padding_modes_match_torch(torch, mode):
    theirs = torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode, dtype=torch.float64)
    ours = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode, dtype=sandbox.float64,
                     device="cpu")
    _copy_weights(ours, theirs)
    x = RNG.standard_normal((2, 2, 5, 6))
    a, b = Tensor(x.copy(), requires_grad=True), torch.tensor(x.copy(), requires_grad=True)
    out, tout = ours(a), theirs(b)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-13)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-11)


def test_layers_take_torchs_device_and_dtype_keywords():
    assert nn.Linear(2, 3, device="cpu", dtype=None).weight.dtype == np.float32
    bn = nn.BatchNorm2d(2, device=sandbox.device("cpu"), dtype=sandbox.float64)
    assert bn.running_mean.dtype == np.float64
    assert nn.GroupNorm(1, 2, device="cpu").weight.dtype == np.float32
    assert "padding_mode='reflect'" in repr(nn.Conv2d(1, 1, 3, padding=1, padding_mode="reflect"))
    with pytest.raises(ValueError, match="CPU only"):
        nn.Conv2d(1, 1, 3, device="cuda")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="only supports padding_mode='zeros'"):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")


@pytest.mark.parametrize("padding, kernel, dilation", [
    ("same", 3, 1), ("same", (4, 3), 1), ("same", 2, 2), ("valid", 3, 1), ("same", (2, 5), (3, 1)),
])
@pytest.mark.parametrize("mode", ["zeros", "reflect"])
@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's own note on even kernels
def test_conv2d_string_padding_matches_torch(torch, padding, kernel, dilation, mode):
    theirs = torch.nn.Conv2d(2, 3, kernel, padding=padding, dilation=dilation, padding_mode=mode,
                             dtype=torch.float64)
    ours = nn.Conv2d(2, 3, kernel, padding=padding, dilation=dilation, padding_mode=mode,
                     dtype=sandbox.float64)
    _copy_weights(ours, theirs)
    x = RNG.standard_normal((1, 2, 7, 8))
    a, b = Tensor(x.copy(), requires_grad=True), torch.tensor(x.copy(), requires_grad=True)
    out, tout = ours(a), theirs(b)
    assert out.shape == tuple(tout.shape)
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-12, atol=1e-13)
    out.sum().backward()
    tout.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-13)
    assert repr(ours).count(f"padding='{padding}'") == 1
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="'same' or 'valid'"):
        nn.Conv2d(1, 1, 3, padding="full")


@pytest.mark.parametrize("dims", [2, 3])
def test_instance_norm_runs_as_one_group_norm_node_and_matches_torch(dims, torch):
    """InstanceNorm2d and InstanceNorm3d (affine, float32, a batch of two): one group-norm
    node (a group a channel: its kernels, not the five-node composition), values and
    every gradient as torch's; running statistics in eval mode as before; the rank and
    channel count checked by name."""
    cls, tcls = ((nn.InstanceNorm2d, torch.nn.InstanceNorm2d) if dims == 2
                 else (nn.InstanceNorm3d, torch.nn.InstanceNorm3d))
    shape = (2, 4) + (6,) * dims
    x0 = RNG.standard_normal(shape).astype(np.float32) * 3 + 1
    g0 = RNG.standard_normal(shape).astype(np.float32)
    ours, theirs = cls(4, affine=True), tcls(4, affine=True)
    with torch.no_grad():
        for p in theirs.parameters():
            p.uniform_(0.5, 1.5)
    _copy_weights(ours, theirs)
    x, tx = Tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    out, tout = ours(x), theirs(tx)
    assert out.grad_fn.name() == "GroupNormBackward"
    out.backward(Tensor(g0))
    tout.backward(torch.tensor(g0))
    np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-4)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), dict(theirs.named_parameters())[name].grad,
                                   rtol=1e-3, atol=1e-3, err_msg=name)
    with pytest.raises(ValueError, match=f"InstanceNorm{dims}d: expected a"):
        ours(Tensor(np.zeros((2, 4) + (3,) * (dims + 1), np.float32)))
    with pytest.raises(ValueError, match=f"InstanceNorm{dims}d: expected 4 channels"):
        ours(Tensor(np.zeros((2, 3) + (3,) * dims, np.float32)))
