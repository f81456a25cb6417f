"""The import rules of docs/design.md §1: each layer imports only the layers below it.

Every module of the package is parsed (not imported) and each ``sandbox`` import it
makes, at any depth of the file, is checked against the table below, which mirrors
the table in docs/design.md.  A new top-level module must be added to both.
"""

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sandbox"

#: folder (or top-level module) inside ``sandbox`` -> layer: one entry per folder
LAYER_OF = {
    "_C": "kernels",
    "runtime": "runtime", "_version": "runtime",
    "array": "array ops",
    "autograd": "engine",
    "ops": "tensor ops",
    "functional": "functional",
    "nn": "nn, optim", "optim": "nn, optim",
    "data": "training", "train": "training", "utils": "training", "distributed": "training",
    "cli": "faces", "bench": "faces", "interop": "faces", "__main__": "faces",
}  # fmt: skip

#: layer -> the layers it may import (besides itself)
MAY_IMPORT = {
    "kernels": set(),
    "runtime": {"kernels"},
    "array ops": {"kernels", "runtime"},
    "engine": {"runtime"},
    "tensor ops": {"array ops", "engine", "runtime"},
    "functional": {"array ops", "engine", "tensor ops", "runtime"},
    "nn, optim": {"functional", "array ops", "engine", "tensor ops", "runtime"},
    "training": {"nn, optim", "functional", "array ops", "engine", "tensor ops", "runtime"},
    "faces": set(LAYER_OF.values()),
}

#: at most this many modules at the top of ``sandbox/`` (issue 20): the package's face
#: (``__init__``), ``__main__`` and the version.
TOP_LEVEL_MODULES = {"__init__", "__main__", "_version"}


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


def test_the_top_of_the_package_holds_only_its_face():
    loose = {p.stem for p in PACKAGE.glob("*.py")} - TOP_LEVEL_MODULES
    assert not loose, f"move {sorted(loose)} into the package of their layer"


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
