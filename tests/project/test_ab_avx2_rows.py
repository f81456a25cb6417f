"""benchmarks/ab_avx2_rows.py flips the AVX2 F(4x4) tile rows and compares: the
layers keep their bits, and the switch is on again afterwards."""


import pytest

from tests.support.scripts import load_benchmark


def test_the_ab_runs_and_restores_the_switch(capsys):
    from sandbox._C import _winograd, _winograd_fused

    if not _winograd.avx2_rows():
        pytest.skip("the CPU has no AVX2")
    module = load_benchmark("ab_avx2_rows")
    module.main(["--threads", "1", "--layers", "4-8-16", "--sizes", "16", "--batch", "2",
                 "--rounds", "2"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("1t")]
    assert len(lines) == 3, lines  # forward, backward, the step
    assert _winograd.avx2_rows() and _winograd_fused.avx2_rows()
