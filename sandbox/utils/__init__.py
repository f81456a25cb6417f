"""``sandbox.utils.data``: PyTorch's ``torch.utils.data`` vocabulary (Dataset, DataLoader ...)."""

from . import data

__all__ = ["data"]
