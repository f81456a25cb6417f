"""Loss modules with PyTorch's constructor arguments, wrapping :mod:`sandbox.functional`."""

from __future__ import annotations

import numpy as np

from .. import functional as F
from ..autograd import Tensor
from ._module import Module


def _reduction(cls, size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        raise TypeError(
            f"{cls}: size_average= and reduce= are deprecated in PyTorch and not supported; "
            "use reduction='mean' | 'sum' | 'none'"
        )
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{cls}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    return reduction


def _buffer(module, name, value):
    array = None if value is None else np.array(
        value.numpy() if isinstance(value, Tensor) else value, copy=True
    )
    module.register_buffer(name, array)


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        self.reduction = _reduction(type(self).__name__, size_average, reduce, reduction)

    def extra_repr(self) -> str:
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class CrossEntropyLoss(_Loss):
    """Cross-entropy of logits ``(N, C, ...)`` with class indices or probabilities."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(size_average, reduce, reduction)
        _buffer(self, "weight", weight)
        self.ignore_index = int(ignore_index)
        self.label_smoothing = float(label_smoothing)

    def forward(self, input, target):  # noqa: A002
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction,
                               self.label_smoothing)


class NLLLoss(_Loss):
    """Negative log-likelihood of log-probabilities ``(N, C, ...)``."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        _buffer(self, "weight", weight)
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):  # noqa: A002
        return F.nll_loss(input, target, self.weight, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy on logits (stable); ``pos_weight`` broadcasts along the classes."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        _buffer(self, "weight", weight)
        _buffer(self, "pos_weight", pos_weight)

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight, self.pos_weight,
                                                  self.reduction)


class BCELoss(_Loss):
    """Binary cross-entropy of probabilities (logs clamped at -100, as PyTorch)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        _buffer(self, "weight", weight)

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy(input, target, self.weight, self.reduction)


class MSELoss(_Loss):
    """Mean squared error."""

    def forward(self, input, target):  # noqa: A002
        return F.mse_loss(input, target, self.reduction)


class L1Loss(_Loss):
    """Mean absolute error."""

    def forward(self, input, target):  # noqa: A002
        return F.l1_loss(input, target, self.reduction)
