"""benchmarks/bench_conv_cold.py times a convolution hot, after a cache flush, and after a
flush with its input read back: one line per thread count and layer, three medians."""

import re

from tests.support.scripts import load_benchmark


def test_each_layer_gets_its_three_medians(capsys):
    module = load_benchmark("bench_conv_cold")
    module.main(["--threads", "1", "--layers", "4-4-8", "8-4-4", "--rounds", "2"])
    out = capsys.readouterr().out
    assert out.startswith("cpu: ")
    rows = re.findall(r"^1 thread\(s\)\s+(\d+)->\s*(\d+)@(\d+)\s+hot\s+([\d.]+)\s+flushed\s+"
                      r"([\d.]+)\s+flushed, input reread\s+([\d.]+)$", out, re.M)
    assert [r[:3] for r in rows] == [("4", "4", "8"), ("8", "4", "4")], out
    assert all(float(v) > 0 for r in rows for v in r[3:])
