"""Optimisers with PyTorch's update rules (``torch.optim``), on numpy arrays.

Each optimiser updates ``p.data`` in place from ``p.grad`` and keeps its per-parameter
state (momentum buffers, moments, step counts) in ``self.state``; ``state_dict()``
/ ``load_state_dict()`` round-trip everything needed to resume training exactly.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from ..array.optim import _adam_update_quads, fits_adam_kernel
from ..autograd import Tensor


class Optimizer:
    """Base class: parameter groups, ``zero_grad``, and state (de)serialisation.

    Parameters
    ----------
    params : iterable of Parameter, or of dicts with a ``"params"`` key
        The tensors to optimise, optionally split into groups with their own options.
    defaults : dict
        Default option values for every group.
    """

    def __init__(self, params, defaults: dict):
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self.state: dict[int, dict] = {}  # keyed by id(param)
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own options."""
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError("a parameter group must be a dict with a 'params' entry")
        group = dict(group)
        group["params"] = list(group["params"])
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in group["params"]:
            if not hasattr(p, "data") or not hasattr(p, "grad"):
                raise TypeError(f"optimizer can only optimise Tensors, got {type(p).__name__}")
            if not p.requires_grad:
                raise ValueError("optimizer got a tensor that does not require grad")
            if id(p) in seen:
                raise ValueError("some parameters appear in more than one parameter group")
            seen.add(id(p))
        unknown = set(group) - set(self.defaults) - {"params", "initial_lr"}
        if unknown:
            raise ValueError(
                f"unknown option(s) {sorted(unknown)} for {type(self).__name__}; "
                f"valid options: {sorted(self.defaults)}"
            )
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter."""
        for group in self.param_groups:
            if set_to_none:
                for p in group["params"]:
                    p.grad = None
            else:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.numpy()[...] = 0

    def _params_with_grad(self, group):
        """``(p, grad)`` of each parameter of ``group`` that has a gradient, ``grad`` an
        ndarray of the parameter's dtype (ValueError if its shape is not the parameter's)."""
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            grad = grad.numpy() if isinstance(grad, Tensor) else np.asarray(grad)
            data = p.numpy()
            if grad.shape != data.shape:
                raise ValueError(
                    f"gradient shape {grad.shape} does not match parameter shape {p.shape}"
                )
            yield p, grad.astype(data.dtype, copy=False)

    def step(self, closure=None):
        raise NotImplementedError

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        """Options and per-parameter state, parameters identified by position."""
        index = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            g = {k: v for k, v in group.items() if k != "params"}
            g["params"] = ids
            groups.append(copy.deepcopy(g))
        state = {index[pid]: copy.deepcopy(s) for pid, s in self.state.items() if pid in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore options and state saved by :meth:`state_dict`."""
        groups = state_dict.get("param_groups")
        if not isinstance(groups, list) or len(groups) != len(self.param_groups):
            raise ValueError(
                "loaded state dict has a different number of parameter groups "
                f"({0 if groups is None else len(groups)} vs {len(self.param_groups)})"
            )
        params = [p for g in self.param_groups for p in g["params"]]
        for saved, group in zip(groups, self.param_groups, strict=True):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    "loaded state dict has a parameter group of a different size "
                    f"({len(saved['params'])} vs {len(group['params'])})"
                )
        self.state = {}
        for key, s in state_dict["state"].items():
            p = params[int(key)]
            s = copy.deepcopy(s)
            for name, value in s.items():
                if isinstance(value, np.ndarray) and value.shape != p.shape and value.ndim:
                    raise ValueError(
                        f"state {name!r} has shape {value.shape}, parameter {p.shape}"
                    )
                if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
                    s[name] = value.astype(p.dtype, copy=False)
            self.state[id(p)] = s
        for saved, group in zip(groups, self.param_groups, strict=True):
            for k, v in saved.items():
                if k != "params":
                    group[k] = copy.deepcopy(v)

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(group):
                if k != "params":
                    lines.append(f"    {k}: {group[k]}")
        return "\n".join(lines) + "\n)"


def _check_nonneg(name: str, value) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool) or not value >= 0:
        raise ValueError(f"{name} must be a non-negative number, got {value!r}")


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

    ``foreach``, ``differentiable`` and ``fused`` are accepted for compatibility.
    Update (PyTorch's rule): ``g = grad + wd·p``; with momentum
    ``b = μ·b + (1-τ)·g`` (``b = g`` at the first step) and ``g = g + μ·b`` (Nesterov)
    or ``g = b``; then ``p -= lr·g``.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
        foreach=None,
        differentiable: bool = False,
        fused=None,
    ):
        for name, value in (("lr", lr), ("momentum", momentum), ("weight_decay", weight_decay)):
            _check_nonneg(name, value)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("nesterov=True requires momentum > 0 and dampening = 0")
        super().__init__(
            params,
            dict(
                lr=lr,
                momentum=momentum,
                dampening=dampening,
                weight_decay=weight_decay,
                nesterov=nesterov,
                maximize=maximize,
                foreach=foreach,
                differentiable=differentiable,
                fused=fused,
            ),
        )

    def step(self, closure=None):
        """One update; ``closure`` (re-evaluates and returns the loss) is called first if given."""
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr, mu, wd = group["lr"], group["momentum"], group["weight_decay"]
            for p, grad in self._params_with_grad(group):
                g = -grad if group["maximize"] else grad
                if wd:
                    g = g + wd * p.numpy()
                if mu:
                    state = self.state.setdefault(id(p), {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = np.array(g, copy=True)
                    else:
                        buf *= mu
                        buf += (1 - group["dampening"]) * g
                    g = g + mu * buf if group["nesterov"] else buf
                p.data -= lr * g
        return loss


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) with PyTorch's update rule and options.

    ``m = β1·m + (1-β1)·g``, ``v = β2·v + (1-β2)·g²``,
    ``p -= lr/(1-β1ᵗ) · m / (sqrt(v)/sqrt(1-β2ᵗ) + eps)``; ``weight_decay`` adds
    ``wd·p`` to the gradient (L2); ``amsgrad`` uses the running maximum of ``v``.
    ``foreach``, ``capturable``, ``differentiable`` and ``fused`` are accepted for
    compatibility (one numpy implementation serves them all).
    """

    decoupled = False

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
        foreach=None,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        _check_nonneg("lr", lr)
        _check_nonneg("eps", eps)
        _check_nonneg("weight_decay", weight_decay)
        if len(betas) != 2 or not all(0.0 <= b < 1.0 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas!r}")
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=tuple(betas),
                eps=eps,
                weight_decay=weight_decay,
                amsgrad=amsgrad,
                maximize=maximize,
                foreach=foreach,
                capturable=capturable,
                differentiable=differentiable,
                fused=fused,
            ),
        )

    def step(self, closure=None):
        """One update; ``closure`` (re-evaluates and returns the loss) is called first if given."""
        loss = None if closure is None else closure()
        for group in self.param_groups:
            lr, (beta1, beta2), eps, wd = (
                group["lr"],
                group["betas"],
                group["eps"],
                group["weight_decay"],
            )
            amsgrad = group["amsgrad"]
            # the one-pass kernel's parameters, by (step number, dtype): one call each
            batches = {}
            for p, grad in self._params_with_grad(group):
                data = p.numpy()
                state = self.state.setdefault(id(p), {})
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = np.zeros_like(data)
                    state["exp_avg_sq"] = np.zeros_like(data)
                    if amsgrad:
                        state["max_exp_avg_sq"] = np.zeros_like(data)
                state["step"] += 1
                t = state["step"]
                m, v = state["exp_avg"], state["exp_avg_sq"]
                if not amsgrad and _kernel_takes(data, grad, m, v):
                    batches.setdefault((t, data.dtype), []).append((data, grad, m, v))
                    continue
                g = -grad if group["maximize"] else grad
                if wd:
                    if self.decoupled:
                        p.data *= 1 - lr * wd
                    else:
                        g = g + wd * p.numpy()
                # m += (1-β1)(g - m) is PyTorch's lerp form of β1·m + (1-β1)·g.
                m += (1 - beta1) * (g - m)
                v *= beta2
                v += (1 - beta2) * g * g
                bias_correction1 = 1 - beta1**t
                bias_correction2_sqrt = math.sqrt(1 - beta2**t)
                if amsgrad:
                    np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
                    v = state["max_exp_avg_sq"]
                denom = np.sqrt(v) / bias_correction2_sqrt + eps
                p.data -= (lr / bias_correction1) * (m / denom)
            for (t, _), quads in batches.items():
                _fused_adam(quads, t, group, self.decoupled)
        return loss


#: ``_kernel_takes(param, grad, exp_avg, exp_avg_sq)``: whether the one-pass kernel
#: updates this parameter (else the numpy code of :meth:`Adam.step` does); a module name
#: of its own so a test can send every parameter to the numpy code
_kernel_takes = fits_adam_kernel


def _fused_adam(quads, t, group, decoupled) -> None:
    """Adam updates of ``quads`` (param, grad, exp_avg, exp_avg_sq; one dtype, step ``t``)
    by the one-pass kernel, all in one call.

    The kernel takes C-contiguous float32/float64 arrays of one dtype
    (:func:`~sandbox.array.optim.fits_adam_kernel`, which :meth:`Adam.step` asked of
    each quadruple, so they are not checked again) and gives bitwise the same result
    as the numpy code in :meth:`Adam.step` (one pass, no temporaries instead of about
    ten).
    """
    beta1, beta2 = group["betas"]
    _adam_update_quads(quads, step=t, lr=group["lr"], beta1=beta1, beta2=beta2,
                       eps=group["eps"], weight_decay=group["weight_decay"],
                       decoupled=decoupled, maximize=group["maximize"])


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): ``p *= 1 - lr·wd``."""

    decoupled = True

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas=(0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
        foreach=None,
        capturable: bool = False,
        differentiable: bool = False,
        fused=None,
    ):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize, foreach,
                         capturable, differentiable, fused)
