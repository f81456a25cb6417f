"""Look at the graph behind a tensor: ``graph(t).text()``, ``.dot()``, ``.render(path)``.

The graph is the chain of nodes (contexts) reachable from ``t.grad_fn`` through
each node's ``_next`` edges.  :func:`graph` lists it in forward order (every op
after its inputs; backward visits it bottom to top):

* **leaves** that require grad (named from ``names`` or ``leaf0, leaf1 ...``);
* **constants**: Tensor inputs that needed no gradient (only their shape and
  dtype are kept, so each use is listed once);
* **ops**: ``%k : shape dtype = NameBackward(inputs)``, one per node.

A node freed by a ``backward()`` without ``retain_graph`` has lost its edges and
is shown as ``<freed>``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ._tensor import Tensor

__all__ = ["Graph", "graph"]


def _meta(shape, dtype) -> str:
    return f"{tuple(shape)} {dtype}"


def _count(n, one, many=None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _show(ref) -> str:
    name, nr = ref
    return name if nr is None else f"{name}.{nr}"


class Graph:
    """A snapshot of the graph behind some tensors (see :func:`graph`).

    Attributes
    ----------
    inputs : list of dict
        Leaves and constants: ``{"id", "kind" ("leaf" or "const"), "shape", "dtype"}``.
    ops : list of dict
        Nodes in forward order: ``{"id", "name", "outputs" [(shape, dtype)],
        "args" [(id, output number or None)], "freed"}``.
    outputs : list of tuple
        ``(id, output number or None)`` of the tensors the graph was taken from.
    """

    def __init__(self, outputs, names=None):
        outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
        if names is None:
            names = {}
        elif not isinstance(names, dict):
            names = dict(names)  # e.g. model.named_parameters()
        self._names = {id(t): n for n, t in names.items()}
        self._leaf_ids = {}
        self._node_ids = {}
        self.inputs, self.ops = [], []
        for node in self._forward_order(outputs):
            self._add_node(node)
        self.outputs = [self._ref(t) for t in outputs]

    # -- building
    @staticmethod
    def _forward_order(outputs):
        """Nodes reachable from ``outputs``, each after its inputs (iterative DFS)."""
        order, seen = [], set()
        for t in outputs:
            if t.grad_fn is None:
                continue
            stack = [(t.grad_fn, False)]
            while stack:
                node, done = stack.pop()
                if done:
                    order.append(node)
                    continue
                if node in seen:
                    continue
                seen.add(node)
                stack.append((node, True))
                for u in reversed(node._next or ()):  # first argument is visited first
                    if u is not None and u.grad_fn is not None and u.grad_fn not in seen:
                        stack.append((u.grad_fn, False))
        return order

    def _leaf(self, t):
        key = id(t)
        if key not in self._leaf_ids:
            name = self._names.get(key, f"leaf{len(self._leaf_ids)}")
            self._leaf_ids[key] = name
            self.inputs.append(dict(id=name, kind="leaf", shape=t.shape, dtype=t.dtype))
        return self._leaf_ids[key]

    def _ref(self, t):
        """(id, output number or None) of a tensor already in the graph."""
        if t.grad_fn is None:
            return self._leaf(t), None
        ref = self._node_ids[t.grad_fn]
        return ref, (None if len(t.grad_fn._out_meta) == 1 else t._output_nr)

    def _add_node(self, node):
        args = []
        edges, consts = node._next, node._consts or ()
        for k in range(len(consts) if edges is None else len(edges)):
            if edges is not None and edges[k] is not None:
                args.append(self._ref(edges[k]))
            elif k < len(consts) and consts[k] is not None:
                cid = f"c{sum(i['kind'] == 'const' for i in self.inputs)}"
                shape, dtype = consts[k]
                self.inputs.append(dict(id=cid, kind="const", shape=shape, dtype=dtype))
                args.append((cid, None))
        ref = f"%{len(self.ops)}"
        self._node_ids[node] = ref
        self.ops.append(
            dict(
                id=ref,
                name=node.name(),
                outputs=list(node._out_meta or ()),
                args=args,
                freed=node._freed,
            )
        )

    # -- views
    def text(self) -> str:
        """A listing of the graph: inputs, then ops in forward order."""
        rows = []
        for i in self.inputs:
            what = "leaf, requires_grad" if i["kind"] == "leaf" else "constant, no grad"
            rows.append((i["id"], _meta(i["shape"], i["dtype"]), what))
        ops = []
        for op in self.ops:
            meta = ", ".join(_meta(s, d) for s, d in op["outputs"])
            args = "<freed>" if op["freed"] else ", ".join(_show(a) for a in op["args"])
            call = f"= {op['name']}({args})"
            outs = [k for k, o in enumerate(self.outputs) if o[0] == op["id"]]
            if outs:
                call += "  <- output" + ("" if len(self.outputs) == 1 else f" {outs[0]}")
            ops.append((op["id"], meta, call))
        w0 = max((len(r[0]) for r in rows + ops), default=0)
        w1 = max((len(r[1]) for r in rows + ops), default=0)
        n_leaf = sum(i["kind"] == "leaf" for i in self.inputs)
        lines = [
            f"graph: {_count(len(self.ops), 'op')}, "
            f"{_count(n_leaf, 'leaf', 'leaves')} requiring grad, "
            f"{_count(len(self.inputs) - n_leaf, 'constant')}"
        ]
        if rows:
            lines.append("inputs")
            lines += [f"  {a:<{w0}} : {b:<{w1}}  {c}" for a, b, c in rows]
        if ops:
            lines.append("ops (forward order; backward runs them bottom to top)")
            lines += [f"  {a:<{w0}} : {b:<{w1}}  {c}" for a, b, c in ops]
        return "\n".join(line.rstrip() for line in lines)

    __str__ = text

    def __repr__(self):
        return f"<Graph: {len(self.ops)} ops, {len(self.inputs)} inputs>"

    def dot(self) -> str:
        """Graphviz DOT source: data flows top to bottom, from the leaves to the outputs."""

        def esc(s):
            return str(s).replace("\\", "\\\\").replace('"', '\\"')

        def q(*parts):  # a quoted DOT string; parts go on separate lines
            return '"' + "\\n".join(esc(p) for p in parts) + '"'

        lines = [
            "digraph autograd {",
            '  node [fontname="Helvetica", fontsize=10, shape=box];',
        ]
        for i in self.inputs:
            label = q(i["id"], _meta(i["shape"], i["dtype"]))
            style = 'style=filled, fillcolor="#cfe2f3"' if i["kind"] == "leaf" else "style=dashed"
            lines.append(f"  {q(i['id'])} [label={label}, {style}];")
        outs = {o[0] for o in self.outputs}
        for op in self.ops:
            label = q(op["name"], *(_meta(s, d) for s, d in op["outputs"]))
            fill = "#d9ead3" if op["id"] in outs else "#fff2cc"
            style = "rounded,dashed" if op["freed"] else "rounded,filled"
            lines.append(f'  {q(op["id"])} [label={label}, style="{style}", fillcolor="{fill}"];')
        for op in self.ops:
            for src, nr in op["args"]:
                label = "" if nr is None else f' [label="{nr}"]'
                lines.append(f"  {q(src)} -> {q(op['id'])}{label};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def render(self, path, format=None) -> Path:
        """Write the graph as an image with Graphviz's ``dot`` (PNG by default).

        The format comes from ``format`` or the file suffix.  Raises RuntimeError
        when ``dot`` is not on PATH (``dot()`` still gives the source).
        """
        exe = shutil.which("dot")
        if exe is None:
            raise RuntimeError(
                "Graph.render needs the Graphviz 'dot' program on PATH (e.g. "
                "'apt-get install graphviz' or 'conda install graphviz'); without it, "
                "Graph.dot() returns the DOT source to paste into any Graphviz viewer"
            )
        path = Path(path)
        fmt = format or path.suffix.lstrip(".") or "png"
        proc = subprocess.run(
            [exe, f"-T{fmt}", "-o", str(path)],
            input=self.dot(),
            text=True,
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"dot failed ({proc.returncode}): {proc.stderr.strip()}")
        return path


def graph(tensors, names=None) -> Graph:
    """The graph behind ``tensors`` (a Tensor or a list of them).

    Parameters
    ----------
    tensors : Tensor or sequence of Tensor
        The outputs whose history to show.
    names : dict or iterable of (name, Tensor), optional
        Names for leaves, e.g. ``{"x": x}`` or ``model.named_parameters()``.

    Returns
    -------
    Graph
        ``.text()`` (a listing), ``.dot()`` (Graphviz source), ``.render(path)`` (PNG).
    """
    return Graph(tensors, names)
