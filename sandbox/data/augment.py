"""Joint image/mask augmentations (public home of :mod:`sandbox.data._augment`)."""

from ._augment import Compose, RandomCrop, RandomFlip, RandomIntensity, RandomRotate90

__all__ = ["Compose", "RandomCrop", "RandomFlip", "RandomIntensity", "RandomRotate90"]
