"""Exercise 3: the topological sort (see exercises/student/ex03_toposort.py)."""

import random
import sys

import pytest

from exercises._track import load

ex = load("ex03_toposort")


class Node:
    def __init__(self, name, parents=()):
        self.name = name
        self.parents = tuple(parents)

    def __repr__(self):
        return self.name


def check_order(root, order):
    reachable, stack = {id(root): root}, [root]
    while stack:
        for p in stack.pop().parents:
            if id(p) not in reachable:
                reachable[id(p)] = p
                stack.append(p)
    assert len(order) == len(reachable), "each reachable node exactly once"
    assert {id(n) for n in order} == set(reachable)
    assert order[0] is root
    pos = {id(n): i for i, n in enumerate(order)}
    for n in order:
        for p in n.parents:
            assert pos[id(n)] < pos[id(p)], f"{p} is listed before its consumer {n}"


def test_diamond():
    # x feeds a and b, which both feed y: x must come after both
    x = Node("x")
    a, b = Node("a", [x]), Node("b", [x])
    y = Node("y", [a, b])
    order = ex.topological_order(y)
    check_order(y, order)
    assert order[-1] is x


def test_repeated_parent_and_unreachable_nodes():
    x = Node("x")
    sq = Node("sq", [x, x])  # x * x
    top = Node("top", [sq, x])
    Node("elsewhere", [top])  # a consumer of top that root does not reach
    order = ex.topological_order(top)
    check_order(top, order)
    assert [n.name for n in order] == ["top", "sq", "x"]


@pytest.mark.parametrize("seed", range(20))
def test_random_dags(seed):
    rnd = random.Random(seed)
    nodes = [Node(f"leaf{i}") for i in range(4)]
    for i in range(60):
        k = rnd.randint(1, 3)
        nodes.append(Node(f"n{i}", [rnd.choice(nodes) for _ in range(k)]))
    root = Node("root", nodes[-5:])
    check_order(root, ex.topological_order(root))


def test_custom_parents_function():
    # the library's nodes keep their parents elsewhere: the function takes an accessor
    x = Node("x")
    y = Node("y", [x])
    order = ex.topological_order({"id": "y", "of": [{"id": "x", "of": []}]}, lambda d: d["of"])
    assert [d["id"] for d in order] == ["y", "x"]
    check_order(y, ex.topological_order(y))


def test_deeper_than_the_recursion_limit():
    n = 3 * sys.getrecursionlimit() + 10_000
    node = Node("leaf")
    for i in range(n):
        node = Node(str(i), [node])
    order = ex.topological_order(node)
    assert len(order) == n + 1 and order[-1].name == "leaf"
