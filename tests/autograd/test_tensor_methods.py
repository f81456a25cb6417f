"""Tensor methods: the mixin, the runtime class and the stub agree; the engine knows no op."""

import ast
import inspect
import pathlib

import pytest

import sandbox
from sandbox.autograd import Tensor
from sandbox.ops._methods import TensorMethods

AUTOGRAD = pathlib.Path(sandbox.__file__).parent / "autograd"
STUB = AUTOGRAD / "_tensor.pyi"
# Class bookkeeping and private slots: not part of the stub's public surface.
BOOKKEEPING = {"__module__", "__qualname__", "__doc__", "__slots__", "__dict__", "__weakref__"}


def _stub_class():
    tree = ast.parse(STUB.read_text())
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor"]
    return cls


def _stub_members():
    """name -> ("function", ast args) | ("property", None) | ("attribute", None)."""
    members = {}
    for node in _stub_class().body:
        if isinstance(node, ast.FunctionDef):
            decorators = {ast.unparse(d) for d in node.decorator_list}
            if "property" in decorators or any(d.endswith(".setter") for d in decorators):
                members[node.name] = ("property", None)
            else:
                members[node.name] = ("function", node.args)
        elif isinstance(node, ast.AnnAssign):
            members[node.target.id] = ("attribute", None)
    return members


def _runtime_members():
    out = {}
    for name, value in vars(Tensor).items():
        if name in BOOKKEEPING or (name.startswith("_") and not name.startswith("__")):
            if name != "_make":  # the engine's fast constructor is part of the contract
                continue
        out[name] = value
    return out


def _param_list(args):
    """(name, kind) pairs from a stub's ast.arguments, comparable with inspect."""
    P = inspect.Parameter
    params = [(a.arg, P.POSITIONAL_OR_KEYWORD) for a in args.posonlyargs + args.args]
    if args.vararg:
        params.append((args.vararg.arg, P.VAR_POSITIONAL))
    params += [(a.arg, P.KEYWORD_ONLY) for a in args.kwonlyargs]
    if args.kwarg:
        params.append((args.kwarg.arg, P.VAR_KEYWORD))
    return params


def test_every_mixin_method_is_installed_on_the_engine_tensor():
    assert sandbox.Tensor is Tensor
    for name, value in vars(TensorMethods).items():
        if name not in BOOKKEEPING:
            assert vars(Tensor)[name] is value, name


def test_stub_and_runtime_tensor_have_the_same_members():
    stub, runtime = _stub_members(), _runtime_members()
    assert sorted(set(runtime) - set(stub)) == [], "in Tensor but missing from _tensor.pyi"
    assert sorted(set(stub) - set(runtime)) == [], "in _tensor.pyi but not on Tensor"


@pytest.mark.parametrize("name", sorted(_stub_members()))
def test_stub_signature_matches_runtime(name):
    what, args = _stub_members()[name]
    value = vars(Tensor)[name]
    if what == "property":
        assert isinstance(value, property), name
        return
    if what == "attribute":
        assert not callable(value) or value is None, name
        return
    func = value.__func__ if isinstance(value, classmethod) else value
    P = inspect.Parameter
    runtime = [  # object.__hash__'s self is positional-only; the stub's cannot say so
        (p.name, P.POSITIONAL_OR_KEYWORD if p.kind == P.POSITIONAL_ONLY else p.kind)
        for p in inspect.signature(func).parameters.values()
    ]
    assert _param_list(args) == runtime, name


def test_engine_imports_no_op():
    """The engine never imports sandbox.ops (not even for type checking)."""
    for path in sorted(AUTOGRAD.glob("*.py*")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = "." * node.level + (node.module or "")
                assert target not in ("..", "..ops") and not target.startswith(
                    ("..ops.", "sandbox.ops")
                ), f"{path.name} imports {target}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("sandbox.ops") for a in node.names), path.name


def test_ops_are_not_reexported_by_the_engine():
    import sandbox.autograd as autograd

    for name in ("cat", "stack", "where"):
        assert not hasattr(autograd, name)
        assert callable(getattr(sandbox, name))
