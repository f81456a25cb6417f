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
