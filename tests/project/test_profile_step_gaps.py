"""benchmarks/profile_step_gaps.py times a step inside and outside the kernels, and puts
the kernel modules back as they were."""

import re

import sandbox._C._norm as norm_kernels

from tests.support.scripts import load_benchmark


def test_the_gaps_script_splits_a_step_and_restores_the_kernels(capsys):
    before = norm_kernels.train_forward
    module = load_benchmark("profile_step_gaps")
    module.main(["--threads", "1", "--size", "16", "--batch", "2", "--steps", "2",
                 "--rows", "3"])
    assert norm_kernels.train_forward is before
    out = capsys.readouterr().out
    assert out.startswith("cpu: ")
    line = re.search(r"step ([\d.]+) ms: in kernels ([\d.]+) ms, outside ([\d.]+) ms", out)
    assert line, out
    step, inside, outside = map(float, line.groups())
    assert 0 < inside <= step + 0.05 and abs(step - inside - outside) <= 0.15
    # the batch norms ran in the kernels, and the gaps between calls name both sides
    assert re.search(r"_norm\s+[\d.]+ ms\s+\d+ calls", out), out
    gaps = re.findall(r"\d+ us  (\w+\.\w+) -> (\w+\.\w+)", out)
    assert len(gaps) == 3, out


def test_the_gaps_script_profiles_the_volume_step(capsys):
    """``--volume MODE`` profiles the bench's 3-D UNet step: its convolutions run in the
    3-D Winograd region (``_winograd_fused``) where the project's GEMM takes the products,
    else in the split form's kernels (``_winograd``: the portable path),
    which the script reaches either way."""
    from sandbox.runtime import simd

    module = load_benchmark("profile_step_gaps")
    module.main(["--threads", "1", "--volume", "trilinear", "--steps", "1", "--rows", "1"])
    out = capsys.readouterr().out
    assert "3-D UNet step, trilinear" in out
    kernels = "_winograd_fused" if simd.current().gemm_own else "_winograd"
    assert re.search(kernels + r"\s+[\d.]+ ms\s+\d+ calls", out), out


def test_shapes_time_each_function_apart_by_the_shape_of_its_first_array(capsys):
    module = load_benchmark("profile_step_gaps")
    module.main(["--threads", "1", "--size", "16", "--batch", "2", "--steps", "2",
                 "--rows", "40", "--shapes"])
    out = capsys.readouterr().out
    # the batch norms of the two widest levels at 16x16 and 8x8: one row per input shape
    rows = re.findall(r"_norm\.train_forward \((\d+), (\d+), (\d+)\)\s+[\d.]+ ms\s+\d+ calls"
                      r"\s+[\d.]+ us each", out)
    assert len({r[1:] for r in rows}) >= 2 and all(r[0] == "2" for r in rows), out
