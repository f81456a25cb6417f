"""Tensor hooks: ``t.register_hook(fn)`` and the handle that removes them.

A hook sees the gradient with respect to its tensor during backward and may
return a replacement (PyTorch semantics):

* on a **non-leaf**, it runs once with the summed gradient, just before that
  gradient enters the backward of the op that produced the tensor (and before
  ``retain_grad`` stores it);
* on a **leaf**, it runs once per backward pass with the summed gradient of
  that pass, before it is added into ``.grad``.

Hooks of one tensor run in registration order, each receiving the previous
one's result.  A hook must not modify its argument in place (it may share
memory with other gradients); return a new tensor instead.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["RemovableHandle"]

_ids = itertools.count()


class RemovableHandle:
    """Returned by :meth:`Tensor.register_hook`; ``handle.remove()`` unregisters the hook.

    Also a context manager: the hook is removed on exit.
    """

    __slots__ = ("_hooks", "id")

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = next(_ids)

    def remove(self) -> None:
        """Unregister the hook (removing twice is harmless)."""
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def hook_table(tensor) -> dict:
    """The dict of hooks for ``tensor``: on the tensor for a leaf, on its node otherwise.

    Non-leaf hooks live on the graph node (keyed by output number), so they still
    run when the Python tensor object itself is gone, as in PyTorch.
    """
    node = tensor.grad_fn
    if node is None:
        if tensor._hooks is None:
            tensor._hooks = {}
        return tensor._hooks
    if node._hooks is None:
        node._hooks = {}
    return node._hooks.setdefault(tensor._output_nr, {})


def run_hooks(hooks: dict, grad, create_graph: bool, what: str):
    """Pass ``grad`` through ``hooks`` in order; returns the (maybe replaced) gradient.

    ``grad`` is an ndarray (plain backward) or a Tensor (``create_graph=True``), and
    the result has the same kind.  Each hook receives a Tensor.
    """
    from ._tensor import Tensor

    for fn in list(hooks.values()):
        arg = grad if isinstance(grad, Tensor) else Tensor._make(grad)
        new = fn(arg)
        if new is None:
            continue
        data = new._data if isinstance(new, Tensor) else np.asarray(new)
        if data.shape != arg.shape:
            raise RuntimeError(
                f"hook {getattr(fn, '__name__', fn)!r} on {what} returned a gradient of shape "
                f"{tuple(data.shape)}, expected {tuple(arg.shape)}"
            )
        if data.dtype != arg.dtype:
            data = data.astype(arg.dtype)
            new = data
        if create_graph:
            grad = new if isinstance(new, Tensor) else Tensor._make(data)
        else:
            grad = data
    return grad
