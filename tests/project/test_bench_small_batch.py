"""benchmarks/bench_small_batch.py times the user UNet step against PyTorch at small
batches, 1 and 2 threads, and leaves the thread count as it was."""

import re

import sandbox
from tests.support.scripts import load_benchmark


def test_the_small_batch_bench_prints_both_libraries_at_both_counts(capsys, torch):
    before = sandbox.get_num_threads()
    module = load_benchmark("bench_small_batch")
    module.main(["--cases", "32:1", "--repeat", "1"])
    assert sandbox.get_num_threads() == before
    out = capsys.readouterr().out
    assert out.startswith("cpu: ")
    row = re.search(r"32\^2 batch 1: ours ([\d.]+) / ([\d.]+) ms at 1 / 2 threads, torch "
                    r"([\d.]+) / ([\d.]+); vs torch [\d.]+x / [\d.]+x; speed-up ours "
                    r"[\d.]+x, torch [\d.]+x", out)
    assert row and all(float(v) > 0 for v in row.groups()), out
