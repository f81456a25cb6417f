"""benchmarks/monitor_phases.py prints one row a round, with every figure, and leaves the
thread count as it found it."""

import sandbox
from tests.support.scripts import load_benchmark


def test_the_phase_monitor_prints_a_row_of_every_figure(capsys):
    before = sandbox.get_num_threads()
    module = load_benchmark("monitor_phases")
    module.main(["--seconds", "0", "--size", "16", "--batch", "2", "--steps", "1"])
    assert sandbox.get_num_threads() == before
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("cpu: ") and lines[1].split()[0] == "time"
    row = lines[2].split()
    assert len(row) == 8  # time, two steps, two region figures, balance, copy, cross
    step_2t, step_1t, region, woken, _, copy, cross = map(float, row[1:])
    assert step_2t > 0 and step_1t > 0 and region > 0 and woken > 0 and copy > 0
    assert cross > 0 or cross != cross  # nan where the process cannot pin two threads
