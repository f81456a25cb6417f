"""The compiled Python layer (``sandbox/runtime/compiled.py``): built, loaded only while its
source is unchanged, and computing the same bits as the source."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.runtime import compiled as _compiled

ROOT = Path(__file__).resolve().parents[2]
ENGINE = "sandbox.autograd._engine"

#: this build compiled the layer (not with SANDBOX_COMPILE_PYTHON=0; .ci/run checks it is)
BUILT = bool(_compiled.CompiledFinder(pure=False).modules)
NOT_BUILT = "built with SANDBOX_COMPILE_PYTHON=0: no compiled layer to check"


def test_the_compiled_modules_are_the_layers_modules_but_inits_and_the_hook():
    root = ROOT / "sandbox"
    every = {".".join(p.relative_to(ROOT).with_suffix("").parts)
             for pkg in ("array", "autograd", "functional", "nn", "ops", "optim", "runtime")
             for p in (root / pkg).rglob("*.py") if p.name != "__init__.py"}
    assert set(_compiled.compiled_modules()) == every - {"sandbox.runtime.compiled"}


@pytest.mark.skipif(not BUILT, reason=NOT_BUILT)
def test_every_module_of_the_compiled_packages_is_built_and_runs_compiled():
    with open(os.path.join(_compiled.COMPILED_DIR, _compiled.MANIFEST)) as f:
        built = set(json.load(f)["modules"])
    assert built == set(_compiled.compiled_modules())
    import sandbox.autograd._engine as engine
    import sandbox.nn

    layer = _compiled.status()
    if layer["all_source_because"]:
        pytest.skip(f"the test run itself runs from source: {layer['all_source_because']}")
    # a module edited since the build runs from source (until pip install -e .): allowed
    # here, a fresh build in CI has none (.ci/run checks)
    assert set(layer["source"].values()) <= {"edited since it was compiled"}, layer["source"]
    if ENGINE in layer["compiled"]:
        assert engine.__file__.startswith(_compiled.COMPILED_DIR)
    assert layer["compiled"], "no module runs compiled"
    assert sandbox.nn.Conv2d.__module__ == "sandbox.nn._conv"  # named as in the source


def _finder_with(entry_change):
    """A finder over this build's manifest with the engine's entry changed."""
    finder = _compiled.CompiledFinder(pure=False)
    entry = finder.modules.get(ENGINE)
    if entry is None:
        pytest.skip(NOT_BUILT)
    finder.modules = {ENGINE: {**entry, **entry_change}}
    return finder


def test_an_unchanged_source_loads_its_extension():
    finder = _finder_with({})
    spec = finder.find_spec(ENGINE)
    assert spec.origin.startswith(_compiled.COMPILED_DIR)
    assert finder.choices == {ENGINE: "compiled"}


@pytest.mark.parametrize("change, reason", [
    ({"sha256": "0" * 64}, "edited since it was compiled"),
    ({"file": "missing.so"}, "its extension is missing"),
])
def test_an_edited_source_or_a_missing_extension_runs_the_source(change, reason):
    finder = _finder_with(change)
    assert finder.find_spec(ENGINE) is None  # the default finders load the .py
    assert finder.choices == {ENGINE: reason}


def test_a_build_for_another_python_is_not_loaded(tmp_path):
    (tmp_path / _compiled.MANIFEST).write_text(json.dumps(
        {"python": "cpython-39", "modules": {ENGINE: {"file": "x.so", "sha256": "0"}}}))
    finder = _compiled.CompiledFinder(str(tmp_path), pure=False)
    assert finder.modules == {} and finder.find_spec(ENGINE) is None


def test_the_pure_switch_and_modules_outside_the_manifest_are_left_to_python():
    finder = _compiled.CompiledFinder(pure=True)
    finder.modules = {ENGINE: {"file": "x.so", "sha256": "0"}}
    assert finder.find_spec(ENGINE) is None
    assert finder.choices[ENGINE] == "SANDBOX_PURE_PYTHON is set"
    assert finder.find_spec("sandbox.cli.main") is None
    assert _compiled.source_path(ENGINE) == str(ROOT / "sandbox" / "autograd" / "_engine.py")


# Two Adam steps of the user-written UNet (nearest and bicubic resampling, 16x16, batch
# 2): the loss and a checksum of every parameter, as exact hex.
_STEPS = """
import hashlib, sys
import numpy as np
import sandbox
import sandbox.autograd._engine as engine
from sandbox.bench._cases_user import user_step, user_unet
print(engine.__file__)
for mode in ("nearest", "bicubic"):
    sandbox.manual_seed(0)
    model = user_unet(sandbox, mode=mode)
    rng = np.random.default_rng(0)
    x = sandbox.tensor(rng.standard_normal((2, 1, 16, 16), dtype=np.float32))
    y = sandbox.tensor(rng.integers(0, 2, (2, 16, 16)))
    opt = sandbox.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(2):
        opt.zero_grad()
        loss = sandbox.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    digest = hashlib.sha256()
    for p in model.parameters():
        digest.update(p.numpy().tobytes())
    print(mode, float(loss).hex(), digest.hexdigest())
"""


def _run_steps(pure: bool) -> list:
    env = dict(os.environ, SANDBOX_PURE_PYTHON="1" if pure else "0", PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _STEPS], env=env, cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=600)
    return out.stdout.split("\n")


@pytest.mark.slow
def test_the_compiled_layer_trains_to_the_same_bits_as_the_source():
    compiled, source = _run_steps(pure=False), _run_steps(pure=True)
    assert source[0].endswith(os.path.join("sandbox", "autograd", "_engine.py"))
    if BUILT:
        assert compiled[0].startswith(_compiled.COMPILED_DIR)
    assert compiled[1:] == source[1:]
    assert len(source) >= 3 and "nearest" in source[1] and "bicubic" in source[2]
