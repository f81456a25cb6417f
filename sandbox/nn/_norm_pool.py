"""LayerNorm, InstanceNorm2d/3d and adaptive pooling layers (PyTorch's arguments and names)."""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..runtime.device import check_device
from ._layers import _float_dtype
from ._module import Module, Parameter


class LayerNorm(Module):
    """Normalise over the last dims ``normalized_shape``, with an elementwise affine map."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        check_device(device)
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else normalized_shape
        self.normalized_shape = tuple(int(n) for n in shape)
        self.eps = float(eps)
        self.elementwise_affine = bool(elementwise_affine)
        dtype = _float_dtype(dtype)
        if elementwise_affine:
            self.weight = Parameter(np.ones(self.normalized_shape, dtype))
            if bias:
                self.bias = Parameter(np.zeros(self.normalized_shape, dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class _InstanceNorm(Module):
    """Per-sample, per-channel normalisation over the spatial dims (PyTorch's defaults: no
    affine, no running statistics); the subclasses fix the rank (``_spatial`` dims)."""

    _spatial = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None):
        super().__init__()
        check_device(device)
        self.num_features = int(num_features)
        self.eps = float(eps)
        self.momentum = momentum
        self.affine = bool(affine)
        self.track_running_stats = bool(track_running_stats)
        dtype = _float_dtype(dtype)
        if affine:
            self.weight = Parameter(np.ones(num_features, dtype))
            self.bias = Parameter(np.zeros(num_features, dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype))
            self.register_buffer("num_batches_tracked", np.zeros((), np.int64))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)

    def forward(self, x):
        name, rank = type(self).__name__, self._spatial + 2
        if x.ndim not in (rank - 1, rank):
            raise ValueError(f"{name}: expected a {rank - 1}-d or {rank}-d input, got shape "
                             f"{x.shape}")
        unbatched = x.ndim == rank - 1
        if unbatched:
            x = x.unsqueeze(0)
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"{name}: expected {self.num_features} channels, got {x.shape[1]}"
            )
        # PyTorch's InstanceNorm keeps num_batches_tracked at 0 (only the batch norms count).
        use_input_stats = self.training or not self.track_running_stats
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            use_input_stats, 0.0 if self.momentum is None else self.momentum,
                            self.eps)  # momentum=None: 0, as PyTorch's InstanceNorm
        return y.squeeze(0) if unbatched else y

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")


class InstanceNorm2d(_InstanceNorm):
    """Per-sample, per-channel normalisation of ``(N, C, H, W)`` (PyTorch's defaults: no
    affine)."""


class InstanceNorm3d(_InstanceNorm):
    """Per-sample, per-channel normalisation of volumes ``(N, C, D, H, W)`` (PyTorch's
    defaults: no affine)."""

    _spatial = 3


class AdaptiveAvgPool2d(Module):
    """Average pooling to a fixed ``output_size`` (int or pair; None keeps a dim)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(Module):
    """Max pooling to a fixed ``output_size``."""

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = bool(return_indices)

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` (PyTorch's defaults keep the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
