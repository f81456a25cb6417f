"""PyTorch modules mirroring :mod:`sandbox.nn`'s UNets (``UNet`` of both ranks and
``ClassicUNet``), their parts, ``Upsample``, ``Warp`` and ``VecInt``.

This is the one PyTorch copy of those architectures: the parity tests and
``sandbox bench`` build their PyTorch twins with :func:`sandbox.interop.to_torch`.

The classes are built on first access (``torch`` is imported then, not when this
module is imported) and live here under their own names, so a whole exported
model pickles with ``torch.save(model)`` and unpickles wherever ``sandbox`` is
installed.  Their children are passed in already converted; the attribute
names are the sandbox's, so ``state_dict`` names match one to one.
"""

from __future__ import annotations

import functools

# sandbox mode -> PyTorch mode (for 1-, 2-, 3-D inputs where they differ by name).
_LINEAR = {3: "linear", 4: "bilinear", 5: "trilinear"}
_FILTER_MODES = ("linear", "bilinear", "trilinear", "bicubic", "lanczos")


def torch_mode(mode: str, align_corners, antialias: bool) -> str | None:
    """PyTorch's name for a sandbox resampling mode with these options, or None.

    ``lanczos3`` is PyTorch's ``lanczos`` only with ``antialias`` and without
    ``align_corners``; ``cubic``, ``lanczos5`` and plain ``lanczos3`` have no
    PyTorch counterpart.
    """
    if mode in ("linear", "bilinear", "trilinear"):
        return "linear"
    if mode in ("nearest", "nearest-exact", "bicubic", "area"):
        return mode
    if mode in ("lanczos", "lanczos3") and antialias and not align_corners:
        return "lanczos"
    return None


@functools.cache
def _classes() -> dict:
    import torch
    from torch import nn
    from torch.nn import functional as F

    from ..nn._unet import check_input, encode_decode, pad_widths

    def interpolate(x, size, scale_factor, mode, align_corners, antialias, recompute):
        name = _LINEAR.get(x.dim(), "bilinear") if mode == "linear" else mode
        kwargs = {}
        if name in _FILTER_MODES:
            kwargs = {"align_corners": align_corners, "antialias": antialias}
        return F.interpolate(
            x, size=size, scale_factor=scale_factor, mode=name,
            recompute_scale_factor=recompute, **kwargs,
        )

    class Interpolate(nn.Module):
        """``sandbox.nn.Upsample``: ``F.interpolate`` with the linear mode named by rank."""

        def __init__(self, size, scale_factor, mode, align_corners, antialias, recompute):
            super().__init__()
            self.size = size
            self.scale_factor = scale_factor
            self.mode = mode
            self.align_corners = align_corners
            self.antialias = antialias
            self.recompute_scale_factor = recompute

        def forward(self, x):
            return interpolate(
                x, self.size, self.scale_factor, self.mode, self.align_corners,
                self.antialias, self.recompute_scale_factor,
            )

        def extra_repr(self):
            what = f"size={self.size}" if self.size is not None else \
                f"scale_factor={self.scale_factor}"
            return f"{what}, mode={self.mode!r}, align_corners={self.align_corners}, " \
                f"antialias={self.antialias}"

    class ConvBlock(nn.Module):
        def __init__(self, conv1, norm1, conv2, norm2):
            super().__init__()
            self.conv1, self.norm1, self.conv2, self.norm2 = conv1, norm1, conv2, norm2

        def forward(self, x):
            x = F.relu(self.norm1(self.conv1(x)))
            return F.relu(self.norm2(self.conv2(x)))

    class Down(nn.Module):
        def __init__(self, pool, block):
            super().__init__()
            self.pool, self.block = pool, block

        def forward(self, x):
            return self.block(self.pool(x))

    class Up(nn.Module):
        """Upsample to the skip's size (resampling or transposed conv), concat, ConvBlock."""

        def __init__(self, up, block, mode, align_corners, antialias):
            super().__init__()
            self.up, self.block = up, block
            self.mode = mode  # a PyTorch mode (see torch_mode) or "transposed"
            self.align_corners = align_corners
            self.antialias = antialias

        def forward(self, x, skip):
            x = self.up(x)
            size = tuple(skip.shape[2:])
            if self.mode == "transposed":
                widths = pad_widths(size, x.shape[2:])
                if widths:  # odd sizes: pad to the skip's size, as the sandbox does
                    x = F.pad(x, widths)
            else:
                x = interpolate(x, size, None, self.mode, self.align_corners,
                                self.antialias, None)
            return self.block(torch.cat([skip, x], dim=1))

        def extra_repr(self):
            return f"mode={self.mode!r}, align_corners={self.align_corners}, " \
                f"antialias={self.antialias}"

    class UNet(nn.Module):
        """``sandbox.nn.UNet`` in PyTorch, 2-D or 3-D (same parameter and buffer names)."""

        def __init__(self, inc, downs, ups, head, in_channels, spatial_dims=2):
            super().__init__()
            self.inc, self.downs, self.ups, self.head = inc, downs, ups, head
            self.in_channels = in_channels
            self.spatial_dims = spatial_dims

        def forward(self, x):
            dims = getattr(self, "spatial_dims", 2)  # models pickled before 3-D support
            check_input(tuple(x.shape), self.in_channels, dims)
            return encode_decode(x, self.inc, self.downs, self.ups, self.head)

    class ClassicUp(nn.Module):
        """``sandbox.nn.ClassicUNet``'s decoder step: upsample all channels, concat, ConvBlock."""

        def __init__(self, up, block):
            super().__init__()
            self.up, self.block = up, block

        def forward(self, x, skip):
            return self.block(torch.cat([skip, self.up(x)], dim=1))

    class ClassicUNet(UNet):
        """``sandbox.nn.ClassicUNet`` in PyTorch (same parameter and buffer names)."""


    def warp(image, flow, mode, padding_mode, align_corners):
        """Sample ``image`` at identity + ``flow`` (voxels, channels in tensor-axis order)."""
        spatial = flow.shape[2:]
        axes = [torch.arange(s, dtype=flow.dtype, device=flow.device) for s in spatial]
        pos = torch.stack(torch.meshgrid(*axes, indexing="ij"))[None] + flow
        coords = []
        for k, s in enumerate(spatial):  # voxel position -> normalised, per axis
            if align_corners:
                coords.append(pos[:, k] * (2.0 / (s - 1)) - 1.0 if s > 1 else pos[:, k] * 0.0)
            else:
                coords.append((2.0 * pos[:, k] + 1.0) / s - 1.0)
        grid = torch.stack(coords[::-1], dim=-1)  # grid_sample's last axis is x, y(, z)
        return F.grid_sample(image, grid, mode=mode, padding_mode=padding_mode,
                             align_corners=align_corners)

    class Warp(nn.Module):
        """``sandbox.nn.Warp``: warp ``image`` by a voxel displacement field ``flow``."""

        def __init__(self, mode="bilinear", padding_mode="zeros", align_corners=True):
            super().__init__()
            self.mode, self.padding_mode, self.align_corners = mode, padding_mode, align_corners

        def forward(self, image, flow):
            return warp(image, flow, self.mode, self.padding_mode, self.align_corners)

        def extra_repr(self):
            return f"mode={self.mode!r}, padding_mode={self.padding_mode!r}, " \
                f"align_corners={self.align_corners}"

    class VecInt(nn.Module):
        """``sandbox.nn.VecInt``: scaling and squaring of a stationary velocity field."""

        def __init__(self, steps=7, mode="bilinear", padding_mode="zeros", align_corners=True):
            super().__init__()
            self.steps = steps
            self.mode, self.padding_mode, self.align_corners = mode, padding_mode, align_corners

        def forward(self, velocity):
            u = velocity * (1.0 / 2**self.steps)
            for _ in range(self.steps):
                u = u + warp(u, u, self.mode, self.padding_mode, self.align_corners)
            return u

        def extra_repr(self):
            return f"steps={self.steps}, mode={self.mode!r}, " \
                f"padding_mode={self.padding_mode!r}, align_corners={self.align_corners}"

    classes = {"Interpolate": Interpolate, "ConvBlock": ConvBlock, "Down": Down,
               "Up": Up, "UNet": UNet, "ClassicUp": ClassicUp, "ClassicUNet": ClassicUNet,
               "Warp": Warp, "VecInt": VecInt}
    for name, cls in classes.items():
        cls.__module__ = __name__
        cls.__qualname__ = name
    return classes


def __getattr__(name: str):
    # PEP 562: `_torch_modules.UNet` builds the classes (and imports torch) on first use,
    # which is also what unpickling a saved model does.
    if name in ("Interpolate", "ConvBlock", "Down", "Up", "UNet", "ClassicUp", "ClassicUNet",
                "Warp", "VecInt"):
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
