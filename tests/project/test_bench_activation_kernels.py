"""benchmarks/bench_activation_kernels.py (the activation kernels' ns an element) runs and
prints a row an activation and thread count, each with ours and PyTorch's figure."""

from tests.support.scripts import load_benchmark


def test_prints_a_row_an_activation_and_count(capsys, torch):
    module = load_benchmark("bench_activation_kernels")
    module.main(["--threads", "1", "2", "--size", "4096", "--repeat", "2"])
    rows = [ln for ln in capsys.readouterr().out.splitlines() if "thread(s)" in ln]
    assert len(rows) == 12
    for row in rows:
        figures = dict(zip(row.split()[3::2], row.split()[4::2], strict=True))
        assert float(figures["ours"]) > 0 and float(figures["torch"]) > 0
    assert sum("numpy" in r for r in rows) == 8  # exp, tanh, sigmoid, SiLU at each count
