"""Exercise 4: the backward walk, with gradient accumulation.

What it teaches: with the nodes in topological order, reverse mode is one loop:
seed d(root)/d(root) = 1, then for each node pass ``node.grad * local`` to each
parent, *adding* into the parent's gradient, because a value used twice gets the
sum of the gradients of both uses (the multivariate chain rule).

Compare with: ``sandbox.autograd._engine._run`` and
``sandbox.autograd._engine._Walk.visit`` (the same loop, plus hooks, retained
grads and freeing; ``_Walk.add`` does the adding).
"""

from __future__ import annotations

from .ex03_toposort import topological_order


def backward(root) -> None:
    """Fill ``.grad`` = d(root)/d(node) for every node ``root`` depends on.

    Nodes have ``.grad`` (0.0 before the call), ``.parents`` and ``.local_grads``
    (d node / d parent, in the order of ``parents``).
    """
    root.grad = 1.0
    for node in topological_order(root):
        for parent, local in zip(node.parents, node.local_grads, strict=True):
            parent.grad += node.grad * local
