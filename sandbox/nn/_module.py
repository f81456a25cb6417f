"""``Module`` and ``Parameter``: the containers every layer is built from.

A :class:`Module` registers its :class:`Parameter`\\ s, buffers (plain arrays such
as batch-norm running statistics) and sub-modules as attributes are assigned,
so ``named_parameters()`` and ``state_dict()`` list them with PyTorch-style
dotted names in registration order.  That makes weights copy by name to and
from PyTorch.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Iterator

import numpy as np

from ..autograd import Tensor

_IncompatibleKeysBase = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class IncompatibleKeys(_IncompatibleKeysBase):
    """What :meth:`Module.load_state_dict` returns, as PyTorch: the named pair
    ``(missing_keys, unexpected_keys)``."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


class StateDictError(RuntimeError, KeyError):
    """``load_state_dict(strict=True)`` with missing or unexpected keys (a RuntimeError
    as in PyTorch, and a KeyError as this project raised before)."""

    def __str__(self):
        return str(self.args[0]) if self.args else ""


class Parameter(Tensor):
    """A :class:`~sandbox.Tensor` that a :class:`Module` registers as trainable.

    Parameters
    ----------
    data : array_like
        Initial value; float arrays keep their dtype, anything else becomes float32.
    requires_grad : bool, default True
    """

    def __init__(self, data, requires_grad: bool = True):
        array = np.asarray(data.numpy() if isinstance(data, Tensor) else data)
        if not np.issubdtype(array.dtype, np.floating):
            array = array.astype(np.float32)
        super().__init__(np.array(array, copy=True), requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


class Module:
    """Base class of every layer and model.

    Subclasses assign parameters, buffers and sub-modules in ``__init__`` and
    implement ``forward``; calling the module calls ``forward``.
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ----------------------------------------------------------- registration
    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() is called "
                f"(call super().__init__() first in {type(self).__name__}.__init__)"
            )
        if isinstance(value, Parameter):
            self._forget(name)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._forget(name)
            self._modules[name] = value
        elif name in self._buffers:
            if value is not None and not isinstance(value, np.ndarray):
                raise TypeError(f"buffer {name!r} must be a numpy array or None, got {type(value)}")
            self._buffers[name] = value
        elif name in self._parameters or name in self._modules:
            if value is not None:
                kind = "Parameter" if name in self._parameters else "Module"
                raise TypeError(
                    f"cannot assign {type(value).__name__} to {name!r} (expects a {kind} or None)"
                )
            store = self._parameters if name in self._parameters else self._modules
            store[name] = None
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            store.pop(name, None)
        self._non_persistent.discard(name)
        self.__dict__.pop(name, None)

    def __getattr__(self, name: str):
        # Only called when normal lookup fails.
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a ``None`` placeholder, e.g. a disabled bias)."""
        _check_name(name, self)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"parameter {name!r} must be a Parameter or None, got {type(param)}")
        self.__dict__.pop(name, None)
        self._parameters[name] = param

    def register_buffer(self, name: str, array, persistent: bool = True) -> None:
        """Add a non-trainable array saved in ``state_dict`` (unless not persistent)."""
        _check_name(name, self)
        if array is not None and not isinstance(array, np.ndarray):
            raise TypeError(f"buffer {name!r} must be a numpy array or None")
        self.__dict__.pop(name, None)
        self._buffers[name] = array
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a sub-module under ``name``."""
        _check_name(name, self)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{name!r} must be a Module or None, got {type(module)}")
        self._modules[name] = module

    # -------------------------------------------------------------- traversal
    def named_modules(self, prefix: str = "", memo: set | None = None):
        """Yield ``(name, module)`` for this module and all below it, pre-order."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self) -> Iterator[Module]:
        for _, child in self.named_children():
            yield child

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """Yield ``(dotted_name, Parameter)`` in registration order, each parameter once."""
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, p in module._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mod_prefix, module in modules:
            for name, b in module._buffers.items():
                if b is not None:
                    yield (f"{mod_prefix}.{name}" if mod_prefix else name), b

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn) -> Module:
        """Call ``fn(module)`` on every sub-module (children first) and on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes, grads
    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects dropout and batch norm) here and below."""
        if not isinstance(mode, bool):
            raise TypeError(f"mode must be a bool, got {mode!r}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode; same as ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.numpy()[...] = 0

    def to(self, *args, **kwargs) -> Module:
        """Cast floating parameters and buffers, as ``torch.nn.Module.to``.

        Accepts ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)``
        and the keywords ``device=``, ``dtype=``, ``non_blocking=``.  The device
        must be the CPU; the dtype float32 or float64.
        """
        from ..runtime.device import parse_to

        device, dtype = parse_to(args, kwargs)
        if dtype is None:
            return self
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"dtype must be float32 or float64, got {dtype}")
        for m in self.modules():
            for p in m._parameters.values():
                if p is not None and p.dtype != dtype:
                    p.data = p.numpy().astype(dtype)
                    if p.grad is not None:
                        p.grad = None
            for name, b in m._buffers.items():
                if b is not None and np.issubdtype(b.dtype, np.floating):
                    m._buffers[name] = b.astype(dtype)
        return self

    def cpu(self) -> Module:
        """Nothing to move: the sandbox runs on the CPU."""
        return self

    def cuda(self, device=None) -> Module:
        """Raises: the sandbox runs on the CPU only."""
        from ..runtime.device import device as _device

        _device("cuda")
        return self

    def float(self) -> Module:
        return self.to(np.float32)

    def double(self) -> Module:
        return self.to(np.float64)

    # ------------------------------------------------------------- state dict
    def state_dict(self) -> OrderedDict:
        """Copies of all parameters and persistent buffers, by dotted name.

        Order matches PyTorch: per module (pre-order), its parameters then its buffers.
        """
        state = OrderedDict()
        for prefix, module in self.named_modules():
            dot = f"{prefix}." if prefix else ""
            for name, p in module._parameters.items():
                if p is not None:
                    state[dot + name] = p.numpy().copy()
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent:
                    state[dot + name] = b.copy()
        return state

    def load_state_dict(self, state_dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into this module's parameters and buffers.

        Values may be numpy arrays, sandbox tensors, PyTorch tensors or anything
        ``np.asarray`` accepts.  With ``strict`` (the default), missing or unexpected
        keys raise :class:`StateDictError` (a RuntimeError, as in PyTorch, and a
        KeyError) listing them; shape mismatches raise ``ValueError``.  Returns
        PyTorch's named pair ``IncompatibleKeys(missing_keys, unexpected_keys)``
        (both empty under ``strict``).
        """
        own, missing, unexpected = self._match_keys(state_dict)
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append("Missing key(s) in state_dict: "
                             + ", ".join(f'"{k}"' for k in missing))
            if unexpected:
                parts.append("Unexpected key(s) in state_dict: "
                             + ", ".join(f'"{k}"' for k in unexpected))
            raise StateDictError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + ".\n\t".join(parts) + "."
            )
        mismatched = []
        arrays = {}
        for key, (module, name, kind) in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if isinstance(value, Tensor):
                array = value.numpy()
            elif hasattr(value, "detach"):  # a torch tensor
                array = np.asarray(value.detach().cpu())
            else:
                array = np.asarray(value)
            current = module._parameters[name].numpy() if kind == "param" else module._buffers[name]
            if array.shape != current.shape:
                mismatched.append(f"{key}: checkpoint {array.shape}, model {current.shape}")
            arrays[key] = array.astype(current.dtype, copy=True)
        if mismatched:
            raise ValueError("load_state_dict: size mismatch for " + "; ".join(mismatched))
        for key, array in arrays.items():
            module, name, kind = own[key]
            if kind == "param":
                module._parameters[name].data = array
            else:
                module._buffers[name] = array
        return IncompatibleKeys(missing, unexpected)

    def save_weights(self, path, metadata=None):
        """Write :meth:`state_dict` to a safetensors file, under PyTorch's names.

        ``num_batches_tracked`` stays int64, floats keep their dtype; the file loads
        into the PyTorch twin (``sandbox.interop.to_torch``) with
        ``safetensors.torch.load_file``.  Needs the ``interop`` extra.

        Parameters
        ----------
        path : str or os.PathLike
        metadata : mapping of str to str, optional
            Extra header entries.

        Returns
        -------
        pathlib.Path
        """
        from ._safetensors import save_weights

        return save_weights(self, path, metadata)

    def load_weights(self, path, strict: bool = True) -> tuple[list, list]:
        """Load a safetensors file (from :meth:`save_weights` or PyTorch) into this module.

        Each tensor must match its parameter or buffer in shape and dtype
        (``ValueError`` otherwise); with ``strict`` the names must match exactly
        (``KeyError`` listing the missing and unexpected ones).  A file that is not
        safetensors gives ``ValueError``.  Returns ``(missing_keys, unexpected_keys)``.
        """
        from ._safetensors import load_weights

        return load_weights(self, path, strict)

    def _state_slots(self) -> OrderedDict:
        slots = OrderedDict()
        for prefix, module in self.named_modules():
            dot = f"{prefix}." if prefix else ""
            for name, p in module._parameters.items():
                if p is not None:
                    slots[dot + name] = (module, name, "param")
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent:
                    slots[dot + name] = (module, name, "buffer")
        return slots

    def _match_keys(self, names) -> tuple[OrderedDict, list, list]:
        """``(slots, missing, unexpected)``: :meth:`_state_slots`, its keys not in
        ``names`` and the ``names`` that are not its keys (loading a state)."""
        slots = self._state_slots()
        return slots, [k for k in slots if k not in names], [k for k in names if k not in slots]

    # --------------------------------------------------------------- calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def num_parameters(self) -> int:
        """Total number of scalar parameters."""
        return int(sum(p.numel() for p in self.parameters()))

    # ------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        children = [
            f"({name}): " + repr(child).replace("\n", "\n  ")
            for name, child in self.named_children()
        ]
        extra = self.extra_repr()
        if not children:
            return f"{type(self).__name__}({extra})"
        lines = ([extra] if extra else []) + children
        return f"{type(self).__name__}(\n  " + "\n  ".join(lines) + "\n)"


def _check_name(name, module) -> None:
    if not isinstance(name, str) or not name or "." in name:
        raise ValueError(f"invalid name {name!r}: must be a non-empty string without '.'")
    if hasattr(type(module), name):
        raise ValueError(f"name {name!r} clashes with an attribute of {type(module).__name__}")
