"""Done-when test of issue 16: a PyTorch segmentation script runs on the sandbox after
rewriting only its imports, and gives PyTorch's losses, learning rates and outputs."""

import re
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).parent / "scripts" / "torch_segmentation.py"
BINARY = Path(__file__).parent / "scripts" / "torch_binary_segmentation.py"
DOC = Path(__file__).parents[2] / "docs" / "08-coming-from-pytorch.md"


def to_sandbox(source):
    """Rewrite the import lines (and only those) from torch to the sandbox."""

    def rewrite(m):
        line = m.group(0)
        if line.strip() == "import torch":
            return line.replace("import torch", "import sandbox as torch")
        return re.sub(r"\btorch\b", "sandbox", line)

    return re.sub(r"^(?:import torch\b|from torch\b).*$", rewrite, source, flags=re.M)


def changed_lines(a, b):
    return [(x, y) for x, y in zip(a.splitlines(), b.splitlines(), strict=True) if x != y]


def run(source, name, path=SCRIPT):
    namespace = {"__name__": name}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


def test_only_import_lines_change():
    source = SCRIPT.read_text()
    changes = changed_lines(source, to_sandbox(source))
    assert len(changes) == 6
    assert all(a.startswith(("import torch", "from torch")) for a, _ in changes)


def test_segmentation_script_runs_identically_on_both(torch, tmp_path):
    source = SCRIPT.read_text()
    ours_ns, theirs_ns = run(to_sandbox(source), "ours"), run(source, "theirs")
    assert ours_ns["torch"].__name__ == "sandbox" and theirs_ns["torch"] is torch
    # the same initial weights, in float64
    torch.manual_seed(0)
    theirs_model = theirs_ns["TinyUNet"]().double()
    ours_model = ours_ns["TinyUNet"]().double()
    ours_model.load_state_dict(theirs_model.state_dict())
    assert list(ours_model.state_dict()) == list(theirs_model.state_dict())

    ours = ours_ns["main"](ours_model, checkpoint=str(tmp_path / "ours.pth"))
    theirs = theirs_ns["main"](theirs_model, checkpoint=str(tmp_path / "theirs.pth"))
    (h, probs, pred), (th, tprobs, tpred) = ours, theirs

    assert len(h["loss"]) == 48
    np.testing.assert_allclose(h["loss"], th["loss"], rtol=1e-10)
    np.testing.assert_allclose(h["grad_norm"], th["grad_norm"], rtol=1e-9)
    assert h["val_acc"] == th["val_acc"]
    assert h["lr"] == th["lr"] and len(set(h["lr"])) > 1  # the plateau rule fired
    assert h["loss"][-1] < 0.5 * h["loss"][0] and h["val_acc"][-1] > h["val_acc"][0]  # it learns
    np.testing.assert_allclose(probs, tprobs, rtol=1e-8, atol=1e-12)
    np.testing.assert_array_equal(pred, tpred)
    for k, v in theirs_model.state_dict().items():
        np.testing.assert_allclose(ours_model.state_dict()[k], v.numpy(), rtol=1e-8, atol=1e-12,
                                   err_msg=k)


def to_torch(source):
    """The reverse rewrite: the sandbox's import lines back to PyTorch's."""
    source = re.sub(r"^import sandbox as torch$", "import torch", source, flags=re.M)
    return re.sub(r"^((?:import|from) )sandbox\b", r"\1torch", source, flags=re.M)


def test_docs_example_is_pytorch_code_with_sandbox_imports(torch, tmp_path, monkeypatch):
    """docs/06's complete example runs on PyTorch with its imports changed back."""
    text = DOC.read_text()
    section = text[text.index("## A complete example"):]
    example = re.search(r"^```python\n(.*?)^```", section, re.S | re.M).group(1)
    original = to_torch(example)
    changes = changed_lines(original, example)
    assert len(changes) == 6 and all("import" in a and "torch" in a for a, _ in changes)
    assert to_sandbox(original) == example
    monkeypatch.chdir(tmp_path)
    namespace = run(original, "docs_example_on_torch")  # asserts its own Dice > 0.8
    assert namespace["torch"] is torch
    assert (tmp_path / "squares.pt").exists()


def test_binary_script_in_default_float64_runs_identically_on_both(torch, tmp_path):
    """Second script: TensorDataset, set_default_dtype, padding='same' with reflect padding,
    GroupNorm/InstanceNorm/AdaptiveAvgPool2d, BCEWithLogitsLoss(pos_weight), Adam,
    LambdaLR, clip_grad_value_, torch.clamp, save/load of a nested checkpoint."""
    import sandbox

    source = BINARY.read_text()
    assert len(changed_lines(source, to_sandbox(source))) == 5
    ours_ns = run(to_sandbox(source), "ours", BINARY)
    theirs_ns = run(source, "theirs", BINARY)
    try:
        torch.set_default_dtype(torch.float64)
        sandbox.set_default_dtype(sandbox.float64)
        torch.manual_seed(0)
        theirs_model = theirs_ns["ContextNet"]()
        ours_model = ours_ns["ContextNet"]()
        assert ours_model.head.weight.dtype == np.float64
        ours_model.load_state_dict(theirs_model.state_dict())
        h, out = ours_ns["main"](ours_model, checkpoint=str(tmp_path / "ours.pt"))
        th, tout = theirs_ns["main"](theirs_model, checkpoint=str(tmp_path / "theirs.pt"))
    finally:
        torch.set_default_dtype(torch.float32)
        sandbox.set_default_dtype(sandbox.float32)
    assert len(h["loss"]) == 24 and h["loss"][-1] < 0.6 * h["loss"][0]
    np.testing.assert_allclose(h["loss"], th["loss"], rtol=1e-10)
    np.testing.assert_allclose(h["lr"], th["lr"], rtol=1e-15)
    assert h["iou"] == th["iou"] and h["iou"][-1] > 0.5
    np.testing.assert_allclose(out, tout, rtol=1e-8, atol=1e-12)
