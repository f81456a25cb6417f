"""benchmarks/ab_overlap.py: every mode timed in each round, the ratios against the first."""

import re

from sandbox.runtime import overlap
from tests.support.scripts import load_benchmark


def test_the_overlap_ab_times_each_mode_and_restores_the_setting(capsys):
    import sandbox

    module = load_benchmark("ab_overlap")
    before, threads = overlap.mode(), sandbox.get_num_threads()
    module.main(["--size", "16", "--batch", "2", "--rounds", "2", "--steps", "1",
                 "--modes", "off", "always", "auto", "--backward"])
    out = capsys.readouterr().out
    assert out.startswith("cpu: ") and "path " in out and "backward pass" in out
    row = re.search(r"^all\s+2 rounds: off\s+([\d.]+); always\s+([\d.]+) \(x([\d.]+) of off\); "
                    r"auto\s+([\d.]+) \(x([\d.]+) of off\)$", out, re.M)
    assert row, out
    assert all(float(v) > 0 for v in row.groups())
    assert overlap.mode() == before and sandbox.get_num_threads() == threads
