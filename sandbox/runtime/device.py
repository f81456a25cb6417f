"""Devices and dtype names, as in ``torch``: the sandbox computes on the CPU only.

``sandbox.device("cpu")`` is accepted everywhere a device is (``.to(device)``,
``device=`` arguments); any other device raises one ``ValueError`` saying so.
"""

from __future__ import annotations

import numpy as np


class device:  # noqa: N801 - torch's spelling
    """A device; only ``"cpu"`` (optionally ``"cpu:0"`` or index 0) exists here."""

    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):  # noqa: A002 - torch's argument name
        if isinstance(type, device):
            type, index = type.type, type.index
        if not isinstance(type, str):
            raise TypeError(f"device must be a string like 'cpu', got {type!r}")
        name, _, number = type.partition(":")
        if name != "cpu" or (number and number != "0") or index not in (None, 0):
            raise ValueError(
                f"device {type!r}{'' if index is None else f' (index {index})'} is not "
                "available: the sandbox runs on the CPU only; use 'cpu' or drop the .to(device)"
            )
        self.type = "cpu"
        self.index = None if index is None and not number else 0

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except ValueError:
                return False
        return isinstance(other, device) and other.type == self.type

    def __hash__(self):
        return hash(self.type)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        return f"device(type='{self.type}')"


CPU = device("cpu")

# Memory formats are layout hints in PyTorch; the sandbox's arrays are always C-contiguous,
# so ``.to(memory_format=sandbox.channels_last)`` is accepted and changes nothing.
channels_last = "channels_last"
contiguous_format = "contiguous_format"
preserve_format = "preserve_format"


def check_device(value) -> None:
    """Raise the CPU-only error unless ``value`` is None or names the CPU."""
    if value is not None:
        device(value)


class _Cuda:
    """``sandbox.cuda``: CUDA is never available here (the answers PyTorch gives on a CPU build)."""

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        return 0

    @staticmethod
    def manual_seed(seed) -> None:
        """Nothing to seed (no GPU), as ``torch.cuda.manual_seed`` without CUDA."""

    manual_seed_all = manual_seed

    @property
    def amp(self):
        """``torch.cuda.amp``: :mod:`sandbox.amp` (``GradScaler``, ``autocast``)."""
        from . import amp

        return amp

    def __repr__(self):
        return "<sandbox.cuda: not available (CPU only)>"


cuda = _Cuda()


def parse_to(args, kwargs):
    """``(device, dtype)`` from the arguments of ``Tensor.to`` / ``Module.to``.

    Forms: ``(dtype)``, ``(device)``, ``(device, dtype)``, ``(tensor)``, and the
    keywords ``device``, ``dtype``, ``non_blocking``, ``copy``, ``memory_format``.
    """
    unknown = set(kwargs) - {"device", "dtype", "non_blocking", "copy", "memory_format"}
    if unknown:
        raise TypeError(f"to() got unexpected keyword argument(s) {sorted(unknown)}")
    dev, dtype = kwargs.get("device"), kwargs.get("dtype")
    if len(args) > 2:
        raise TypeError(f"to() takes at most 2 positional arguments, got {len(args)}")
    for a in args:
        if isinstance(a, str | device):
            dev = a
        elif not isinstance(a, type | np.dtype) and hasattr(a, "dtype"):  # a tensor
            dtype = a.dtype
        elif a is None:
            continue
        else:
            try:
                dtype = np.dtype(a)
            except TypeError:
                raise TypeError(
                    f"to() expects a device ('cpu'), a dtype (e.g. sandbox.float64) or a "
                    f"tensor, got {a!r}"
                ) from None
    check_device(dev)
    return dev, None if dtype is None else np.dtype(dtype)
