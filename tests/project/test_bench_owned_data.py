"""benchmarks/bench_owned_data.py times a 2-thread kernel after its input halves were written
by the CPU that reads them or by the other one, with the VM's phase."""

import os
import re

import pytest

from tests.support.scripts import load_benchmark


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity") or not {0, 1} <= os.sched_getaffinity(0),
                    reason="needs Linux CPUs 0 and 1")
def test_the_script_binds_its_threads_and_prints_both_medians(capfd):
    module = load_benchmark("bench_owned_data")
    with pytest.raises(SystemExit) as stop:  # it re-runs itself with the threads bound
        module.main(["--seconds", "0", "--rounds", "2"])
    assert stop.value.code == 0
    out = capfd.readouterr().out
    assert "2x2 max pool of (8, 32, 64, 64) float32 at 2 threads" in out
    assert re.search(r"^cross \d+\.\d\d  own +\d+ us  swapped +\d+ us$", out, re.M), out
