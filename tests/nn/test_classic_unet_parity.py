"""sandbox.nn.ClassicUNet equals its PyTorch twin in float64: loss, gradients, Adam, BN stats."""

import numpy as np
import pytest

import sandbox
import sandbox.functional as F
from sandbox import nn, optim
from sandbox.interop import to_torch

WIDTHS = (4, 8, 16)
TOL = dict(rtol=1e-9, atol=1e-11)


def _pair(torch, mode, align_corners=None):
    sandbox.manual_seed(0)
    ours = nn.ClassicUNet(1, 3, widths=WIDTHS, upsample=mode, align_corners=align_corners,
                          dtype=np.float64)
    theirs = to_torch(ours)  # the architecture's PyTorch copy (sandbox.interop), same weights
    assert type(theirs).__name__ == "ClassicUNet" and theirs.ups[0].up.scale_factor == 2
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 1, 16, 16))
    y = rng.integers(0, 3, size=(2, 16, 16))
    return ours, theirs, x, y


def _close(ours, ref, name):
    scale = max(float(np.abs(ref).max()), 1e-6)
    np.testing.assert_allclose(ours / scale, ref / scale, err_msg=name, **TOL)


@pytest.mark.parametrize(("mode", "align_corners"), [
    ("nearest", None), ("bilinear", None), ("bilinear", True), ("bicubic", None)])
def test_classic_unet_step_matches_torch_float64(torch, mode, align_corners):
    ours, theirs, x, y = _pair(torch, mode, align_corners)
    opt = optim.Adam(ours.parameters(), lr=1e-2)
    topt = torch.optim.Adam(theirs.parameters(), lr=1e-2)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    for step in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(ours(sandbox.tensor(x)), sandbox.tensor(y))
        loss.backward()
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(theirs(tx), ty)
        tloss.backward()
        np.testing.assert_allclose(loss.item(), tloss.item(), err_msg=f"loss {step}", **TOL)
        tparams = dict(theirs.named_parameters())
        for name, p in ours.named_parameters():
            _close(p.grad.numpy(), tparams[name].grad.numpy(), f"grad {name}, step {step}")
        opt.step()
        topt.step()
    tstate = theirs.state_dict()
    state = ours.state_dict()
    assert sorted(state) == sorted(tstate)
    for name, value in state.items():  # weights after two Adam steps, BN running statistics
        np.testing.assert_allclose(value, tstate[name].numpy(), err_msg=name, rtol=1e-8,
                                   atol=1e-10)
    assert int(state["inc.norm1.num_batches_tracked"]) == 2
    ours.eval()
    theirs.eval()
    _close(ours(sandbox.tensor(x)).numpy(), theirs(tx).detach().numpy(), "eval logits")


def test_classic_unet_shapes_and_layers():
    model = nn.ClassicUNet()
    assert model.depth == 4 and model.widths == (16, 32, 64, 128, 256)
    convs = [(m.in_channels, m.out_channels) for m in model.modules()
             if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)]
    assert convs[:2] == [(1, 16), (16, 16)]
    assert (384, 128) in convs and (192, 64) in convs and (96, 32) in convs and (48, 16) in convs
    out = model(sandbox.tensor(np.zeros((1, 1, 32, 32), np.float32)))
    assert out.shape == (1, 2, 32, 32)


def test_classic_unet_rejects_bad_arguments():
    with pytest.raises(ValueError, match="divisible by 2\\*\\*depth = 16"):
        nn.ClassicUNet()(sandbox.tensor(np.zeros((1, 1, 24, 24), np.float32)))
    with pytest.raises(ValueError, match="shape \\(N, 1, H, W\\)"):
        nn.ClassicUNet()(sandbox.tensor(np.zeros((1, 3, 32, 32), np.float32)))
    with pytest.raises(ValueError, match="widths"):
        nn.ClassicUNet(widths=(16,))
    with pytest.raises(ValueError, match="widths"):
        nn.ClassicUNet(widths=(16, 0))
    with pytest.raises(ValueError, match="in_channels"):
        nn.ClassicUNet(in_channels=0)
    with pytest.raises(ValueError, match="mode"):
        nn.ClassicUNet(upsample="cubical")
