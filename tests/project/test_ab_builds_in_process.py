"""The in-process A/B scripts (benchmarks/ab_batch_norm_relu_backward.py and
benchmarks/ab_winograd_builds.py) load a second build of an extension module beside the
one in use; with this tree's own build on both sides every case is printed with its two
medians and their ratio, and the two builds' results compare equal."""

import re
from pathlib import Path

import sandbox._C._norm as norm_module
import sandbox._C._winograd_fused as winograd_module

from tests.support.scripts import load_benchmark, printed_ratio_agrees


def _rows(out):
    rows = re.findall(r"old\s+([\d.]+) new\s+([\d.]+) new/old ([\d.]+)", out)
    for old, new, ratio in rows:
        assert float(old) > 0 and float(new) > 0
        assert printed_ratio_agrees(old, new, ratio)
    return rows


def test_batch_norm_relu_backward_against_the_same_build(capsys):
    script = load_benchmark("ab_batch_norm_relu_backward")
    script.main([str(Path(norm_module.__file__)), "--threads", "1", "2", "--rounds", "1"])
    assert len(_rows(capsys.readouterr().out)) == 2 * len(script.SHAPES)


def test_winograd_layers_against_the_same_build(capsys):
    script = load_benchmark("ab_winograd_builds")
    script.main([str(Path(winograd_module.__file__)), "--threads", "2", "--rounds", "1",
                 "--layers", "16-16-32", "32-64-16"])
    out = capsys.readouterr().out
    assert len(_rows(out)) == 3  # two layers and their total
    assert "all layers" in out
    script.main([str(Path(winograd_module.__file__)), "--threads", "1", "--rounds", "1",
                 "--layers", "16-16-32", "--parts", "fwd", "dx", "dw"])
    out = capsys.readouterr().out
    assert len(_rows(out)) == 6  # a layer and its total, each part
    assert all(f" {part} " in out for part in ("fwd", "dx", "dw"))
