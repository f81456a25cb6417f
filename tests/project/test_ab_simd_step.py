"""benchmarks/ab_simd_step.py times a step under several configurations, interleaved, and
gives each one's paired ratio to the first."""

import re

from tests.support.scripts import load_benchmark


def test_the_step_ab_prints_medians_and_paired_ratios(capsys):
    module = load_benchmark("ab_simd_step")
    module.main(["--threads", "1", "--volume", "trilinear", "--rounds", "2",
                 "portable:blas", "portable:blas+winograd_one_region=0"])
    out = capsys.readouterr().out
    assert "3-D UNet step, batch 2, trilinear" in out
    rows = re.findall(r"^  (\S+)\s+([\d.]+)   paired ([\d.]+)$", out, re.M)
    assert [r[0] for r in rows] == ["portable:blas", "portable:blas+winograd_one_region=0"]
    assert rows[0][2] == "1.000" and float(rows[1][1]) > 0


def test_a_knob_whose_default_is_none_takes_a_count(capsys):
    """A knob that defaults to None (an optional count, as
    winograd_target_tiles_weight_grad) is parsed as an int."""
    module = load_benchmark("ab_simd_step")
    module.main(["--threads", "1", "--size", "16", "--rounds", "1", "portable:blas",
                 "portable:blas+winograd_target_tiles_weight_grad=128"])
    out = capsys.readouterr().out
    assert "portable:blas+winograd_target_tiles_weight_grad=128" in out


def test_phases_give_the_quiet_and_slow_rounds_apart(capsys):
    """--phases probes the VM before every round (in a subprocess) and reports the quiet
    and the slow rounds apart; their counts add up to at most the rounds run."""
    module = load_benchmark("ab_simd_step")
    module.main(["--threads", "1", "--size", "16", "--rounds", "2", "--phases",
                 "portable:blas", "portable:blas+winograd_fused_pieces=2"])
    out = capsys.readouterr().out
    counts = [int(n) for n in re.findall(r"^(?:quiet|slow) \(cross [<>=]+ [\d.]+\): (\d+) rounds$",
                                         out, re.M)]
    assert len(counts) == 2 and sum(counts) <= 2
    assert "of 2 interleaved rounds" in out
