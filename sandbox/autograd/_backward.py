""":func:`backward` and :func:`grad`: the core walk (``_engine.py``) plus what it leaves out.

Both check their arguments and make the seeds, then run ``_engine._run`` with a
subclass of ``_engine._Walk`` that adds, at the walk's hook points:

* :class:`_BackwardWalk` (``backward()``): the hooks of a non-leaf tensor run on
  its summed gradient when its node is visited, before ``retain_grad()`` stores it
  and before the op's backward sees it; a leaf's hooks run **once**, on the
  gradient summed over the whole pass, when the core walk's ``finish`` accumulates
  the leaves (:meth:`_BackwardWalk.accumulate`).
* :class:`_GradWalk` (``grad()``): ``.grad`` is never touched; the gradients of the
  requested inputs are **captured** instead (a leaf's as it would enter ``.grad``,
  a non-leaf's as its node pops it), and the nodes that lead to none of the inputs
  are **pruned**: their backward does not run.
"""

from __future__ import annotations

import numpy as np

from ._engine import _accumulate_into, _fill_zeros, _run, _Walk
from ._function import _FREED_MESSAGE
from ._grad_mode import is_grad_enabled
from ._hooks import run_hooks
from ._node import Edge
from ._tensor import Tensor

__all__ = ["backward", "grad"]


class _BackwardWalk(_Walk):
    """backward(): tensor hooks and retain_grad() (see the module docstring)."""

    def outputs(self, node, grads):
        """Run the output tensors' hooks, then store the retained gradients."""
        for i, g in enumerate(grads):
            if g is None:
                z = np.zeros(*node._out_meta[i])  # no hook runs on an output that got none
                grads[i] = Tensor._make(z) if self.create else z
            elif node._hooks and node._hooks.get(i):
                grads[i] = run_hooks(node._hooks[i], g, self.create, f"output {i} of {node.name()}")
        for i, ref in (node._retained or {}).items():
            if ref() is not None:
                _accumulate_into(ref(), grads[i], self.create)
        return grads

    def accumulate(self, t, g, owned):
        """A leaf's hooks run once, on its summed gradient, before ``.grad`` gets it."""
        if t._hooks:
            g, owned = run_hooks(t._hooks, g, self.create, "a leaf"), False
        _accumulate_into(t, g, self.create, owned)


class _GradWalk(_Walk):
    """grad(): capture the inputs' gradients, prune what leads to none of them."""

    def __init__(self, retain_graph, create_graph, inputs):
        super().__init__(retain_graph, create_graph)
        self.leaves = {id(t): t for t in inputs if t.grad_fn is None}
        self.watched = {}  # node -> output numbers whose gradient is captured
        for t in inputs:
            if t.grad_fn is not None:
                self.watched.setdefault(t.grad_fn, set()).add(t._output_nr)
        self.leaf_grads = {}  # id(leaf) -> summed gradient
        self.node_grads = {}  # (node, output_nr) -> gradient, for captured non-leaves
        self.runs = set()

    def order(self, nodes):
        """Keep the nodes whose backward leads to a captured tensor (``runs``), and
        the captured and freed ones, which are visited without running backward."""
        reach = set()  # nodes from which a captured tensor can be reached
        for node in reversed(nodes):  # the nodes of a node's inputs come first
            if any(self._leads(e, reach) for e in node._next or ()):
                self.runs.add(node)
            if node in self.runs or node in self.watched:
                reach.add(node)
        return [n for n in nodes if n in reach or n._freed]

    def _leads(self, e, reach):
        """Does the gradient sent along edge ``e`` reach a captured tensor?"""
        if type(e) is Edge:
            return e.node in reach
        return e is not None and id(e) in self.leaves

    def visit(self, node):
        if node in self.runs:
            return super().visit(node)
        if node._freed:
            raise RuntimeError(_FREED_MESSAGE.format(node.name()))
        grads = self.pending.pop(node, None)
        if grads is not None:  # a captured node that leads to no other input
            self.outputs(node, grads)

    def outputs(self, node, grads):
        """Run the output tensors' hooks and capture the requested gradients."""
        wanted = self.watched.get(node, ())
        for i, g in enumerate(grads):
            if g is None:
                continue
            if node._hooks and node._hooks.get(i):
                grads[i] = run_hooks(node._hooks[i], g, self.create, f"output {i} of {node.name()}")
            if i in wanted:
                self.node_grads[node, i] = grads[i]
        _fill_zeros(node, grads, self.create)
        return grads

    def leaf(self, t, g, fresh=False):
        if id(t) in self.leaves:
            super().leaf(t, g, fresh)

    def finish(self):
        """Capture the requested leaves' summed gradients (after their hooks); ``.grad``
        is left alone."""
        for t, g, _ in self.leaf_sums.values():
            if t._hooks:
                g = run_hooks(t._hooks, g, self.create, "a leaf")
            self.leaf_grads[id(t)] = g

    def captured(self, t):
        if t.grad_fn is None:
            return self.leaf_grads.get(id(t))
        return self.node_grads.get((t.grad_fn, t._output_nr))


#: what a single gradient (rather than a sequence of them) may be
_ONE_GRADIENT = (Tensor, np.ndarray)


def _roots_and_seeds(outputs, grad_outputs):
    """The output Tensors as a list and each one's checked seed gradient."""
    if isinstance(outputs, Tensor) and (grad_outputs is None
                                        or isinstance(grad_outputs, _ONE_GRADIENT)):
        return [outputs], [_seed(outputs, grad_outputs, 0)]  # loss.backward(), y.backward(g)
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, _ONE_GRADIENT):
        grad_outputs = [grad_outputs]
    else:
        grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(
            f"got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs; give one each"
        )
    pairs = zip(outputs, grad_outputs, strict=True)
    return outputs, [_seed(t, g, k) for k, (t, g) in enumerate(pairs)]


def _seed(t, g, k):
    """The seed gradient ``g`` of output ``t`` (position ``k``), checked: ones for a
    one-element output without one; a Tensor's array unless it is itself recorded."""
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
        return np.ones(t.shape, t.dtype)
    if isinstance(g, Tensor):
        g = g if g._requires_grad and is_grad_enabled() else g._data
    else:
        g = np.asarray(g, dtype=t.dtype)
    if g.shape != t._data.shape:
        raise ValueError(
            f"gradient for output {k} has shape {tuple(g.shape)}, expected {tuple(t.shape)}"
        )
    return g


def _seeds_for(seeds, create_graph):
    """The seeds in the walk's one form: Tensors under create_graph, else arrays."""
    if create_graph:
        return [g if isinstance(g, Tensor) else Tensor._make(g) for g in seeds]
    return [g._data if isinstance(g, Tensor) else g for g in seeds]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the graph's leaves."""
    roots, seeds = _roots_and_seeds(tensors, grad_tensors)
    retain = create_graph if retain_graph is None else retain_graph
    _run(_BackwardWalk(retain, create_graph), roots, _seeds_for(seeds, create_graph))


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
    walk = _run(_GradWalk(retain, create_graph, inputs), roots, _seeds_for(seeds, create_graph))
    out = []
    for k, t in enumerate(inputs):
        g = walk.captured(t)
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
