"""Exercise 3: the topological sort, without recursion.

What it teaches: backward may only run a node once the gradient of its output is
complete, i.e. after *every* node that consumed it; ordering a DAG that way is a
topological sort.  Kahn's algorithm (count each node's consumers, release a node
when its count reaches zero) does it with an explicit stack, so a 50,000-op
chain cannot hit Python's recursion limit.

Compare with: ``sandbox.autograd._engine._toposort``, which needs no counts: its
graph nodes are numbered as they are made (``node._seq``), a node after the nodes
it was computed from (``e.node`` for each ``Edge`` in ``node._next``), so it
collects the reachable nodes with a stack and sorts them by decreasing number,
PyTorch's order.  Kahn's algorithm orders any DAG, numbered or not.

Run: ``python -m pytest exercises/test_ex03_toposort.py --student``
"""

from __future__ import annotations

from .._track import todo


def topological_order(root, parents=lambda node: node.parents) -> list:
    """Every node reachable from ``root``, each listed before all of its parents.

    So ``root`` comes first and each node comes after all the nodes that consume
    it.  ``parents(node)`` gives the nodes ``node`` was computed from (a node may
    appear twice, as in ``a * a``).  Each reachable node appears exactly once.

    Hints: key dictionaries by ``id(node)`` (nodes need not be hashable); first
    walk the graph with a stack counting edges into each node, then start from
    ``[root]`` and append a parent to the ready list when its count drops to 0.
    No recursion: the tests build a chain deeper than Python's recursion limit.
    """
    todo("topological_order")
