"""``sandbox bench``'s volume cases: registered, listed, run under --quick, agree with PyTorch."""

import json

import numpy as np
import pytest

from sandbox.bench import all_cases, main, select
from sandbox.bench._cases_3d import (
    CONV3D_LAYERS,
    RESIZE3D_VARIANTS,
    UNET3D,
    UNET3D_MODES,
    conv3d_flops,
    conv3d_layer_shape,
)

# PyTorch's interpolate on 5-D input: these modes, no antialias.
TORCH_3D = {"nearest", "nearest-exact", "trilinear", "trilinear-ac", "area"}


def test_volume_cases_are_registered_and_listed(capsys):
    names = [c.name for c in all_cases()]
    assert len(names) == len(set(names))
    for variant in ("nearest", "nearest-exact", "trilinear", "trilinear-ac", "bicubic", "cubic",
                    "lanczos3", "lanczos5", "area", "trilinear-aa", "bicubic-aa", "lanczos3-aa"):
        assert f"resize3d/{variant}/fwd" in names and f"resize3d/{variant}/bwd" in names
    assert {f"unet3d-step/{m}" for m in ("trilinear", "nearest", "bicubic", "lanczos3")} <= set(
        names)
    assert sum(n.startswith("conv3d-layer/") for n in names) == len(CONV3D_LAYERS)
    # the 2-D families keep their names and counts under substring filters
    assert len(select(all_cases(), ["unet-step"])) == 3
    assert not any("3d" in c.name for c in select(all_cases(), ["conv-layer"]))
    assert main(["--list", "--filter", "unet3d-step"]) == 0
    assert capsys.readouterr().out.split() == [f"unet3d-step/{m}" for m in UNET3D_MODES]


def test_conv3d_layers_are_the_3d_unets_convolutions():
    from sandbox import nn

    model = nn.UNet(**UNET3D, spatial_dims=3)
    convs = {(m.in_channels, m.out_channels) for m in model.modules()
             if isinstance(m, nn.Conv3d) and m.kernel_size == (3, 3, 3)}
    assert convs == {(ci, co) for ci, co, _ in CONV3D_LAYERS}
    for _, co, d in CONV3D_LAYERS:  # 32^3 input: 16 channels at 32^3, 32 at 16^3, ...
        assert d * co == 32 * 16
    assert conv3d_flops(2, 16, 32, 16) == 3 * 2 * 2 * 32 * 16 * 27 * 16**3
    assert conv3d_layer_shape(128, 64, 8, quick=True) == (2, 16, 8, 2)


def test_quick_run_of_the_volume_cases(tmp_path, capsys):
    names = ["resize3d/trilinear/bwd", "resize3d/area/fwd", "resize3d/nearest-exact/fwd",
             "resize3d/lanczos3-aa/fwd", "resize3d/bicubic/bwd", "conv3d-layer/16-32@16",
             "unet3d-step/trilinear", "unet3d-step/bicubic"]
    out = tmp_path / "vol.json"
    args = ["--quick", "--no-progress", "--repeat", "2", "--warmup", "1", "--json", str(out)]
    for name in names:
        args += ["--filter", name]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    results = {r["name"]: r for r in doc["results"]}
    assert sorted(results) == sorted(names)  # in registry order
    has_torch = bool(doc["environment"]["torch"])
    for r in results.values():
        assert r["error"] is None, r["error"]
        assert r["ours"]["median"] > 0 and r["checksum"]
    # --quick shapes: (1, 2, 8^3) -> 16^3 up, (1, 2, 16^3) -> 8^3 down
    assert results["resize3d/trilinear/bwd"]["shape"] == "(1, 2, 8, 8, 8)->(16, 16, 16)"
    assert results["resize3d/lanczos3-aa/fwd"]["shape"] == "(1, 2, 16, 16, 16)->(8, 8, 8)"
    conv = results["conv3d-layer/16-32@16"]
    assert conv["flops"] == conv3d_flops(2, 2, 4, 4) and conv["gflops"] > 0
    assert doc["environment"]["sgemm_gflops"] > 0
    step = results["unet3d-step/trilinear"]
    assert "depth 2 width 4" in step["shape"] and step["peak_method"] == "rss"
    assert step["peak_bytes"] > 0
    for name, r in results.items():
        variant = name.split("/")[1]
        compared = variant in TORCH_3D or name.startswith("conv3d") or name.endswith("trilinear")
        if not has_torch:
            assert r["torch"] is None
        elif compared:  # the same numbers as PyTorch, within float32 rounding
            assert r["torch"]["median"] > 0 and r["ratio"] > 0
            assert r["torch_agreement"] < (1e-3 if name.startswith("unet3d") else 1e-5), name
        else:  # a mode PyTorch lacks in 3-D: timed sandbox-only, and said why
            assert r["torch"] is None and r["torch_agreement"] is None
            assert "PyTorch has no" in r["torch_note"], name
    if has_torch:
        assert step["torch_peak_bytes"] > 0
        assert results["unet3d-step/bicubic"]["torch_peak_bytes"] is None
    text = capsys.readouterr().out
    assert "resize3d/bicubic/bwd" in text and "GFLOP/s" in text


@pytest.mark.parametrize("variant", sorted(RESIZE3D_VARIANTS))
def test_every_variant_equals_the_float64_reference(variant):
    """Where PyTorch cannot check a case, the float64 dense-matrix reference does (fwd, bwd)."""
    from sandbox.array.resample.reference import axis_matrix, reference_adjoint, reference_resize
    from sandbox.bench._cases import _normal, _rng
    from sandbox.bench._cases_3d import RESIZE3D_QUICK

    mode, opts, _, down = RESIZE3D_VARIANTS[variant]
    n, c, small, large = RESIZE3D_QUICK
    side_in, side_out = (large, small) if down else (small, large)
    mats = [axis_matrix(mode, side_in, side_out, align_corners=bool(opts.get("align_corners")),
                        antialias=opts.get("antialias", False))] * 3
    for direction in ("fwd", "bwd"):
        name = f"resize3d/{variant}/{direction}"
        (case,) = select(all_cases(), [name])
        got = case.build(True, None).ours()
        rng = _rng(name)  # the case's own data: same seed, same order of draws
        x = _normal(rng, (n, c, side_in, side_in, side_in))
        if direction == "fwd":
            ref = reference_resize(x, mats)
        else:
            ref = reference_adjoint(_normal(rng, (n, c, side_out, side_out, side_out)), mats)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=2e-6 * np.abs(ref).max(), err_msg=name)
