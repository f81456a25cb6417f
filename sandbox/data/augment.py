"""Joint image/mask augmentations (public home of :mod:`sandbox.data._augment`)."""

from ._augment import CenterCrop, Compose, RandomCrop, RandomFlip, RandomIntensity, RandomRotate90

__all__ = ["CenterCrop", "Compose", "RandomCrop", "RandomFlip", "RandomIntensity",
           "RandomRotate90"]
