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
from ._deform import RandomAffine, RandomDeform, RandomElastic, warp_pair

__all__ = [
    "CenterCrop",
    "CenterCrop3D",
    "Compose",
    "RandomAffine",
    "RandomCrop",
    "RandomCrop3D",
    "RandomDeform",
    "RandomElastic",
    "RandomFlip",
    "RandomFlip3D",
    "RandomIntensity",
    "RandomRotate3D",
    "RandomRotate90",
    "apply_axis_map",
    "invert_axis_map",
    "warp_pair",
]
