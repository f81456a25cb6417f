"""Activation layers with PyTorch's signatures (``inplace``: see sandbox.functional._activation)."""

from __future__ import annotations

from .. import functional as F
from ._module import Module


class _InplaceActivation(Module):
    """An activation whose only option is ``inplace``: ``F.<_fn>(x, inplace=...)``."""

    _fn = ""  # the name of the functional op (looked up at each call)

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = bool(inplace)

    def forward(self, x):
        return getattr(F, self._fn)(x, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceActivation):
    """``max(x, 0)``."""

    _fn = "relu"


class LeakyReLU(Module):
    """``x`` if ``x > 0`` else ``negative_slope · x``."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope = float(negative_slope)
        self.inplace = bool(inplace)

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """GELU ``x * Phi(x)``; ``approximate="tanh"`` for the tanh form (as torch.nn.GELU)."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate='{self.approximate}'"


class SiLU(_InplaceActivation):
    """SiLU (swish) ``x * sigmoid(x)``, as torch.nn.SiLU."""

    _fn = "silu"


class Sigmoid(Module):
    """``1 / (1 + e^-x)``."""

    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    """Hyperbolic tangent."""

    def forward(self, x):
        return F.tanh(x)


class _SoftmaxBase(Module):
    def __init__(self, dim=None):
        super().__init__()
        if dim is None:
            name = type(self).__name__
            raise TypeError(f"{name}: give dim= (e.g. dim=1 for (N, C, H, W) logits)")
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    """Softmax along ``dim``."""

    def forward(self, x):
        return F.softmax(x, self.dim)


class LogSoftmax(_SoftmaxBase):
    """Log-softmax along ``dim``."""

    def forward(self, x):
        return F.log_softmax(x, self.dim)
