"""Layers and models (PyTorch's ``torch.nn`` vocabulary)."""

from . import init
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
from ._layers3d import AvgPool3d, BatchNorm3d, Conv3d, ConvTranspose3d, MaxPool3d
from ._module import Module, Parameter
from ._unet import UNet

__all__ = [
    "AvgPool2d",
    "AvgPool3d",
    "BatchNorm2d",
    "BatchNorm3d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "Dropout",
    "Dropout2d",
    "GroupNorm",
    "Identity",
    "LeakyReLU",
    "Linear",
    "MaxPool2d",
    "MaxPool3d",
    "Module",
    "ModuleList",
    "Parameter",
    "ReLU",
    "Sequential",
    "UNet",
    "Upsample",
    "init",
]
