"""``sandbox bench``'s grid-sampling cases: registered, named, and a --quick run that
agrees with PyTorch."""

import json

import numpy as np

from sandbox.bench import all_cases, main, select
from sandbox.bench._cases_grid import GRID_MODES, GRID_PADDINGS, warp_grid


def test_grid_cases_are_registered():
    names = [c.name for c in select(all_cases(), ["grid_sample/"])]
    assert len(names) == len(set(names))
    # 2-D: 3 modes x 3 paddings; 3-D: PyTorch's 2 modes x 3 paddings + tricubic/zeros
    assert len(names) == (9 + 7) * 2 * 2
    for mode in GRID_MODES:
        for padding in GRID_PADDINGS:
            for b in (1, 8):
                for d in ("fwd", "bwd"):
                    assert f"grid_sample/2d/{mode}-{padding}/b{b}/{d}" in names
    assert "grid_sample/3d/bicubic-zeros/b1/bwd" in names


def test_warp_grid_is_a_small_smooth_displacement():
    g = warp_grid(np.random.default_rng(0), 2, (64, 64))
    assert g.shape == (2, 64, 64, 2) and g.dtype == np.float32
    ident = (2 * np.arange(64) + 1) / 64 - 1
    assert np.abs(g[..., 0] - ident[None, None, :]).max() <= 0.1 + 1e-6
    assert np.abs(g).max() > 1  # some points outside: the padding is exercised


def test_quick_run_agrees_with_torch(tmp_path):
    names = ["grid_sample/2d/bilinear-zeros/b1/bwd", "grid_sample/2d/bicubic-reflection/b8/fwd",
             "grid_sample/3d/nearest-border/b1/bwd", "grid_sample/3d/bicubic-zeros/b8/fwd"]
    out = tmp_path / "grid.json"
    args = ["--quick", "--no-progress", "--repeat", "1", "--warmup", "0", "--json", str(out)]
    for name in names:
        args += ["--filter", name]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    results = {r["name"]: r for r in doc["results"]}
    assert sorted(results) == sorted(names)
    for name, r in results.items():
        assert r["error"] is None and r["ours"]["median"] > 0, name
        if "3d/bicubic" in name:
            assert r["torch"] is None
        elif doc["environment"]["torch"]:
            assert r["torch_agreement"] < 1e-4, name
