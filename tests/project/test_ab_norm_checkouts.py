"""benchmarks/ab_norm_checkouts.py times the norm kernels of two checkouts in alternating
processes: with this tree on both sides every case is printed once per thread count, with
its two medians and their ratio."""

import re
from pathlib import Path

from tests.support.scripts import load_benchmark, printed_ratio_agrees

ROOT = Path(__file__).resolve().parents[2]


def test_the_same_tree_on_both_sides_prints_every_case(capsys):
    load_benchmark("ab_norm_checkouts").main([str(ROOT), str(ROOT), "--threads", "1", "2",
                                              "--rounds", "1", "--calls", "1"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "thread(s)" in ln]
    assert len(lines) == 2 * 8  # 5 batch norms, group norm, 2 layer norms per count
    for line in lines:
        old, new, ratio = re.findall(
            r"old\s+([\d.]+) new\s+([\d.]+) new/old ([\d.]+)", line)[0]
        assert float(old) > 0 and float(new) > 0 and printed_ratio_agrees(old, new, ratio)
