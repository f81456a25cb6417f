"""benchmarks/bench_ops_vs_torch.py (everyday layers against PyTorch) runs and prints a row
an op and thread count; an unknown op is refused with the choices."""

import pytest

from tests.support.scripts import load_benchmark


def test_prints_a_row_an_op_and_count(capsys, torch):
    module = load_benchmark("bench_ops_vs_torch")
    module.main(["--threads", "1", "2", "--shape", "2", "4", "8", "8", "--repeat", "1",
                 "--ops", "leaky_relu", "instance_norm", "adaptive_avg_pool",
                 "layer_norm_affine", "cross_entropy", "mse_loss", "bce_with_logits",
                 "bce_pos_weight"])
    rows = [ln for ln in capsys.readouterr().out.splitlines() if "ours/torch" in ln]
    assert len(rows) == 16
    assert all(float(r.split()[-1]) > 0 for r in rows)
    module.main(["--threads", "1", "--shape", "1", "2", "4", "4", "4", "--repeat", "1",  # 3-D
                 "--ops", "max_pool", "upsample_trilinear", "depthwise_conv", "up_conv"])
    assert capsys.readouterr().out.count("ours/torch") == 4
    with pytest.raises(SystemExit, match="unknown ops"):
        module.main(["--ops", "nope"])
