"""``to_torch`` / ``from_torch``: the same model, with the same weights, in PyTorch."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .. import nn
from ..nn import _classic_unet, _unet
from ..nn._safetensors import assign_state
from ..runtime.optional import require


def _dtype_of(module, torch):
    """The torch dtype of ``module``'s own floating parameters (float32 if it has none)."""
    for p in module.parameters(recurse=False):
        return torch.float64 if p.dtype == np.float64 else torch.float32
    for b in module.buffers(recurse=False):
        if np.issubdtype(b.dtype, np.floating):
            return torch.float64 if b.dtype == np.float64 else torch.float32
    return torch.float32


def _mode(mode, align_corners, antialias, what):
    from ._torch_modules import torch_mode

    name = torch_mode(mode, align_corners, antialias)
    if name is None:
        raise ValueError(
            f"{what}: PyTorch has no resampling mode equal to mode={mode!r} with "
            f"align_corners={align_corners}, antialias={antialias} (PyTorch has nearest, "
            "nearest-exact, linear/bilinear/trilinear, bicubic, area, and lanczos3 only with "
            "antialias=True and no align_corners); export it with sandbox.interop.to_onnx instead"
        )
    return name


def _conv_args(m):
    return (m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding, m.dilation,
            m.groups, m.bias is not None, m.padding_mode)


def _conv_transpose_args(m):
    return (m.in_channels, m.out_channels, m.kernel_size, m.stride, m.padding,
            m.output_padding, m.groups, m.bias is not None, m.dilation)


def _max_pool_args(m):
    return m.kernel_size, m.stride, m.padding, m.dilation, False, m.ceil_mode  # no indices


def _avg_pool_args(m):
    return m.kernel_size, m.stride, m.padding, m.ceil_mode, m.count_include_pad, m.divisor_override


# (sandbox layers, arguments of the torch.nn layer of the same name, whether it takes
# dtype=), tried in order: a subclass (Dropout2d) before its base (Dropout).
_SAME_NAME = (
    ((nn.Conv2d, nn.Conv3d), _conv_args, True),
    ((nn.ConvTranspose2d, nn.ConvTranspose3d), _conv_transpose_args, True),
    ((nn.Linear,), lambda m: (m.in_features, m.out_features, m.bias is not None), True),
    ((nn.BatchNorm2d, nn.BatchNorm3d),
     lambda m: (m.num_features, m.eps, m.momentum, m.affine, m.track_running_stats), True),
    ((nn.GroupNorm,), lambda m: (m.num_groups, m.num_channels, m.eps, m.affine), True),
    ((nn.MaxPool2d, nn.MaxPool3d), _max_pool_args, False),
    ((nn.AvgPool2d, nn.AvgPool3d), _avg_pool_args, False),
    ((nn.Dropout2d, nn.Dropout), lambda m: (m.p,), False),
    ((nn.LeakyReLU,), lambda m: (m.negative_slope,), False),
    ((nn.ReLU,), lambda m: (), False),
)


def _leaf(m, torch, name):
    """A ``torch.nn`` layer for a parameterised or parameter-free sandbox layer."""
    tnn = torch.nn
    if isinstance(m, nn.Upsample):
        from ._torch_modules import Interpolate

        mode = _mode(m.mode, m.align_corners, m.antialias, name or "Upsample")
        return Interpolate(m.size, m.scale_factor, mode, m.align_corners, m.antialias,
                           m.recompute_scale_factor)
    if isinstance(m, nn.Warp | nn.VecInt):
        from . import _torch_modules as tm

        opts = (m.mode, m.padding_mode, m.align_corners)
        return tm.Warp(*opts) if isinstance(m, nn.Warp) else tm.VecInt(m.steps, *opts)
    for kinds, args, typed in _SAME_NAME:
        for kind in kinds:
            if isinstance(m, kind):
                options = {"dtype": _dtype_of(m, torch)} if typed else {}
                return getattr(tnn, kind.__name__)(*args(m), **options)
    return tnn.Identity()


_LEAVES = (nn.Conv2d, nn.ConvTranspose2d, nn.Linear, nn.BatchNorm2d, nn.GroupNorm, nn.MaxPool2d,
           nn.AvgPool2d, nn.Upsample, nn.Dropout, nn.Dropout2d, nn.LeakyReLU, nn.ReLU,
           nn.Identity, nn.Conv3d, nn.ConvTranspose3d, nn.BatchNorm3d, nn.MaxPool3d,
           nn.AvgPool3d, nn.Warp, nn.VecInt)
_SUPPORTED = (*_LEAVES, nn.Sequential, nn.ModuleList, nn.UNet, _unet.ConvBlock, _unet.Down,
              _unet.Up, nn.ClassicUNet, _classic_unet.ClassicUp)


def _convert(m, torch, name=""):
    from . import _torch_modules as tm

    kind = type(m)
    where = f" (at {name!r})" if name else ""

    def child(attr):
        sub = getattr(m, attr)
        return _convert(sub, torch, f"{name}.{attr}" if name else attr)

    if kind in _LEAVES:
        return _leaf(m, torch, name)
    if kind is nn.Sequential:
        return torch.nn.Sequential(*(child(k) for k in m._modules))
    if kind is nn.ModuleList:
        return torch.nn.ModuleList(child(k) for k in m._modules)
    if kind is _unet.ConvBlock:
        return tm.ConvBlock(child("conv1"), child("norm1"), child("conv2"), child("norm2"))
    if kind is _unet.Down:
        return tm.Down(child("pool"), child("block"))
    if kind is _unet.Up:
        mode = "transposed" if m.mode == "transposed" else \
            _mode(m.mode, m.align_corners, m.antialias, f"UNet upsampling{where}")
        if isinstance(m.up, nn.Conv3d | nn.ConvTranspose3d) and (
                mode in ("bicubic", "lanczos") or m.antialias):
            raise ValueError(
                f"UNet upsampling{where}: PyTorch's interpolate has mode={m.mode!r} with "
                f"antialias={m.antialias} only in 2-D, and this UNet is 3-D (PyTorch has "
                "nearest, nearest-exact, trilinear and area on volumes); export it with "
                "sandbox.interop.to_onnx instead"
            )
        return tm.Up(child("up"), child("block"), mode, m.align_corners, m.antialias)
    if kind is nn.UNet:
        return tm.UNet(child("inc"), child("downs"), child("ups"), child("head"), m.in_channels,
                       m.spatial_dims)
    if kind is _classic_unet.ClassicUp:
        return tm.ClassicUp(child("up"), child("block"))
    if kind is nn.ClassicUNet:
        return tm.ClassicUNet(child("inc"), child("downs"), child("ups"), child("head"),
                              m.in_channels, 2)
    names = ", ".join(sorted(c.__name__ for c in _SUPPORTED))
    raise TypeError(
        f"to_torch cannot translate {kind.__name__}{where}: it knows {names} "
        "(a subclass with its own forward needs its own PyTorch twin)"
    )


def to_torch(module):
    """An equivalent ``torch.nn.Module`` holding a copy of ``module``'s weights.

    Every layer of :mod:`sandbox.nn` (the 3-D ones too, and ``Warp`` / ``VecInt``, which
    become ``F.grid_sample`` modules: PyTorch refuses their bicubic mode on volumes), the
    :class:`~sandbox.nn.UNet` (2-D or ``spatial_dims=3``) and the
    :class:`~sandbox.nn.ClassicUNet` translate;
    parameter and buffer names, ``state_dict`` order, dtypes (float32 or float64)
    and the train/eval mode carry over, and every value is copied bit for bit.

    Parameters
    ----------
    module : sandbox.nn.Module

    Returns
    -------
    torch.nn.Module

    Raises
    ------
    ImportError
        PyTorch is not installed (``pip install 'cpu-train-sandbox[torch]'``).
    TypeError
        A module type without a PyTorch twin (e.g. your own subclass).
    ValueError
        A resampling mode PyTorch does not have (``cubic``, ``lanczos5``, ``lanczos3``
        without antialias; in a 3-D UNet also ``bicubic`` and antialias); :func:`to_onnx`
        exports those.
    """
    torch = require("torch", "to_torch")
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a sandbox.nn.Module, got {type(module).__name__}")
    twin = _convert(module, torch)
    state = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in module.state_dict().items()}
    twin.load_state_dict(state, strict=True)
    for (_, ours), (_, theirs) in zip(module.named_modules(), twin.named_modules(), strict=True):
        theirs.train(ours.training)
    return twin


def _arrays_from_torch(torch_state, what):
    arrays = {}
    for key, value in torch_state.items():
        if not hasattr(value, "detach"):
            raise TypeError(f"{what}: {key!r} is a {type(value).__name__}, not a torch tensor")
        tensor = value.detach().cpu()
        try:
            arrays[key] = tensor.numpy().copy()
        except TypeError as exc:  # bfloat16 etc.
            raise ValueError(
                f"{what}: {key!r} has dtype {tensor.dtype}, which numpy cannot hold; "
                "convert the model with .float() first"
            ) from exc
    return arrays


def from_torch(torch_module, sandbox_module, strict: bool = True):
    """Load a PyTorch model's weights (or a state dict) into a sandbox model.

    Parameters
    ----------
    torch_module : torch.nn.Module or mapping of str to torch.Tensor
        E.g. the model :func:`to_torch` made, trained further in PyTorch, or
        ``torch.load("model.pt")`` of its ``state_dict``.
    sandbox_module : sandbox.nn.Module
        A model with the same architecture (same names, shapes and dtypes).
    strict : bool, default True
        Require exactly the same names (``KeyError`` listing the differences).

    Returns
    -------
    sandbox.nn.Module
        ``sandbox_module``, with the weights copied bit for bit.
    """
    torch = require("torch", "from_torch")
    if isinstance(torch_module, torch.nn.Module):
        state = torch_module.state_dict()
    elif isinstance(torch_module, Mapping):
        state = torch_module
    else:
        raise TypeError(
            "torch_module must be a torch.nn.Module or a state dict (mapping of names to "
            f"tensors), got {type(torch_module).__name__}"
        )
    if not isinstance(sandbox_module, nn.Module):
        raise TypeError(
            f"sandbox_module must be a sandbox.nn.Module, got {type(sandbox_module).__name__}"
        )
    arrays = _arrays_from_torch(state, "from_torch")
    assign_state(sandbox_module, arrays, strict=strict, source="the PyTorch state dict")
    return sandbox_module
