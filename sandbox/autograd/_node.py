"""The graph: a :class:`Node` per recorded op, an :class:`Edge` per non-leaf input.

:meth:`Function.apply` records a node when grad mode is on and some input requires
grad; the outputs' ``grad_fn`` is that node.  The node holds what the backward
walk reads, and nothing of the op's own state (that is the op's
:class:`~sandbox.autograd.Context`, ``node._ctx``):

``_fn``
    the Function class: its ``backward`` and its name;
``_next``
    per positional forward argument: ``Edge(node, output_nr)`` to the node that
    made a non-leaf input, the input Tensor itself for a leaf that requires grad,
    None where no gradient is wanted;
``_out_meta``
    per output, ``(shape, dtype)``: for zero gradients and the shape checks;
``_consts``
    None, or per argument the ``(shape, dtype)`` of a Tensor needing no grad (for
    :func:`~sandbox.autograd.graph`);
``_seq``
    the node's sequence number: nodes are numbered as they are made, and a node's
    inputs are made before it, so a node comes after every node whose input it is
    (its consumers) in decreasing ``_seq`` order (the backward walk's order);
``_hooks``, ``_retained``, ``_trace``
    non-leaf hooks, ``retain_grad()`` weakrefs and the forward stack under
    ``detect_anomaly()`` (class-level None unless set).

An edge keeps no array, so an activation that no backward saved is freed as
soon as the forward moves on.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

__all__ = ["Edge", "Node"]


class Edge(NamedTuple):
    """Where a gradient goes: output ``output_nr`` of ``node``.

    It reads like the tensor it stands for (``grad_fn``, ``shape``, ``dtype``), which
    is how :func:`~sandbox.autograd.graph` and the tests look at ``node._next``.
    """

    node: Node
    output_nr: int

    grad_fn = property(lambda self: self.node)
    _output_nr = property(lambda self: self.output_nr)
    shape = property(lambda self: self.node._out_meta[self.output_nr][0])
    dtype = property(lambda self: self.node._out_meta[self.output_nr][1])
    requires_grad = property(lambda self: True)


#: the sequence numbers of nodes (Node._seq)
_SEQUENCE = itertools.count()


class Node:
    """A recorded op: its Function, its context, the edges to its inputs (see module doc)."""

    _consts = None
    _hooks = None  # output_nr -> {handle id: hook}
    _retained = None  # output_nr -> weakref of a tensor that called retain_grad()
    _trace = None  # forward call stack, recorded only under detect_anomaly()
    _freed = False

    def __init__(self, fn, ctx, edges, out_meta):
        self._fn = fn
        self._ctx = ctx
        self._next = edges
        self._out_meta = out_meta
        self._seq = next(_SEQUENCE)

    def name(self) -> str:
        return f"{self._fn.__name__}Backward"

    def __repr__(self):
        return f"<{self.name()}>"

    def __getattr__(self, name):
        # What the op kept on ctx (ctx.mask, ctx.saved_tensors ...) reads through its node.
        ctx = self.__dict__.get("_ctx")
        if ctx is None:
            raise AttributeError(name)
        return getattr(ctx, name)

    def _release(self) -> None:
        """After backward: drop the context (saved items, scratch) and the edges.

        What stays is what names the node for errors and ``graph(t)``: its Function,
        output metadata, constants, hooks, retained grads and trace.
        """
        self._ctx._release()
        self._next = None
        self._freed = True
