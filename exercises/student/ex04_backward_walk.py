"""Exercise 4: the backward walk, with gradient accumulation.

What it teaches: with the nodes in topological order, reverse mode is one loop:
seed d(root)/d(root) = 1, then for each node pass ``node.grad * local`` to each
parent, *adding* into the parent's gradient, because a value used twice gets the
sum of the gradients of both uses (the multivariate chain rule).

Compare with: ``sandbox.autograd._engine._run`` and
``sandbox.autograd._engine._Walk.visit`` (the same loop, plus hooks, retained
grads and freeing; ``_Walk.add`` does the adding).

Run: ``python -m pytest exercises/test_ex04_backward_walk.py --student``
"""

from __future__ import annotations

from .._track import todo
from .ex03_toposort import topological_order  # noqa: F401 - your exercise 3


def backward(root) -> None:
    """Fill ``.grad`` = d(root)/d(node) for every node ``root`` depends on.

    Nodes have ``.grad`` (0.0 before the call), ``.parents`` and ``.local_grads``
    (d node / d parent, in the order of ``parents``).  Why must ``+=`` be used,
    and why would visiting the nodes in a depth-first order be wrong?
    """
    todo("backward")
