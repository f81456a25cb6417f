"""Normalisation layers: batch norm (2-D; the base of the 3-D one) and group norm."""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..runtime.device import check_device
from ._layers import _affine_parameters, _float_dtype, _positive
from ._module import Module


class _BatchNorm(Module):
    """Batch normalisation over ``(N, C, ...)`` with running statistics (shared by the
    2-D and 3-D layers, which differ only in the input they accept)."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        check_device(device)
        self.num_features = _positive(num_features, "num_features")
        self.eps = float(eps)
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        dtype = _float_dtype(dtype)
        _affine_parameters(self, affine, num_features, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype))
            self.register_buffer("num_batches_tracked", np.zeros((), np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, x):
        return self._apply_norm(F.batch_norm, x)

    def fuses_relu(self) -> bool:
        """Whether :class:`Sequential` may run this module and a following ``ReLU`` as
        :meth:`forward_relu`: only when the class that defines ``forward`` defines
        ``forward_relu`` too (a subclass that changes ``forward`` alone is not fused)."""
        for owner in type(self).__mro__:  # Module defines forward: the loop returns
            if "forward" in owner.__dict__:
                return "forward_relu" in owner.__dict__
        return False

    def forward_relu(self, x):
        """``relu(self(x))`` in one fused pass, forward and backward (bitwise the same result).

        Used by the UNets' convolution blocks; see :func:`sandbox.functional.batch_norm_relu`.
        """
        return self._apply_norm(F.batch_norm_relu, x)

    def _apply_norm(self, fn, x):
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            tracked = self.num_batches_tracked
            # in place (the buffer is a 0-d int64 array), without a ufunc: ``tracked += 1``
            # went through numpy's buffered iterator, 15 us a call in a training step
            # (py-spy of the 3-D UNet step, 2 threads, AMD EPYC family 26 model 2)
            tracked[()] = tracked.item() + 1
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(tracked)
        return fn(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            training=self.training or not self.track_running_stats,
            momentum=momentum,
            eps=self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, track_running_stats={self.track_running_stats}"
        )


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over ``(N, C, H, W)`` with running statistics."""


class GroupNorm(Module):
    """Group normalisation: statistics over channel groups of each sample."""

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        check_device(device)
        self.num_groups = _positive(num_groups, "num_groups")
        self.num_channels = _positive(num_channels, "num_channels")
        if num_channels % num_groups:
            raise ValueError(f"num_groups={num_groups} must divide num_channels={num_channels}")
        self.eps = float(eps)
        self.affine = affine
        dtype = _float_dtype(dtype)
        _affine_parameters(self, affine, num_channels, dtype)

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
