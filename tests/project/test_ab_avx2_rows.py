"""benchmarks/ab_avx2_rows.py flips the AVX2 F(4x4) tile rows and compares: the
layers keep their bits, and the switch is on again afterwards."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_ab_runs_and_restores_the_switch(capsys):
    from sandbox._C import _winograd4, _winograd_fused

    if not _winograd4.avx2_rows():
        pytest.skip("the CPU has no AVX2")
    spec = importlib.util.spec_from_file_location(
        "ab_avx2_rows", ROOT / "benchmarks" / "ab_avx2_rows.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--threads", "1", "--layers", "4-8-16", "--sizes", "16", "--batch", "2",
                 "--rounds", "2"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("1t")]
    assert len(lines) == 3, lines  # forward, backward, the step
    assert _winograd4.avx2_rows() and _winograd_fused.avx2_rows()
