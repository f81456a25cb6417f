"""RMSprop with PyTorch's update rule (``torch.optim.RMSprop``)."""

from __future__ import annotations

import numpy as np

from ._optimizer import Optimizer, _check_nonneg


class RMSprop(Optimizer):
    """Divide the gradient by a running root mean square of recent gradients.

    PyTorch's rule: ``g = grad + wd·p``; ``v = α·v + (1-α)·g²``; with ``centered``
    ``m = m + (1-α)(g - m)`` and ``d = sqrt(v - m²) + eps``, else ``d = sqrt(v) + eps``;
    with momentum ``b = μ·b + g/d`` and ``p -= lr·b``, else ``p -= lr·g/d``.
    ``foreach``, ``capturable`` and ``differentiable`` are accepted for
    compatibility (one numpy implementation serves them all).
    """

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False):
        for name, value in (("lr", lr), ("alpha", alpha), ("eps", eps),
                            ("weight_decay", weight_decay), ("momentum", momentum)):
            _check_nonneg(name, value)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize,
                                      foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    def step(self, closure=None):
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, mu = group["weight_decay"], group["momentum"]
            for p, grad in self._params_with_grad(group):
                g = -grad if group["maximize"] else grad
                if wd:
                    g = g + wd * p.numpy()
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["square_avg"] = np.zeros_like(p.numpy())
                    if mu > 0:
                        state["momentum_buffer"] = np.zeros_like(p.numpy())
                    if group["centered"]:
                        state["grad_avg"] = np.zeros_like(p.numpy())
                state["step"] += 1
                v = state["square_avg"]
                v *= alpha
                v += (1 - alpha) * g * g
                if group["centered"]:
                    m = state["grad_avg"]
                    m += (1 - alpha) * (g - m)
                    avg = np.sqrt(v - m * m) + eps
                else:
                    avg = np.sqrt(v) + eps
                if mu > 0:
                    buf = state["momentum_buffer"]
                    buf *= mu
                    buf += g / avg
                    p.data -= lr * buf
                else:
                    p.data -= lr * (g / avg)
        return loss
