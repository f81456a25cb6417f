"""benchmarks/bench_step_ceiling.py runs its one-thread steps alone and in pairs and
prints the throughput ceiling of each round."""

import re

from tests.support.scripts import load_benchmark


def test_the_ceiling_script_runs(capsys):
    module = load_benchmark("bench_step_ceiling")
    module.main(["--size", "16", "--batch", "2", "--widths", "2", "4", "--seconds", "0.1",
                 "--rounds", "1"])
    out = capsys.readouterr().out
    assert out.startswith("cpu: ")
    line = re.search(r"round 1: alone ([\d.]+)  together ([\d.]+) / ([\d.]+)  "
                     r"ceiling ([\d.]+)x", out)
    assert line, out
    alone, a, b, ceiling = map(float, line.groups())
    assert min(alone, a, b) > 0
    # the ceiling is 2 * alone / mean(together) of the unrounded times; each printed time
    # is within 0.05 ms of its own
    low = 2 * (alone - 0.05) / ((a + b) / 2 + 0.05)
    high = 2 * (alone + 0.05) / ((a + b) / 2 - 0.05)
    assert low - 0.005 <= ceiling <= high + 0.005, (low, ceiling, high)
