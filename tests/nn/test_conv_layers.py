"""The convolution layers of both ranks: one validation path, the same arguments and defaults."""

import numpy as np
import pytest

import sandbox
from sandbox import nn

CONVS = {2: nn.Conv2d, 3: nn.Conv3d}
TRANSPOSED = {2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}
WHAT = {2: "pair", 3: "triple"}


@pytest.fixture
def float64_default():
    saved = sandbox.get_default_dtype()
    sandbox.set_default_dtype(sandbox.float64)
    yield
    sandbox.set_default_dtype(saved)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("kind", [CONVS, TRANSPOSED], ids=["conv", "transposed"])
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(stride=0), ValueError, r"stride must be positive \(>= 1\), got 0"),
        (dict(padding=-1), ValueError, r"padding must be non-negative \(>= 0\), got -1"),
        (dict(dilation=0), ValueError, r"dilation must be positive \(>= 1\), got 0"),
        (dict(kernel_size=0), ValueError, r"kernel_size must be positive \(>= 1\), got 0"),
        (dict(stride=(1, 2, 3, 4)), TypeError, "stride must be an int or a {what} of ints"),
        (dict(kernel_size=2.5), TypeError, "kernel_size must be an int or a {what} of ints"),
        (dict(groups=2, in_channels=3), ValueError, "groups=2 must divide in_channels=3"),
        (dict(dtype=np.int32), TypeError, "dtype must be float32 or float64, got int32"),
        (dict(device="cuda"), Exception, "cuda"),
        (dict(padding_mode="mirror"), ValueError, "padding_mode must be one of"),
    ],
)
def test_arguments_are_checked_at_construction_with_one_message_for_both_ranks(
        nd, kind, kwargs, exc, match):
    args = dict(in_channels=4, out_channels=4, kernel_size=3) | kwargs
    with pytest.raises(exc, match=match.format(what=WHAT[nd])):
        kind[nd](**args)


@pytest.mark.parametrize("nd", [2, 3])
def test_transposed_layers_accept_only_zero_padding_mode(nd):
    with pytest.raises(ValueError, match=f"ConvTranspose{nd}d only supports padding_mode='zeros'"):
        TRANSPOSED[nd](1, 1, 3, padding_mode="reflect")
    assert TRANSPOSED[nd](1, 1, 3, padding_mode="zeros", device="cpu").padding_mode == "zeros"


@pytest.mark.parametrize("nd", [2, 3])
def test_layers_follow_the_default_dtype(nd, float64_default):
    for layer in (CONVS[nd](2, 3, 3), TRANSPOSED[nd](2, 3, 3)):
        assert layer.weight.dtype == np.float64 and layer.bias.dtype == np.float64
    assert CONVS[nd](2, 3, 3, dtype=np.float32).weight.dtype == np.float32


@pytest.mark.parametrize("dims", [2, 3])
def test_unets_follow_the_default_dtype(dims, float64_default):
    model = nn.UNet(1, 2, depth=1, base_width=4, spatial_dims=dims)
    assert {p.dtype for p in model.parameters()} == {np.dtype(np.float64)}
    x = sandbox.tensor(np.ones((1, 1) + (4,) * dims))
    assert model(x).dtype == np.float64
    assert {p.dtype for p in nn.ClassicUNet(1, 2).parameters()} == {np.dtype(np.float64)}
    assert {p.dtype for p in nn.UNet(1, 2, depth=1, dtype=np.float32).parameters()} == {
        np.dtype(np.float32)}


def _torch_pair(torch, nd, mode, padding, dilation=1):
    tconv = {2: torch.nn.Conv2d, 3: torch.nn.Conv3d}[nd]
    theirs = tconv(2, 3, 3, padding=padding, dilation=dilation, padding_mode=mode,
                   dtype=torch.float64)
    ours = CONVS[nd](2, 3, 3, padding=padding, dilation=dilation, padding_mode=mode,
                     dtype=sandbox.float64, device="cpu")
    ours.weight.numpy()[...] = theirs.weight.detach().numpy()
    ours.bias.numpy()[...] = theirs.bias.detach().numpy()
    return ours, theirs


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_padding_modes_match_torch(torch, mode):
    ours, theirs = _torch_pair(torch, 3, mode, (1, 2, 1))
    x = np.random.default_rng(0).standard_normal((2, 2, 4, 5, 6))
    tx, sx = torch.tensor(x, requires_grad=True), sandbox.tensor(x, requires_grad=True)
    ty, sy = theirs(tx), ours(sx)
    np.testing.assert_allclose(sy.numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    ty.sum().backward()
    sy.sum().backward()
    np.testing.assert_allclose(sx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-12,
                               atol=1e-10)
    assert (f"padding_mode='{mode}'" in repr(ours)) == (mode != "zeros")


@pytest.mark.parametrize("padding, dilation", [("same", 1), ("same", (1, 2, 1)), ("valid", 1)])
@pytest.mark.parametrize("mode", ["zeros", "reflect"])
def test_conv3d_string_padding_matches_torch(torch, padding, dilation, mode):
    ours, theirs = _torch_pair(torch, 3, mode, padding, dilation)
    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6, 7))
    np.testing.assert_allclose(ours(sandbox.tensor(x)).numpy(),
                               theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12, atol=1e-12)
