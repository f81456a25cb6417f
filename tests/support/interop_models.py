"""Models for the interop tests: UNets with non-trivial batch-norm statistics."""

import numpy as np

import sandbox
from sandbox import nn

# Every decoder option of the UNet: (upsample, options).
UNET_MODES = [
    ("nearest", {}),
    ("nearest-exact", {}),
    ("bilinear", {}),
    ("bilinear", {"align_corners": True}),
    ("bilinear", {"antialias": True}),
    ("bilinear", {"antialias": True, "align_corners": True}),
    ("bicubic", {}),
    ("bicubic", {"align_corners": True}),
    ("bicubic", {"antialias": True}),
    ("bicubic", {"antialias": True, "align_corners": True}),
    ("cubic", {}),
    ("cubic", {"antialias": True}),
    ("cubic", {"align_corners": True}),
    ("lanczos3", {}),
    ("lanczos3", {"antialias": True}),
    ("lanczos3", {"align_corners": True}),
    ("lanczos3", {"antialias": True, "align_corners": True}),
    ("lanczos", {"antialias": True}),  # PyTorch's name for antialiased lanczos3
    ("lanczos5", {}),
    ("lanczos5", {"antialias": True}),
    ("lanczos5", {"align_corners": True}),
    ("linear", {}),  # an alias of bilinear
    ("area", {}),
    ("transposed", {}),
]

# The subset PyTorch has (sandbox name -> PyTorch mode, see sandbox.interop._torch_modules).
TORCH_UNET_MODES = [
    ("nearest", {}),
    ("nearest-exact", {}),
    ("bilinear", {}),
    ("bilinear", {"align_corners": True}),
    ("bilinear", {"antialias": True}),
    ("bilinear", {"antialias": True, "align_corners": True}),
    ("bicubic", {}),
    ("bicubic", {"align_corners": True}),
    ("bicubic", {"antialias": True}),
    ("bicubic", {"antialias": True, "align_corners": True}),
    ("lanczos3", {"antialias": True}),
    ("lanczos", {"antialias": True}),
    ("linear", {}),
    ("area", {}),
    ("transposed", {}),
]


def make_unet(mode="bilinear", opts=None, norm="batch", dtype=np.float32, seed=0, in_channels=2,
              spatial_dims=2):
    """A depth-2 UNet whose batch-norm running statistics have moved away from 0 and 1.

    ``spatial_dims=3`` builds the 3-D UNet (the statistics moved on 8³ volumes).
    """
    sandbox.manual_seed(seed)
    model = nn.UNet(in_channels, 3, depth=2, base_width=4, upsample=mode, norm=norm,
                    dtype=dtype, spatial_dims=spatial_dims, **(opts or {}))
    rng = np.random.default_rng(seed)
    spatial = (16, 16) if spatial_dims == 2 else (8, 8, 8)
    model.train()
    with sandbox.no_grad():
        for _ in range(2):
            model(sandbox.tensor(rng.standard_normal((3, in_channels, *spatial)).astype(dtype)))
    return model.eval()


def eval_output(model, x):
    with sandbox.no_grad():
        return model(sandbox.tensor(x)).numpy()


def assert_state_bitwise(a: dict, b: dict):
    """Same names in the same order, same dtypes, shapes and bits."""
    assert list(a) == list(b)
    for key in a:
        x, y = np.asarray(a[key]), np.asarray(b[key])
        assert x.dtype == y.dtype and x.shape == y.shape, key
        assert x.tobytes() == y.tobytes(), key


def every_3d_layer(dtype=np.float32, running_stats=True):
    """A Sequential holding every 3-D layer type of sandbox.nn."""
    sandbox.manual_seed(0)
    return nn.Sequential(
        nn.Conv3d(2, 6, 3, stride=(1, 2, 1), padding=2, dilation=2, groups=2, dtype=dtype),
        nn.BatchNorm3d(6, dtype=dtype),
        nn.LeakyReLU(0.2),
        nn.ConvTranspose3d(6, 4, 3, stride=2, padding=1, output_padding=1, dtype=dtype),
        nn.GroupNorm(2, 4, dtype=dtype),
        nn.ReLU(),
        nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True),
        nn.BatchNorm3d(4, affine=False, track_running_stats=running_stats, dtype=dtype),
        nn.AvgPool3d(2, stride=1, padding=1, count_include_pad=False),
        nn.Upsample(size=(5, 6, 7), mode="trilinear"),
        nn.AvgPool3d(2, divisor_override=3),
        nn.Conv3d(4, 3, 1, dtype=dtype),
    )


def moved(model, shape, dtype=np.float32):
    """``model`` in eval mode after two training-mode batches moved its running statistics."""
    model.train()
    rng = np.random.default_rng(0)
    with sandbox.no_grad():
        for _ in range(2):
            model(sandbox.tensor(rng.standard_normal(shape).astype(dtype)))
    return model.eval()
