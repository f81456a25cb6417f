"""A UNet whose decoder upsamples with any resampling mode (or transposed convolutions).

2-D on ``(N, C, H, W)`` images or, with ``spatial_dims=3``, 3-D on ``(N, C, D, H, W)``
volumes: the same blocks built from the 2-D or the 3-D layers.
"""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..ops import cat
from ._conv import Conv2d, ConvTranspose2d
from ._layers import Identity, MaxPool2d, ModuleList, resample_repr
from ._layers3d import BatchNorm3d, Conv3d, ConvTranspose3d, MaxPool3d
from ._module import Module
from ._norm import BatchNorm2d, GroupNorm

NORMS = ("batch", "group", "none")

#: spatial_dims -> (conv, transposed conv, max pooling, batch norm)
_LAYERS = {
    2: (Conv2d, ConvTranspose2d, MaxPool2d, BatchNorm2d),
    3: (Conv3d, ConvTranspose3d, MaxPool3d, BatchNorm3d),
}


def _norm_layer(kind: str, channels: int, dtype, dims: int = 2) -> Module:
    if kind == "batch":
        return _LAYERS[dims][3](channels, dtype=dtype)
    if kind == "group":
        groups = next(g for g in (8, 4, 2, 1) if channels % g == 0)
        return GroupNorm(groups, channels, dtype=dtype)
    return Identity()


def check_input(shape, in_channels: int, dims: int, name: str = "UNet") -> None:
    """Raise unless ``shape`` is ``(N, in_channels, *spatial)`` with ``dims`` spatial axes
    (shared with the PyTorch twins in :mod:`sandbox.interop._torch_modules`).

    Parameters
    ----------
    shape : tuple of int
        The input's shape.
    in_channels : int
    dims : {2, 3}
        Spatial axes the input must have.
    name : str, default "UNet"
        The model named in the error.

    Raises
    ------
    ValueError
        ``shape`` has another rank or channel count.
    """
    if len(shape) != 2 + dims or shape[1] != in_channels:
        axes = "H, W" if dims == 2 else "D, H, W"
        raise ValueError(
            f"{name} expects input of shape (N, {in_channels}, {axes}), got {tuple(shape)}"
        )


def encode_decode(x, inc, downs, ups, head):
    """The UNet pass: ``inc``, each of ``downs`` (every output kept as a skip), each of
    ``ups`` with the matching skip (deepest first), then ``head``; shared by the UNets
    here and their PyTorch twins.

    Parameters
    ----------
    x : Tensor (sandbox or torch)
        The input batch.
    inc, head : callable
        The first block and the output layer.
    downs : iterable of callable
        Encoder steps, top to bottom.
    ups : iterable of callable
        Decoder steps ``up(x, skip)``, bottom to top.

    Returns
    -------
    Tensor
        ``head`` of the last decoder output.
    """
    skips = [inc(x)]
    for down in downs:
        skips.append(down(skips[-1]))
    x = skips.pop()
    for up in ups:
        x = up(x, skips.pop())
    return head(x)


def pad_widths(target, actual) -> tuple | None:
    """``F.pad`` widths (last axis first) that pad spatial sizes ``actual`` up to
    ``target``, the odd cell at the end (the decoder of a transposed-convolution UNet
    on odd input sizes).

    Parameters
    ----------
    target, actual : sequence of int
        Spatial sizes, one per axis; ``actual <= target``.

    Returns
    -------
    tuple of int or None
        ``(before, after)`` per axis, last axis first; None when the sizes match.
    """
    missing = [t - n for t, n in zip(target, actual, strict=True)]
    if not any(missing):
        return None
    widths = []
    for m in reversed(missing):  # F.pad lists the last axis first
        widths += [m // 2, m - m // 2]
    return tuple(widths)


class ConvBlock(Module):
    """Two 3×3 (or 3×3×3) convolutions, each followed by normalisation and ReLU."""

    def __init__(self, in_channels: int, out_channels: int, norm: str = "batch", dtype=None,
                 dims: int = 2):
        super().__init__()
        bias = norm == "none"  # a bias before a normalisation layer is redundant
        conv = _LAYERS[dims][0]
        self.conv1 = conv(in_channels, out_channels, 3, padding=1, bias=bias, dtype=dtype)
        self.norm1 = _norm_layer(norm, out_channels, dtype, dims)
        self.conv2 = conv(out_channels, out_channels, 3, padding=1, bias=bias, dtype=dtype)
        self.norm2 = _norm_layer(norm, out_channels, dtype, dims)

    def forward(self, x):
        x = _norm_relu(self.norm1, self.conv1(x))
        return _norm_relu(self.norm2, self.conv2(x))


def _norm_relu(norm: Module, x):
    """``relu(norm(x))``; a batch norm, 2-D or 3-D, does both in one fused pass (the same
    bits), by the rule :class:`~sandbox.nn.Sequential` follows (``fuses_relu``: not a
    subclass that overrides ``forward`` alone).  The 3-D UNet had run its batch norms
    and ReLUs apart (the rule named ``BatchNorm2d``)."""
    fuses = getattr(norm, "fuses_relu", None)
    if fuses is not None and fuses():
        return norm.forward_relu(x)
    return F.relu(norm(x))


class Down(Module):
    """2×2 (or 2×2×2) max pooling, then a :class:`ConvBlock` that doubles the channels."""

    def __init__(self, in_channels: int, out_channels: int, norm: str, dtype=None,
                 dims: int = 2):
        super().__init__()
        self.pool = _LAYERS[dims][2](2)
        self.block = ConvBlock(in_channels, out_channels, norm, dtype, dims)

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
        dtype=None,
        dims: int = 2,
    ):
        super().__init__()
        self.mode = mode
        self.align_corners = align_corners
        self.antialias = antialias
        half = in_channels // 2
        conv, transposed = _LAYERS[dims][:2]
        if mode == "transposed":
            self.up = transposed(in_channels, half, 2, stride=2, dtype=dtype)
        else:
            self.up = conv(in_channels, half, 1, dtype=dtype)
        # skip (out_channels) + upsampled (half == out_channels) channels
        self.block = ConvBlock(out_channels + half, out_channels, norm, dtype, dims)

    def forward(self, x, skip):
        x = self.up(x)
        size = skip.shape[2:]
        if self.mode == "transposed":
            widths = pad_widths(size, x.shape[2:])
            if widths:  # odd input sizes: pad the upsampled map to the skip's size
                x = F.pad(x, widths)
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
        return resample_repr(self.mode, self.align_corners, self.antialias)


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
    dtype : float32 or float64, optional
        None (the default): :func:`sandbox.get_default_dtype`, as the layers do.
    spatial_dims : {2, 3}, default 2
        2 for images ``(N, C, H, W)``; 3 for volumes ``(N, C, D, H, W)`` (3×3×3
        convolutions, 2×2×2 pooling, ``BatchNorm3d``, and every upsampling mode
        in 3-D, ``bicubic``/``lanczos3``/antialias included, which PyTorch lacks).

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
        dtype=None,
        spatial_dims: int = 2,
    ):
        super().__init__()
        if spatial_dims not in _LAYERS:
            raise ValueError(f"spatial_dims must be 2 or 3, got {spatial_dims!r}")
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
            from ..array.resample import check_options

            check_options(upsample, align_corners, antialias)
        self.in_channels = in_channels
        self.num_classes = num_classes
        self.depth = depth
        self.base_width = base_width
        self.upsample = upsample
        self.norm = norm
        self.spatial_dims = dims = spatial_dims
        widths = [base_width * 2**level for level in range(depth + 1)]
        self.inc = ConvBlock(in_channels, widths[0], norm, dtype, dims)
        self.downs = ModuleList(
            Down(widths[i], widths[i + 1], norm, dtype, dims) for i in range(depth)
        )
        self.ups = ModuleList(
            Up(widths[i + 1], widths[i], upsample, norm, align_corners, antialias, dtype, dims)
            for i in reversed(range(depth))
        )
        self.head = _LAYERS[dims][0](widths[0], num_classes, 1, dtype=dtype)

    def forward(self, x):
        check_input(x.shape, self.in_channels, self.spatial_dims)
        return encode_decode(x, self.inc, self.downs, self.ups, self.head)

    def extra_repr(self) -> str:
        return (
            f"in_channels={self.in_channels}, num_classes={self.num_classes}, "
            f"depth={self.depth}, base_width={self.base_width}, "
            f"upsample={self.upsample!r}, norm={self.norm!r}"
            + (f", spatial_dims={self.spatial_dims}" if self.spatial_dims != 2 else "")
        )
