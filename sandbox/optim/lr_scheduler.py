"""Learning-rate schedulers with PyTorch's formulas (``torch.optim.lr_scheduler``).

Call ``scheduler.step()`` once per epoch (or per batch for :class:`OneCycleLR`),
after ``optimizer.step()``; :class:`ReduceLROnPlateau` takes the monitored value,
``scheduler.step(val_loss)``.
"""

from __future__ import annotations

import math
from collections import Counter

from ._optimizer import Optimizer


def _positive_int(name: str, value) -> int:
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _per_group(value, optimizer, name: str) -> list:
    """``value`` for each parameter group: a list or tuple of one per group, else one
    value for all."""
    n = len(optimizer.param_groups)
    if isinstance(value, list | tuple):
        if len(value) != n:
            raise ValueError(f"expected {n} {name}s (one per group), got {len(value)}")
        return list(value)
    return [value] * n


class LRScheduler:
    """Base class: keeps ``last_epoch`` and writes each group's ``lr``."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        elif any("initial_lr" not in g for g in optimizer.param_groups):
            raise KeyError("param group has no 'initial_lr': resume with last_epoch=-1 first")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the last :meth:`step`."""
        return list(self._last_lr)

    def step(self) -> None:
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size = _positive_int("step_size", step_size)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size:
            return [g["lr"] for g in self.optimizer.param_groups]
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each epoch listed in ``milestones``."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones = Counter(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in groups]


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] for g in groups]
        return [g["lr"] * self.gamma for g in groups]


class LambdaLR(LRScheduler):
    """``lr = initial_lr · lr_lambda(epoch)`` (one function, or one per parameter group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _per_group(lr_lambda, optimizer, "lr_lambda")
        if not all(callable(f) for f in self.lr_lambdas):
            raise TypeError("lr_lambda must be a function of the epoch (or a list of them)")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas,
                                                              strict=True)]

    def state_dict(self) -> dict:
        """Everything but the functions (they are rebuilt by the constructor), as PyTorch."""
        state = super().state_dict()  # outside the comprehension: Cython's super() needs
        return {k: v for k, v in state.items() if k != "lr_lambdas"}  # the method's scope


class ReduceLROnPlateau:
    """Reduce the learning rate when a monitored value stops improving (PyTorch's rule).

    Call ``step(value)`` once per epoch.  After more than ``patience`` epochs
    without improvement (``value < best·(1 - threshold)`` in ``mode="min"`` with
    ``threshold_mode="rel"``; ``value < best - threshold`` with ``"abs"``; mirrored
    for ``"max"``), every rate becomes ``max(lr·factor, min_lr)`` (changes smaller
    than ``eps`` are skipped), then ``cooldown`` epochs pass before counting again.
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0.0, eps: float = 1e-8):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        if factor >= 1.0:
            raise ValueError(f"factor must be < 1.0, got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.min_lrs = _per_group(min_lr, optimizer, "min_lr")
        self.optimizer = optimizer
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def _is_better(self, a) -> bool:
        rel = self.threshold_mode == "rel"
        if self.mode == "min":
            return a < (self.best * (1.0 - self.threshold) if rel else self.best - self.threshold)
        return a > (self.best * (self.threshold + 1.0) if rel else self.best + self.threshold)

    def step(self, metrics) -> None:
        """Record this epoch's value of the monitored quantity (e.g. the validation loss)."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for group, min_lr in zip(self.optimizer.param_groups, self.min_lrs, strict=True):
                old = float(group["lr"])
                new = max(old * self.factor, min_lr)
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates after the last :meth:`step`."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict) -> None:
        self.__dict__.update(state)


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to ``eta_min`` over ``T_max`` epochs.

    Uses PyTorch's recursive form, so the rates agree with PyTorch to rounding:
    ``lr_t = eta_min + (lr_{t-1} - eta_min)·(1 + cos(πt/T))/(1 + cos(π(t-1)/T))``.
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max = _positive_int("T_max", T_max)
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups = self.optimizer.param_groups
        t, T, eta = self.last_epoch, self.T_max, self.eta_min
        if t == 0:
            return [g["lr"] for g in groups]
        if self._step_count == 1 and t > 0:
            return [
                eta + (base - eta) * (1 + math.cos(t * math.pi / T)) / 2 for base in self.base_lrs
            ]
        if (t - 1 - T) % (2 * T) == 0:
            return [
                g["lr"] + (base - eta) * (1 - math.cos(math.pi / T)) / 2
                for base, g in zip(self.base_lrs, groups, strict=True)
            ]
        return [
            (1 + math.cos(math.pi * t / T))
            / (1 + math.cos(math.pi * (t - 1) / T))
            * (g["lr"] - eta)
            + eta
            for g in groups
        ]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2019), stepped once per batch.

    The rate rises from ``max_lr/div_factor`` to ``max_lr`` over the first
    ``pct_start`` of ``total_steps``, then anneals to
    ``max_lr/(div_factor·final_div_factor)``; with ``cycle_momentum`` the
    momentum (or Adam's β1) moves the opposite way between ``base_momentum`` and
    ``max_momentum``.  Works for any ``total_steps >= 1`` (PyTorch raises
    ``ZeroDivisionError`` when a phase is shorter than one step, e.g.
    ``total_steps=5, pct_start=0.2``; here such a phase counts as complete).
    """

    def __init__(
        self,
        optimizer,
        max_lr,
        total_steps: int,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float = 0.85,
        max_momentum: float = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ):
        _positive_int("total_steps", total_steps)
        if not 0.0 <= pct_start <= 1.0:
            raise ValueError(f"pct_start must be in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.total_steps = total_steps
        self.anneal_strategy = anneal_strategy
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, list | tuple) else [max_lr] * len(groups)
        if last_epoch == -1:
            for g, m in zip(groups, max_lrs, strict=True):
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
        up = float(pct_start * total_steps) - 1
        if three_phase:
            self._phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (2 * up, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._phases = [
                (up, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("cycle_momentum needs an optimizer with 'momentum' or 'betas'")
            self._use_beta1 = "betas" in optimizer.defaults
            if last_epoch == -1:
                for g in groups:
                    g["max_momentum"], g["base_momentum"] = max_momentum, base_momentum
                    if self._use_beta1:
                        g["betas"] = (max_momentum, *g["betas"][1:])
                    else:
                        g["momentum"] = max_momentum
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR stepped {step} times but total_steps={self.total_steps}")
        lrs = []
        for g in self.optimizer.param_groups:
            start_step = 0.0
            for i, (end_step, lr0, lr1, mom0, mom1) in enumerate(self._phases):
                if step <= end_step or i == len(self._phases) - 1:
                    # A phase shorter than one step (few total_steps: PyTorch divides by
                    # zero here) is already complete.
                    span = end_step - start_step
                    pct = (step - start_step) / span if span > 0 else 1.0
                    lr = self._anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        mom = self._anneal(g[mom0], g[mom1], pct)
                    break
                start_step = end_step
            lrs.append(lr)
            if self.cycle_momentum:
                if self._use_beta1:
                    g["betas"] = (mom, *g["betas"][1:])
                else:
                    g["momentum"] = mom
        return lrs
