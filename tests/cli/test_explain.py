"""``sandbox explain``: the step-by-step backward walk-through."""

import io

import pytest

from sandbox.cli.commands import main
from sandbox.cli.explain import explain

STEPS = ["SumBackward", "ReluBackward", "Conv2dBackward", "ResizeBackward"]


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear", "bicubic", "lanczos3"])
def test_explain_prints_backward_steps_in_order(mode):
    buf = io.StringIO()
    result = explain(mode=mode, file=buf)
    text = buf.getvalue()
    assert result["steps"][:4] == STEPS
    assert sorted(result["steps"][4:]) == ["leaf:bias", "leaf:weight", "leaf:x"]
    assert result["gradcheck"] is True
    positions = [text.index(f"step {k + 1}: {name}") for k, name in enumerate(STEPS)]
    assert positions == sorted(positions)
    assert "= ResizeBackward(x)" in text and "(1, 1, 6, 6)" in text
    assert "gradcheck (float64 central differences" in text and "passed" in text
    assert f"adjoint check ({mode})" in text


def test_explain_cli(capsys):
    assert main(["explain", "--mode", "nearest"]) == 0
    out = capsys.readouterr().out
    assert "step 1: SumBackward" in out and "step 4: ResizeBackward" in out


def test_explain_bad_mode_names_choices():
    with pytest.raises(ValueError, match="mode"):
        explain(mode="bogus", file=io.StringIO())
