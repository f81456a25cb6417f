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
"""

from __future__ import annotations


def topological_order(root, parents=lambda node: node.parents) -> list:
    """Every node reachable from ``root``, each listed before all of its parents.

    So ``root`` comes first and each node comes after all the nodes that consume
    it.  ``parents(node)`` gives the nodes ``node`` was computed from (a node may
    appear twice, as in ``a * a``).  Each reachable node appears exactly once.
    """
    # 1. count, for every reachable node, how many edges lead into it from consumers
    consumers = {}
    seen = {id(root)}
    stack = [root]
    while stack:
        for p in parents(stack.pop()):
            consumers[id(p)] = consumers.get(id(p), 0) + 1
            if id(p) not in seen:
                seen.add(id(p))
                stack.append(p)
    # 2. release nodes whose consumers are all placed
    order = []
    ready = [root]
    while ready:
        node = ready.pop()
        order.append(node)
        for p in parents(node):
            consumers[id(p)] -= 1
            if consumers[id(p)] == 0:
                ready.append(p)
    return order
