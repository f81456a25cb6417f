"""The import rules of docs/design.md §1: each layer imports only the layers below it.

Every module of the package is parsed (not imported) and each ``sandbox`` import it
makes, at any depth of the file, is checked against the table below, which mirrors
the table in docs/design.md.  A new top-level module must be added to both.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "sandbox"

#: top-level name inside ``sandbox`` -> layer
LAYER_OF = {
    "_C": "kernels",
    "_config": "support", "_random": "support", "_memory": "support", "_info": "support",
    "_version": "support", "_optional": "support", "_device": "support", "_dtypes": "support",
    "amp": "support",
    "array": "array ops", "resample": "array ops",
    "autograd": "engine",
    "ops": "tensor ops",
    "functional": "functional",
    "nn": "nn, optim", "optim": "nn, optim",
    "data": "training", "metrics": "training", "checkpoint": "training", "train": "training",
    "utils": "training", "_serialize": "training",
    "cli": "faces", "_train_options": "faces", "_usage": "faces", "__main__": "faces",
    "bench": "faces", "gradcheck": "faces",
    "gradcheck_suite": "faces", "explain": "faces", "viz": "faces", "datasets": "training",
    "interop": "faces",
}  # fmt: skip

#: layer -> the layers it may import (besides itself)
MAY_IMPORT = {
    "kernels": set(),
    "support": {"kernels"},
    "array ops": {"kernels", "support"},
    "engine": {"support"},
    "tensor ops": {"engine", "support"},
    "functional": {"array ops", "engine", "tensor ops", "support"},
    "nn, optim": {"functional", "array ops", "engine", "tensor ops", "support"},
    "training": {"nn, optim", "functional", "array ops", "engine", "tensor ops", "support"},
    "faces": set(LAYER_OF.values()),
}


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _top(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def _imported_tops(path: pathlib.Path):
    """(line, top-level sandbox name) for every sandbox import in ``path``."""
    rel = path.relative_to(ROOT).with_suffix("").parts
    package = rel[:-1]  # the package this file lives in
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            if target[0] != "sandbox":
                continue
            if len(target) > 1:
                yield node.lineno, target[1]
            else:  # ``from sandbox import x``: x is a submodule or a package attribute
                for alias in node.names:
                    yield node.lineno, alias.name if alias.name in LAYER_OF else "sandbox"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "sandbox":
                    yield node.lineno, parts[1] if len(parts) > 1 else "sandbox"


def test_every_module_has_a_layer():
    tops = {_top(p) for p in _modules()} - {"__init__"}
    unknown = sorted(tops - set(LAYER_OF))
    assert not unknown, f"add {unknown} to LAYER_OF here and to docs/design.md §1"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_follow_the_layers(path):
    top = _top(path)
    if top == "__init__":  # the package's face re-exports public names
        return
    layer = LAYER_OF[top]
    allowed = MAY_IMPORT[layer] | {layer}
    bad = []
    for line, name in _imported_tops(path):
        target = "faces" if name == "sandbox" else LAYER_OF.get(name, f"unknown {name!r}")
        if target not in allowed:
            bad.append(f"line {line}: {layer} imports {name} ({target})")
    assert not bad, "\n".join(bad)


def test_design_doc_names_every_layer():
    text = (ROOT / "docs" / "design.md").read_text()
    for layer in MAY_IMPORT:
        assert f"| {layer} |" in text, f"docs/design.md §1 lacks the layer {layer!r}"
