"""``sandbox gradcheck``: the whole op table passes, and a broken op is reported."""

import io

import numpy as np
import pytest

from sandbox.autograd import Function
from sandbox.cli import gradcheck_table as gradcheck_suite
from sandbox.cli.commands import main


def test_every_op_passes_gradcheck():
    out = io.StringIO()
    failures = gradcheck_suite.run_suite(file=out)
    assert failures == [], out.getvalue()
    text = out.getvalue()
    assert "interpolate lanczos3 antialias (2-D down)" in text
    assert f"{len(gradcheck_suite.cases())} passed, 0 failed" in text


class _Broken(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2.02


def test_a_wrong_backward_is_reported(monkeypatch):
    broken = gradcheck_suite.Case("broken double", _Broken.apply, ((3,),), second_order=False)
    monkeypatch.setattr(gradcheck_suite, "cases", lambda: [broken])
    out = io.StringIO()
    assert gradcheck_suite.run_suite(file=out) == ["broken double"]
    assert "FAIL" in out.getvalue() and "0 passed, 1 failed" in out.getvalue()


def test_cli_filter_and_unknown_filter(capsys):
    assert main(["gradcheck", "--filter", "bicubic"]) == 0
    text = capsys.readouterr().out
    assert "bicubic" in text and "conv2d" not in text
    assert main(["gradcheck", "--filter", "no-such-op"]) == 2
    assert "no op matches" in capsys.readouterr().err


def test_inputs_for_kinked_ops_avoid_ties():
    rng = np.random.default_rng(0)
    x = gradcheck_suite._distinct(rng, (4, 4))
    assert len(np.unique(x)) == 16
    assert np.all(np.abs(gradcheck_suite._away_from_zero(rng, (100,))) >= 0.2)


@pytest.mark.parametrize("case", gradcheck_suite.cases()[:3], ids=lambda c: c.name)
def test_run_case_reports_shapes(case):
    r = gradcheck_suite.run_case(case)
    assert r["gradcheck"] is True and r["shapes"] == [tuple(s) for s in case.shapes]
