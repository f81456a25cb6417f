"""A UNet whose decoder upsamples with any resampling mode (or transposed convolutions)."""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..ops import cat
from ._layers import (
    BatchNorm2d,
    Conv2d,
    ConvTranspose2d,
    GroupNorm,
    Identity,
    MaxPool2d,
    ModuleList,
)
from ._module import Module

NORMS = ("batch", "group", "none")


def _norm_layer(kind: str, channels: int, dtype) -> Module:
    if kind == "batch":
        return BatchNorm2d(channels, dtype=dtype)
    if kind == "group":
        groups = next(g for g in (8, 4, 2, 1) if channels % g == 0)
        return GroupNorm(groups, channels, dtype=dtype)
    return Identity()


class ConvBlock(Module):
    """Two 3×3 convolutions, each followed by normalisation and ReLU."""

    def __init__(self, in_channels: int, out_channels: int, norm: str = "batch", dtype=np.float32):
        super().__init__()
        bias = norm == "none"  # a bias before a normalisation layer is redundant
        self.conv1 = Conv2d(in_channels, out_channels, 3, padding=1, bias=bias, dtype=dtype)
        self.norm1 = _norm_layer(norm, out_channels, dtype)
        self.conv2 = Conv2d(out_channels, out_channels, 3, padding=1, bias=bias, dtype=dtype)
        self.norm2 = _norm_layer(norm, out_channels, dtype)

    def forward(self, x):
        x = F.relu(self.norm1(self.conv1(x)))
        return F.relu(self.norm2(self.conv2(x)))


class Down(Module):
    """2×2 max pooling, then a :class:`ConvBlock` that doubles the channels."""

    def __init__(self, in_channels: int, out_channels: int, norm: str, dtype=np.float32):
        super().__init__()
        self.pool = MaxPool2d(2)
        self.block = ConvBlock(in_channels, out_channels, norm, dtype)

    def forward(self, x):
        return self.block(self.pool(x))


class Up(Module):
    """Upsample to the skip connection's size, concatenate, then a :class:`ConvBlock`.

    With a resampling ``mode`` the channels are first halved by a 1×1 convolution
    (done before resampling: the two linear maps commute, and it is 4× cheaper);
    with ``"transposed"`` a stride-2 transposed convolution halves them.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        mode: str,
        norm: str,
        align_corners=None,
        antialias: bool = False,
        dtype=np.float32,
    ):
        super().__init__()
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias
        half = in_channels // 2
        if mode == "transposed":
            self.up = ConvTranspose2d(in_channels, half, 2, stride=2, dtype=dtype)
        else:
            self.up = Conv2d(in_channels, half, 1, dtype=dtype)
        # skip (out_channels) + upsampled (half == out_channels) channels
        self.block = ConvBlock(out_channels + half, out_channels, norm, dtype)

    def forward(self, x, skip):
        x = self.up(x)
        size = skip.shape[2:]
        if self.mode == "transposed":
            dh, dw = size[0] - x.shape[2], size[1] - x.shape[3]
            if dh or dw:  # odd input sizes: pad the upsampled map to the skip's size
                x = F.pad(x, (dw // 2, dw - dw // 2, dh // 2, dh - dh // 2))
        else:
            x = F.interpolate(
                x,
                size=tuple(size),
                mode=self.mode,
                align_corners=self.align_corners,
                antialias=self.antialias,
            )
        return self.block(cat([skip, x], axis=1))

    def extra_repr(self) -> str:
        s = f"mode={self.mode!r}"
        if self.align_corners is not None:
            s += f", align_corners={self.align_corners}"
        if self.antialias:
            s += ", antialias=True"
        return s


class UNet(Module):
    """UNet for semantic segmentation (Ronneberger et al., 2015).

    Parameters
    ----------
    in_channels : int
        Channels of the input images.
    num_classes : int
        Channels of the output logits (one per class).
    depth : int, default 4
        Number of 2× down-sampling steps; widths are ``base_width · 2**level``
        for ``level = 0 … depth``.
    base_width : int, default 16
        Channels of the first level.
    upsample : str, default "bilinear"
        Any mode of :func:`sandbox.functional.interpolate` (``nearest``,
        ``nearest-exact``, ``bilinear``, ``bicubic``, ``lanczos3``, ``area`` ...)
        or ``"transposed"`` for stride-2 transposed convolutions.
    norm : {"batch", "group", "none"}, default "batch"
    align_corners, antialias :
        Passed to :func:`~sandbox.functional.interpolate` in the decoder.
    dtype : float32 or float64

    Any input size works; sizes divisible by ``2**depth`` avoid edge effects.
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        depth: int = 4,
        base_width: int = 16,
        upsample: str = "bilinear",
        norm: str = "batch",
        align_corners=None,
        antialias: bool = False,
        dtype=np.float32,
    ):
        super().__init__()
        for name, value in (
            ("in_channels", in_channels),
            ("num_classes", num_classes),
            ("depth", depth),
            ("base_width", base_width),
        ):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if norm not in NORMS:
            raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
        if upsample != "transposed":
            # Fail now, not at the first forward: validates mode and options.
            from ..resample import check_options

            check_options(upsample, align_corners, antialias)
        self.in_channels = in_channels
        self.num_classes = num_classes
        self.depth = depth
        self.base_width = base_width
        self.upsample = upsample
        self.norm = norm
        widths = [base_width * 2**level for level in range(depth + 1)]
        self.inc = ConvBlock(in_channels, widths[0], norm, dtype)
        self.downs = ModuleList(Down(widths[i], widths[i + 1], norm, dtype) for i in range(depth))
        self.ups = ModuleList(
            Up(widths[i + 1], widths[i], upsample, norm, align_corners, antialias, dtype)
            for i in reversed(range(depth))
        )
        self.head = Conv2d(widths[0], num_classes, 1, dtype=dtype)

    def forward(self, x):
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(
                f"UNet expects input of shape (N, {self.in_channels}, H, W), got {tuple(x.shape)}"
            )
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.head(x)

    def extra_repr(self) -> str:
        return (
            f"in_channels={self.in_channels}, num_classes={self.num_classes}, "
            f"depth={self.depth}, base_width={self.base_width}, "
            f"upsample={self.upsample!r}, norm={self.norm!r}"
        )
