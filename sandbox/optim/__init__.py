"""Optimisers and learning-rate schedulers (PyTorch's update rules)."""

from . import lr_scheduler
from ._optimizer import SGD, Adam, AdamW, Optimizer
from .lr_scheduler import CosineAnnealingLR, LRScheduler, OneCycleLR, StepLR

__all__ = [
    "SGD",
    "Adam",
    "AdamW",
    "CosineAnnealingLR",
    "LRScheduler",
    "OneCycleLR",
    "Optimizer",
    "StepLR",
    "lr_scheduler",
]
