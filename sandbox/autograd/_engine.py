"""The core of the backward pass: order the graph, then walk it from the outputs.

:func:`_run` is the algorithm:

1. **seed** the gradient of each output (:meth:`_Walk.add`);
2. **order** the nodes so each comes after all of its consumers (:func:`_toposort`:
   the nodes reachable from the outputs, by an explicit stack so a graph of any depth
   works, in decreasing sequence number: a node is made after its inputs' nodes);
3. **visit** each node (:meth:`_Walk.visit`): pop the summed gradient of each of
   its outputs, call the op's ``backward``, **free** the node unless
   ``retain_graph=True``, and **send** each returned gradient on: added into the
   pending gradient of the node that made that input, or of the leaf;
4. **wait** for the gradients computed beside (:meth:`_Walk.beside`): a Function may
   hand back the gradients that only leaves read (a convolution's weight and bias,
   ``Function.deferrable``) as pending results of the side worker
   (:mod:`sandbox.runtime.overlap`), so that they are computed while this thread goes
   on; the leaves sum them in the same order as any other, so the bits are the same;
5. **accumulate** each leaf's summed gradient into its ``.grad`` (:meth:`_Walk.finish`),
   once, as PyTorch's AccumulateGrad does when every gradient of the leaf has arrived: a
   tensor used twice (``a + a``) adds its two gradients into one new array that becomes
   ``.grad``, where a first gradient copied into ``.grad`` and the second added there
   would pass over the data twice.

Gradients are plain ndarrays throughout, or Tensors under ``create_graph=True``
(grad mode is then on, so the ops inside each backward are recorded); the only
conversions are at the seeds, at the leaves, and for a backward written with
Tensor ops, which receives Tensors.  Hooks, ``retain_grad()`` and :func:`grad`'s
captures are a layer on top (``_backward.py``) that subclasses :class:`_Walk`;
the core calls it only for a node that has hooks, retains or is captured.
"""

from __future__ import annotations

import functools
from operator import attrgetter

import numpy as np

from ..runtime import overlap, threads
from . import _anomaly, _schedule
from ._function import _FREED_MESSAGE
from ._grad_mode import set_grad_enabled
from ._node import Edge
from ._tensor import Tensor, as_ndarray


def _toposort(roots):
    """Nodes reachable from ``roots``, each listed after all of its consumers.

    A node is made after the nodes of its inputs (``Node._seq`` counts up), so the
    reachable nodes in decreasing sequence number are such an order; the same order
    as PyTorch's engine, which runs the ready node of highest sequence number first,
    and so the same order of sums where a tensor feeds several ops.  The search uses
    an explicit stack: no recursion, so any depth works.
    """
    if len(roots) == 1 and not any(type(e) is Edge for e in roots[0]._next or ()):
        return list(roots)  # one node whose inputs are leaves (a layer's call, a loss)
    seen = set(roots)
    stack = list(seen)
    while stack:
        for e in stack.pop()._next or ():
            if type(e) is Edge and e.node not in seen:  # leaves and None have no node
                seen.add(e.node)
                stack.append(e.node)
    return sorted(seen, key=_seq, reverse=True)


_seq = attrgetter("_seq")

#: how a plain walk sums two gradients of one output: ``np.add(a, b, out=None)``'s
#: signature.  numpy's add runs on one thread; the tensor ops install the array layer's
#: threaded sum (``sandbox.array.arith.add``, the same bits) through
#: :func:`set_gradient_sum`, so the engine itself needs nothing but numpy.
_add_arrays = np.add


def set_gradient_sum(fn) -> None:
    """Make ``fn(a, b, out=None)`` (numpy's ``np.add`` semantics for two same-shape
    arrays, the same values) the walk's sum of gradients."""
    global _add_arrays
    _add_arrays = fn


#: how a leaf takes a copy of a gradient it may not keep (one another array holds, such
#: as the seed or an add's): ``fn(a)``, a new C-contiguous array of ``a``'s values and
#: dtype; the tensor ops install the array layer's threaded copy as the sum above.
_copy_array = functools.partial(np.array, order="C")


def set_gradient_copy(fn) -> None:
    """Make ``fn(a)`` (a new C-contiguous array with ``a``'s values and dtype) the copy a
    leaf keeps of a gradient it may not own."""
    global _copy_array
    _copy_array = fn


def _run(walk, roots, seeds):
    """The backward pass: seed, order, visit every node, finish.  Returns ``walk``."""
    for t, g in zip(roots, seeds, strict=True):
        if t.grad_fn is None:
            walk.leaf(t, g)
        else:
            walk.add(t.grad_fn, t._output_nr, g)
    order = walk.order(_toposort([t.grad_fn for t in roots if t.grad_fn is not None]))
    with set_grad_enabled(walk.create):  # record the backward ops only for create_graph
        with walk.beside(order):
            for node in order:
                walk.visit(node)
        walk.finish()
    return walk


class _Walk:
    """One backward pass: the gradients still to be passed on, and the visit."""

    watched = frozenset()  # nodes whose output gradients grad() captures (the layer's)

    def __init__(self, retain_graph, create_graph):
        self.retain = retain_graph
        self.create = create_graph
        self.pending = {}  # node -> summed gradient of each output (None: none yet)
        self.owned = set()  # ids of sums allocated here: only those are added into in place
        self.leaf_sums = {}  # id(leaf) -> [leaf, summed gradient, owned by the walk?]
        self.anomaly = _anomaly._flag.enabled  # read once: no cost per node when off
        # may a Function hand back gradients computed beside this thread (its
        # ``deferrable`` ones, when they go to leaves)?  Only in a plain walk with a
        # thread to spare; the leaves then sum them in the same order (settle, leaf)
        self.defers = (not create_graph and not self.anomaly and overlap._mode != "off"
                       and threads.get_num_threads() > 1)

    def visit(self, node):
        if node._freed:
            raise RuntimeError(_FREED_MESSAGE.format(node.name()))
        grads = self.pending.pop(node, None)
        if grads is None:  # no gradient reached this node
            return
        if self.owned:
            self.owned.difference_update(map(id, grads))
        if node._hooks is not None or node._retained is not None or node in self.watched:
            grads = self.outputs(node, grads)  # the layer: hooks, retain_grad, captures
        elif len(grads) > 1:
            _fill_zeros(node, grads, self.create)
        fn, ctx, edges = node._fn, node._ctx, node._next
        if fn.deferrable and self.defers:
            ctx.defer = all(type(edges[i]) is not Edge for i in fn.deferrable)
        if self.create:
            ctx._node = node  # saved outputs come back attached to this node
        elif not fn.plain_backward_arrays:
            grads = [Tensor._make(g) for g in grads]  # a backward written with Tensor ops
        try:
            result = _anomaly.backward(node, grads) if self.anomaly else fn.backward(ctx, *grads)
        finally:
            if self.create:
                ctx._node = None
        if type(result) is not tuple:
            result = tuple(result) if isinstance(result, list) else (result,)
        if len(result) != len(edges):
            _check_count(node, result)
        if not self.retain:
            node._release()
        for i, (e, g) in enumerate(zip(edges, result, strict=False)):  # extra Nones: checked
            if e is None or g is None:
                continue
            if isinstance(g, overlap.Pending):  # a leaf's (ctx.defer): checked when settled
                if type(e) is not Edge:
                    self.leaf(e, g, fn.fresh_grads)
                    continue
                g = g.result()
            if self.create or type(g) is not np.ndarray:
                g = _one_form(g, self.create)
            if type(e) is Edge:
                shape, dtype = e.node._out_meta[e.output_nr]
            else:
                shape, dtype = e._data.shape, e._data.dtype
            if g.shape != shape:
                _wrong_shape(node, i, g, shape)
            if g.dtype != dtype:
                g = g.astype(dtype)
            if type(e) is Edge:
                self.add(e.node, e.output_nr, g)
            else:
                self.leaf(e, g, fn.fresh_grads)

    def add(self, node, nr, g):
        """Add ``g`` to the pending gradient of output ``nr`` of ``node``."""
        slots = self.pending.get(node)
        if slots is None:
            slots = self.pending[node] = [None] * len(node._out_meta)
        prev = slots[nr]
        if prev is None:
            slots[nr] = g  # kept as is: it may be another gradient's array too
        elif self.create:
            slots[nr] = prev + g
        elif id(prev) in self.owned:
            _add_arrays(prev, g, out=prev)
        else:
            # on every thread for large sums; 0-d + 0-d gives a numpy scalar
            slots[nr] = s = as_ndarray(_add_arrays(prev, g))
            self.owned.add(id(s))

    # -- the layer's hooks (see _backward.py); these are the plain versions
    def order(self, nodes):
        return nodes

    def outputs(self, node, grads):
        _fill_zeros(node, grads, self.create)
        return grads

    def leaf(self, t, g, fresh=False):
        """Add ``g`` to the pending gradient of leaf ``t`` (``fresh``: a new array no one
        else holds, which the walk may keep and add into)."""
        entry = self.leaf_sums.get(id(t))
        if isinstance(g, overlap.Pending):
            if entry is None:  # kept pending until settle(), or a second gradient
                self.leaf_sums[id(t)] = [t, g, fresh]
                return
            g = _settled(t, g)
        if entry is None:  # a fresh array is the walk's to add into, if it can be written
            self.leaf_sums[id(t)] = [t, g, fresh and not self.create and g.flags.writeable]
            return
        _settle_entry(entry)  # a first gradient still pending: its array, before the sum
        if self.create:
            entry[1] = entry[1] + g
        elif entry[2]:
            _add_arrays(entry[1], g, out=entry[1])
        else:  # on every thread for large sums; 0-d + 0-d gives a numpy scalar
            entry[1], entry[2] = as_ndarray(_add_arrays(entry[1], g)), True

    def beside(self, order):
        """Around the visits (``with walk.beside(order):``): let the leaves' gradients of
        ``Function.deferrable`` run beside this thread or not, as was faster lately for
        graphs like ``order`` (:mod:`._schedule`); at the end wait for them
        (:meth:`settle`), after an error stop them."""
        return _Beside(self, order)

    def settle(self):
        """Wait for the leaves' gradients computed beside this thread (helping with the
        ones not started yet), so that every pending sum is an array."""
        if overlap._pending:
            overlap.drain()
        for entry in self.leaf_sums.values():
            _settle_entry(entry)

    def drop_pending(self):
        """After an error: stop the pending gradients' work (or wait for it to end)."""
        for entry in self.leaf_sums.values():
            if isinstance(entry[1], overlap.Pending):
                entry[1].cancel()
        self.leaf_sums.clear()

    def finish(self):
        """Accumulate each leaf's summed gradient, in the order the leaves got their first."""
        for t, g, owned in self.leaf_sums.values():
            self.accumulate(t, g, owned)
        self.leaf_sums.clear()

    def accumulate(self, t, g, owned):
        """Add a leaf's summed gradient ``g`` into its ``.grad`` (kept as it is if the walk
        owns it and ``.grad`` is None)."""
        _accumulate_into(t, g, self.create, owned)


class _Beside:
    """:meth:`_Walk.beside`'s context (a class, not a generator: a single layer's backward
    pays for each object it makes)."""

    __slots__ = ("walk", "schedule", "start")

    def __init__(self, walk, order):
        self.walk = walk
        self.schedule = None
        if walk.defers and overlap._mode == "auto":
            if _schedule.worth_timing(order):
                self.schedule = _schedule.schedule_for(order)
                walk.defers = self.schedule.pick()
            else:
                walk.defers = False

    def __enter__(self):
        self.start = _schedule.clock() if self.schedule is not None else 0.0

    def __exit__(self, kind, error, trace):
        if kind is not None:
            self.walk.drop_pending()
            return False
        try:
            self.walk.settle()
        except BaseException:
            self.walk.drop_pending()
            raise
        if self.schedule is not None:
            self.schedule.record(self.walk.defers, _schedule.clock() - self.start)
        return False


def _settle_entry(entry):
    """A leaf's pending sum ``[leaf, gradient, owned]`` whose gradient is still pending:
    its array, kept as the walk's to add into if it was fresh and can be written."""
    if isinstance(entry[1], overlap.Pending):
        entry[1] = _settled(entry[0], entry[1])
        entry[2] = entry[2] and entry[1].flags.writeable


def _settled(t, pending):
    """The array of a leaf's pending gradient, checked as a returned one is in visit."""
    g = pending.result()
    if g.shape != t._data.shape:
        raise RuntimeError(f"a gradient of shape {tuple(g.shape)} was computed for a leaf "
                           f"of shape {tuple(t.shape)}")
    return g if g.dtype == t._data.dtype else g.astype(t._data.dtype)


def _fill_zeros(node, grads, create):
    """Outputs that received no gradient get zeros.

    An integer or boolean output (max pooling's indices) is not differentiable: no
    gradient ever reaches it, and its zeros are a read-only broadcast of one zero rather
    than an array of its size (the user UNet at 256², batch 4, 2 threads, AMD EPYC family
    26 model 2: the four pools' int64 indices had cost 0.34 ms of ``np.zeros`` a step in a
    cProfile of it)."""
    for i, g in enumerate(grads):
        if g is None:
            shape, dtype = node._out_meta[i]
            z = np.zeros(shape, dtype) if np.dtype(dtype).kind in "fc" else _no_grad(shape, dtype)
            grads[i] = Tensor._make(z) if create else z


@functools.lru_cache(maxsize=64)
def _no_grad(shape, dtype) -> np.ndarray:
    """The zeros of a non-differentiable output: one read-only broadcast zero per shape
    (``np.broadcast_to`` takes 1.7 us a call warm: ``timeit`` on an AMD EPYC family 26
    model 2, for an (8, 16, 32, 32) int64 output)."""
    return np.broadcast_to(np.zeros((), dtype), shape)


def _one_form(g, create):
    """A returned gradient in the walk's form: a Tensor under create_graph, else an array."""
    if create:
        return g if isinstance(g, Tensor) else Tensor._make(np.asarray(g))
    return g._data if isinstance(g, Tensor) else np.asarray(g)


def _accumulate_into(t, g, create, fresh=False):
    """Add ``g`` into ``t.grad`` (a leaf, or a non-leaf that retains its grad).

    ``fresh``: ``g`` is a new array nothing else references (``Function.fresh_grads``),
    so a first gradient is kept as it is instead of copied.
    """
    if create:
        g = g if isinstance(g, Tensor) else Tensor._make(g)
        t.grad = g if t.grad is None else t.grad + g
    elif t.grad is None:
        dtype = t._data.dtype
        if g.dtype != dtype:
            g = g.astype(dtype, order="C")  # a fresh copy
        elif not (fresh and g.flags.c_contiguous and g.flags.writeable):
            g = _copy_array(g)  # own a fresh copy
        t.grad = Tensor._make(g)
    else:
        have = t.grad._data
        if not t.grad._requires_grad and have.flags.writeable and have.shape == g.shape:
            _add_arrays(have, g, out=have)  # on every thread, as the walk's sums
        else:
            t.grad = Tensor._make(have + g)


def _check_count(node, result):
    n = len(node._next)
    if len(result) < n or any(r is not None for r in result[n:]):
        raise RuntimeError(
            f"{node.name()} returned {len(result)} gradients, expected {n} "
            "(one per positional forward argument)"
        )


def _wrong_shape(node, i, g, shape):
    raise RuntimeError(
        f"{node.name()} returned a gradient of shape {tuple(g.shape)} for input {i}, "
        f"but that input has shape {tuple(shape)}"
    )
