"""The backward pass: walk the graph from the outputs to the leaves.

:func:`backward` and :func:`grad` share :func:`_run`:

1. seed the output gradients (1 for a one-element output);
2. order the nodes so each comes after all of its consumers (:func:`_toposort`,
   Kahn's algorithm with explicit stacks, so any depth works);
3. for each node: pop the summed gradient of each of its outputs, run the
   tensor hooks, call ``backward``, and add each returned gradient to the input
   it belongs to (another node's output, or a leaf's ``.grad``);
4. free each node after use unless ``retain_graph=True``.

Grad mode is off while the backward methods run, unless ``create_graph=True``:
then the Tensor ops inside them are recorded and gradients carry their own graph.
"""

from __future__ import annotations

import numpy as np

from . import _anomaly
from ._function import _FREED_MESSAGE
from ._grad_mode import _state, is_grad_enabled
from ._hooks import run_hooks
from ._tensor import Tensor

__all__ = ["backward", "grad"]


def _toposort(roots):
    """Nodes reachable from ``roots``, each listed after all of its consumers.

    Kahn's algorithm with explicit stacks: no recursion, so any depth works.
    """
    consumers = {}
    seen = set(roots)
    stack = list(roots)
    while stack:
        for t in stack.pop()._next or ():
            child = t.grad_fn if t is not None else None
            if child is not None:
                consumers[child] = consumers.get(child, 0) + 1
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    ready = [n for n in dict.fromkeys(roots) if n not in consumers]
    order = []
    while ready:
        node = ready.pop()
        order.append(node)
        for t in node._next or ():
            child = t.grad_fn if t is not None else None
            if child is not None:
                consumers[child] -= 1
                if consumers[child] == 0:
                    ready.append(child)
    return order


class _Accumulator:
    """Sums of incoming gradients, keyed by (node, output_nr) or id(leaf).

    Without create_graph, the first gradient is kept as is (it may alias another
    array), the second sum allocates, later ones add in place into that array.
    """

    def __init__(self, create_graph):
        self.create = create_graph
        self.grads = {}
        self.owned = set()

    def add(self, key, g):
        prev = self.grads.get(key)
        if prev is None:
            self.grads[key] = g
        elif self.create:
            self.grads[key] = prev + g
        elif key in self.owned:
            np.add(prev, g, out=prev)
        else:
            self.grads[key] = prev + g
            self.owned.add(key)

    def pop(self, key):
        self.owned.discard(key)
        return self.grads.pop(key, None)


def _accumulate_into(t, g, create):
    """Add ``g`` into ``t.grad`` (a leaf, or a non-leaf that retains its grad)."""
    if create:
        g = g if isinstance(g, Tensor) else Tensor._make(g)
        t.grad = g if t.grad is None else t.grad + g
    elif t.grad is None:
        t.grad = Tensor._make(np.array(g, dtype=t.dtype, order="C"))  # own a fresh copy
    elif not t.grad._requires_grad and t.grad._data.flags.writeable and t.grad.shape == g.shape:
        np.add(t.grad._data, g, out=t.grad._data)
    else:
        t.grad = Tensor._make(t.grad._data + g)


def _check_grad(node, i, t, g, create):
    """Validate one gradient returned by ``node``'s backward for its input ``t``."""
    if create:
        g = g if isinstance(g, Tensor) else Tensor._make(np.asarray(g))
    else:
        g = g._data if isinstance(g, Tensor) else np.asarray(g)
    if g.shape != t.shape:
        raise RuntimeError(
            f"{node.name()} returned a gradient of shape {tuple(g.shape)} for input {i}, "
            f"but that input has shape {tuple(t.shape)}"
        )
    if g.dtype != t.dtype:
        g = g.astype(t.dtype)
    return g


def _run(roots, seeds, retain_graph, create_graph, inputs=None):
    """The backward pass.  Returns the captured gradients when ``inputs`` is given."""
    acc = _Accumulator(create_graph)
    capture = None if inputs is None else {}
    if inputs is not None:
        for t in inputs:
            capture[id(t) if t.grad_fn is None else (t.grad_fn, t._output_nr)] = t
    hooked = {}  # leaves with hooks: their gradients wait in acc until the walk ends

    def to_leaf(t, g):
        if capture is not None:
            if id(t) in capture:
                acc.add(id(t), g)
        elif t._hooks:
            acc.add(id(t), g)
            hooked[id(t)] = t
        else:
            _accumulate_into(t, g, create_graph)

    for t, g in zip(roots, seeds, strict=True):
        if t.grad_fn is not None:
            acc.add((t.grad_fn, t._output_nr), g)
        else:
            to_leaf(t, g)

    order = _toposort([t.grad_fn for t in roots if t.grad_fn is not None])
    runs = None  # with inputs: only nodes that lead to a captured tensor
    if capture is not None:
        runs, reach = set(), set()
        for node in reversed(order):  # consumers come first in order: walk it backwards
            if any(
                t is not None and (t.grad_fn in reach if t.grad_fn else id(t) in capture)
                for t in node._next or ()
            ):
                runs.add(node)
            if node in runs or any(key[0] is node for key in capture if type(key) is tuple):
                reach.add(node)

    anomaly = _anomaly._flag.enabled  # read once: no cost per node when off
    prev_mode = _state.enabled
    _state.enabled = create_graph
    try:
        for node in order:
            if node._freed:
                raise RuntimeError(_FREED_MESSAGE.format(node.name()))
            grads = [acc.pop((node, i)) for i in range(len(node._out_meta))]
            if all(g is None for g in grads):
                continue
            live = runs is None or node in runs
            for i, g in enumerate(grads):
                if g is None:  # outputs that received no gradient get zeros
                    shape, dtype = node._out_meta[i]
                    g = np.zeros(shape, dtype)
                    grads[i] = Tensor._make(g) if create_graph else g
                    continue
                captured = capture is not None and (node, i) in capture
                if node._hooks and node._hooks.get(i) and (live or captured):
                    what = f"output {i} of {node.name()}"
                    grads[i] = run_hooks(node._hooks[i], g, create_graph, what)
                if captured:
                    acc.grads[(node, i)] = grads[i]
            if node._retained and capture is None:
                for i, ref in node._retained.items():
                    if ref() is not None:
                        _accumulate_into(ref(), grads[i], create_graph)
            if not live:
                continue
            wrapped = [g if isinstance(g, Tensor) else Tensor._make(g) for g in grads]
            if anomaly:
                result = _checked_backward(node, wrapped)
            else:
                result = node._fn.backward(node, *wrapped)
            if not isinstance(result, tuple | list):
                result = (result,)
            edges = node._next
            if len(result) < len(edges) or any(r is not None for r in result[len(edges) :]):
                raise RuntimeError(
                    f"{node.name()} returned {len(result)} gradients, expected {len(edges)} "
                    "(one per positional forward argument)"
                )
            if not retain_graph:
                node._release()
            for i, (t, g) in enumerate(zip(edges, result, strict=False)):  # extra Nones allowed
                if t is None or g is None:
                    continue
                g = _check_grad(node, i, t, g, create_graph)
                if t.grad_fn is not None:
                    acc.add((t.grad_fn, t._output_nr), g)
                else:
                    to_leaf(t, g)
        # Leaf hooks run once per pass, on the summed gradient, before .grad is touched.
        for key, t in hooked.items():
            _accumulate_into(
                t, run_hooks(t._hooks, acc.pop(key), create_graph, "a leaf"), create_graph
            )
        if capture is not None:
            for key, t in capture.items():
                if type(key) is int and t._hooks and key in acc.grads:
                    acc.grads[key] = run_hooks(t._hooks, acc.grads[key], create_graph, "a leaf")
    finally:
        _state.enabled = prev_mode

    if capture is None:
        return None
    return [acc.grads.get(id(t) if t.is_leaf else (t.grad_fn, t._output_nr)) for t in inputs]


def _checked_backward(node, grads):
    """``node``'s backward under detect_anomaly(): errors and NaN/inf name the forward line."""
    try:
        result = node._fn.backward(node, *grads)
    except Exception as exc:
        _anomaly.annotate(exc, node)
        raise
    _anomaly.check_result(node, result if isinstance(result, tuple | list) else (result,))
    return result


def _roots_and_seeds(outputs, grad_outputs):
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor | np.ndarray):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs; give one each"
        )
    seeds = []
    for k, (t, g) in enumerate(zip(outputs, grad_outputs, strict=True)):
        if not isinstance(t, Tensor):
            raise TypeError(f"outputs must be Tensors, got {type(t).__name__} at position {k}")
        if not t._requires_grad:
            raise RuntimeError(
                f"element {k} of tensors does not require grad and does not have a grad_fn"
            )
        if g is None:
            if t._data.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for one-element outputs; output {k} "
                    f"has shape {t.shape}: pass a gradient"
                )
            g = np.ones(t.shape, t.dtype)
        elif isinstance(g, Tensor):
            g = g if is_grad_enabled() and g._requires_grad else g._data
        else:
            g = np.asarray(g, dtype=t.dtype)
        if g.shape != t.shape:
            raise ValueError(
                f"gradient for output {k} has shape {tuple(g.shape)}, expected {tuple(t.shape)}"
            )
        seeds.append(g)
    return outputs, seeds


def _seeds_for(seeds, create_graph):
    if create_graph:
        return [g if isinstance(g, Tensor) else Tensor._make(g) for g in seeds]
    return [g._data if isinstance(g, Tensor) else g for g in seeds]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    roots, seeds = _roots_and_seeds(tensors, grad_tensors)
    retain = create_graph if retain_graph is None else retain_graph
    _run(roots, _seeds_for(seeds, create_graph), retain, create_graph)


def grad(
    outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=False
):
    """Gradients of ``outputs`` with respect to ``inputs``, returned as a tuple.

    As ``torch.autograd.grad``: ``.grad`` attributes are not touched; an input the
    outputs do not depend on is an error unless ``allow_unused=True`` (then None).
    """
    roots, seeds = _roots_and_seeds(outputs, grad_outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    for k, t in enumerate(inputs):
        if not isinstance(t, Tensor) or not t._requires_grad:
            raise RuntimeError(f"input {k} of grad() is not a Tensor that requires grad")
    retain = create_graph if retain_graph is None else retain_graph
    found = _run(roots, _seeds_for(seeds, create_graph), retain, create_graph, inputs)
    out = []
    for k, g in enumerate(found):
        if g is None:
            if not allow_unused:
                raise RuntimeError(
                    f"input {k} of grad() was not used to compute the outputs; pass "
                    "allow_unused=True to get None for it"
                )
            out.append(None)
        else:
            out.append(g if isinstance(g, Tensor) else Tensor._make(g))
    return tuple(out)
