"""The UNet most people write first: the original paper's shape with batch norm.

Compared with :class:`sandbox.nn.UNet`, the decoder upsamples the **full**
channels (no 1×1 convolution before resampling) with ``Upsample(scale_factor=2)``
and the block after the concatenation goes from ``w_in + w_skip`` to ``w_skip``
channels, as in the popular PyTorch UNet repositories.
"""

from __future__ import annotations

import numpy as np

from ..ops import cat
from ._conv import Conv2d
from ._layers import ModuleList, Upsample
from ._module import Module
from ._unet import ConvBlock, Down, encode_decode


class ClassicUp(Module):
    """``Upsample(scale_factor=2)`` of all channels, concatenation with the skip, a ConvBlock.

    Parameters
    ----------
    in_channels : int
        Channels of the map coming up from below (all of them are upsampled).
    skip_channels : int
        Channels of the skip connection; also the output channels.
    mode : str
        Any mode of :func:`sandbox.functional.interpolate`.
    align_corners : bool or None
        Passed to the upsampling.
    dtype : float32 or float64, optional
        None (the default): :func:`sandbox.get_default_dtype`, as the layers do.
    """

    def __init__(self, in_channels: int, skip_channels: int, mode: str, align_corners=None,
                 dtype=None):
        super().__init__()
        self.up = Upsample(scale_factor=2, mode=mode, align_corners=align_corners)
        self.block = ConvBlock(in_channels + skip_channels, skip_channels, "batch", dtype)

    def forward(self, x, skip):
        return self.block(cat([skip, self.up(x)], axis=1))


class ClassicUNet(Module):
    """The classic UNet (Ronneberger et al., 2015) with batch norm, as users write it.

    Each level is two (3×3 convolution with padding 1, BatchNorm2d, ReLU); 2×2
    max pooling goes down; ``Upsample(scale_factor=2, mode=upsample)`` of all
    channels goes up, is concatenated with the skip connection and followed by
    a block from ``w_in + w_skip`` to ``w_skip`` channels; a 1×1 convolution
    gives the logits.  :func:`sandbox.interop.to_torch` builds its PyTorch twin
    (same parameter names and weights).

    Parameters
    ----------
    in_channels : int, default 1
        Channels of the input images.
    num_classes : int, default 2
        Channels of the output logits.
    widths : sequence of int, default (16, 32, 64, 128, 256)
        Channels of each level, top to bottom; the depth is ``len(widths) - 1``.
    upsample : str, default "bilinear"
        Decoder upsampling: any mode of :func:`sandbox.functional.interpolate`
        that takes a scale factor (``nearest``, ``bilinear``, ``bicubic`` ...).
    align_corners : bool or None
        Passed to the upsampling.
    dtype : float32 or float64, optional
        None (the default): :func:`sandbox.get_default_dtype`, as the layers do.

    Input height and width must be divisible by ``2**depth`` (16 by default).
    """

    def __init__(self, in_channels: int = 1, num_classes: int = 2,
                 widths=(16, 32, 64, 128, 256), upsample: str = "bilinear",
                 align_corners=None, dtype=None):
        super().__init__()
        for name, value in (("in_channels", in_channels), ("num_classes", num_classes)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        widths = tuple(widths) if isinstance(widths, list | tuple) else widths
        if (not isinstance(widths, tuple) or len(widths) < 2
                or any(isinstance(w, bool) or not isinstance(w, int | np.integer) or w < 1
                       for w in widths)):
            raise ValueError(f"widths must be a tuple of at least two positive integers, "
                             f"got {widths!r}")
        self.in_channels = int(in_channels)
        self.num_classes = int(num_classes)
        self.widths = tuple(int(w) for w in widths)
        self.upsample = upsample
        w = self.widths
        self.inc = ConvBlock(in_channels, w[0], "batch", dtype)
        self.downs = ModuleList(Down(w[i], w[i + 1], "batch", dtype) for i in range(len(w) - 1))
        # Upsample validates the mode and options here, not at the first forward.
        self.ups = ModuleList(ClassicUp(w[i + 1], w[i], upsample, align_corners, dtype)
                              for i in reversed(range(len(w) - 1)))
        self.head = Conv2d(w[0], num_classes, 1, dtype=dtype)

    @property
    def depth(self) -> int:
        """Number of 2× down-sampling steps."""
        return len(self.widths) - 1

    def forward(self, x):
        factor = 2**self.depth
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise ValueError(f"ClassicUNet expects input of shape (N, {self.in_channels}, H, W), "
                             f"got {tuple(x.shape)}")
        if x.shape[2] % factor or x.shape[3] % factor:
            raise ValueError(f"ClassicUNet needs H and W divisible by 2**depth = {factor}, got "
                             f"{tuple(x.shape[2:])}; pad or crop the input (or use "
                             f"sandbox.nn.UNet, which takes any size)")
        return encode_decode(x, self.inc, self.downs, self.ups, self.head)

    def extra_repr(self) -> str:
        return (f"in_channels={self.in_channels}, num_classes={self.num_classes}, "
                f"widths={self.widths}, upsample={self.upsample!r}")
