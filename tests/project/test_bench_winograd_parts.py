"""benchmarks/bench_winograd_parts.py splits a Winograd forward into its parts, for either
tile size (F(2x2) on an 8x8 map, F(4x4) on a 32x32 one), with the output-gradient
transform, the weight transform and the weight gradient's fold of both sizes."""

import re

from tests.support.scripts import load_benchmark


def test_the_parts_script_times_both_tile_sizes(capsys):
    module = load_benchmark("bench_winograd_parts")
    module.main(["--layers", "16-16-8", "16-16-32", "--repeat", "1"])
    out = capsys.readouterr().out
    rows = re.findall(r"^\s+16->16@(\d+)\s+F\((\d)x\d\)(\s+[\d.]+){9}$", out, re.M)
    assert [(size, tile) for size, tile, _ in rows] == [("8", "2"), ("32", "4")], out
