"""benchmarks/ab_conv_tuning.py times a ConvTuning knob against the defaults: it runs,
prints one line per thread count, layer and part, and leaves the defaults in force."""

from tests.support.scripts import load_benchmark


def test_the_ab_runs_and_leaves_the_defaults(capsys):
    from sandbox.array.conv import TUNING

    module = load_benchmark("ab_conv_tuning")
    before = TUNING.one_pass_max_rows
    module.main(["one_pass_max_rows=0", "--threads", "1", "2", "--layers", "1-4-16",
                 "--batch", "2", "--rounds", "2", "--calls", "1"])
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "same bits" in ln]
    assert len(lines) == 2 * 3, lines  # 2 thread counts x (fwd, dw, dxdw)
    assert TUNING.one_pass_max_rows == before


def test_other_algorithms_run_without_the_bits_check(capsys):
    """--other-bits: a knob that changes the algorithm (im2col instead of Winograd here)
    is timed without requiring the same bits; --nd 3 times 3x3x3 layers."""
    module = load_benchmark("ab_conv_tuning")
    module.main(["winograd=0", "--other-bits", "--threads", "1", "--layers", "16-16-4",
                 "--parts", "fwd", "--batch", "8", "--rounds", "2", "--calls", "1"])
    module.main(["split_in_kernels=0", "--nd", "3", "--threads", "2", "--layers", "16-16-4",
                 "--parts", "dxdw", "--batch", "2", "--rounds", "2", "--calls", "1"])
    out = capsys.readouterr().out
    assert "bits not compared" in out and "same bits" in out
