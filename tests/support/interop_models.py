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
