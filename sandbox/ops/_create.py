"""Tensor constructors (float32 by default, as torch); ``device=`` accepts the CPU only."""

from __future__ import annotations

import numpy as np

from ..autograd import Tensor
from ..autograd import tensor as _tensor
from ..runtime.device import check_device
from ..runtime.dtypes import get_default_dtype
from ..runtime.rng import numpy_rng


def _shape(shape):
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = shape[0]
    return tuple(int(n) for n in shape)


def _new(data, requires_grad, device=None):
    check_device(device)
    return Tensor(data, requires_grad=requires_grad)


def _dtype(dtype):
    return get_default_dtype() if dtype is None else dtype


def _python_float_dtype(data, dtype):
    """The default dtype for Python floats (lists of them), as torch; else ``dtype``."""
    if dtype is None and not isinstance(data, Tensor | np.ndarray | np.generic):
        if np.asarray(data).dtype.kind == "f":
            return get_default_dtype()
    return dtype


def zeros(*shape, dtype=None, device=None, requires_grad=False):
    """A tensor of zeros (float32 unless ``dtype``)."""
    return _new(np.zeros(_shape(shape), _dtype(dtype)), requires_grad, device)


def ones(*shape, dtype=None, device=None, requires_grad=False):
    """A tensor of ones."""
    return _new(np.ones(_shape(shape), _dtype(dtype)), requires_grad, device)


def _fill_dtype(value):
    """The dtype ``torch.full`` infers from its fill value: bool, int64 or the default float."""
    if isinstance(value, bool | np.bool_):
        return np.bool_
    if isinstance(value, int | np.integer):
        return np.int64
    return get_default_dtype()


def full(shape, value, dtype=None, device=None, requires_grad=False):
    """A tensor filled with ``value``; without ``dtype``, bool, int64 or the default float
    as the value is a bool, an int or a float (as ``torch.full``)."""
    if isinstance(value, Tensor):
        value = value.item()
    dtype = _fill_dtype(value) if dtype is None else dtype
    return _new(np.full(_shape((shape,)), value, dtype), requires_grad, device)


def zeros_like(t, dtype=None, device=None, requires_grad=False):
    """Zeros with the shape (and dtype, unless given) of ``t``."""
    return _new(np.zeros(np.shape(t), dtype or np.asarray(t).dtype), requires_grad, device)


def ones_like(t, dtype=None, device=None, requires_grad=False):
    """Ones with the shape (and dtype, unless given) of ``t``."""
    return _new(np.ones(np.shape(t), dtype or np.asarray(t).dtype), requires_grad, device)


def randn(*shape, generator=None, rng=None, dtype=None, device=None, requires_grad=False):
    """Standard normal samples from ``generator`` (a :class:`sandbox.Generator`) or ``rng``.

    Without either, the global generator (seeded by :func:`sandbox.manual_seed`).
    """
    rng = numpy_rng(generator if rng is None else rng)
    return _new(rng.standard_normal(_shape(shape)).astype(_dtype(dtype)), requires_grad, device)


def rand(*shape, generator=None, rng=None, dtype=None, device=None, requires_grad=False):
    """Uniform samples in [0, 1) from ``generator`` or ``rng`` (as :func:`randn`)."""
    rng = numpy_rng(generator if rng is None else rng)
    return _new(rng.random(_shape(shape)).astype(_dtype(dtype)), requires_grad, device)


def tensor(data, dtype=None, device=None, requires_grad=False):
    """A new tensor holding a copy of ``data`` (``torch.tensor``'s dtype rules).

    Python floats become float32, ints int64, bools bool; numpy arrays keep their
    dtype; PyTorch tensors are converted through numpy.
    """
    check_device(device)
    data = _plain(data)
    return _tensor(data, requires_grad=requires_grad, dtype=_python_float_dtype(data, dtype))


def _plain(data):
    if hasattr(data, "detach") and hasattr(data, "numpy") and not isinstance(data, Tensor):
        return data.detach().cpu().numpy()  # a torch tensor
    return data


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory when it already is one (or an ndarray) of ``dtype``."""
    check_device(device)
    data = _plain(data)
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype == np.dtype(dtype) else data.astype(dtype)
    if isinstance(data, np.ndarray):
        return Tensor(data if dtype is None else data.astype(dtype, copy=False))
    return _tensor(data, dtype=_python_float_dtype(data, dtype))


def from_numpy(array):
    """A tensor sharing memory with ``array`` (dtype kept, as ``torch.from_numpy``)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__}")
    return Tensor(array)


def arange(*args, dtype=None, device=None):
    """``np.arange`` as a tensor (int64 for integer arguments, else the default dtype)."""
    check_device(device)
    data = np.arange(*args)
    if dtype is None and data.dtype.kind == "f":
        dtype = get_default_dtype()
    return Tensor(data if dtype is None else data.astype(dtype))


def empty(*shape, dtype=None, device=None, requires_grad=False):
    """A new tensor of ``shape`` (filled with zeros here; PyTorch leaves it uninitialised)."""
    return zeros(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


def empty_like(t, dtype=None, device=None, requires_grad=False):
    """A new tensor with the shape (and dtype) of ``t`` (zeros, see :func:`empty`)."""
    return zeros_like(t, dtype=dtype, device=device, requires_grad=requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad=False):
    """``fill_value`` with the shape (and dtype, unless given) of ``t``."""
    return _new(np.full(np.shape(t), fill_value, dtype or np.asarray(t).dtype), requires_grad,
                device)


def randn_like(t, dtype=None, device=None, requires_grad=False, generator=None):
    """Standard normal samples with the shape (and dtype) of ``t``."""
    return randn(*np.shape(t), generator=generator, dtype=dtype or np.asarray(t).dtype,
                 device=device, requires_grad=requires_grad)


def rand_like(t, dtype=None, device=None, requires_grad=False, generator=None):
    """Uniform [0, 1) samples with the shape (and dtype) of ``t``."""
    return rand(*np.shape(t), generator=generator, dtype=dtype or np.asarray(t).dtype,
                device=device, requires_grad=requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None):
    """Integers in ``[low, high)`` (``randint(high, size)`` starts at 0), int64 by default."""
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint: give size, e.g. randint(0, 10, (3,))")
    check_device(device)
    data = numpy_rng(generator).integers(low, high, _shape((size,)))
    return Tensor(data.astype(np.int64 if dtype is None else dtype))


def randperm(n, *, generator=None, dtype=None, device=None):
    """A random permutation of ``0..n-1`` (int64 by default)."""
    check_device(device)
    return Tensor(numpy_rng(generator).permutation(int(n)).astype(dtype or np.int64))


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` (both included)."""
    return _new(np.linspace(start, end, int(steps)).astype(_dtype(dtype)), requires_grad, device)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    """The ``n × m`` identity matrix (``m = n`` by default)."""
    return _new(np.eye(int(n), None if m is None else int(m), dtype=_dtype(dtype)),
                requires_grad, device)
