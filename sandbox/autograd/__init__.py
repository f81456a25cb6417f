"""Reverse-mode automatic differentiation over numpy arrays.

The engine knows no particular operation.  One job per module, in reading order:

``_grad_mode``
    :class:`no_grad` / :class:`enable_grad` / :class:`set_grad_enabled`: whether
    operations are recorded (thread-local).
``_tensor``
    :class:`Tensor` wraps an ``np.ndarray`` (``.numpy()``) and, when a recorded
    operation produced it, points to the graph node that made it (``.grad_fn``).
``_function``
    :class:`Function` pairs a ``forward(ctx, *arrays)`` on plain arrays with a
    ``backward(ctx, *grads)``; ``Fn.apply(*args)`` runs the forward and records a
    node (the :class:`Context` itself) only when grad mode is on and some input
    requires grad.  Also :func:`once_differentiable` and :func:`unbroadcast`.
``_engine``
    :func:`backward` / :func:`grad` walk the graph **iteratively** (Kahn's
    algorithm), so graphs of any depth work, sum the gradients of fanned-out
    tensors and free each node after use unless ``retain_graph=True``.
``_hooks``
    ``t.register_hook(fn)``: see or replace a gradient as it flows.
``_graph``
    :func:`graph`: print or draw the graph behind a tensor.
``_anomaly``
    :class:`detect_anomaly`: name the op (and its forward line) whose backward
    produced NaN/inf.

Rules worth knowing
-------------------
* **Saved tensors** come back from ``ctx.saved_tensors`` as the input/output
  Tensors they were, so a backward written with Tensor ops is differentiable again
  (details in :mod:`sandbox.autograd._function`).
* **create_graph.**  Backward runs under ``no_grad`` by default.  With
  ``create_graph=True`` it runs with grad mode on, so the Tensor ops inside each
  ``backward`` are recorded and the gradients carry their own graph.
* **0-d values are 0-d ndarrays**, never numpy scalars (which numpy returns for 0-d
  results): a Tensor's data, a Function's outputs and summed gradients all pass
  through :func:`~sandbox.autograd._tensor.as_ndarray`.
* **Leaf gradients** accumulate in ``.grad`` (a fresh array the first time, then added
  in place).  Non-leaf tensors keep ``.grad = None`` unless ``retain_grad()`` was called.
"""

from __future__ import annotations

from ._anomaly import detect_anomaly, is_anomaly_enabled
from ._backward import backward, grad
from ._function import Context, Function, once_differentiable, unbroadcast
from ._grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from ._graph import Graph, graph
from ._hooks import RemovableHandle
from ._tensor import Tensor, tensor

__all__ = [
    "Context",
    "Function",
    "Graph",
    "RemovableHandle",
    "Tensor",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "graph",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "once_differentiable",
    "set_grad_enabled",
    "tensor",
    "unbroadcast",
]
