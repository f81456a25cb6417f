"""Sequential runs BatchNorm followed by ReLU as the fused pass: bitwise the unfused result."""

import numpy as np
import pytest

import sandbox as sb
from sandbox import nn


def _pair(spatial_dims, seed=0):
    conv = nn.Conv2d if spatial_dims == 2 else nn.Conv3d
    norm = nn.BatchNorm2d if spatial_dims == 2 else nn.BatchNorm3d
    out = []
    for _ in range(2):
        sb.manual_seed(seed)
        out.append(nn.Sequential(conv(3, 4, 3, padding=1), norm(4), nn.ReLU(inplace=True)))
    return out


def _run(model, x, unfused):
    x = sb.from_numpy(x.copy())
    x.requires_grad_(True)
    if unfused:
        y = x
        for m in model:
            y = m(y)
    else:
        y = model(x)
    (y * y).sum().backward()
    return y, x.grad


@pytest.mark.parametrize("spatial_dims", [2, 3])
@pytest.mark.parametrize("training", [True, False])
def test_fused_equals_unfused_bitwise(spatial_dims, training):
    fused, plain = _pair(spatial_dims)
    shape = (2, 3) + (6,) * spatial_dims
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    for model in (fused, plain):
        model.train(training)
    y1, g1 = _run(fused, x, unfused=False)
    y2, g2 = _run(plain, x, unfused=True)
    if training:  # (in eval mode batch_norm_relu itself runs the two ops)
        assert "BatchNormReLUBackward" in repr(y1.grad_fn)
    assert "ReluBackward" in repr(y2.grad_fn)
    np.testing.assert_array_equal(y1.numpy(), y2.numpy())
    np.testing.assert_array_equal(g1.numpy(), g2.numpy())
    for (name, p1), (_, p2) in zip(fused.named_parameters(), plain.named_parameters(), strict=True):
        np.testing.assert_array_equal(p1.grad.numpy(), p2.grad.numpy(), err_msg=name)
    for (name, b1), (_, b2) in zip(fused.named_buffers(), plain.named_buffers(), strict=True):
        np.testing.assert_array_equal(np.asarray(b1), np.asarray(b2), err_msg=name)


def test_a_subclass_that_changes_forward_is_not_fused():
    class Scaled(nn.BatchNorm2d):
        def forward(self, x):
            return super().forward(x) * 2.0

    model = nn.Sequential(Scaled(3), nn.ReLU())
    x = sb.from_numpy(np.random.default_rng(2).standard_normal((2, 3, 4, 4)).astype(np.float32))
    y = model(x)
    np.testing.assert_array_equal(y.numpy(), model[1](model[0](x)).numpy())
    assert not model[0].fuses_relu()


@pytest.mark.parametrize("spatial_dims", [2, 3])
def test_the_unet_blocks_fuse_batch_norm_and_relu_in_both_ranks(spatial_dims, monkeypatch):
    """The UNet's convolution blocks run BatchNorm2d/3d + ReLU as the fused pass (the 3-D
    blocks had run them apart), with the bits of the two ops one after the other."""
    from sandbox.functional import relu
    from sandbox.nn import _unet

    shape = (2, 1) + (8,) * spatial_dims
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)

    def run():
        sb.manual_seed(0)
        model = nn.UNet(1, 2, depth=2, base_width=4, spatial_dims=spatial_dims)
        y = model(sb.from_numpy(x))
        (y * y).sum().backward()
        return y, [p.grad.numpy() for p in model.parameters()]

    nodes = []
    original = _unet._norm_relu

    def spy(norm, t):
        out = original(norm, t)
        nodes.append(repr(out.grad_fn))
        return out

    monkeypatch.setattr(_unet, "_norm_relu", spy)
    y1, g1 = run()
    assert nodes and all("BatchNormReLUBackward" in n for n in nodes), nodes
    monkeypatch.setattr(_unet, "_norm_relu", lambda norm, t: relu(norm(t)))
    y2, g2 = run()
    np.testing.assert_array_equal(y1.numpy(), y2.numpy())
    for a, b in zip(g1, g2, strict=True):
        np.testing.assert_array_equal(a, b)
