"""benchmarks/bench_memory_scaling.py times the threaded add at each thread count and
prints each size's bandwidths and their ratio."""

import re

from tests.support.scripts import load_benchmark


def test_the_memory_scaling_script_prints_each_count_and_the_ratio(capsys):
    module = load_benchmark("bench_memory_scaling")
    module.main(["--threads", "1", "2", "--mib", "1", "2", "--rounds", "1", "--sample",
                 "0.005"])
    out = capsys.readouterr().out
    assert out.startswith("cpu: ")
    rows = re.findall(r"^(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", out, re.M)
    assert [r[0] for r in rows] == ["1", "2"], out
    for _, one, two, ratio in rows:
        assert float(one) > 0 and float(two) > 0
        # the ratio of the unrounded medians; each printed figure is within 0.05 of its own
        low = (float(two) - 0.05) / (float(one) + 0.05)
        high = (float(two) + 0.05) / (float(one) - 0.05)
        assert low - 0.005 <= float(ratio) <= high + 0.005, (low, ratio, high)
