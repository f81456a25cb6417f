"""Layers and models (PyTorch's ``torch.nn`` vocabulary)."""

from . import init
from ._classic_unet import ClassicUNet
from ._layers import (
    AvgPool2d,
    BatchNorm2d,
    Conv2d,
    ConvTranspose2d,
    Dropout,
    Dropout2d,
    GroupNorm,
    Identity,
    LeakyReLU,
    Linear,
    MaxPool2d,
    ModuleList,
    ReLU,
    Sequential,
    Upsample,
)
from ._module import Module, Parameter
from ._unet import UNet

__all__ = [
    "AvgPool2d",
    "BatchNorm2d",
    "ClassicUNet",
    "Conv2d",
    "ConvTranspose2d",
    "Dropout",
    "Dropout2d",
    "GroupNorm",
    "Identity",
    "LeakyReLU",
    "Linear",
    "MaxPool2d",
    "Module",
    "ModuleList",
    "Parameter",
    "ReLU",
    "Sequential",
    "UNet",
    "Upsample",
    "init",
]
