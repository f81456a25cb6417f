"""The backward pass: walk the graph from the outputs to the leaves.

:func:`backward` and :func:`grad` share :func:`_run`, which reads as the algorithm:

1. **seed** the output gradients (1 for a one-element output);
2. **order** the nodes so each comes after all of its consumers (:func:`_toposort`,
   Kahn's algorithm with explicit stacks, so any depth works); :func:`grad` also
   **prunes** the nodes that lead to none of the requested inputs;
3. **visit** each node (:meth:`_Walk.visit`): pop the summed gradient of each of
   its outputs and run that tensor's hooks, store ``retain_grad`` gradients, call
   ``backward`` (checked for NaN/inf under ``detect_anomaly``), **free** the node
   unless ``retain_graph=True``, and send each returned gradient to the input it
   belongs to (another node's output slot in the accumulator, or a leaf's ``.grad``);
4. **finish the leaves**: hooks on leaves run once, on the summed gradient.

Grad mode is off while the backward methods run, unless ``create_graph=True``:
then the Tensor ops inside them are recorded and gradients carry their own graph.
"""

from __future__ import annotations

import numpy as np

from . import _anomaly
from ._function import _FREED_MESSAGE
from ._grad_mode import is_grad_enabled, set_grad_enabled
from ._hooks import run_hooks
from ._tensor import Tensor, as_ndarray

__all__ = ["backward", "grad"]


def _toposort(roots):
    """Nodes reachable from ``roots``, each listed after all of its consumers.

    Kahn's algorithm with explicit stacks: no recursion, so any depth works.
    """
    roots = list(dict.fromkeys(roots))  # a node listed twice must be counted once
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
    ready = [n for n in roots if n not in consumers]
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
            self.grads[key] = as_ndarray(prev + g)  # 0-d + 0-d gives a numpy scalar
            self.owned.add(key)

    def pop(self, key):
        self.owned.discard(key)
        return self.grads.pop(key, None)


def _accumulate_into(t, g, create, fresh=False):
    """Add ``g`` into ``t.grad`` (a leaf, or a non-leaf that retains its grad).

    ``fresh``: ``g`` is a new array nothing else references (``Function.fresh_grads``),
    so a first gradient is kept as it is instead of copied.
    """
    if create:
        g = g if isinstance(g, Tensor) else Tensor._make(g)
        t.grad = g if t.grad is None else t.grad + g
    elif t.grad is None:
        if not (fresh and g.dtype == t.dtype and g.flags.c_contiguous and g.flags.writeable):
            g = np.array(g, dtype=t.dtype, order="C")  # own a fresh copy
        t.grad = Tensor._make(g)
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
    walk = _Walk(create_graph, inputs)
    walk.seed(roots, seeds)
    order = _toposort([t.grad_fn for t in roots if t.grad_fn is not None])
    if inputs is not None:
        walk.prune(order)
    with set_grad_enabled(create_graph):  # record the backward ops only for create_graph
        for node in order:
            walk.visit(node, retain_graph)
        walk.finish_leaves()
    return walk.captured(inputs)


class _Walk:
    """The state of one backward pass and its steps, in the order :func:`_run` takes them.

    ``capture`` maps each tensor that :func:`grad` asked for to its key (``id`` for
    a leaf, ``(node, output_nr)`` otherwise); it is None for :func:`backward`.
    """

    def __init__(self, create_graph, inputs):
        self.create = create_graph
        self.acc = _Accumulator(create_graph)
        self.capture = None if inputs is None else {_key(t): t for t in inputs}
        self.hooked = {}  # leaves with hooks: their gradients wait in acc until the walk ends
        self.runs = None  # with inputs: only the nodes that lead to a captured tensor
        self.anomaly = _anomaly._flag.enabled  # read once: no cost per node when off

    # -- 1. seed the outputs' gradients
    def seed(self, roots, seeds):
        for t, g in zip(roots, seeds, strict=True):
            self.send_to(t, g)

    # -- 2. (grad() only) skip the nodes that lead to no captured tensor
    def prune(self, order):
        capture = self.capture
        self.runs, reach = set(), set()
        for node in reversed(order):  # consumers come first in order: walk it backwards
            if any(
                t is not None and (t.grad_fn in reach if t.grad_fn else id(t) in capture)
                for t in node._next or ()
            ):
                self.runs.add(node)
            if node in self.runs or any(key[0] is node for key in capture if type(key) is tuple):
                reach.add(node)

    # -- 3. visit one node: its outputs' summed gradients through its backward to its inputs
    def visit(self, node, retain_graph):
        if node._freed:
            raise RuntimeError(_FREED_MESSAGE.format(node.name()))
        live = self.runs is None or node in self.runs
        grads = self.output_grads(node, live)
        if grads is None:  # no gradient reached this node
            return
        self.retain_grads(node, grads)
        if not live:
            return
        result = self.call_backward(node, grads)
        edges = node._next
        if not retain_graph:
            node._release()
        fresh = node._fn.fresh_grads
        for i, (t, g) in enumerate(zip(edges, result, strict=False)):  # extra Nones allowed
            if t is not None and g is not None:
                self.send_to(t, _check_grad(node, i, t, g, self.create), fresh)

    def output_grads(self, node, live):
        """Pop the summed gradient of each output (zeros if it got none) and run its hooks."""
        grads = [self.acc.pop((node, i)) for i in range(len(node._out_meta))]
        if all(g is None for g in grads):
            return None
        for i, g in enumerate(grads):
            if g is None:  # outputs that received no gradient get zeros
                g = np.zeros(*node._out_meta[i])
                grads[i] = Tensor._make(g) if self.create else g
                continue
            captured = self.capture is not None and (node, i) in self.capture
            if node._hooks and node._hooks.get(i) and (live or captured):
                what = f"output {i} of {node.name()}"
                grads[i] = run_hooks(node._hooks[i], g, self.create, what)
            if captured:
                self.acc.grads[(node, i)] = grads[i]
        return grads

    def retain_grads(self, node, grads):
        """Store the gradients of outputs that called ``retain_grad()`` (backward only)."""
        if node._retained and self.capture is None:
            for i, ref in node._retained.items():
                if ref() is not None:
                    _accumulate_into(ref(), grads[i], self.create)

    def call_backward(self, node, grads):
        """Run the op's backward; one gradient (or None) per positional forward input."""
        wrapped = [g if isinstance(g, Tensor) else Tensor._make(g) for g in grads]
        if self.anomaly:
            result = _checked_backward(node, wrapped)
        else:
            result = node._fn.backward(node, *wrapped)
        if not isinstance(result, tuple | list):
            result = (result,)
        n = len(node._next)
        if len(result) < n or any(r is not None for r in result[n:]):
            raise RuntimeError(
                f"{node.name()} returned {len(result)} gradients, expected {n} "
                "(one per positional forward argument)"
            )
        return result

    def send_to(self, t, g, fresh=False):
        """Add ``g`` to what ``t`` has received: its node's output slot, or a leaf
        (``fresh``: see :func:`_accumulate_into`)."""
        if t.grad_fn is not None:
            self.acc.add((t.grad_fn, t._output_nr), g)
        elif self.capture is not None:
            if id(t) in self.capture:
                self.acc.add(id(t), g)
        elif t._hooks:
            self.acc.add(id(t), g)
            self.hooked[id(t)] = t
        else:
            _accumulate_into(t, g, self.create, fresh)

    # -- 4. leaf hooks run once per pass, on the summed gradient, before .grad is touched
    def finish_leaves(self):
        acc, create = self.acc, self.create
        for key, t in self.hooked.items():
            _accumulate_into(t, run_hooks(t._hooks, acc.pop(key), create, "a leaf"), create)
        for key, t in (self.capture or {}).items():
            if type(key) is int and t._hooks and key in acc.grads:
                acc.grads[key] = run_hooks(t._hooks, acc.grads[key], create, "a leaf")

    def captured(self, inputs):
        """The gradients :func:`grad` asked for (None for :func:`backward`)."""
        if inputs is None:
            return None
        return [self.acc.grads.get(_key(t)) for t in inputs]


def _key(t):
    """Where the gradient of ``t`` is summed: ``id(t)`` for a leaf, else its node output."""
    return id(t) if t.grad_fn is None else (t.grad_fn, t._output_nr)


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
