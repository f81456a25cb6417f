"""Layers and models (PyTorch's ``torch.nn`` vocabulary).

``sandbox.nn.functional`` is :mod:`sandbox.functional` (the same module object), so
``import sandbox.nn.functional as F`` works as ``import torch.nn.functional as F``.
"""

import sys as _sys

from .. import functional
from . import init, utils
from ._activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from ._classic_unet import ClassicUNet
from ._conv import Conv2d, ConvTranspose2d
from ._layers import (
    AvgPool2d,
    Dropout,
    Dropout2d,
    Identity,
    Linear,
    MaxPool2d,
    ModuleList,
    Sequential,
    Upsample,
)
from ._layers3d import AvgPool3d, BatchNorm3d, Conv3d, ConvTranspose3d, MaxPool3d
from ._loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from ._module import Module, Parameter
from ._norm import BatchNorm2d, GroupNorm
from ._norm_pool import (
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    Flatten,
    InstanceNorm2d,
    InstanceNorm3d,
    LayerNorm,
)
from ._unet import UNet
from ._warp import SpatialTransformer, VecInt, Warp

_sys.modules[__name__ + ".functional"] = functional

__all__ = [
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "AvgPool2d",
    "AvgPool3d",
    "BCELoss",
    "BCEWithLogitsLoss",
    "BatchNorm2d",
    "BatchNorm3d",
    "ClassicUNet",
    "Conv2d",
    "Conv3d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "CrossEntropyLoss",
    "Dropout",
    "Dropout2d",
    "Flatten",
    "GroupNorm",
    "Identity",
    "InstanceNorm2d",
    "InstanceNorm3d",
    "L1Loss",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool2d",
    "MaxPool3d",
    "Module",
    "ModuleList",
    "NLLLoss",
    "Parameter",
    "ReLU",
    "GELU",
    "SiLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "SpatialTransformer",
    "Tanh",
    "UNet",
    "Upsample",
    "VecInt",
    "Warp",
    "functional",
    "init",
    "utils",
]
