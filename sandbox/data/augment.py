"""Joint image/mask augmentations (public home of :mod:`sandbox.data._augment`)."""

from ._augment import CenterCrop, Compose, RandomCrop, RandomFlip, RandomIntensity, RandomRotate90
from ._augment3d import (
    CenterCrop3D,
    RandomCrop3D,
    RandomFlip3D,
    RandomRotate3D,
    apply_axis_map,
    invert_axis_map,
)

__all__ = [
    "CenterCrop",
    "CenterCrop3D",
    "Compose",
    "RandomCrop",
    "RandomCrop3D",
    "RandomFlip",
    "RandomFlip3D",
    "RandomIntensity",
    "RandomRotate3D",
    "RandomRotate90",
    "apply_axis_map",
    "invert_axis_map",
]
