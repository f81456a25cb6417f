"""benchmarks/bench_first_calls.py (the measurements behind the bench's lead-in call and
its cores rule) runs each part."""

import pytest

from tests.support.scripts import load_benchmark


def _module():
    return load_benchmark("bench_first_calls")


@pytest.mark.parametrize("pause", ["busy", "sleep"])
def test_wake_prints_a_row_a_gap(pause, capsys):
    _module().main(["--part", "wake", "--gaps", "0", "0.5", "--calls", "3", "--rounds", "2",
                    "--threads", "2", "--pause", pause])
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("gap ")]
    assert len(rows) == 2 and all(len(r.split(":")[1].split()) == 3 for r in rows)
    assert f"after a {pause} gap" in out


def test_torch_parts_run(capsys, torch):
    module = _module()
    module.main(["--part", "torch-cores", "--seconds", "0.01"])
    module.main(["--part", "lead-in", "--rounds", "2", "--repeat", "1", "--threads", "1", "2",
                 "--cases", "grid_sample/2d/nearest-zeros/b1/fwd"])
    out = capsys.readouterr().out
    assert out.count(" cores") == 6  # 3 modes x 2 thread counts
    assert out.count(" off ours ") == out.count(" on  ours ") == 2  # a line a count
