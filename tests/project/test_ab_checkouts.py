"""benchmarks/ab_checkouts.py times the user step (or, with --volume, the bench's 3-D step)
of two checkouts in alternating processes and gives their medians and paired ratios."""

import os
import re

from tests.support.scripts import load_benchmark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_two_checkouts_give_medians_losses_and_paired_ratios(capsys):
    """The same tree twice: both sides reach the same loss; one paired ratio a round."""
    module = load_benchmark("ab_checkouts")
    module.main([ROOT, ROOT, "--threads", "1", "--volume", "nearest", "--rounds", "2",
                 "--warmup", "0", "--steps", "1"])
    out = capsys.readouterr().out
    assert "3-D UNet step, nearest" in out
    losses = re.findall(r"step\s+[\d.]+\s+\(forward [\d.]+, backward [\d.]+, optimiser [\d.]+\)"
                        r"\s+loss (\S+)", out)
    assert len(losses) == 2 and losses[0] == losses[1], out
    assert re.search(r"paired: second / first per round, median [\d.]+ \(range", out), out
