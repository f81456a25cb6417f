"""benchmarks/replay_step_kernels.py replays a step's kernel calls in order and alone at two
thread counts, times real steps beside, and puts everything back as it was."""

import re

import sandbox._C._norm as norm_kernels

import sandbox
from sandbox.runtime import overlap
from tests.support.scripts import load_benchmark


def test_the_replay_compares_two_counts_and_restores_the_process(capsys):
    before = (norm_kernels.train_forward, overlap.mode(), sandbox.get_num_threads())
    module = load_benchmark("replay_step_kernels")
    module.main(["--threads", "1", "2", "--size", "16", "--batch", "2", "--rounds", "1",
                 "--rows", "4"])
    assert (norm_kernels.train_forward, overlap.mode(), sandbox.get_num_threads()) == before
    out = capsys.readouterr().out
    assert out.startswith("cpu: ")
    rows = {}
    for label in ("step", "its kernels", "outside them", "kernels in order", "kernels alone"):
        line = re.search(rf"^ +{label} +([\d.]+) ms +([-\d.]+) ms +([\d.]+)x$", out, re.M)
        assert line, (label, out)
        rows[label] = [float(v) for v in line.groups()]
    step, inside, outside = rows["step"], rows["its kernels"], rows["outside them"]
    for k in range(2):  # the step splits into its kernels and the rest
        assert 0 < inside[k] <= step[k] and abs(step[k] - inside[k] - outside[k]) < 0.02
    assert rows["kernels in order"][0] > 0 and rows["kernels alone"][0] > 0
    assert re.search(r"cold data \(in order - alone\): [-\d.]+ ms at 1, [-\d.]+ ms at 2", out)
    # four kernel rows, each named by module and function, with the shape of its first array
    kernels = re.findall(r"^  (_\w+\.\w+) +(\(.*?\)|None) +(\d+) ", out, re.M)
    assert len(kernels) == 4, out
    assert all(int(calls) >= 1 for _, _, calls in kernels)


def test_the_report_adds_each_counts_calls_where_the_counts_called_other_kernels(capsys):
    """The 3-D step copies its slabs on numpy at one thread and in a kernel at two: the
    rows add each count's calls by kernel and shape, a kernel one count never called
    showing '-' for its ratios."""
    module = load_benchmark("replay_step_kernels")
    conv, copy = ("_w.conv", (2, 4)), ("_e.copy_blocks", (8,))
    result = {1: {"calls": [conv, conv], "order": [0.002, 0.002], "alone": [0.001, 0.001],
                  "step": 0.005, "inside": 0.004},
              2: {"calls": [conv, copy, conv], "order": [0.001, 0.0005, 0.001],
                  "alone": [0.0006, 0.0004, 0.0006], "step": 0.003, "inside": 0.0025}}
    module.report(result, [1, 2], rows=5)
    out = capsys.readouterr().out
    assert "the step calls other kernels at 1 and 2 threads" in out
    rows = {m.group(1): m.group(2).split() for m in
            re.finditer(r"^  (_\w\.\w+) +\(.*?\) +(.*)$", out, re.M)}
    assert rows["_w.conv"] == ["2", "4.00", "2.00", "2.00", "1.67", "0.000"]
    assert rows["_e.copy_blocks"] == ["0", "0.00", "0.50", "-", "-", "0.500"]
