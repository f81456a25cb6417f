"""The same UNet in the sandbox and in PyTorch: same loss, gradients and Adam steps."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox import nn, optim
from sandbox.interop import to_torch

# (sandbox upsample mode, options) that PyTorch can mirror in 2-D.
MODES = [
    ("bilinear", {}),
    ("bilinear", {"align_corners": True}),
    ("bilinear", {"antialias": True}),
    ("nearest", {}),
    ("nearest-exact", {}),
    ("bicubic", {}),
    ("area", {}),
    ("lanczos3", {"antialias": True}),
    ("transposed", {}),
]


def _pair(torch, mode, opts, dtype, norm="batch", size=16):
    sandbox.manual_seed(0)
    ours = nn.UNet(2, 3, depth=2, base_width=4, upsample=mode, norm=norm, dtype=dtype, **opts)
    theirs = to_torch(ours)  # the architecture's PyTorch copy (sandbox.interop), same weights
    assert next(theirs.parameters()).dtype == (torch.float64 if dtype == np.float64
                                               else torch.float32)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 2, size, size)).astype(dtype)
    y = rng.integers(0, 3, size=(2, size, size))
    return ours, theirs, x, y


def _tols(dtype):
    return dict(rtol=1e-9, atol=1e-11) if dtype == np.float64 else dict(rtol=2e-3, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("mode", "opts"), MODES)
def test_unet_loss_and_gradients_match_torch(torch, mode, opts, dtype):
    ours, theirs, x, y = _pair(torch, mode, opts, dtype)
    loss = F.cross_entropy(ours(sandbox.tensor(x)), sandbox.tensor(y))
    loss.backward()
    tloss = torch.nn.functional.cross_entropy(theirs(torch.from_numpy(x)), torch.from_numpy(y))
    tloss.backward()
    tol = _tols(dtype)
    np.testing.assert_allclose(loss.item(), tloss.item(), **tol)
    tgrads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        ref = tgrads[name].grad.numpy()
        scale = max(np.abs(ref).max(), 1e-6)
        np.testing.assert_allclose(p.grad.numpy() / scale, ref / scale, err_msg=name, **tol)
    # Running statistics were updated identically.
    tstate = theirs.state_dict()
    for name, value in ours.state_dict().items():
        if "running" in name:
            np.testing.assert_allclose(value, tstate[name].numpy(), err_msg=name, **tol)


@pytest.mark.parametrize("norm", ["batch", "group", "none"])
@pytest.mark.parametrize(("mode", "opts"), [("bilinear", {}), ("transposed", {})])
def test_unet_adam_steps_match_torch(torch, mode, opts, norm):
    dtype = np.float64
    ours, theirs, x, y = _pair(torch, mode, opts, dtype, norm=norm)
    opt = optim.Adam(ours.parameters(), lr=1e-2)
    topt = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        F.cross_entropy(ours(sandbox.tensor(x)), sandbox.tensor(y)).backward()
        opt.step()
        topt.zero_grad()
        torch.nn.functional.cross_entropy(
            theirs(torch.from_numpy(x)), torch.from_numpy(y)
        ).backward()
        topt.step()
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(
            p.numpy(), tparams[name].detach().numpy(), rtol=1e-8, atol=1e-10, err_msg=name
        )
    # Eval mode uses the running statistics in both.
    ours.eval()
    theirs.eval()
    out = ours(sandbox.tensor(x)).numpy()
    ref = theirs(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-8, atol=1e-10)
