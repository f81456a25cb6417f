"""Optimisers and learning-rate schedulers (PyTorch's update rules)."""

from . import lr_scheduler
from ._optimizer import SGD, Adam, AdamW, Optimizer
from ._rmsprop import RMSprop
from .lr_scheduler import (
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LRScheduler,
    MultiStepLR,
    OneCycleLR,
    ReduceLROnPlateau,
    StepLR,
)

__all__ = [
    "SGD",
    "Adam",
    "AdamW",
    "CosineAnnealingLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "MultiStepLR",
    "OneCycleLR",
    "Optimizer",
    "RMSprop",
    "ReduceLROnPlateau",
    "StepLR",
    "lr_scheduler",
]
